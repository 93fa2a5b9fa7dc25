//! One module per block, from the block list of `gpurtl_params::for_each_block`.

macro_rules! block_modules {
    ($($block:ident),* $(,)?) => { $(pub mod $block;)* };
}
gpurtl_params::for_each_block!(block_modules);
// Blocks being built, not yet in the block list.
pub mod arbiter;
pub mod scratchpad;

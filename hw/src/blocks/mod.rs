//! One module per block, from the block list of `gpurtl_params::for_each_block`.

macro_rules! block_modules {
    ($($block:ident),* $(,)?) => { $(pub mod $block;)* };
}
gpurtl_params::for_each_block!(block_modules);

/// `mem_if = axi4`: blocks behind the arbiter and its AXI4 bridge.
pub mod memif;

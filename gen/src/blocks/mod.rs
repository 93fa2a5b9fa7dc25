//! The block registry: one adapter per block (`<block>.rs`, a [`BlockDef`]),
//! declared from the block list of `gpurtl_params::for_each_block`.
//!
//! [`BlockDef`]: crate::block::BlockDef

use crate::block::Block;

macro_rules! registry {
    ($($block:ident),* $(,)?) => {
        $(pub mod $block;)*

        /// Every block, in the order of the block list.
        pub fn all() -> Vec<&'static dyn Block> {
            vec![$(&$block::BLOCK),*]
        }
    };
}
gpurtl_params::for_each_block!(registry);

/// The block called `name` among `blocks`.
pub fn find<'a>(blocks: &[&'a dyn Block], name: &str) -> Option<&'a dyn Block> {
    blocks.iter().copied().find(|b| b.name() == name)
}

//! gpurtl hardware descriptions: the RTL layer and one module per block.

pub mod blocks;
pub mod params;
pub mod rtl;
pub mod wrapper;

/// A generated design: its modules (submodules first) and the top's name.
#[derive(Clone, Debug)]
pub struct Design {
    pub top: String,
    pub modules: Vec<rtl::Module>,
}

impl Design {
    pub fn top_module(&self) -> &rtl::Module {
        self.modules.iter().find(|m| m.name == self.top).expect("a design contains its top")
    }
}

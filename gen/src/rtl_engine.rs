//! Hands a generated design to the Verilator harness in `gpurtl-sim`: the
//! port list comes from the RTL layer, not from parsing Verilog.

use gpurtl_hw::rtl::SigKind;
use gpurtl_hw::Design;
use gpurtl_sim::cosim::{compile, Compiled, CosimError, DesignSpec, PortDir, PortSpec};

pub fn compile_design(design: &Design) -> Result<Compiled, CosimError> {
    let verilog: String = design.modules.iter().map(crate::verilog::module).collect::<Vec<_>>().join("\n");
    let top = design.top_module();
    let ports = top
        .port_signals()
        .map(|p| PortSpec {
            name: p.name.clone(),
            width: p.width,
            dir: if p.kind == SigKind::Input { PortDir::Input } else { PortDir::Output },
        })
        .collect();
    let clock = top.clock.map(|c| top.sig(c).name.clone()).unwrap_or_else(|| "clk_i".into());
    compile(&DesignSpec { top: design.top.clone(), verilog, ports, clock })
}

//! Hands a generated design to the Verilator harness in `gpurtl-sim`: the
//! port list comes from the RTL layer, not from parsing Verilog.

use gpurtl_hw::rtl::SigKind;
use gpurtl_hw::Design;
use gpurtl_sim::cosim::{compile, Compiled, CosimError, DesignSpec, PortDir, PortSpec};
use std::path::PathBuf;

/// Build (or fetch from the cache) and load the design for cosimulation.
pub fn compile_design(design: &Design) -> Result<Compiled, CosimError> {
    compile(&spec(design))
}

/// The native Verilator loop of the design (`gpurtl bench harness`).
pub fn native_loop(design: &Design) -> Result<PathBuf, CosimError> {
    let top = design.top();
    gpurtl_sim::cosim::native_loop(&spec(design), top.reset.map(|r| top.sig(r).name.as_str()))
}

/// What the harness builds from: the top, its Verilog, its ports, its clock.
pub fn spec(design: &Design) -> DesignSpec {
    let e = design.elaborate();
    let top = design.top();
    let ports = top
        .port_signals()
        .map(|p| PortSpec {
            name: p.name.clone(),
            width: p.width,
            dir: if p.kind == SigKind::Input { PortDir::Input } else { PortDir::Output },
        })
        .collect();
    let clock = top.clock.map(|c| top.sig(c).name.clone()).unwrap_or_else(|| "clk_i".into());
    DesignSpec { top: e.top_name().to_string(), verilog: e.verilog(), ports, clock }
}

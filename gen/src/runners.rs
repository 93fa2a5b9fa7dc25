//! `gpurtl run`: a workload through the golden model or the generated RTL.

use crate::blocks::Block;
use crate::cli::CliError;
use crate::rtl_engine::compile_design;
use gpurtl_hw::blocks::compress::CompressParams;
use gpurtl_sim::models::cbload as cb_model;
use gpurtl_sim::models::compress as model;
use gpurtl_sim::tb::cbload as cb_tb;
use gpurtl_sim::tb::compress as tb;
use serde_json::Value;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Model,
    Rtl,
}

pub fn run(b: &dyn Block, params: &Value, input: &Value, engine: Engine, vcd: Option<&Path>) -> Result<Value, CliError> {
    match b.name() {
        "compress" => {
            let p: CompressParams = serde_json::from_value(params.clone()).map_err(|e| CliError::Bad(e.to_string()))?;
            let ops = model::parse_input(input, p.width).map_err(|e| CliError::Bad(e.to_string()))?;
            let out = match engine {
                Engine::Model => model::run(&ops, p.latency),
                Engine::Rtl => {
                    let design = b.design(params).map_err(CliError::Failed)?;
                    let compiled = compile_design(&design)?;
                    tb::run(&compiled, p.width, &ops, None, vcd)?.0
                }
            };
            serde_json::to_value(out).map_err(|e| CliError::Failed(e.to_string()))
        }
        "cbload" => {
            let cfg: cb_model::Config =
                serde_json::from_value(params.clone()).map_err(|e| CliError::Failed(e.to_string()))?;
            let w = cb_model::parse_input(input, &cfg).map_err(|e| CliError::Bad(e.to_string()))?;
            let out = match engine {
                Engine::Model => cb_model::run(&cfg, &w),
                Engine::Rtl => {
                    let design = b.design(params).map_err(CliError::Failed)?;
                    let compiled = compile_design(&design)?;
                    cb_tb::run(&compiled, &cfg, &w, None, vcd)?.0
                }
            };
            Ok(cb_model::output_json(&cfg, &out))
        }
        "systolic" => {
            use gpurtl_sim::models::systolic as sy;
            let cfg: sy::Config = serde_json::from_value(params.clone()).map_err(|e| CliError::Failed(e.to_string()))?;
            let gemm = sy::parse_input(input, &cfg).map_err(|e| CliError::Bad(e.to_string()))?;
            let out = match engine {
                Engine::Model => sy::run(&cfg, &gemm),
                Engine::Rtl => {
                    let design = b.design(params).map_err(CliError::Failed)?;
                    let compiled = compile_design(&design)?;
                    gpurtl_sim::tb::systolic::run(&compiled, &cfg, &gemm, None, vcd)?.0
                }
            };
            Ok(sy::output_json(&cfg, &out))
        }
        other => Err(CliError::Bad(format!("block `{other}` has no runner yet"))),
    }
}

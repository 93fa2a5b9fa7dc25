//! The block registry: what the command line knows about each block.

use crate::emit::Provenance;
use gpurtl_hw::params::{apply, BlockParams, ParamErrors, ParamInfo};
use gpurtl_hw::Design;
use serde_json::Value;

/// One block as the CLI sees it. Parameters travel as their resolved JSON.
pub trait Block: Sync {
    fn name(&self) -> &'static str;
    fn summary(&self) -> &'static str;
    fn table(&self) -> Vec<ParamInfo>;
    fn defaults(&self) -> Value;
    fn presets(&self) -> Vec<(&'static str, Value)>;
    /// Defaults + file + pairs, type-checked and validated; the resolved set.
    fn resolve(&self, file: Option<&Value>, pairs: &[(String, String)]) -> Result<Value, ParamErrors>;
    fn design(&self, params: &Value) -> Result<Design, String>;
    fn provenance(&self, params: &Value) -> Provenance {
        Provenance { block: self.name().to_string(), params: params.clone() }
    }
}

/// Adapter from a params struct and its build function.
pub struct Typed<P: BlockParams> {
    pub summary: &'static str,
    pub build: fn(&P) -> Result<Design, gpurtl_hw::rtl::RtlError>,
}

impl<P: BlockParams + Sync> Block for Typed<P> {
    fn name(&self) -> &'static str {
        P::BLOCK
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn table(&self) -> Vec<ParamInfo> {
        P::table()
    }
    fn defaults(&self) -> Value {
        serde_json::to_value(P::default()).unwrap_or(Value::Null)
    }
    fn presets(&self) -> Vec<(&'static str, Value)> {
        P::presets().into_iter().map(|(n, p)| (n, serde_json::to_value(p).unwrap_or(Value::Null))).collect()
    }
    fn resolve(&self, file: Option<&Value>, pairs: &[(String, String)]) -> Result<Value, ParamErrors> {
        let p: P = apply(file, pairs)?;
        Ok(serde_json::to_value(p).unwrap_or(Value::Null))
    }
    fn design(&self, params: &Value) -> Result<Design, String> {
        let p: P = serde_json::from_value(params.clone()).map_err(|e| e.to_string())?;
        (self.build)(&p).map_err(|e| e.to_string())
    }
}

pub fn all() -> Vec<&'static dyn Block> {
    static COMPRESS: Typed<gpurtl_hw::blocks::compress::CompressParams> = Typed {
        summary: "packed compress/expand unit: 8/16/32/64-bit elements, merge or zeroing, one vector per cycle",
        build: gpurtl_hw::blocks::compress::build,
    };
    static CBLOAD: Typed<gpurtl_hw::blocks::cbload::CbloadParams> = Typed {
        summary: "constant-buffer burst load: one CDL instruction fills N registers from a constant buffer view",
        build: gpurtl_hw::blocks::cbload::build,
    };
    static SYSTOLIC: Typed<gpurtl_hw::blocks::systolic::SystolicParams> = Typed {
        summary: "systolic PE grid (output- or weight-stationary) with PE gating, load filter and row/column skip",
        build: gpurtl_hw::blocks::systolic::build,
    };
    vec![&COMPRESS, &CBLOAD, &SYSTOLIC]
}

pub fn find(name: &str) -> Option<&'static dyn Block> {
    all().into_iter().find(|b| b.name() == name)
}

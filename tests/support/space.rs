//! Random valid parameter points of a block, drawn from the block's own
//! parameter table: what the parameter-space test generates, lints,
//! elaborates and cosimulates.
//!
//! Point `k` of a run gives each parameter a scheduled value: a choice's
//! `(k + offset) mod n`-th value, a boolean's alternately, an integer's
//! minimum, maximum or a random value in turn (powers of two where the rule
//! asks for one), each parameter with its own random offset. So within a few
//! runs every choice and boolean value and both ends of every range come up.
//! A point the block's validation rejects has the fields the messages name
//! drawn again, at random, until it is valid; a design larger than the size
//! budget has its integers drawn again. Everything follows from the run's
//! seed, which the test prints.

use gpurtl_gen::block::Block;
use gpurtl_params::{ParamInfo, ParamKind};
use gpurtl_sim::rng::Rng;
use serde_json::Value;

/// One sampled point: its `--param` pairs and the resolved parameters.
#[derive(Clone, Debug)]
pub struct Point {
    pub pairs: Vec<(String, String)>,
    pub params: Value,
}

impl Point {
    /// `--param k=v ...`, to reproduce the point by hand.
    pub fn args(&self) -> String {
        self.pairs.iter().map(|(k, v)| format!("--param {k}={v}")).collect::<Vec<_>>().join(" ")
    }
}

fn powers_of_two(min: i64, max: i64) -> Vec<i64> {
    (0..63).map(|e| 1i64 << e).filter(|v| (min..=max).contains(v)).collect()
}

/// A value of `info` drawn uniformly (over the powers of two where its rule
/// asks for one).
fn random_value(info: &ParamInfo, rng: &mut Rng) -> String {
    match &info.kind {
        ParamKind::Int { min, max, rule } if rule.contains("power of two") => {
            rng.pick(&powers_of_two(*min, *max)).to_string()
        }
        ParamKind::Int { min, max, .. } => (min + rng.below((max - min + 1) as u64) as i64).to_string(),
        ParamKind::Bool => (rng.below(2) == 1).to_string(),
        ParamKind::Choice(c) => rng.pick(c).to_string(),
    }
}

/// The value point `k` schedules for `info` (see the module comment).
fn scheduled_value(info: &ParamInfo, k: u64, offset: u64, rng: &mut Rng) -> String {
    let slot = k + offset;
    match &info.kind {
        ParamKind::Int { min, max, rule } => {
            let candidates = if rule.contains("power of two") { powers_of_two(*min, *max) } else { vec![*min, *max] };
            match slot % 3 {
                0 => candidates[0].to_string(),
                1 => candidates[candidates.len() - 1].to_string(),
                _ => random_value(info, rng),
            }
        }
        ParamKind::Bool => (slot % 2 == 1).to_string(),
        ParamKind::Choice(c) => c[(slot % c.len() as u64) as usize].to_string(),
    }
}

/// Verilog lines of the design at `params` (its size, for the budget).
fn lines(b: &dyn Block, params: &Value) -> Option<usize> {
    let d = b.design(params).ok()?;
    Some(d.elaborate().units.iter().map(|u| u.verilog.lines().count()).sum())
}

/// `n` valid points of `b` from `seed`, each at most `max_lines` lines of
/// Verilog. A point that validates but does not generate is returned too:
/// the caller reports it.
pub fn points(b: &dyn Block, seed: u64, n: usize, max_lines: usize) -> Vec<Point> {
    let table = b.table();
    let mut rng = Rng::new(seed ^ b.name().bytes().fold(0u64, |h, c| h.wrapping_mul(131).wrapping_add(c as u64)));
    let offsets: Vec<u64> = table.iter().map(|_| rng.below(1 << 16)).collect();
    let mut out = Vec::new();
    for k in 0..n as u64 {
        let mut values: Vec<String> =
            table.iter().zip(&offsets).map(|(info, off)| scheduled_value(info, k, *off, &mut rng)).collect();
        for attempt in 0..400 {
            let pairs: Vec<(String, String)> = table.iter().map(|p| p.name.clone()).zip(values.iter().cloned()).collect();
            match b.resolve(&[], &pairs) {
                Err(errs) => {
                    // Draw again what the messages name (all, now and then).
                    for (i, info) in table.iter().enumerate() {
                        let named = errs.0.iter().any(|e| e.field == info.name);
                        if named || attempt % 25 == 24 {
                            values[i] = random_value(info, &mut rng);
                        }
                    }
                }
                Ok(params) => match lines(b, &params) {
                    Some(l) if l > max_lines => {
                        for (i, info) in table.iter().enumerate() {
                            if matches!(info.kind, ParamKind::Int { .. }) && rng.chance(50) {
                                values[i] = random_value(info, &mut rng);
                            }
                        }
                    }
                    // Valid and small enough, or a design that does not
                    // generate (the test's first finding).
                    _ => {
                        out.push(Point { pairs, params });
                        break;
                    }
                },
            }
        }
    }
    out
}

/// The run's seed: `GPURTL_PARAM_SEED`, else the clock (printed by the test).
pub fn run_seed() -> u64 {
    std::env::var("GPURTL_PARAM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    })
}

/// A whole-number setting from the environment, or `default`.
pub fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

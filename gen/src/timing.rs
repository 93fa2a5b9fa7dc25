//! The critical path of a nextpnr run: the worst register-to-register path
//! of the clock that sets Fmax, its start and end registers, logic levels
//! and delay, for `gpurtl synth`'s report.
//!
//! Read from the `critical_paths` of nextpnr's `--report` JSON (nextpnr-ecp5
//! 0.11 and nextpnr-ice40 0.4 both write it), else from the "Critical path
//! report for clock" section of its log (both formats: 0.11's with a type
//! column, 0.4's without). The fixtures of the tests are excerpts of real
//! runs, in `gen/tests/data/`.

use serde_json::{json, Value};

/// One step of a path as nextpnr reports it: `clk-to-q`, `source`,
/// `routing`, `logic`, `setup`.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub kind: String,
    pub delay_ns: f64,
    pub from: (String, String),
    pub to: (String, String),
    pub net: Option<String>,
}

/// The worst path of one run, summarised.
#[derive(Clone, Debug, PartialEq)]
pub struct CriticalPath {
    /// The start register as the RTL names it where that is plain (the net
    /// its output drives, else the cell name without yosys' suffixes), else
    /// nextpnr's cell name.
    pub from: String,
    pub from_cell: String,
    /// The end register, cleaned the same way, and the port the path ends at.
    pub to: String,
    pub to_cell: String,
    pub to_port: String,
    /// Logic segments between start and end (cells crossed, each carry-chain
    /// bit one).
    pub logic_levels: usize,
    /// Of `logic_levels`, the carry-chain hops (carry in to carry out).
    pub carry_levels: usize,
    pub delay_ns: f64,
    /// Everything but routing: clock-to-output, logic and setup, as
    /// nextpnr's "ns logic" counts it.
    pub logic_ns: f64,
    pub routing_ns: f64,
}

impl CriticalPath {
    pub fn to_json(&self) -> Value {
        let r = |x: f64| (x * 1000.0).round() / 1000.0;
        json!({
            "from": self.from, "from_cell": self.from_cell,
            "to": self.to, "to_cell": self.to_cell, "to_port": self.to_port,
            "logic_levels": self.logic_levels, "carry_levels": self.carry_levels,
            "delay_ns": r(self.delay_ns), "logic_ns": r(self.logic_ns), "routing_ns": r(self.routing_ns),
        })
    }

    /// The table's line: `from -> to, N levels (C carry), D ns (R routing)`.
    pub fn line(&self) -> String {
        let carry = if self.carry_levels > 0 { format!(" ({} carry)", self.carry_levels) } else { String::new() };
        format!(
            "{} -> {}, {} logic levels{carry}, {:.2} ns ({:.2} logic, {:.2} routing)",
            self.from, self.to, self.logic_levels, self.delay_ns, self.logic_ns, self.routing_ns
        )
    }
}

/// Suffixes yosys' techmapping appends to a flip-flop's cell name after the
/// name of the register it holds (`<reg>_TRELLIS_FF_Q_1`, `<reg>_SB_DFFESR_Q`,
/// iCE40 logic cells named `<reg>_SB_DFFE_Q_D_SB_LUT4_O_LC` after the LUT
/// feeding the register).
const FF_MARKERS: [&str; 2] = ["_TRELLIS_FF_Q", "_SB_DFF"];
/// Marks of a name yosys or nextpnr made up, not a register's.
const MADE_UP: [&str; 7] = ["$", "_SB_", "_TRELLIS_", "_LUT4_", "_CCU2C_", "_PFUMX_", "_L6MUX21_"];

fn plain(name: &str) -> bool {
    !name.is_empty() && !MADE_UP.iter().any(|m| name.contains(m))
}

/// A flip-flop cell's register name: the part before the first flip-flop
/// suffix, when that part is a plain name; else the cell name unchanged.
pub fn register_name(cell: &str) -> String {
    match FF_MARKERS.iter().filter_map(|m| cell.find(m)).min() {
        Some(i) if plain(&cell[..i]) => cell[..i].to_string(),
        _ => cell.to_string(),
    }
}

fn summarise(path: &[Segment]) -> Option<CriticalPath> {
    let last = path.last()?;
    // The start cell: where the first routing leaves (nextpnr-ice40 0.4
    // names the wrong cell as the source of clk-to-q, but its `to` is right).
    let first_route = path.iter().position(|s| s.kind == "routing");
    let from_cell = match first_route {
        Some(i) => path[i].from.0.clone(),
        None => path[0].to.0.clone(),
    };
    // A register's output net is its RTL name with the bit (`vbeats_q[1]`).
    let from = match (path[0].kind.as_str(), first_route.and_then(|i| path[i].net.as_deref())) {
        ("clk-to-q", Some(net)) if plain(net) => net.to_string(),
        _ => register_name(&from_cell),
    };
    let is_carry = |s: &Segment| matches!(s.from.1.as_str(), "FCI" | "CIN") && matches!(s.to.1.as_str(), "FCO" | "COUT");
    let logic: Vec<&Segment> = path.iter().filter(|s| s.kind == "logic").collect();
    let routing_ns: f64 = path.iter().filter(|s| s.kind == "routing").map(|s| s.delay_ns).sum();
    let delay_ns: f64 = path.iter().map(|s| s.delay_ns).sum();
    Some(CriticalPath {
        from,
        from_cell,
        to: register_name(&last.to.0),
        to_cell: last.to.0.clone(),
        to_port: last.to.1.clone(),
        logic_levels: logic.len(),
        carry_levels: logic.iter().filter(|s| is_carry(s)).count(),
        delay_ns,
        logic_ns: delay_ns - routing_ns,
        routing_ns,
    })
}

/// The clock whose Fmax is lowest in a nextpnr report: the one that limits.
fn limiting_clock(report: &Value) -> Option<String> {
    report["fmax"]
        .as_object()?
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v["achieved"].as_f64()?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}

/// `posedge <clock>` or `negedge <clock>` names `clock`.
fn edge_of(s: &str, clock: &str) -> bool {
    s.split_once(' ').is_some_and(|(edge, c)| matches!(edge, "posedge" | "negedge") && c == clock)
}

fn endpoint(v: &Value) -> (String, String) {
    (v["cell"].as_str().unwrap_or("").to_string(), v["port"].as_str().unwrap_or("").to_string())
}

/// The worst path within the limiting clock of a `--report` JSON; `None`
/// when the report has no such path (no `critical_paths`, or an empty one).
pub fn from_report(report: &Value) -> Option<CriticalPath> {
    let clock = limiting_clock(report)?;
    let paths = report["critical_paths"].as_array()?;
    paths
        .iter()
        .filter(|p| edge_of(p["from"].as_str().unwrap_or(""), &clock) && edge_of(p["to"].as_str().unwrap_or(""), &clock))
        .filter_map(|p| {
            let segs: Vec<Segment> = p["path"]
                .as_array()?
                .iter()
                .map(|s| Segment {
                    kind: s["type"].as_str().unwrap_or("").to_string(),
                    delay_ns: s["delay"].as_f64().unwrap_or(0.0),
                    from: endpoint(&s["from"]),
                    to: endpoint(&s["to"]),
                    net: s["net"].as_str().map(str::to_string),
                })
                .collect();
            summarise(&segs)
        })
        .max_by(|a, b| a.delay_ns.total_cmp(&b.delay_ns))
}

/// `cell.port` as nextpnr's log prints it (the port after the last dot).
fn cell_port(s: &str) -> (String, String) {
    match s.rsplit_once('.') {
        Some((c, p)) => (c.to_string(), p.to_string()),
        None => (s.to_string(), String::new()),
    }
}

/// The segments of one "Critical path report for clock" section of a log.
fn log_segments<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<Segment> {
    let mut segs: Vec<Segment> = Vec::new();
    // The pin the last routing arrived at: where the next logic starts.
    let mut at: Option<(String, String)> = None;
    for line in lines {
        let t: Vec<&str> = line.trim_start_matches("Info:").trim_start_matches("Warning:").split_whitespace().collect();
        if t.first() == Some(&"Sink") && t.len() >= 2 {
            let to = cell_port(t[1]);
            if let Some(s) = segs.last_mut().filter(|s| s.kind == "routing") {
                s.to = to.clone();
            }
            at = Some(to);
            continue;
        }
        // 0.11: `<type> <curr> <total> <Source|Net> <name>`; 0.4: `<curr> <total> <Source|Net|Setup> <name>`.
        let (kind, rest) = match t.first().map(|x| x.parse::<f64>().is_ok()) {
            Some(true) => (None, &t[..]),
            Some(false) if t.len() > 1 && t[1].parse::<f64>().is_ok() => (Some(t[0]), &t[1..]),
            _ => continue,
        };
        if rest.len() < 4 || rest[1].parse::<f64>().is_err() {
            continue;
        }
        let delay_ns = rest[0].parse::<f64>().unwrap_or(0.0);
        let (what, name) = (rest[2], rest[3]);
        let kind = match (kind, what) {
            (Some(k), _) => k.to_string(),
            (None, "Net") => "routing".into(),
            (None, "Setup") => "setup".into(),
            (None, "Source") if segs.is_empty() => "clk-to-q".into(),
            (None, "Source") => "logic".into(),
            _ => continue,
        };
        let seg = if kind == "routing" {
            let from = segs.last().map(|s| s.to.clone()).unwrap_or_default();
            Segment { kind, delay_ns, to: from.clone(), from, net: Some(name.to_string()) }
        } else {
            let to = cell_port(name);
            let from = if kind == "clk-to-q" || kind == "source" { to.clone() } else { at.clone().unwrap_or_else(|| to.clone()) };
            Segment { kind, delay_ns, from, to, net: None }
        };
        segs.push(seg);
    }
    segs
}

/// The worst path of the limiting clock from a nextpnr log: the last
/// "Max frequency for clock" line names the clock (the final timing, after
/// routing), then the last "Critical path report for clock '<it>'" section.
pub fn from_log(log: &str) -> Option<CriticalPath> {
    let mut fmax: Vec<(String, f64)> = Vec::new();
    for line in log.lines() {
        if let Some((_, rest)) = line.split_once("Max frequency for clock '") {
            let Some((clock, rest)) = rest.split_once("': ") else { continue };
            let Some(mhz) = rest.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()) else { continue };
            match fmax.iter_mut().find(|(c, _)| c == clock) {
                Some(e) => e.1 = mhz,
                None => fmax.push((clock.to_string(), mhz)),
            }
        }
    }
    let clock = fmax.iter().min_by(|a, b| a.1.total_cmp(&b.1))?.0.clone();
    let header = format!("Critical path report for clock '{clock}'");
    let lines: Vec<&str> = log.lines().collect();
    let start = lines.iter().rposition(|l| l.contains(&header))?;
    let section: Vec<&str> = lines[start + 1..].iter().take_while(|l| !l.contains("Critical path report")).copied().collect();
    let end = section.iter().position(|l| l.contains(" ns routing")).unwrap_or(section.len());
    let mut p = summarise(&log_segments(section[..end].iter().copied()))?;
    // The delays each step prints are rounded (0.4: to 0.1 ns); the section's
    // last line, `2.90 ns logic, 3.87 ns routing`, is summed before rounding.
    let t: Vec<&str> = section.get(end).map_or(vec![], |l| l.split(|c: char| c.is_whitespace() || c == ',').collect());
    let at = |w: &str| t.iter().position(|x| *x == w).and_then(|i| t.get(i.checked_sub(2)?)?.parse::<f64>().ok());
    if let (Some(logic), Some(routing)) = (at("logic"), at("routing")) {
        (p.logic_ns, p.routing_ns, p.delay_ns) = (logic, routing, logic + routing);
    }
    Some(p)
}

/// The critical path of one run: from the report, else from the log.
pub fn critical_path(report: &Value, log: &str) -> Option<CriticalPath> {
    if report["critical_paths"].as_array().is_some_and(|p| !p.is_empty()) {
        from_report(report)
    } else {
        from_log(log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ECP5_REPORT: &str = include_str!("../tests/data/nextpnr-ecp5-cbload-seed1.report.json");
    const ECP5_LOG: &str = include_str!("../tests/data/nextpnr-ecp5-cbload-seed1.critical-path.log");
    const ICE40_REPORT: &str = include_str!("../tests/data/nextpnr-ice40-cbload-seed1.report.json");
    const ICE40_LOG: &str = include_str!("../tests/data/nextpnr-ice40-cbload-seed1.critical-path.log");

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn register_names_lose_only_yosys_suffixes() {
        assert_eq!(register_name("u_block.vbeats_q_TRELLIS_FF_Q_1"), "u_block.vbeats_q");
        assert_eq!(register_name("u_block.req_left_q_TRELLIS_FF_Q"), "u_block.req_left_q");
        assert_eq!(register_name("u_block.req_left_q_SB_DFFESR_Q_D_SB_LUT4_O_LC"), "u_block.req_left_q");
        assert_eq!(register_name("out_chain_q_SB_DFFESR_Q_DFFLC"), "out_chain_q");
        // Not a flip-flop, or a made-up name before the suffix: unchanged.
        assert_eq!(register_name("u_block.mul_MULT18X18D"), "u_block.mul_MULT18X18D");
        assert_eq!(register_name("$nextpnr_CCU2C_21$CCU2_COMB0"), "$nextpnr_CCU2C_21$CCU2_COMB0");
        assert_eq!(register_name("u_block.x_SB_LUT4_O_SB_DFF_Q"), "u_block.x_SB_LUT4_O_SB_DFF_Q");
    }

    #[test]
    fn ecp5_report_gives_the_registers_levels_and_delays() {
        let r: Value = serde_json::from_str(ECP5_REPORT).unwrap();
        let p = from_report(&r).expect("a critical path");
        assert_eq!((p.from.as_str(), p.to.as_str(), p.to_port.as_str()), ("u_block.vbeats_q[1]", "u_block.req_left_q", "M"));
        assert_eq!((p.from_cell.as_str(), p.to_cell.as_str()), ("u_block.vbeats_q_TRELLIS_FF_Q_1", "u_block.req_left_q_TRELLIS_FF_Q"));
        // Into the adder (B -> FCO), 28 carry bits, the sum out, a LUT, a PFUMX.
        assert_eq!((p.logic_levels, p.carry_levels), (32, 28));
        // nextpnr's log: "2.90 ns logic, 3.87 ns routing"; Fmax 147.75 MHz.
        assert!(close(p.logic_ns, 2.90, 0.006) && close(p.routing_ns, 3.87, 0.006), "{p:?}");
        assert!(close(p.delay_ns, 1000.0 / 147.754_135, 0.001), "{p:?}");
        assert_eq!(
            p.line(),
            "u_block.vbeats_q[1] -> u_block.req_left_q, 32 logic levels (28 carry), 6.77 ns (2.90 logic, 3.87 routing)"
        );
        let j = p.to_json();
        assert_eq!((j["logic_levels"].as_u64(), j["delay_ns"].as_f64()), (Some(32), Some(6.768)));
    }

    #[test]
    fn ice40_report_gives_the_registers_levels_and_delays() {
        let r: Value = serde_json::from_str(ICE40_REPORT).unwrap();
        let p = from_report(&r).expect("a critical path");
        assert_eq!((p.from.as_str(), p.to.as_str(), p.to_port.as_str()), ("u_block.vbeats_q[1]", "u_block.req_left_q", "I1"));
        // nextpnr-ice40 0.4 names the wrong source cell in clk-to-q: the
        // start cell is where the first routing leaves.
        assert_eq!(p.from_cell, "u_block.vbeats_q_SB_DFFE_Q_28_D_SB_LUT4_O_LC");
        // A LUT, into the carry chain (I2 -> COUT), 28 carry bits, 3 LUTs.
        assert_eq!((p.logic_levels, p.carry_levels), (33, 28));
        // nextpnr's log: "6.0 ns logic, 5.7 ns routing"; Fmax 84.93 MHz.
        assert!(close(p.logic_ns, 6.0, 0.05) && close(p.routing_ns, 5.7, 0.05), "{p:?}");
        assert!(close(p.delay_ns, 1000.0 / 84.932_899, 0.001), "{p:?}");
    }

    #[test]
    fn the_log_gives_what_the_report_gives() {
        for (report, log, tol) in [(ECP5_REPORT, ECP5_LOG, 0.006), (ICE40_REPORT, ICE40_LOG, 0.06)] {
            let r: Value = serde_json::from_str(report).unwrap();
            let clock = limiting_clock(&r).unwrap();
            // The excerpt is the section alone: the Fmax line is added.
            let log = format!("Info: Max frequency for clock '{clock}': 100.00 MHz (FAIL at 150.00 MHz)\n{log}");
            let (a, b) = (from_report(&r).unwrap(), from_log(&log).expect("a path from the log"));
            assert_eq!((&a.from, &a.to, &a.from_cell, &a.to_cell, &a.to_port), (&b.from, &b.to, &b.from_cell, &b.to_cell, &b.to_port));
            assert_eq!((a.logic_levels, a.carry_levels), (b.logic_levels, b.carry_levels));
            // The log's delays are its summary line's, rounded (0.4: to 0.1 ns).
            assert!(close(a.logic_ns, b.logic_ns, tol) && close(a.routing_ns, b.routing_ns, tol), "{a:?}\n{b:?}");
            assert!(close(a.delay_ns, b.delay_ns, 2.0 * tol), "{a:?}\n{b:?}");
            // Without the report's paths, critical_path reads the log.
            assert_eq!(critical_path(&json!({"fmax": r["fmax"]}), &log), Some(b));
        }
    }

    #[test]
    fn no_path_is_none_not_a_panic() {
        let r: Value = serde_json::from_str(ECP5_REPORT).unwrap();
        assert_eq!(critical_path(&json!({}), ""), None);
        assert_eq!(critical_path(&json!({"fmax": r["fmax"], "critical_paths": []}), ""), None);
        assert_eq!(from_report(&json!({"fmax": r["fmax"], "critical_paths": [{"from": "x", "to": "y", "path": []}]})), None);
        // Only paths of another clock, or one with no segments.
        let clock = limiting_clock(&r).unwrap();
        assert_eq!(from_report(&json!({"fmax": r["fmax"], "critical_paths": [{"from": "<async>", "to": format!("posedge {clock}"), "path": r["critical_paths"][1]["path"]}]})), None);
        assert_eq!(from_report(&json!({"fmax": r["fmax"], "critical_paths": [{"from": format!("posedge {clock}"), "to": format!("posedge {clock}"), "path": []}]})), None);
        assert_eq!(from_log("Info: Max frequency for clock 'clk': 100.00 MHz (PASS at 12.00 MHz)\n"), None);
        assert_eq!(from_log("Info: Critical path report for clock 'clk' (posedge -> posedge):\nInfo: garbage\n"), None);
    }
}

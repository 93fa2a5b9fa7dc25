//! `gpurtl sweep`: one synthesis run per parameter point, in parallel up to
//! the core count, with progress on stderr ([`crate::progress`]); a CSV and JSON table and an SVG
//! plot (logic and Fmax against the swept parameter) in the output directory.

use crate::block::Block;
use crate::emit;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::synth::{self, Target};
use crate::tools;
use serde_json::{json, Value};
use std::io::Write;
use std::sync::Mutex;

/// One point of a sweep: a value for each swept parameter, as given.
pub type Point = Vec<(String, String)>;

/// `rows=2,4,8` style lists: (name, values). With `zip`, lists advance
/// together (rows=cols=2,4,8 is `--param rows=2,4,8 --param cols=2,4,8 --zip`);
/// otherwise every combination runs.
pub fn points(lists: &[(String, Vec<String>)], zip: bool) -> Result<Vec<Point>> {
    if lists.is_empty() {
        return Err(Error::Bad("`sweep` needs at least one `--param NAME=V1,V2,...`".into()));
    }
    if zip {
        let n = lists[0].1.len();
        if let Some((k, v)) = lists.iter().find(|(_, v)| v.len() != n) {
            return Err(Error::Bad(format!(
                "option `--param {k}` has {} values: must have {n}, like the first list, with --zip",
                v.len()
            )));
        }
        return Ok((0..n).map(|i| lists.iter().map(|(k, v)| (k.clone(), v[i].clone())).collect()).collect());
    }
    let mut out: Vec<Point> = vec![Vec::new()];
    for (k, vs) in lists {
        out = out.iter().flat_map(|p| vs.iter().map(move |v| [p.clone(), vec![(k.clone(), v.clone())]].concat())).collect();
    }
    Ok(out)
}

/// How a sweep runs: the synthesis flow of every point, and where.
pub struct Opts<'a> {
    pub target: Target,
    pub clock_mhz: f64,
    /// nextpnr's placement seeds (Fmax is their median).
    pub seeds: Vec<u32>,
    /// Advance the lists together instead of taking every combination.
    pub zip: bool,
    pub dir: &'a std::path::Path,
}

/// The folder of point `i` of a sweep, inside its `-o` folder: `run00`,
/// `run01`, ... (a sweep job's id, [`crate::jobs`]).
pub fn point_dir(i: usize) -> String {
    format!("run{i:02}")
}

/// The points of `lists` (see [`points`]), each resolved over `layers` and
/// validated: every point is checked before anything runs.
pub fn expand(b: &dyn Block, layers: &[&Value], lists: &[(String, Vec<String>)], zip: bool) -> Result<Vec<(Point, Value)>> {
    let pts = points(lists, zip)?;
    let mut out = Vec::new();
    for pt in pts {
        let resolved = b.resolve(layers, &pt)?;
        out.push((pt, resolved));
    }
    Ok(out)
}

/// Synthesize point `i` (`pt`, resolved as `params`) into `<dir>/run<i>/`:
/// its row of the table, `{"point", "status", "report"}` (a run that misses
/// timing or does not fit still has its report).
fn point_row(b: &dyn Block, i: usize, pt: &[(String, String)], params: &Value, o: &Opts) -> Value {
    let sub = o.dir.join(point_dir(i));
    let mut sink = Vec::new();
    // The sweep shows its points' progress, not each point's seeds.
    let synth = synth::Opts { target: o.target, clock_mhz: o.clock_mhz, seeds: o.seeds.clone(), dir: &sub, progress: false };
    let outcome = synth::run(b, params, &synth, &mut sink);
    let report = std::fs::read_to_string(sub.join("synth-report.json")).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let status = match (&outcome, &report) {
        (Ok(_), _) => "ok".to_string(),
        (Err(e), Some(_)) => e.to_string(),
        (Err(e), None) => format!("failed: {e}"),
    };
    json!({"point": pt.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
           "status": status, "report": report})
}

/// A point as its progress line names it: `k=v k=v`.
fn label(pt: &[(String, String)]) -> String {
    pt.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// A row's status, its first line.
fn status_line(row: &Value) -> &str {
    row["status"].as_str().unwrap_or("").lines().next().unwrap_or("")
}

/// Synthesize `b` at every point of `lists` (`rows=2,4,8` style, applied over
/// the parameter `layers`: a preset, a file), each point resolved and
/// validated before anything runs.
pub fn run(b: &dyn Block, layers: &[&Value], lists: &[(String, Vec<String>)], o: &Opts, out: &mut dyn Write) -> Result<()> {
    let dir = o.dir;
    let pts = expand(b, layers, lists, o.zip)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
    let total = pts.len();
    let progress = Progress::new(format!("sweep {} on {}", b.name(), o.target.name()), total as u64);
    let running = Mutex::new(Vec::new());
    let rows: Vec<Value> = tools::parallel_map(total, |i| {
        let now = |f: &dyn Fn(&mut Vec<String>)| {
            let mut r = running.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut r);
            progress.running(&if r.is_empty() { String::new() } else { format!("running {}", r.join(", ")) });
        };
        now(&|r| r.push(label(&pts[i].0)));
        let row = point_row(b, i, &pts[i].0, &pts[i].1, o);
        now(&|r| r.retain(|x| *x != label(&pts[i].0)));
        progress.done(&format!("{}: {}", label(&pts[i].0), status_line(&row)));
        row
    });
    drop(progress);
    let keys: Vec<String> = lists.iter().map(|(k, _)| k.clone()).collect();
    let failed = write_tables(b.name(), o.target, o.clock_mhz, &keys, &rows, &Tables { dir, stem: "sweep", extra: None }, out)?;
    // The exit status follows `gpurtl synth`: a point that misses timing or
    // does not fit fails the sweep (after every report is written).
    if failed > 0 {
        return Err(Error::Failed(format!(
            "{failed} of {} points did not meet timing, did not fit or failed (their status is in {})",
            rows.len(),
            dir.join("sweep.csv").display()
        )));
    }
    Ok(())
}

/// One point of a sweep, as a job runs it (`gpurtl sweep ... --point I`):
/// every point is resolved and validated as by [`run`], then point `i` is
/// synthesized into `<dir>/run<i>/`, and its row, with the job's command
/// line `argv`, is written to `<dir>/run<i>/result.json`. A point that
/// misses timing or does not fit is an error (exit 1) after the file is
/// written.
pub fn run_point(b: &dyn Block, layers: &[&Value], lists: &[(String, Vec<String>)], o: &Opts, i: usize, argv: &[String], out: &mut dyn Write) -> Result<()> {
    let pts = expand(b, layers, lists, o.zip)?;
    if i >= pts.len() {
        return Err(Error::Bad(format!("option `--point` = `{i}`: the sweep has {} points; must be from 0 to {}", pts.len(), pts.len() - 1)));
    }
    let sub = o.dir.join(point_dir(i));
    std::fs::create_dir_all(&sub).map_err(|e| Error::io("create", &sub, e))?;
    let mut row = point_row(b, i, &pts[i].0, &pts[i].1, o);
    eprintln!("[point {i} of {}] {} {}: {}", pts.len(), b.name(), label(&pts[i].0), status_line(&row));
    let status = row["status"].as_str().unwrap_or("").to_string();
    let mut result = serde_json::Map::new();
    result.insert("argv".into(), json!(argv));
    if let Some(r) = row.as_object_mut() {
        result.append(r);
    }
    let path = sub.join("result.json");
    let text = serde_json::to_string_pretty(&Value::Object(result))? + "\n";
    emit::write_atomic(&path, text.as_bytes()).map_err(|e| Error::io("write", &path, e))?;
    let _ = writeln!(out, "{}", path.display());
    if status != "ok" {
        return Err(Error::Failed(format!("point {i}: {status}")));
    }
    Ok(())
}

/// Where [`write_tables`] writes: `<dir>/<stem>.csv`, `.json` and `.svg`;
/// `extra`: fields added to the JSON document (a collection's `missing` and
/// `failed` lists).
pub struct Tables<'a> {
    pub dir: &'a std::path::Path,
    pub stem: &'a str,
    pub extra: Option<serde_json::Map<String, Value>>,
}

/// A sweep's table from its rows (`{"point", "status", "report"}`, the
/// swept parameters `keys`): `<stem>.csv` (printed too), `<stem>.json` and
/// the plot `<stem>.svg`. Returns how many rows are not `ok`.
pub fn write_tables(block: &str, target: Target, clock_mhz: f64, keys: &[String], rows: &[Value], t: &Tables, out: &mut dyn Write) -> Result<usize> {
    let dir = t.dir;
    // Table: swept parameters, logic, flip-flops, DSPs, Fmax, status.
    let metric = |r: &Value| -> (Option<u64>, Option<u64>, Option<u64>, Option<f64>) {
        let rep = &r["report"];
        let u = &rep["utilization"];
        let logic = u["TRELLIS_COMB"]["used"].as_u64().or(u["ICESTORM_LC"]["used"].as_u64()).or(rep["cells"].as_u64());
        let ffs = u["TRELLIS_FF"]["used"].as_u64().or(rep["flip_flops"].as_u64());
        (logic, ffs, u["MULT18X18D"]["used"].as_u64(), rep["fmax_mhz"].as_f64())
    };
    let opt = |v: Option<String>| v.unwrap_or_default();
    let mut csv = format!("{},logic,flip_flops,dsp,fmax_mhz,status\n", keys.join(","));
    for r in rows {
        let (l, f, d, fm) = metric(r);
        let vals: Vec<String> = keys.iter().map(|k| r["point"][k].as_str().unwrap_or("").to_string()).collect();
        csv.push_str(&format!(
            "{},{},{},{},{},\"{}\"\n",
            vals.join(","),
            opt(l.map(|x| x.to_string())),
            opt(f.map(|x| x.to_string())),
            opt(d.map(|x| x.to_string())),
            opt(fm.map(|x| format!("{x:.1}"))),
            r["status"].as_str().unwrap_or("").lines().next().unwrap_or("").replace('"', "'")
        ));
    }
    let write = |name: &str, text: &str| {
        emit::write_atomic(&dir.join(name), text.as_bytes()).map_err(|e| Error::Failed(format!("cannot write {name}: {e}")))
    };
    let (csv_name, json_name, svg_name) = (format!("{}.csv", t.stem), format!("{}.json", t.stem), format!("{}.svg", t.stem));
    let mut doc = json!({"block": block, "target": target.name(), "clock_mhz": clock_mhz, "rows": rows});
    if let (Some(extra), Some(d)) = (&t.extra, doc.as_object_mut()) {
        d.extend(extra.clone());
    }
    let logic_name = match target {
        Target::Generic => "yosys cells",
        Target::Ice40 => "iCE40 logic cells",
        Target::Ecp5(_) => "ECP5 LUTs",
    };
    let pts_xy: Vec<(String, Option<u64>, Option<f64>)> = rows
        .iter()
        .map(|r| {
            let (l, _, _, fm) = metric(r);
            (keys.iter().map(|k| r["point"][k].as_str().unwrap_or("")).collect::<Vec<_>>().join("/"), l, fm)
        })
        .collect();
    let title = format!("gpurtl {} on {} ({})", block, target.name(), keys.join("/"));
    // The table and the plot first, the JSON (what `collect` is read by) last.
    write(&csv_name, &csv)?;
    write(&svg_name, &svg(&title, logic_name, &pts_xy, clock_mhz))?;
    write(&json_name, &(serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"))?;
    let _ = write!(out, "{csv}");
    let _ = writeln!(out, "table: {}  plot: {}", dir.join(&csv_name).display(), dir.join(&svg_name).display());
    Ok(rows.iter().filter(|r| r["status"] != "ok").count())
}

/// The smallest 1, 2 or 5 x 10^k at least `v`: readable axis ends.
fn nice(v: f64) -> f64 {
    let p = 10f64.powf(v.max(1.0).log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|x| *x >= v).unwrap_or(10.0 * p)
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Logic (bars, left axis) and Fmax (line, right axis) per point; a point
/// with no Fmax (it did not fit or did not place) is marked as such.
fn svg(title: &str, logic_name: &str, pts: &[(String, Option<u64>, Option<f64>)], clock: f64) -> String {
    let (w, h, l, r, t, bm) = (720.0, 430.0, 80.0, 80.0, 50.0, 70.0);
    let pw = w - l - r;
    let ph = h - t - bm;
    let lmax = nice(pts.iter().filter_map(|p| p.1).max().unwrap_or(1).max(1) as f64 * 1.15);
    let fmax = nice(pts.iter().filter_map(|p| p.2).fold(clock, f64::max) * 1.15);
    let n = pts.len().max(1) as f64;
    let x = |i: usize| l + pw * (i as f64 + 0.5) / n;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        w / 2.0,
        esc(title)
    );
    s.push_str(&format!("<line x1=\"{l}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", t + ph, l + pw, t + ph));
    s.push_str(&format!("<line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{}\" stroke=\"#1f77b4\"/>\n", t + ph));
    s.push_str(&format!("<line x1=\"{}\" y1=\"{t}\" x2=\"{}\" y2=\"{}\" stroke=\"#d62728\"/>\n", l + pw, l + pw, t + ph));
    for k in 0..=4 {
        let f = k as f64 / 4.0;
        let y = t + ph - ph * f;
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#1f77b4\">{:.0}</text>\n<text x=\"{}\" y=\"{}\" fill=\"#d62728\">{:.0}</text>\n<line x1=\"{l}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#eee\"/>\n",
            l - 6.0, y + 4.0, lmax * f, l + pw + 6.0, y + 4.0, fmax * f, l + pw
        ));
    }
    let bw = (pw / n * 0.5).min(60.0);
    let mut line = Vec::new();
    for (i, (label, logic, fm)) in pts.iter().enumerate() {
        if let Some(v) = logic {
            let hh = ph * *v as f64 / lmax;
            s.push_str(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{bw}\" height=\"{hh}\" fill=\"#1f77b4\" opacity=\"0.7\"/>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#1f77b4\">{v}</text>\n",
                x(i) - bw / 2.0, t + ph - hh, x(i), t + ph - hh - 4.0
            ));
        }
        if let Some(f) = fm {
            let y = t + ph - ph * f / fmax;
            line.push(format!("{},{}", x(i), y));
            s.push_str(&format!(
                "<circle cx=\"{}\" cy=\"{y}\" r=\"4\" fill=\"#d62728\"/>\n<text x=\"{}\" y=\"{}\" fill=\"#d62728\">{f:.0} MHz</text>\n",
                x(i), x(i) + 6.0, y - 6.0
            ));
        } else {
            s.push_str(&format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#d62728\">no Fmax (did not fit)</text>\n",
                x(i), t + ph + 34.0
            ));
        }
        s.push_str(&format!("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(i), t + ph + 18.0, esc(label)));
    }
    if line.len() > 1 {
        s.push_str(&format!("<polyline points=\"{}\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>\n", line.join(" ")));
    }
    let cy = t + ph - ph * clock / fmax;
    s.push_str(&format!(
        "<line x1=\"{l}\" y1=\"{cy}\" x2=\"{}\" y2=\"{cy}\" stroke=\"#d62728\" stroke-dasharray=\"5,4\"/>\n<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#d62728\" stroke=\"white\" stroke-width=\"4\" paint-order=\"stroke\">constraint {clock} MHz</text>\n",
        l + pw, l + pw - 4.0, cy - 5.0
    ));
    s.push_str(&format!(
        "<text x=\"20\" y=\"{}\" transform=\"rotate(-90 20 {})\" text-anchor=\"middle\" fill=\"#1f77b4\">{}</text>\n<text x=\"{}\" y=\"{}\" transform=\"rotate(90 {} {})\" text-anchor=\"middle\" fill=\"#d62728\">Fmax (MHz)</text>\n</svg>\n",
        t + ph / 2.0, t + ph / 2.0, esc(logic_name), w - 20.0, t + ph / 2.0, w - 20.0, t + ph / 2.0
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(k: &str, v: &[&str]) -> (String, Vec<String>) {
        (k.into(), v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn points_are_combinations_or_zipped() {
        let p = points(&[l("rows", &["2", "4"]), l("cols", &["3", "5"])], false).unwrap();
        assert_eq!(p.len(), 4);
        assert_eq!(p[1], vec![("rows".into(), "2".into()), ("cols".into(), "5".into())]);
        let z = points(&[l("rows", &["2", "4"]), l("cols", &["3", "5"])], true).unwrap();
        assert_eq!(z, vec![vec![("rows".into(), "2".into()), ("cols".into(), "3".into())], vec![("rows".into(), "4".into()), ("cols".into(), "5".into())]]);
        let e = points(&[l("rows", &["2", "4"]), l("cols", &["3"])], true).unwrap_err();
        assert_eq!(e.to_string(), "option `--param cols` has 1 values: must have 2, like the first list, with --zip");
    }

    #[test]
    fn svg_has_every_point() {
        let s = svg("t", "LUTs", &[("2".into(), Some(100), Some(120.0)), ("4".into(), Some(400), None)], 100.0);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert_eq!(s.matches("<rect x=").count(), 2);
        assert_eq!(s.matches("<circle").count(), 1);
    }
}

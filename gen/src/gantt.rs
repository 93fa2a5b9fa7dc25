//! Gantt charts (SVG) of blocks on units: a panel per run, a row per unit
//! (an SM of the scheduler, a compute unit of the `gpu` top), a bar per
//! block from its dispatch to its completion, coloured by a key (the
//! kernel, the queue). Blocks that share a row are stacked in sub-rows.

use crate::sweep::esc;
use std::fmt::Write as _;

/// One block: on `row`, cycles `start..=end`, coloured by `colour`, with
/// `tip` as its hover text.
pub struct Bar {
    pub row: u32,
    pub start: u64,
    pub end: u64,
    pub colour: u64,
    pub tip: String,
}

/// One run: its label and its bars, in dispatch order.
pub struct Panel<'a> {
    pub label: &'a str,
    pub bars: Vec<Bar>,
}

/// The chart: `title` (followed by `subtitle` in parentheses), `rows` rows
/// named `<row_name> <i>`, one panel per run on a common cycle axis.
pub fn gantt(title: &str, subtitle: &str, row_name: &str, rows: u32, panels: &[Panel]) -> String {
    let (width, left, right, top) = (960.0, 70.0, 20.0, 40.0);
    let row = (240.0 / rows as f64).clamp(3.0, 18.0);
    let panel = row * rows as f64 + 40.0;
    let height = top + panel * panels.len() as f64 + 20.0;
    let end = panels.iter().flat_map(|p| p.bars.iter().map(|b| b.end)).max().unwrap_or(1).max(1) as f64;
    let x = |c: u64| left + (width - left - right) * c as f64 / end;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{} ({})</text>\n",
        width / 2.0,
        esc(title),
        esc(subtitle)
    );
    for (n, p) in panels.iter().enumerate() {
        let y0 = top + panel * n as f64;
        let span = p.bars.iter().map(|b| b.end).max().unwrap_or(0);
        let _ = writeln!(s, "<text x=\"{left}\" y=\"{}\" font-size=\"13\">{} (last completion at cycle {span})</text>", y0 + 14.0, esc(p.label));
        let y_row = |m: u32| y0 + 22.0 + row * m as f64;
        for m in 0..rows {
            let _ = writeln!(
                s,
                "<rect x=\"{left}\" y=\"{}\" width=\"{}\" height=\"{row}\" fill=\"{}\"/>",
                y_row(m),
                width - left - right,
                if m % 2 == 0 { "#f4f4f4" } else { "#ffffff" }
            );
            if rows <= 16 || m % 8 == 0 {
                let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{row_name} {m}</text>", left - 4.0, y_row(m) + row.min(11.0));
            }
        }
        // Sub-rows: per row, each bar takes the first sub-row free at its start.
        let mut lanes: Vec<Vec<u64>> = vec![Vec::new(); rows as usize];
        let mut placed = Vec::new();
        for b in &p.bars {
            let l = &mut lanes[b.row as usize];
            let k = match l.iter().position(|&free| free <= b.start) {
                Some(k) => k,
                None => {
                    l.push(0);
                    l.len() - 1
                }
            };
            l[k] = b.end + 1;
            placed.push((b, k));
        }
        for (b, k) in placed {
            let h = row / lanes[b.row as usize].len().max(1) as f64;
            let hue = (b.colour * 137) % 360;
            let _ = writeln!(
                s,
                "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"hsl({hue},65%,55%)\"><title>{}</title></rect>",
                x(b.start),
                y_row(b.row) + h * k as f64,
                (x(b.end) - x(b.start)).max(0.5),
                h,
                esc(&b.tip)
            );
        }
    }
    let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">cycle {}</text>\n</svg>", width - right, height - 4.0, end as u64);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_bars_stack_and_every_bar_is_drawn() {
        let bar = |row, start, end| Bar { row, start, end, colour: row as u64, tip: format!("{row} {start}") };
        let p = Panel { label: "run", bars: vec![bar(0, 0, 10), bar(0, 5, 20), bar(1, 0, 30), bar(0, 11, 12)] };
        let s = gantt("t", "two rows", "unit", 2, &[p]);
        assert_eq!(s.matches("<title>").count(), 4);
        assert!(s.contains("unit 1") && s.contains("cycle 30") && s.contains("last completion at cycle 30"));
        // Row 0 has two sub-rows (the second bar overlaps the first; the
        // third starts after the first ended): heights 9 = 18 / 2.
        assert_eq!(s.matches("height=\"9.00\"").count(), 3);
    }
}

//! Progress of long work (`sweep`, `synth` over several seeds, `bench`) on
//! stderr: what runs, n of m steps, the time elapsed and an estimate of the
//! time left. When stderr is a terminal, an `indicatif` bar, with a line
//! above it per finished step; otherwise one plain line per finished step
//! and nothing else. Standard output and the JSON reports are not touched.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The progress of `total` steps of one piece of work. Shared between the
/// threads that run the steps (`&Progress` is enough).
pub struct Progress {
    what: String,
    total: std::sync::atomic::AtomicU64,
    start: Instant,
    done: Mutex<u64>,
    bar: Option<ProgressBar>,
}

/// A duration as a person reads it: `42s`, `3m 05s`, `1h 02m`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

/// `, about T left` after `done` of `total` steps in `elapsed`, at the mean
/// step's pace; nothing before the first step or after the last.
fn left(elapsed: Duration, done: u64, total: u64) -> String {
    if done == 0 || done >= total {
        return String::new();
    }
    format!(", about {} left", duration(elapsed.mul_f64((total - done) as f64 / done as f64)))
}

impl Progress {
    /// `what`: the work, as the lines name it (`sweep systolic on ice40`);
    /// `total` steps (0: not known yet, nothing is shown until
    /// [`Progress::set_total`]).
    pub fn new(what: impl Into<String>, total: u64) -> Progress {
        let what = what.into();
        let bar = std::io::stderr().is_terminal().then(|| {
            let target = if total > 0 { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
            let bar = ProgressBar::with_draw_target(Some(total), target);
            // `{left}`: the estimate, at the mean step's pace, kept current.
            let style = ProgressStyle::with_template("{prefix} [{bar:24}] {pos}/{len}, {elapsed} elapsed{left}{msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key("left", |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&left(s.elapsed(), s.pos(), s.len().unwrap_or(0)));
                })
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(what.clone());
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        Progress { what, total: total.into(), start: Instant::now(), done: Mutex::new(0), bar }
    }

    /// The number of steps, once known (a bench's, from its own loops).
    pub fn set_total(&self, total: u64) {
        self.total.store(total, std::sync::atomic::Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.set_length(total);
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    fn total(&self) -> u64 {
        self.total.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The time left at the mean step's pace: `, about 2m 10s left`.
    fn estimate(&self, done: u64) -> String {
        left(self.start.elapsed(), done, self.total())
    }

    /// What is running now (on the bar; a plain log waits for its end).
    pub fn running(&self, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("; {what}"));
        }
    }

    /// A step is done; `line` says which and how it went.
    pub fn done(&self, line: &str) {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        *done += 1;
        // A step past the count given makes the count (never n of fewer).
        if *done > self.total() {
            self.set_total(*done);
        }
        let text = format!(
            "[{}/{}] {}: {line} ({} elapsed{})",
            *done,
            self.total(),
            self.what,
            duration(self.start.elapsed()),
            self.estimate(*done)
        );
        match &self.bar {
            Some(bar) => {
                bar.println(text);
                bar.set_position(*done);
            }
            None => eprintln!("{text}"),
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Progress({}, {} of {})", self.what, self.done.lock().map_or(0, |d| *d), self.total())
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_a_person_says_them() {
        let s = Duration::from_secs;
        assert_eq!([duration(s(0)), duration(s(59)), duration(s(65)), duration(s(3599)), duration(s(3720))], ["0s", "59s", "1m 05s", "59m 59s", "1h 02m"]);
    }

    #[test]
    fn the_estimate_is_the_mean_steps_pace() {
        let p = Progress { what: "w".into(), total: 4.into(), start: Instant::now() - Duration::from_secs(10), done: Mutex::new(0), bar: None };
        assert_eq!(p.estimate(0), "");
        assert_eq!(p.estimate(1), ", about 30s left");
        assert_eq!(p.estimate(2), ", about 10s left");
        assert_eq!(p.estimate(4), "");
    }
}

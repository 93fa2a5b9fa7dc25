//! Testbench for the generated kernel scheduler: the environment of
//! docs/scheduler.md ("The environment") around the RTL, built from
//! agents. A stream source offers the kernels in order (not before their
//! submit cycles, held back in the environment's stall cycles, junk on the
//! fields while idle), stream sinks take dispatches and rejections with the
//! environment's stall patterns, and [`SchedulerDriver`] holds them and a
//! stand-in for the SMs that runs every dispatched block for its kernel's
//! duration plus its extra latency and returns it on the completion port,
//! `dispatch_width` a cycle. The port events come back as the model's
//! [`Trace`].

use super::agents::{Agent, Bench, Pace, StreamSink, StreamSource};
use super::{mask, LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::models::scheduler::{BlockEvent, Env, Kernel, Trace, Workload};
use crate::rng::Rng;
use gpurtl_params::scheduler::SchedulerParams;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A block running on the SM stand-in.
struct Running {
    tag: u64,
    kernel: usize,
    block: u32,
    sm: u32,
}

/// The completion port.
struct Cpl {
    valid: PortHandle,
    ready: PortHandle,
    count: PortHandle,
    tag: PortHandle,
    sm: PortHandle,
}

/// Everything a scheduler needs, on the ports of a scheduler named
/// `<prefix>...`: the submission source, the dispatch and rejection sinks,
/// the SM stand-in on the completion port, and the checks on the events.
pub struct SchedulerDriver {
    name: String,
    kernels: Vec<Kernel>,
    env: Env,
    lanes: usize,
    /// Tag and SM field bits of a completion lane.
    tb: u32,
    mb: u32,
    sms: u32,
    /// The cycle the run's cycle 0 is.
    base: u64,
    index: HashMap<u64, usize>,
    sub: StreamSource,
    dsp: StreamSink,
    rej: StreamSink,
    cpl: Cpl,
    dsp_valid: PortHandle,
    rej_valid: PortHandle,
    /// In completion order: (due, dispatch cycle, lane).
    running: BTreeMap<(u64, u64, u32), Running>,
    /// The blocks on the completion port this cycle.
    due: Vec<(u64, u64, u32)>,
    completed: Vec<u32>,
    rejected: Vec<bool>,
    resolved: usize,
    /// From this cycle on, every kernel is resolved: a dispatch or a
    /// rejection is an error.
    quiet_from: Option<u64>,
    trace: Trace,
    junk: Rng,
    events: u64,
}

impl SchedulerDriver {
    /// The driver of a run whose cycle 0 is the simulation's cycle `base`
    /// (the first after reset).
    pub fn new(sim: &Sim, prefix: &str, p: &SchedulerParams, w: &Workload, env: &Env, base: u64) -> Result<SchedulerDriver, CosimError> {
        let port = |name: &str| sim.port(&format!("{prefix}{name}"));
        let ks = &w.kernels;
        let mut index: HashMap<u64, usize> = HashMap::new();
        for (i, k) in ks.iter().enumerate() {
            if index.insert(k.id, i).is_some() {
                return Err(CosimError::Io(format!("workload: kernel id {} is used twice", k.id)));
            }
        }
        let e = *env;
        let mut sub = StreamSource::find(sim, &format!("{prefix}sub"), &["id", "stream", "blocks", "threads", "regs", "smem", "prio"])?
            .seed(env.seed)
            .junk_when_idle()
            .pace(Pace::Pattern(Box::new(move |c| e.src_stall(c - base))));
        for k in ks {
            let item = sub.fields().pack_u64(&[k.id, k.stream as u64, k.blocks as u64, k.threads as u64, k.regs as u64, k.smem as u64, k.priority as u64]);
            sub.push_at(base + k.submit, item);
        }
        let (e1, e2) = (*env, *env);
        let dsp = StreamSink::find(sim, &format!("{prefix}dsp"), &["count", "tag", "id", "block", "sm"])?
            .pace(Pace::Pattern(Box::new(move |c| !e1.dsp_ready(c - base))));
        let rej = StreamSink::find(sim, &format!("{prefix}rej"), &["id"])?.pace(Pace::Pattern(Box::new(move |c| !e2.rej_ready(c - base))));
        let cpl = Cpl { valid: port("cpl_valid_i")?, ready: port("cpl_ready_o")?, count: port("cpl_count_i")?, tag: port("cpl_tag_i")?, sm: port("cpl_sm_i")? };
        Ok(SchedulerDriver {
            name: format!("{prefix}scheduler"),
            kernels: ks.clone(),
            env: *env,
            lanes: p.dispatch_width as usize,
            tb: p.tag_bits(),
            mb: p.sm_bits(),
            sms: p.sms,
            base,
            index,
            sub,
            dsp,
            rej,
            cpl,
            dsp_valid: port("dsp_valid_o")?,
            rej_valid: port("rej_valid_o")?,
            running: BTreeMap::new(),
            due: Vec::new(),
            completed: vec![0; ks.len()],
            rejected: vec![false; ks.len()],
            resolved: 0,
            quiet_from: ks.is_empty().then_some(base),
            trace: Trace::default(),
            // Inputs that must not matter get junk: the completion lanes above the count.
            junk: Rng::new(env.seed ^ 0x5be0_cd19_137e_2179),
            events: 0,
        })
    }

    /// The events, once the bench has run.
    pub fn trace(&self) -> Trace {
        let mut t = self.trace.clone();
        t.submissions = self.sub.taken().iter().zip(&self.kernels).map(|(&c, k)| (c - self.base, k.id)).collect();
        t
    }

    fn resolve(&mut self, now: u64) {
        self.resolved += 1;
        if self.resolved == self.kernels.len() {
            self.quiet_from = Some(now + 1);
        }
    }

    /// A rejection taken this cycle.
    fn on_rejection(&mut self, c: u64, id: u64, now: u64) -> Result<(), String> {
        let next = self.sub.taken().len();
        let Some(&i) = self.index.get(&id).filter(|&&i| !self.rejected[i] && i < next) else {
            return Err(format!("cycle {c}: rejection of kernel id {id}, which is not a submitted kernel"));
        };
        self.rejected[i] = true;
        self.trace.rejections.push((c, id));
        self.resolve(now);
        Ok(())
    }

    /// A dispatch taken this cycle: its blocks start on the SM stand-in.
    fn on_dispatch(&mut self, c: u64, k: usize) -> Result<(), String> {
        let d = &self.dsp;
        let (count, tag, id, block, sm_lanes) = (d.field_u64(k, 0) as usize, d.field_u64(k, 1), d.field_u64(k, 2), d.field_u64(k, 3) as u32, d.field_u64(k, 4));
        let next = self.sub.taken().len();
        let Some(&i) = self.index.get(&id).filter(|&&i| i < next) else {
            return Err(format!("cycle {c}: dispatch of kernel id {id}, which is not a submitted kernel"));
        };
        if count == 0 || count > self.lanes {
            return Err(format!("cycle {c}: dispatch of {count} blocks; allowed 1..{}", self.lanes));
        }
        let blocks = self.kernels[i].blocks;
        if block as u64 + count as u64 > blocks as u64 {
            return Err(format!("cycle {c}: kernel {id} dispatches blocks {block}..{} of {blocks}", block as usize + count));
        }
        for lane in 0..count {
            let sm = ((sm_lanes >> (lane as u32 * self.mb)) & mask(self.mb)) as u32;
            let b = block + lane as u32;
            if sm >= self.sms {
                return Err(format!("cycle {c}: kernel {id} block {b} on SM {sm}, past the {} SMs", self.sms));
            }
            self.trace.dispatches.push(BlockEvent { cycle: c, kernel: id, block: b, sm });
            let due = c + self.kernels[i].duration + self.env.extra(i, b);
            self.running.insert((due, c, lane as u32), Running { tag, kernel: i, block: b, sm });
        }
        Ok(())
    }
}

impl Agent for SchedulerDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        let c = sim.cycle() - self.base;
        // Every cycle is simulated (the model skips idle stretches): say
        // where a long run is.
        if c > 0 && c.is_multiple_of(1 << 27) {
            eprintln!("gpurtl: scheduler RTL at cycle {c}: {} of {} kernels resolved", self.resolved, self.kernels.len());
        }
        self.sub.drive(sim);
        self.dsp.drive(sim);
        self.rej.drive(sim);
        // Completions: the first W blocks due by now.
        self.due = self.running.range(..=(c, u64::MAX, u32::MAX)).take(self.lanes).map(|(k, _)| *k).collect();
        let (mut tags, mut sms) = (0u64, 0u64);
        for j in 0..self.lanes {
            let (t, m) = match self.due.get(j) {
                Some(key) => (self.running[key].tag, self.running[key].sm as u64),
                None => (self.junk.next_u64() & mask(self.tb), self.junk.next_u64() & mask(self.mb)),
            };
            tags |= t << (j as u32 * self.tb);
            sms |= m << (j as u32 * self.mb);
        }
        let count = if self.due.is_empty() { self.junk.next_u64() & mask(self.cpl.count.width()) } else { self.due.len() as u64 };
        sim.set(self.cpl.valid, !self.due.is_empty() as u64);
        sim.set(self.cpl.count, count);
        sim.set(self.cpl.tag, tags);
        sim.set(self.cpl.sm, sms);
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let now = sim.cycle();
        let c = now - self.base;
        if !self.due.is_empty() && sim.get(self.cpl.ready) != 1 {
            return Err(format!("cycle {c}: cpl_ready_o is 0; it must always be 1"));
        }
        for key in std::mem::take(&mut self.due) {
            let r = self.running.remove(&key).expect("a due block is running");
            self.trace.completions.push(BlockEvent { cycle: c, kernel: self.kernels[r.kernel].id, block: r.block, sm: r.sm });
            self.completed[r.kernel] += 1;
            if self.completed[r.kernel] == self.kernels[r.kernel].blocks {
                self.resolve(now);
            }
            self.events += 1;
        }
        let (nr, nd) = (self.rej.items().len(), self.dsp.items().len());
        self.sub.sample(sim)?;
        self.rej.sample(sim)?;
        self.dsp.sample(sim)?;
        if self.rej.items().len() > nr {
            let id = self.rej.field_u64(nr, 0);
            self.on_rejection(c, id, now)?;
            self.events += 1;
        }
        if self.dsp.items().len() > nd {
            self.on_dispatch(c, nd)?;
            self.events += 1;
        }
        if self.quiet_from.is_some_and(|q| now >= q) && (sim.get(self.dsp_valid) == 1 || sim.get(self.rej_valid) == 1) {
            return Err(format!("cycle {c}: a dispatch or rejection after every kernel was resolved"));
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.resolved == self.kernels.len()
    }

    fn waiting(&self) -> String {
        let t = &self.trace;
        format!(
            "{} of {} kernels to be resolved: {} submitted, {} dispatches, {} completions, {} rejections",
            self.kernels.len() - self.resolved,
            self.kernels.len(),
            self.sub.taken().len(),
            t.dispatches.len(),
            t.completions.len(),
            t.rejections.len()
        )
    }

    fn progress(&self) -> u64 {
        // Waiting for the source's next kernel is not a hang.
        self.events + self.sub.progress()
    }
}

/// Run the workload through the RTL in the environment `env` (zero stalls
/// and no extra latency is what `gpurtl run` uses). `vcd`: a waveform of the
/// whole run.
pub fn run(
    compiled: &Compiled,
    p: &SchedulerParams,
    w: &Workload,
    env: &Env,
    vcd: Option<&Path>,
) -> Result<(Trace, RunStats), CosimError> {
    fits_ports(p, w).map_err(CosimError::Io)?;
    let mut sim = compiled.start(vcd)?;
    let rst = sim.port("rst_i")?;
    sim.reset(rst, 2);
    let mut d = SchedulerDriver::new(&sim, "", p, w, env, sim.cycle())?;
    let timer = LoopTimer::start(&sim);
    let longest = w.kernels.iter().map(|k| k.duration).max().unwrap_or(0);
    let guard = longest.saturating_add(env.max_extra).saturating_add(p.age_threshold as u64 * 4 + 20_000);
    // Everything resolved, a few more cycles must show nothing.
    Bench::new(u64::MAX).quiet(guard).drain(4).run(&mut sim, &mut [&mut d])?;
    sim.trace_close();
    Ok((d.trace(), timer.stats(&sim)))
}

/// The largest value of a `bits`-wide port field, at most `cap`.
fn limit(bits: u32, cap: u64) -> u64 {
    mask(bits).min(cap)
}

/// A random workload that reaches every path: kernels of every size from
/// one thread to a whole SM, needs that fit no SM and out-of-range streams
/// (rejected), zero-block kernels (rejected), bursts of submissions and
/// late ones, priorities, and short and long durations. About `n` kernels,
/// with at most `max_blocks` blocks in all.
pub fn random_workload(rng: &mut Rng, p: &SchedulerParams, n: usize, max_blocks: u64) -> Workload {
    let caps = [p.sm_threads as u64, p.sm_regs as u64, p.sm_smem as u64];
    let widths = [p.thread_bits(), p.reg_bits(), p.smem_bits()];
    let mut kernels: Vec<Kernel> = Vec::new();
    let mut total = 0u64;
    let mut t = 0u64;
    // A kernel "shape": the fraction of an SM a block takes.
    for i in 0..n {
        let frac = match rng.below(6) {
            0 => 1000,                  // a whole SM
            1 => 1 + rng.below(5),      // tiny
            2 => 400 + rng.below(600),  // over half
            _ => 1 + rng.below(400),
        };
        let mut need = [0u64; 3];
        for r in 0..3 {
            need[r] = match rng.below(8) {
                0 => 0,
                _ => (caps[r] * frac / 1000).clamp(1, caps[r]),
            };
        }
        // Now and then a need no SM can meet (when the port can say it).
        if rng.chance(4) {
            let r = rng.below(3) as usize;
            if caps[r] < mask(widths[r]) {
                need[r] = caps[r] + 1 + rng.below(mask(widths[r]) - caps[r]);
            }
        }
        let stream_lim = 1u64 << p.stream_bits();
        let stream = if rng.chance(3) && stream_lim > p.streams as u64 {
            p.streams as u64 + rng.below(stream_lim - p.streams as u64)
        } else {
            rng.below(p.streams as u64)
        } as u32;
        let max_b = limit(p.block_bits, 40).min(max_blocks.saturating_sub(total).max(1));
        let blocks = if rng.chance(3) { 0 } else { 1 + rng.below(max_b) } as u32;
        if total + blocks as u64 > max_blocks {
            break;
        }
        total += blocks as u64;
        t += match rng.below(10) {
            0 => 50 + rng.below(400),
            1..=3 => rng.below(10),
            _ => 0,
        };
        let duration = match rng.below(5) {
            0 => 1 + rng.below(3),
            1 => 100 + rng.below(300),
            _ => 5 + rng.below(60),
        };
        kernels.push(Kernel {
            id: if p.id_bits >= 20 { rng.below(mask(p.id_bits).min(1 << 40)) } else { i as u64 },
            stream,
            blocks,
            threads: need[0] as u32,
            regs: need[1] as u32,
            smem: need[2] as u32,
            duration,
            priority: rng.below(1 << p.prio_bits) as u32,
            submit: if rng.chance(70) { t } else { 0 },
        });
    }
    // Distinct ids: small id widths hold fewer kernels.
    let mut seen = std::collections::HashSet::new();
    kernels.retain(|k| k.id <= mask(p.id_bits) && seen.insert(k.id));
    Workload { kernels }
}

/// Checks a workload fits the ports of `p` (what `gpurtl run`'s input
/// check ensures).
pub fn fits_ports(p: &SchedulerParams, w: &Workload) -> Result<(), String> {
    for (i, k) in w.kernels.iter().enumerate() {
        let checks = [
            ("id", k.id, p.id_bits),
            ("stream", k.stream as u64, p.stream_bits()),
            ("blocks", k.blocks as u64, p.block_bits),
            ("threads", k.threads as u64, p.thread_bits()),
            ("regs", k.regs as u64, p.reg_bits()),
            ("smem", k.smem as u64, p.smem_bits()),
            ("priority", k.priority as u64, p.prio_bits),
        ];
        for (name, v, bits) in checks {
            if v > mask(bits) {
                return Err(format!("kernels[{i}].{name} = {v} does not fit {bits} bits"));
            }
        }
    }
    Ok(())
}

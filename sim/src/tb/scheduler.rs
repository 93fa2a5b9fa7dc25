//! Testbench for the generated kernel scheduler: the environment of
//! docs/scheduler.md ("The environment") around the RTL. A source offers
//! the kernels in order, the dispatch and rejection sinks apply the
//! environment's stall pattern, and a stand-in for the SMs runs every
//! dispatched block for its kernel's duration plus its extra latency and
//! returns it on the completion port, `dispatch_width` a cycle. The port
//! events come back as the model's [`Trace`].

use super::{fail, mask, LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::models::scheduler::{BlockEvent, Env, Kernel, Trace, Workload};
use crate::rng::Rng;
use gpurtl_params::scheduler::SchedulerParams;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

struct Ports {
    rst: PortHandle,
    sub_valid: PortHandle,
    sub_ready: PortHandle,
    sub_id: PortHandle,
    sub_stream: PortHandle,
    sub_blocks: PortHandle,
    sub_threads: PortHandle,
    sub_regs: PortHandle,
    sub_smem: PortHandle,
    sub_prio: PortHandle,
    rej_valid: PortHandle,
    rej_ready: PortHandle,
    rej_id: PortHandle,
    dsp_valid: PortHandle,
    dsp_ready: PortHandle,
    dsp_count: PortHandle,
    dsp_tag: PortHandle,
    dsp_id: PortHandle,
    dsp_block: PortHandle,
    dsp_sm: PortHandle,
    cpl_valid: PortHandle,
    cpl_ready: PortHandle,
    cpl_count: PortHandle,
    cpl_tag: PortHandle,
    cpl_sm: PortHandle,
}

impl Ports {
    fn find(s: &Sim) -> Result<Ports, CosimError> {
        Ok(Ports {
            rst: s.port("rst_i")?,
            sub_valid: s.port("sub_valid_i")?,
            sub_ready: s.port("sub_ready_o")?,
            sub_id: s.port("sub_id_i")?,
            sub_stream: s.port("sub_stream_i")?,
            sub_blocks: s.port("sub_blocks_i")?,
            sub_threads: s.port("sub_threads_i")?,
            sub_regs: s.port("sub_regs_i")?,
            sub_smem: s.port("sub_smem_i")?,
            sub_prio: s.port("sub_prio_i")?,
            rej_valid: s.port("rej_valid_o")?,
            rej_ready: s.port("rej_ready_i")?,
            rej_id: s.port("rej_id_o")?,
            dsp_valid: s.port("dsp_valid_o")?,
            dsp_ready: s.port("dsp_ready_i")?,
            dsp_count: s.port("dsp_count_o")?,
            dsp_tag: s.port("dsp_tag_o")?,
            dsp_id: s.port("dsp_id_o")?,
            dsp_block: s.port("dsp_block_o")?,
            dsp_sm: s.port("dsp_sm_o")?,
            cpl_valid: s.port("cpl_valid_i")?,
            cpl_ready: s.port("cpl_ready_o")?,
            cpl_count: s.port("cpl_count_i")?,
            cpl_tag: s.port("cpl_tag_i")?,
            cpl_sm: s.port("cpl_sm_i")?,
        })
    }
}

/// A block running on the SM stand-in.
struct Running {
    tag: u64,
    kernel: usize,
    block: u32,
    sm: u32,
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
    let ports = Ports::find(&sim)?;
    let ks = &w.kernels;
    let lanes = p.dispatch_width as usize;
    let (tb, mb) = (p.tag_bits(), p.sm_bits());
    let mut index: HashMap<u64, usize> = HashMap::new();
    for (i, k) in ks.iter().enumerate() {
        if index.insert(k.id, i).is_some() {
            return Err(CosimError::Io(format!("workload: kernel id {} is used twice", k.id)));
        }
    }
    // Inputs that must not matter get junk: the submission's fields while
    // nothing is offered, the completion lanes above the count.
    let mut junk = Rng::new(env.seed ^ 0x5be0_cd19_137e_2179);
    let kernel_fields = |k: &Kernel| {
        [k.id, k.stream as u64, k.blocks as u64, k.threads as u64, k.regs as u64, k.smem as u64, k.priority as u64]
    };
    let field_ports = [
        ports.sub_id,
        ports.sub_stream,
        ports.sub_blocks,
        ports.sub_threads,
        ports.sub_regs,
        ports.sub_smem,
        ports.sub_prio,
    ];

    for f in field_ports {
        sim.set(f, 0);
    }
    sim.set(ports.sub_valid, 0);
    sim.set(ports.rej_ready, 0);
    sim.set(ports.dsp_ready, 0);
    sim.set(ports.cpl_valid, 0);
    sim.reset(ports.rst, 2);
    let base = sim.cycle();
    let timer = LoopTimer::start(&sim);

    let mut trace = Trace::default();
    let mut next = 0usize;
    let mut offering = false;
    let mut prev_transfer: Option<u64> = None;
    // The SM stand-in, in completion order: (due, dispatch cycle, lane).
    let mut running: BTreeMap<(u64, u64, u32), Running> = BTreeMap::new();
    let mut completed = vec![0u32; ks.len()];
    let mut rejected = vec![false; ks.len()];
    let mut resolved = 0usize;
    let longest = ks.iter().map(|k| k.duration).max().unwrap_or(0);
    let guard = longest.saturating_add(env.max_extra).saturating_add(p.age_threshold as u64 * 4 + 20_000);
    let mut last_progress = 0u64;
    let mut drain = 0u32;

    loop {
        let c = sim.cycle() - base;
        if resolved == ks.len() {
            // Everything is resolved: a few more cycles must show nothing.
            if drain == 4 {
                break;
            }
            drain += 1;
        }
        // Waiting for the source's next kernel is not a hang.
        if next < ks.len() && c <= ks[next].submit {
            last_progress = c;
        }
        // Every cycle is simulated (the model skips idle stretches): say
        // where a long run is.
        if c > 0 && c % (1 << 27) == 0 {
            eprintln!("gpurtl: scheduler RTL at cycle {c}: {} of {} kernels resolved", resolved, ks.len());
        }
        if c > last_progress + guard {
            let msg = format!(
                "the RTL stopped making progress at cycle {c}: {} of {} kernels submitted, {} dispatches, {} completions, {} rejections",
                trace.submissions.len(),
                ks.len(),
                trace.dispatches.len(),
                trace.completions.len(),
                trace.rejections.len()
            );
            return Err(fail(&mut sim, msg));
        }
        // Source.
        if !offering
            && next < ks.len()
            && c >= ks[next].submit
            && prev_transfer.is_none_or(|t| c > t)
            && !env.src_stall(c)
        {
            offering = true;
            for (f, v) in field_ports.iter().zip(kernel_fields(&ks[next])) {
                sim.set(*f, v & mask(f.width()));
            }
        } else if !offering {
            for f in field_ports {
                let v = junk.next_u64() & mask(f.width());
                sim.set(f, v);
            }
        }
        sim.set(ports.sub_valid, offering as u64);
        let dsp_ready = env.dsp_ready(c);
        let rej_ready = env.rej_ready(c);
        sim.set(ports.dsp_ready, dsp_ready as u64);
        sim.set(ports.rej_ready, rej_ready as u64);
        // Completions: the first W blocks due by now.
        let due: Vec<(u64, u64, u32)> = running.range(..=(c, u64::MAX, u32::MAX)).take(lanes).map(|(k, _)| *k).collect();
        let (mut tags, mut sms) = (0u64, 0u64);
        for j in 0..lanes {
            let (t, m) = match due.get(j) {
                Some(key) => (running[key].tag, running[key].sm as u64),
                None => (junk.next_u64() & mask(tb), junk.next_u64() & mask(mb)),
            };
            tags |= t << (j as u32 * tb);
            sms |= m << (j as u32 * mb);
        }
        sim.set(ports.cpl_valid, !due.is_empty() as u64);
        sim.set(ports.cpl_count, if due.is_empty() { junk.next_u64() & mask(ports.cpl_count.width()) } else { due.len() as u64 });
        sim.set(ports.cpl_tag, tags);
        sim.set(ports.cpl_sm, sms);
        sim.eval();

        if !due.is_empty() && sim.get(ports.cpl_ready) != 1 {
            return Err(fail(&mut sim, format!("cycle {c}: cpl_ready_o is 0; it must always be 1")));
        }
        for key in &due {
            let r = running.remove(key).expect("a due block is running");
            trace.completions.push(BlockEvent { cycle: c, kernel: ks[r.kernel].id, block: r.block, sm: r.sm });
            completed[r.kernel] += 1;
            if completed[r.kernel] == ks[r.kernel].blocks {
                resolved += 1;
            }
            last_progress = c;
        }
        if offering && sim.get(ports.sub_ready) == 1 {
            trace.submissions.push((c, ks[next].id));
            prev_transfer = Some(c);
            offering = false;
            next += 1;
            last_progress = c;
        }
        if rej_ready && sim.get(ports.rej_valid) == 1 {
            let id = sim.get(ports.rej_id);
            let Some(&i) = index.get(&id).filter(|&&i| !rejected[i] && i < next) else {
                return Err(fail(&mut sim, format!("cycle {c}: rejection of kernel id {id}, which is not a submitted kernel")));
            };
            rejected[i] = true;
            resolved += 1;
            trace.rejections.push((c, id));
            last_progress = c;
        }
        if dsp_ready && sim.get(ports.dsp_valid) == 1 {
            let count = sim.get(ports.dsp_count) as usize;
            let (tag, id, block) = (sim.get(ports.dsp_tag), sim.get(ports.dsp_id), sim.get(ports.dsp_block) as u32);
            let sm_lanes = sim.get(ports.dsp_sm);
            let Some(&i) = index.get(&id).filter(|&&i| i < next) else {
                return Err(fail(&mut sim, format!("cycle {c}: dispatch of kernel id {id}, which is not a submitted kernel")));
            };
            if count == 0 || count > lanes {
                return Err(fail(&mut sim, format!("cycle {c}: dispatch of {count} blocks; allowed 1..{lanes}")));
            }
            if block as u64 + count as u64 > ks[i].blocks as u64 {
                let msg = format!("cycle {c}: kernel {id} dispatches blocks {block}..{} of {}", block as usize + count, ks[i].blocks);
                return Err(fail(&mut sim, msg));
            }
            for k in 0..count {
                let sm = ((sm_lanes >> (k as u32 * mb)) & mask(mb)) as u32;
                if sm >= p.sms {
                    return Err(fail(&mut sim, format!("cycle {c}: kernel {id} block {} on SM {sm}, past the {} SMs", block + k as u32, p.sms)));
                }
                let b = block + k as u32;
                trace.dispatches.push(BlockEvent { cycle: c, kernel: id, block: b, sm });
                let due = c + ks[i].duration + env.extra(i, b);
                running.insert((due, c, k as u32), Running { tag, kernel: i, block: b, sm });
            }
            last_progress = c;
        }
        if resolved == ks.len() && drain > 0 && (sim.get(ports.dsp_valid) == 1 || sim.get(ports.rej_valid) == 1) {
            return Err(fail(&mut sim, format!("cycle {c}: a dispatch or rejection after every kernel was resolved")));
        }
        sim.tick();
    }
    sim.trace_close();
    Ok((trace, timer.stats(&sim)))
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

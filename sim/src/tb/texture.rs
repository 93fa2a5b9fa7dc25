//! Testbench for the generated texture unit (docs/texture.md): the run
//! driver of "The run driver" offers the script's configuration writes and
//! operations one item at a time; `banks` in-order memories, filled with the
//! laid-out texture (junk above each texel and past each bank's end), answer
//! the read ports `mem_latency` cycles after each request (plus a random
//! delay with stalls); a sink takes the results, with random back-pressure
//! when stalled. Results, counters and `cycles` come back as the golden
//! model's [`Outcome`]; every value is read off the RTL's ports.

use super::{fail, hang, mask, take, LoopTimer, ReadPort, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::models::texture::{self as model, Item, Op, OpResult, Outcome, Workload};
use crate::rng::Rng;
use gpurtl_params::texture::{Format, OpKind, Stitch, TextureParams};
use std::collections::VecDeque;
use std::path::Path;

/// Randomized environment. Without one (what `gpurtl run` uses) every item
/// is offered as soon as it is next, every ready is high and each bank
/// answers exactly `mem_latency` cycles after a request: the timing the
/// model's `cycles` describes. With one, results and counters must be the
/// same, `cycles` is whatever the run took.
#[derive(Clone, Copy, Debug)]
pub struct TexStalls {
    /// Seeds the stall sequence and the junk on ignored inputs.
    pub seed: u64,
    /// Percent of cycles the driver holds back the next item (configuration
    /// write or operation) before offering it; once offered, an item stays
    /// on its port until its handshake.
    pub in_pct: u32,
    /// Percent of cycles `res_ready_i` is low.
    pub out_pct: u32,
    /// Percent of cycles each bank's `mem<b>_req_ready_i` is low.
    pub mem_ready_pct: u32,
    /// Each response comes a further 0..=`mem_delay_max` cycles (uniform)
    /// after the `mem_latency` ones; responses stay in request order.
    pub mem_delay_max: u32,
}

struct Ports {
    rst: PortHandle,
    cfg_valid: PortHandle,
    cfg_ready: PortHandle,
    cfg_addr: PortHandle,
    cfg_data: PortHandle,
    op_valid: PortHandle,
    op_ready: PortHandle,
    op_kind: PortHandle,
    op_u: PortHandle,
    op_v: PortHandle,
    op_level: PortHandle,
    op_channel: PortHandle,
    op_dx: PortHandle,
    op_dy: PortHandle,
    mem: Vec<ReadPort>,
    res_valid: PortHandle,
    res_ready: PortHandle,
    res_kind: PortHandle,
    res_data: PortHandle,
    res_stitch: PortHandle,
    res_subops: PortHandle,
    idle: PortHandle,
    reg_writes: PortHandle,
}

impl Ports {
    fn find(s: &Sim, banks: u32) -> Result<Ports, CosimError> {
        let mem = (0..banks).map(|b| ReadPort::find(s, &format!("mem{b}"))).collect::<Result<Vec<_>, CosimError>>()?;
        Ok(Ports {
            rst: s.port("rst_i")?,
            cfg_valid: s.port("cfg_valid_i")?,
            cfg_ready: s.port("cfg_ready_o")?,
            cfg_addr: s.port("cfg_addr_i")?,
            cfg_data: s.port("cfg_data_i")?,
            op_valid: s.port("op_valid_i")?,
            op_ready: s.port("op_ready_o")?,
            op_kind: s.port("op_kind_i")?,
            op_u: s.port("op_u_i")?,
            op_v: s.port("op_v_i")?,
            op_level: s.port("op_level_i")?,
            op_channel: s.port("op_channel_i")?,
            op_dx: s.port("op_dx_i")?,
            op_dy: s.port("op_dy_i")?,
            mem,
            res_valid: s.port("res_valid_o")?,
            res_ready: s.port("res_ready_i")?,
            res_kind: s.port("res_kind_o")?,
            res_data: s.port("res_data_o")?,
            res_stitch: s.port("res_stitch_o")?,
            res_subops: s.port("res_subops_o")?,
            idle: s.port("idle_o")?,
            reg_writes: s.port("reg_writes_o")?,
        })
    }

    /// The configuration and operation inputs, in one list.
    fn item_fields(&self) -> [PortHandle; 9] {
        [
            self.cfg_addr,
            self.cfg_data,
            self.op_kind,
            self.op_u,
            self.op_v,
            self.op_level,
            self.op_channel,
            self.op_dx,
            self.op_dy,
        ]
    }
}

/// One bank of texture memory and its in-order read queue.
struct Bank {
    words: Vec<u32>,
    /// Requests taken and not yet answered, oldest first: (the first cycle
    /// the answer may be on `rsp_valid`, the word it carries).
    queue: VecDeque<(u64, u32)>,
    /// The head's answer is on the port (held until `rsp_ready_o`).
    presenting: bool,
}

impl Bank {
    /// The word at `addr`: the texel with junk in the bits above it, or all
    /// junk past the bank's contents.
    fn word(&self, addr: u64, junk_bits: u32, junk: &mut Rng) -> u32 {
        let j = junk.next_u64() as u32;
        match self.words.get(addr as usize) {
            Some(&w) => w | (j & junk_bits),
            None => j,
        }
    }
}

/// The item's values on its port's fields, in the order of
/// [`Ports::item_fields`]; `None`: a field of the other port, junk every
/// cycle. Fields the op ignores (`op_dx_i`, `op_dy_i` outside gather4) get
/// junk chosen here, which stays put while the item is offered.
fn item_values(item: &Item, p: &TextureParams, junk: &mut Rng) -> [Option<u64>; 9] {
    match *item {
        Item::Cfg { addr, data } => [Some(addr), Some(data & mask(32)), None, None, None, None, None, None, None],
        Item::Op { kind, u, v, level, channel, dx, dy } => {
            let ob = p.offset_bits;
            let (dx, dy) = if kind == OpKind::Gather4 {
                (dx as u64 & mask(ob), dy as u64 & mask(ob))
            } else {
                // op_dx_i, op_dy_i are used by gather4 only.
                (junk.next_u64() & mask(ob), junk.next_u64() & mask(ob))
            };
            [None, None, Some(kind.code()), Some(u), Some(v), Some(level as u64), Some(channel as u64), Some(dx), Some(dy)]
        }
    }
}

/// Texel fetches an op makes (an upper bound on its bank passes).
fn fetches_of(op: &Op) -> u64 {
    match op {
        Op::Bilinear { .. } | Op::Gather4 { .. } => 4,
        Op::Nearest { .. } => 1,
        Op::ConvQuad { kernel, .. } => (kernel.width as u64 + 1) * (kernel.height as u64 + 1),
    }
}

/// The result on the `res` port, for op `index` of kind `want`.
fn read_result(sim: &Sim, ports: &Ports, p: &TextureParams, format: Format, want: OpKind, index: usize) -> Result<OpResult, String> {
    let code = sim.get(ports.res_kind);
    let kind = OpKind::from_code(code).ok_or_else(|| format!("result {index}: res_kind_o = {code} is no kind"))?;
    if kind != want {
        return Err(format!("result {index}: res_kind_o says {kind:?} but op {index} is {want:?}"));
    }
    let lw = p.lane_bits();
    let words = sim.words(ports.res_data);
    let lanes: Vec<u64> = (0..4).map(|n| take(words, lw * n, lw)).collect();
    let stitch = sim.get(ports.res_stitch);
    let subops = sim.get(ports.res_subops);
    if kind != OpKind::ConvQuad && (stitch != 0 || subops != 0) {
        return Err(format!("result {index} ({kind:?}): res_stitch_o = {stitch}, res_subops_o = {subops}; both must be 0"));
    }
    // A texel lane holds one channel: at most 16 bits, zero-extended.
    let texel_lanes = |n: usize| -> Result<Vec<u64>, String> {
        match lanes[..n].iter().position(|&l| l >> 16 != 0) {
            Some(k) => Err(format!("result {index} ({kind:?}): lane {k} = {:#x} has bits set above bit 15", lanes[k])),
            None => Ok(lanes[..n].to_vec()),
        }
    };
    Ok(match kind {
        OpKind::Bilinear | OpKind::Nearest => {
            let ch = format.channels() as usize;
            if let Some(k) = (ch..4).find(|&k| lanes[k] != 0) {
                return Err(format!("result {index} ({kind:?}): lane {k} = {:#x}, past the format's {ch} channels; must be 0", lanes[k]));
            }
            OpResult::Texel(texel_lanes(ch)?)
        }
        OpKind::Gather4 => {
            let t = texel_lanes(4)?;
            OpResult::Texels([t[0], t[1], t[2], t[3]])
        }
        OpKind::ConvQuad => {
            let ab = p.acc_bits;
            if let Some(k) = (0..4).find(|&k| lanes[k] >> ab != 0) {
                return Err(format!("result {index} (conv_quad): lane {k} = {:#x} is not {ab} bits zero-extended", lanes[k]));
            }
            let signed = |v: u64| if ab < 64 && v >> (ab - 1) & 1 == 1 { v as i64 - (1i64 << ab) } else { v as i64 };
            OpResult::Pixels {
                pixels: [signed(lanes[0]), signed(lanes[1]), signed(lanes[2]), signed(lanes[3])],
                stitch: Stitch::from_code(stitch).ok_or_else(|| format!("result {index}: res_stitch_o = {stitch} is no stitch code"))?,
                sub_ops: subops as u32,
            }
        }
    })
}

/// Run the workload's script through the RTL. `stalls`: random
/// back-pressure and memory delay (`None` for `gpurtl run`). `vcd`: a
/// waveform of the whole run.
pub fn run(
    compiled: &Compiled,
    p: &TextureParams,
    w: &Workload,
    stalls: Option<TexStalls>,
    vcd: Option<&Path>,
) -> Result<(Outcome, RunStats), CosimError> {
    let mut sim = compiled.start(vcd)?;
    let ports = Ports::find(&sim, p.banks)?;
    let script = model::script(p, w);
    let kinds: Vec<OpKind> = script
        .iter()
        .filter_map(|it| match it {
            Item::Op { kind, .. } => Some(*kind),
            Item::Cfg { .. } => None,
        })
        .collect();
    let n_results = kinds.len();
    let format = w.texture.format;
    // Texel bits: r8 8, r16 16, rgba8 32; the bits above get junk.
    let junk_bits = !(mask(format.channel_bits() * format.channels()) as u32);
    let mut banks: Vec<Bank> = model::bank_words(p, &w.texture)
        .into_iter()
        .map(|words| Bank { words, queue: VecDeque::new(), presenting: false })
        .collect();
    banks.resize_with(p.banks as usize, || Bank { words: Vec::new(), queue: VecDeque::new(), presenting: false });

    let mut stall_rng = Rng::new(stalls.map_or(0, |s| s.seed));
    let mut hold = |pct: fn(&TexStalls) -> u32| stalls.is_some_and(|s| stall_rng.chance(pct(&s)));
    let mut delay_rng = Rng::new(stalls.map_or(0, |s| s.seed) ^ 0x3c6e_f372_fe94_f82b);
    // Inputs that must not matter get junk: item fields off their handshake
    // or unused by the op, memory data while no answer is on the port, and
    // the bits of a memory word above its texel.
    let mut junk = Rng::new(stalls.map_or(0, |s| s.seed) ^ 0xa54f_f53a_5f1d_36f1);

    let latency = w.mem_latency as u64;
    let max_delay = stalls.map_or(0, |s| s.mem_delay_max) as u64;
    let fetches: u64 = model::all_ops(w).iter().map(fetches_of).sum();
    let per_step = latency + max_delay + 5;
    // Far beyond any run: a livelock guard; and a shorter one for a run in
    // which nothing moves at all.
    let limit = 1000 + 200 * (script.len() as u64 + fetches) * per_step;
    let quiet_limit = 10_000 + 20 * per_step;

    sim.set(ports.cfg_valid, 0);
    sim.set(ports.op_valid, 0);
    sim.set(ports.res_ready, 0);
    for f in ports.item_fields() {
        sim.set(f, 0);
    }
    for b in &ports.mem {
        sim.set(b.req_ready, 0);
        sim.set(b.rsp_valid, 0);
        sim.set(b.rsp_data, 0);
    }
    sim.reset(ports.rst, 2);
    let base = sim.cycle();
    let timer = LoopTimer::start(&sim);

    let mut results: Vec<OpResult> = Vec::with_capacity(n_results);
    let mut next = 0usize;
    let mut offering = false;
    let mut values: [Option<u64>; 9] = [None; 9];
    let mut ops_taken = 0usize;
    let mut last_handshake: Option<u64> = None;
    let mut last_progress = 0u64;
    let mut texel_fetches = 0u64;
    let drain = 2 * (latency + max_delay + 10);
    // Set once the last result is taken: the cycle the quiet check ends.
    let mut drain_end: Option<u64> = None;

    loop {
        let c = sim.cycle() - base;
        if drain_end.is_none() && next == script.len() && results.len() == n_results {
            drain_end = Some(c + drain);
        }
        if drain_end.is_some_and(|e| c >= e) {
            break;
        }
        if c > limit || c > last_progress + quiet_limit {
            let msg = format!(
                "at cycle {c}: {} of {n_results} results, {next} of {} script items taken, {texel_fetches} texel fetches",
                results.len(),
                script.len()
            );
            return Err(hang(&mut sim, msg));
        }

        // Driver: the first item not yet taken, on its own port.
        if !offering && next < script.len() && !hold(|s| s.in_pct) {
            offering = true;
            values = item_values(&script[next], p, &mut junk);
            let fields = ports.item_fields();
            if let Some((f, v)) = fields.iter().zip(values).find_map(|(f, v)| v.filter(|&v| v > mask(f.width())).map(|v| (f, v))) {
                // The workload, not the RTL, is at fault.
                let msg = format!("script item {next} ({:?}): {v:#x} does not fit the {}-bit port #{}", script[next], f.width(), f.index());
                sim.trace_close();
                return Err(CosimError::Io(msg));
            }
        }
        let item = offering.then(|| &script[next]);
        let is_cfg = matches!(item, Some(Item::Cfg { .. }));
        let is_op = matches!(item, Some(Item::Op { .. }));
        sim.set(ports.cfg_valid, is_cfg as u64);
        sim.set(ports.op_valid, is_op as u64);
        for (k, f) in ports.item_fields().into_iter().enumerate() {
            let v = match (offering, values[k]) {
                (true, Some(v)) => v,
                _ => junk.next_u64() & mask(f.width()),
            };
            sim.set(f, v);
        }

        // Memory: each bank answers its head once due, held until taken.
        let mut req_ready = [false; 4];
        for (b, (bank, bp)) in banks.iter_mut().zip(&ports.mem).enumerate() {
            req_ready[b] = !hold(|s| s.mem_ready_pct);
            sim.set(bp.req_ready, req_ready[b] as u64);
            if !bank.presenting && bank.queue.front().is_some_and(|&(due, _)| due <= c) {
                bank.presenting = true;
            }
            sim.set(bp.rsp_valid, bank.presenting as u64);
            let data = match bank.queue.front() {
                Some(&(_, word)) if bank.presenting => word,
                _ => junk.next_u64() as u32,
            };
            sim.set(bp.rsp_data, data as u64);
        }
        let res_ready = !hold(|s| s.out_pct);
        sim.set(ports.res_ready, res_ready as u64);
        sim.eval();

        let idle = sim.get(ports.idle);
        let cfg_ready = sim.get(ports.cfg_ready);
        if cfg_ready != idle {
            return Err(fail(&mut sim, format!("cycle {c}: cfg_ready_o = {cfg_ready} but idle_o = {idle}; they must be equal")));
        }
        // Idle exactly when every op taken has given its result.
        let empty = ops_taken == results.len();
        if (idle == 1) != empty {
            return Err(fail(
                &mut sim,
                format!("cycle {c}: idle_o = {idle} with {ops_taken} ops taken and {} results given", results.len()),
            ));
        }
        if is_cfg && sim.get(ports.op_ready) == 1 {
            return Err(fail(&mut sim, format!("cycle {c}: op_ready_o is high while cfg_valid_i is high")));
        }
        if drain_end.is_some() {
            let req = ports.mem.iter().position(|bp| sim.get(bp.req_valid) == 1);
            if sim.get(ports.res_valid) == 1 || req.is_some() {
                let what = match req {
                    Some(b) => format!("a read request on bank {b}"),
                    None => "a result".to_string(),
                };
                return Err(fail(&mut sim, format!("cycle {c}: {what} after the last of the {n_results} results")));
            }
        }

        if offering {
            let taken = if is_cfg { cfg_ready == 1 } else { sim.get(ports.op_ready) == 1 };
            if taken {
                ops_taken += is_op as usize;
                offering = false;
                next += 1;
                last_handshake = Some(c);
                last_progress = c;
            }
        }
        for (b, (bank, bp)) in banks.iter_mut().zip(&ports.mem).enumerate() {
            if req_ready[b] && sim.get(bp.req_valid) == 1 {
                let addr = sim.get(bp.req_addr);
                let extra = if max_delay > 0 { delay_rng.below(max_delay + 1) } else { 0 };
                let word = bank.word(addr, junk_bits, &mut junk);
                bank.queue.push_back((c + latency + extra, word));
                texel_fetches += 1;
                last_progress = c;
            }
            if bank.presenting && sim.get(bp.rsp_ready) == 1 {
                bank.queue.pop_front();
                bank.presenting = false;
                last_progress = c;
            }
        }
        if res_ready && sim.get(ports.res_valid) == 1 {
            let index = results.len();
            if index >= ops_taken {
                return Err(fail(&mut sim, format!("cycle {c}: result {index} before op {index} was taken ({ops_taken} ops taken)")));
            }
            match read_result(&sim, &ports, p, format, kinds[index], index) {
                Ok(r) => results.push(r),
                Err(e) => return Err(fail(&mut sim, format!("cycle {c}: {e}"))),
            }
            last_handshake = Some(c);
            last_progress = c;
        }
        sim.tick();
    }

    sim.eval();
    if sim.get(ports.idle) != 1 {
        return Err(fail(&mut sim, format!("idle_o is low {drain} cycles after the last result")));
    }
    if let Some((b, bank)) = banks.iter().enumerate().find(|(_, bank)| !bank.queue.is_empty()) {
        let msg = format!("bank {b}: {} read responses were never taken", bank.queue.len());
        return Err(fail(&mut sim, msg));
    }
    let register_writes = sim.get(ports.reg_writes);
    sim.trace_close();
    let image = model::conv_image(w, &results);
    let outcome = Outcome {
        n_ops: w.ops.len(),
        results,
        image,
        texel_fetches,
        register_writes,
        cycles: last_handshake.map_or(0, |h| h + 1),
    };
    Ok((outcome, timer.stats(&sim)))
}

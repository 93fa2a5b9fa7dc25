//! Testbench for the generated texture unit (docs/texture.md), built from
//! agents: [`TextureDriver`] (the run driver of "The run driver", offering
//! the script's configuration writes and operations one item at a time,
//! and a sink on the results, with the unit's port checks) and the memory
//! agents of [`memory_agents`] over one [`Memory`] holding the banks
//! interleaved word by word ([`memory_image`]): a native responder a bank
//! (`mem<b>`, in order, each bank's word `w` at byte `4*(w*banks + b)`),
//! or, when the design has an AXI4 master (`m_axi_arvalid`), the AXI4
//! slave on `m_axi_*`. Either way the read data has junk above each texel
//! and past the layout. Results, counters and `cycles` come back as the
//! golden model's [`Outcome`]; every value is read off the RTL's ports.

use super::agents::{agent_rng, shared, Agent, AxiRandom, AxiSlave, Bench, DataHook, Expect, MemRandom, MemResponder};
use super::agents::{NativePort, Pace, SharedMemory, StreamSink};
use super::{fail, mask, take, LoopTimer, RunStats};
use crate::cosim::{Compiled, CosimError, PortHandle, Sim};
use crate::mem::Memory;
use crate::models::texture::{self as model, Item, Op, OpResult, Outcome, Workload};
use crate::rng::Rng;
use gpurtl_params::texture::{Format, OpKind, Stitch, TextureParams};
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
    /// Percent of cycles each bank's `mem<b>_req_ready_i` is low (through
    /// AXI4: ARREADY; half as often, no R beat although one is due).
    pub mem_ready_pct: u32,
    /// Each response comes a further 0..=`mem_delay_max` cycles (uniform)
    /// after the `mem_latency` ones; responses stay in request order (per
    /// bank; through AXI4, the banks' bursts are reordered).
    pub mem_delay_max: u32,
}

/// The unit's ports under a prefix, and the memory request handshakes the
/// driver counts as texel fetches: each bank's native request, or the AXI4
/// master's AR (one a fetch) when the memory ports are under the prefix.
struct Ports {
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
    /// `op_all_channels_i`: only with `all_channels = true`.
    op_all_channels: Option<PortHandle>,
    op_dx: PortHandle,
    op_dy: PortHandle,
    res_valid: PortHandle,
    idle: PortHandle,
    reg_writes: PortHandle,
    /// (valid, ready, name) of each memory request channel.
    requests: Vec<(PortHandle, PortHandle, String)>,
}

impl Ports {
    fn find(s: &Sim, prefix: &str, p: &TextureParams) -> Result<Ports, CosimError> {
        let banks = p.banks;
        let port = |name: &str| s.port(&format!("{prefix}{name}"));
        // op_all_channels_i exists exactly with all_channels = true.
        let op_all_channels = if p.all_channels {
            Some(port("op_all_channels_i")?)
        } else if port("op_all_channels_i").is_ok() {
            return Err(CosimError::Io(format!("{prefix}op_all_channels_i: present, but the unit is built with all_channels = false (docs/texture.md)")));
        } else {
            None
        };
        let axi = format!("{prefix}m_axi_");
        let requests = if s.port(&format!("{axi}arvalid")).is_ok() {
            vec![(s.port(&format!("{axi}arvalid"))?, s.port(&format!("{axi}arready"))?, format!("{axi}ar"))]
        } else {
            let mut r = Vec::new();
            for b in 0..banks {
                let name = format!("{prefix}mem{b}");
                if let Ok(n) = NativePort::master(s, &name) {
                    r.push((n.req_valid, n.req_ready, format!("bank {b}")));
                }
            }
            r
        };
        Ok(Ports {
            cfg_valid: port("cfg_valid_i")?,
            cfg_ready: port("cfg_ready_o")?,
            cfg_addr: port("cfg_addr_i")?,
            cfg_data: port("cfg_data_i")?,
            op_valid: port("op_valid_i")?,
            op_ready: port("op_ready_o")?,
            op_kind: port("op_kind_i")?,
            op_u: port("op_u_i")?,
            op_v: port("op_v_i")?,
            op_level: port("op_level_i")?,
            op_channel: port("op_channel_i")?,
            op_all_channels,
            op_dx: port("op_dx_i")?,
            op_dy: port("op_dy_i")?,
            res_valid: port("res_valid_o")?,
            idle: port("idle_o")?,
            reg_writes: port("reg_writes_o")?,
            requests,
        })
    }

    /// The configuration and operation inputs, in one list (`None`:
    /// `op_all_channels_i` on a unit without it).
    fn item_fields(&self) -> [Option<PortHandle>; 10] {
        [
            Some(self.cfg_addr),
            Some(self.cfg_data),
            Some(self.op_kind),
            Some(self.op_u),
            Some(self.op_v),
            Some(self.op_level),
            Some(self.op_channel),
            self.op_all_channels,
            Some(self.op_dx),
            Some(self.op_dy),
        ]
    }
}

/// The item's values on its port's fields, in the order of
/// [`Ports::item_fields`]; `None`: a field of the other port, junk every
/// cycle. Fields the op ignores (`op_dx_i`, `op_dy_i` outside gather4,
/// `op_all_channels_i` outside conv_quad and on r8 and r16, `op_channel_i`
/// of an all-channel conv_quad) get junk chosen here, which stays put while
/// the item is offered.
fn item_values(item: &Item, p: &TextureParams, format: Format, junk: &mut Rng) -> [Option<u64>; 10] {
    match *item {
        Item::Cfg { addr, data } => [Some(addr), Some(data & mask(32)), None, None, None, None, None, None, None, None],
        Item::Op { kind, u, v, level, channel, all_channels, dx, dy } => {
            let ob = p.offset_bits;
            let (dx, dy) = if kind == OpKind::Gather4 {
                (dx as u64 & mask(ob), dy as u64 & mask(ob))
            } else {
                // op_dx_i, op_dy_i are used by gather4 only.
                (junk.next_u64() & mask(ob), junk.next_u64() & mask(ob))
            };
            let conv = kind == OpKind::ConvQuad;
            // op_all_channels_i is read by conv_quad only; op_channel_i is
            // ignored when it is set (an all-channel op on rgba8, or on r8
            // and r16 where the channel is 0 anyway: the script drives 0 there).
            let all = if conv && format == Format::Rgba8 { all_channels as u64 } else { junk.next_u64() & 1 };
            let channel = if conv && all_channels { junk.next_u64() & 3 } else { channel as u64 };
            [None, None, Some(kind.code()), Some(u), Some(v), Some(level as u64), Some(channel), Some(all), Some(dx), Some(dy)]
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

/// Result `index` as the sink took it from the `res` port, for an op of
/// kind `want` (`all`: an all-channel conv_quad, 16 sums).
fn read_result(res: &StreamSink, p: &TextureParams, format: Format, want: OpKind, all: bool, index: usize) -> Result<OpResult, String> {
    let code = res.field_u64(index, 0);
    let kind = OpKind::from_code(code).ok_or_else(|| format!("result {index}: res_kind_o = {code} is no kind"))?;
    if kind != want {
        return Err(format!("result {index}: res_kind_o says {kind:?} but op {index} is {want:?}"));
    }
    let lw = p.lane_bits();
    let words = res.field(index, 1);
    let lanes: Vec<u64> = (0..p.lanes()).map(|n| take(words, lw * n, lw)).collect();
    // Lanes 4..15 carry only an all-channel conv_quad's g, b, a sums.
    let used = if all { 16 } else { 4 };
    if let Some(k) = (used..lanes.len()).find(|&k| lanes[k] != 0) {
        return Err(format!("result {index} ({kind:?}): lane {k} = {:#x}; must be 0", lanes[k]));
    }
    let codes = res.field(index, 2);
    let max = p.max_subops();
    let code_at = |s: u32| take(codes, 2 * s, 2);
    let subops = res.field_u64(index, 3);
    if kind != OpKind::ConvQuad && (subops != 0 || (0..max).any(|s| code_at(s) != 0)) {
        return Err(format!("result {index} ({kind:?}): res_stitch_o = {codes:x?}, res_subops_o = {subops}; both must be 0"));
    }
    if subops > max as u64 {
        return Err(format!("result {index}: res_subops_o = {subops}, more than the {max} sub-operations of the largest kernel"));
    }
    // Codes past the sub-operation count are 0.
    if let Some(s) = (subops as u32..max).find(|&s| code_at(s) != 0) {
        return Err(format!("result {index}: res_stitch_o slot {s} = {} past the {subops} sub-operations; must be 0", code_at(s)));
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
            if let Some(k) = (0..used).find(|&k| lanes[k] >> ab != 0) {
                return Err(format!("result {index} (conv_quad): lane {k} = {:#x} is not {ab} bits zero-extended", lanes[k]));
            }
            let signed = |v: u64| if ab < 64 && v >> (ab - 1) & 1 == 1 { v as i64 - (1i64 << ab) } else { v as i64 };
            let stitch = (0..subops as u32)
                .map(|s| Stitch::from_code(code_at(s)).ok_or_else(|| format!("result {index}: res_stitch_o slot {s} = {} is no stitch code", code_at(s))))
                .collect::<Result<Vec<_>, _>>()?;
            OpResult::Pixels { pixels: lanes[..used].iter().map(|&v| signed(v)).collect(), stitch, sub_ops: subops as u32 }
        }
    })
}


/// The run driver and the result sink of a texture unit whose ports are
/// named `<prefix>...` (`""` for the unit on its own), with the unit's
/// checks: `cfg_ready_o` = `idle_o`; idle exactly when every op taken has
/// its result; `op_ready_o` low while a configuration write is offered;
/// results decoded and checked as they are taken, none before its op and
/// none after the last; no memory request (on the memory ports under the
/// prefix) after the last result; `idle_o` high at the end.
pub struct TextureDriver {
    name: String,
    p: TextureParams,
    ports: Ports,
    script: Vec<Item>,
    kinds: Vec<OpKind>,
    /// Per op: whether it is all-channel (16 sums).
    alls: Vec<bool>,
    format: Format,
    /// The workload's ops (`n_ops`) and conv section, for the outcome.
    w: Workload,
    next: usize,
    offering: bool,
    values: [Option<u64>; 10],
    pace: Pace,
    rng: Rng,
    /// Junk on inputs that must not matter.
    junk: Rng,
    ops_taken: usize,
    res: StreamSink,
    results: Vec<OpResult>,
    fetches: u64,
    start: Option<u64>,
    last_handshake: Option<u64>,
    progress: u64,
}

impl TextureDriver {
    /// The driver for workload `w` (its script, [`model::script`]). An item
    /// value that does not fit its port is the workload's fault:
    /// [`CosimError::Io`].
    pub fn new(sim: &Sim, prefix: &str, p: &TextureParams, w: &Workload, stalls: Option<TexStalls>) -> Result<TextureDriver, CosimError> {
        let ports = Ports::find(sim, prefix, p)?;
        let script = model::script(p, w);
        let fields = ports.item_fields();
        let mut probe = Rng::new(0);
        for (i, item) in script.iter().enumerate() {
            let values = item_values(item, p, w.texture.format, &mut probe);
            if !p.all_channels && matches!(item, Item::Op { kind: OpKind::ConvQuad, all_channels: true, .. }) && w.texture.format == Format::Rgba8 {
                let msg = format!("script item {i} ({item:?}): an all-channel conv_quad, but the unit is built with all_channels = false");
                return Err(CosimError::Io(msg));
            }
            if let Some((f, v)) = fields.iter().zip(values).find_map(|(f, v)| (*f).zip(v).filter(|&(f, v)| v > mask(f.width()))) {
                let msg = format!("script item {i} ({item:?}): {v:#x} does not fit the {}-bit port #{}", f.width(), f.index());
                return Err(CosimError::Io(msg));
            }
        }
        let kinds: Vec<OpKind> = script
            .iter()
            .filter_map(|it| match it {
                Item::Op { kind, .. } => Some(*kind),
                Item::Cfg { .. } => None,
            })
            .collect();
        let format = w.texture.format;
        let alls: Vec<bool> = script
            .iter()
            .filter_map(|it| match it {
                Item::Op { kind, all_channels, .. } => Some(*kind == OpKind::ConvQuad && *all_channels && format == Format::Rgba8),
                Item::Cfg { .. } => None,
            })
            .collect();
        let seed = stalls.map_or(0, |s| s.seed);
        let name = format!("{prefix}texture");
        let res = StreamSink::find(sim, &format!("{prefix}res"), &["kind", "data", "stitch", "subops"])?
            .seed(seed)
            .pace(Pace::random_or_steady(stalls.map(|s| s.out_pct)))
            .expect(Expect::Items(kinds.len()));
        Ok(TextureDriver {
            p: p.clone(),
            ports,
            results: Vec::with_capacity(kinds.len()),
            kinds,
            alls,
            script,
            format: w.texture.format,
            w: w.clone(),
            next: 0,
            offering: false,
            values: [None; 10],
            pace: Pace::random_or_steady(stalls.map(|s| s.in_pct)),
            rng: agent_rng(seed, &name),
            junk: agent_rng(seed, &format!("{name} junk")),
            ops_taken: 0,
            res,
            fetches: 0,
            start: None,
            last_handshake: None,
            progress: 0,
            name,
        })
    }

    /// The outcome once the bench has run: the results, the conv image,
    /// the texel fetches counted on the memory ports under the prefix (0
    /// when there are none: a composed design's shared memory port),
    /// `reg_writes_o`, and `cycles`, from the first cycle the driver drove
    /// to its last handshake. Fails if `idle_o` is low.
    pub fn outcome(&self, sim: &mut Sim) -> Result<Outcome, CosimError> {
        let w = &self.w;
        sim.eval();
        if sim.get(self.ports.idle) != 1 {
            return Err(fail(sim, format!("{}: idle_o is low at the end, after the last result", self.name)));
        }
        let results = self.results.clone();
        let image = model::conv_image(w, &results);
        let cycles = match (self.start, self.last_handshake) {
            (Some(s), Some(h)) => h - s + 1,
            _ => 0,
        };
        Ok(Outcome { n_ops: w.ops.len(), results, image, texel_fetches: self.fetches, register_writes: sim.get(self.ports.reg_writes), cycles })
    }

    fn finished(&self) -> bool {
        self.next == self.script.len() && self.results.len() == self.kinds.len()
    }
}

impl Agent for TextureDriver {
    fn name(&self) -> &str {
        &self.name
    }

    fn drive(&mut self, sim: &mut Sim) {
        let now = sim.cycle();
        self.start.get_or_insert(now);
        if !self.offering && self.next < self.script.len() && !self.pace.stall(&mut self.rng, now) {
            self.offering = true;
            self.values = item_values(&self.script[self.next], &self.p, self.format, &mut self.junk);
        }
        let item = self.offering.then(|| &self.script[self.next]);
        sim.set(self.ports.cfg_valid, matches!(item, Some(Item::Cfg { .. })) as u64);
        sim.set(self.ports.op_valid, matches!(item, Some(Item::Op { .. })) as u64);
        for (k, f) in self.ports.item_fields().into_iter().enumerate() {
            let Some(f) = f else { continue };
            let v = match (self.offering, self.values[k]) {
                (true, Some(v)) => v,
                _ => self.junk.next_u64() & mask(f.width()),
            };
            sim.set(f, v);
        }
        self.res.drive(sim);
    }

    fn sample(&mut self, sim: &Sim) -> Result<(), String> {
        let now = sim.cycle();
        let ports = &self.ports;
        let is_cfg = self.offering && matches!(self.script[self.next], Item::Cfg { .. });
        let (idle, cfg_ready) = (sim.get(ports.idle), sim.get(ports.cfg_ready));
        if cfg_ready != idle {
            return Err(format!("cfg_ready_o = {cfg_ready} but idle_o = {idle}; they must be equal"));
        }
        // Idle exactly when every op taken has given its result.
        if (idle == 1) != (self.ops_taken == self.results.len()) {
            return Err(format!("idle_o = {idle} with {} ops taken and {} results given", self.ops_taken, self.results.len()));
        }
        if is_cfg && sim.get(ports.op_ready) == 1 {
            return Err("op_ready_o is high while cfg_valid_i is high".into());
        }
        let req = ports.requests.iter().find(|r| sim.get(r.0) == 1);
        if self.finished() {
            if let Some(r) = req {
                return Err(format!("a read request on {} after the last of the {} results", r.2, self.kinds.len()));
            }
            if sim.get(ports.res_valid) == 1 {
                return Err(format!("a result after the last of the {} results", self.kinds.len()));
            }
        }
        if self.offering {
            let taken = if is_cfg { cfg_ready == 1 } else { sim.get(ports.op_ready) == 1 };
            if taken {
                self.ops_taken += !is_cfg as usize;
                self.offering = false;
                self.next += 1;
                self.last_handshake = Some(now);
                self.progress += 1;
            }
        }
        for r in &ports.requests {
            if sim.get(r.0) == 1 && sim.get(r.1) == 1 {
                self.fetches += 1;
            }
        }
        let index = self.results.len();
        self.res.sample(sim)?;
        if self.res.items().len() > index {
            if index >= self.ops_taken {
                return Err(format!("result {index} before op {index} was taken ({} ops taken)", self.ops_taken));
            }
            self.results.push(read_result(&self.res, &self.p, self.format, self.kinds[index], self.alls[index], index)?);
            self.last_handshake = Some(now);
            self.progress += 1;
        }
        Ok(())
    }

    fn done(&self) -> bool {
        self.finished()
    }

    fn waiting(&self) -> String {
        format!("{} of {} results, {} of {} script items taken, {} texel fetches", self.results.len(), self.kinds.len(), self.next, self.script.len(), self.fetches)
    }

    fn progress(&self) -> u64 {
        self.progress + self.fetches
    }
}

/// The workload's memory: the banks interleaved word by word, bank `b`'s
/// word `w` the little-endian dword at byte `4*(w*banks + b)`
/// ([`model::interleaved`]), zero elsewhere. The native banks read it
/// through that map, the AXI4 slave as it is.
pub fn memory_image(p: &TextureParams, w: &Workload) -> Memory {
    model::interleaved(p, &w.texture)
}

/// Junk where the memory's contents must not matter: the bits of a word
/// above its texel, and whole words past the layout (byte addresses of the
/// interleaved image).
fn junk_hook(p: &TextureParams, w: &Workload, seed: u64, name: &str) -> DataHook {
    let format = w.texture.format;
    // Texel bits: r8 8, r16 16, rgba8 32; the bits above get junk.
    let junk_bits = !(mask(format.channel_bits() * format.channels()) as u32);
    let words = model::bank_words(p, &w.texture).first().map_or(0, |b| b.len()) as u64;
    let banks = p.banks as u64;
    let mut junk = agent_rng(seed, &format!("{name} junk"));
    Box::new(move |addr, data| {
        let j = junk.next_u64() as u32;
        data[0] = if addr / 4 / banks < words { data[0] | (j & junk_bits) } else { j };
    })
}

/// The memory behind the unit `<prefix>`, over `mem` (holding
/// [`memory_image`] at byte 0): the AXI4 slave on `<prefix>m_axi_*` when
/// the design has `<prefix>m_axi_arvalid` (`mem_if=axi4`; deterministic
/// latency [`super::axi_latency`] of the workload's), else a native
/// responder on each bank `<prefix>mem<b>`. Junk above each texel and past
/// the layout either way.
pub fn memory_agents(sim: &Sim, prefix: &str, p: &TextureParams, w: &Workload, mem: SharedMemory, stalls: Option<TexStalls>) -> Result<Vec<Box<dyn Agent>>, CosimError> {
    let seed = stalls.map_or(0, |s| s.seed);
    let axi = format!("{prefix}m_axi_");
    if sim.port(&format!("{axi}arvalid")).is_ok() {
        let lat = super::axi_latency(w.mem_latency);
        let mut a = AxiSlave::new(sim, &axi, mem, lat)?;
        a = a.data_hook(junk_hook(p, w, seed, &axi));
        if let Some(s) = stalls {
            a = a.random(AxiRandom {
                seed,
                latency: (lat, lat + s.mem_delay_max),
                ar_stall: s.mem_ready_pct,
                aw_stall: 0,
                w_stall: 0,
                r_gap: s.mem_ready_pct / 2,
                b_gap: 0,
            });
        }
        return Ok(vec![Box::new(a)]);
    }
    let banks = p.banks as u64;
    let mut agents: Vec<Box<dyn Agent>> = Vec::new();
    for b in 0..banks {
        let name = format!("{prefix}mem{b}");
        let mut r = MemResponder::new(NativePort::master(sim, &name)?, mem.clone(), w.mem_latency)
            .map(Box::new(move |word| 4 * (word * banks + b)))
            .data_hook(junk_hook(p, w, seed, &name));
        if let Some(s) = stalls {
            let lat = w.mem_latency;
            r = r.random(MemRandom { seed, latency: (lat, lat + s.mem_delay_max), req_stall: s.mem_ready_pct, rsp_stall: 0 });
        }
        agents.push(Box::new(r));
    }
    Ok(agents)
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
    let rst = sim.port("rst_i")?;
    let mut driver = match TextureDriver::new(&sim, "", p, w, stalls) {
        Ok(d) => d,
        Err(e) => {
            sim.trace_close();
            return Err(e);
        }
    };
    let mut memory = memory_agents(&sim, "", p, w, shared(memory_image(p, w)), stalls)?;
    sim.reset(rst, 2);
    let timer = LoopTimer::start(&sim);
    let latency = w.mem_latency as u64;
    let max_delay = stalls.map_or(0, |s| s.mem_delay_max) as u64;
    let fetches: u64 = model::all_ops(w).iter().map(fetches_of).sum();
    let per_step = latency + max_delay + 5;
    // Far beyond any run: a livelock guard; and a shorter one for a run in
    // which nothing moves at all.
    let budget = 1000 + 200 * (driver.script.len() as u64 + fetches) * per_step;
    let bench = Bench::new(budget).quiet(10_000 + 20 * per_step).drain(2 * (latency + max_delay + 10));
    let mut agents: Vec<&mut dyn Agent> = vec![&mut driver];
    agents.extend(memory.iter_mut().map(|m| &mut **m as &mut dyn Agent));
    bench.run(&mut sim, &mut agents)?;
    let outcome = driver.outcome(&mut sim)?;
    sim.trace_close();
    Ok((outcome, timer.stats(&sim)))
}

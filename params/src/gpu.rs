//! Parameters of the integrated top (docs/gpu.md): its own, the compute
//! units' (nested as `cu.*`), and the parts' parameters it derives.

use crate::cmdproc::CmdprocParams;
use crate::cu::CuParams;
use crate::scheduler::{Policy, SchedulerParams, StreamOrder};
use crate::{clog2, nested_table, BlockParams, Checker, MemIf, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GpuParams {
    pub queues: u32,
    pub units: u32,
    pub data_bits: u32,
    pub threads: u32,
    pub block_bits: u32,
    pub policy: Policy,
    pub age_threshold: u32,
    pub cu: CuParams,
}

impl Default for GpuParams {
    fn default() -> Self {
        GpuParams {
            queues: 2,
            units: 2,
            data_bits: 64,
            threads: 1024,
            block_bits: 16,
            policy: Policy::BestFit,
            age_threshold: 512,
            cu: CuParams { tag_bits: 8, ..CuParams::default() },
        }
    }
}

impl GpuParams {
    /// Scratchpad bytes of a compute unit (`SB`).
    pub fn smem_bytes(&self) -> u32 {
        self.cu.banks * self.cu.words * 4
    }
    /// Queue index bits `qb`.
    pub fn queue_bits(&self) -> u32 {
        clog2(self.queues as u64).max(1)
    }
    /// A unit's slot (share) index bits `sb`.
    pub fn share_bits(&self) -> u32 {
        clog2(self.cu.slots as u64).max(1)
    }
    /// The completion tag a `cu` carries: queue, scheduler tag, share.
    pub fn cu_tag_bits(&self) -> u32 {
        self.queue_bits() + self.scheduler().tag_bits() + self.share_bits()
    }
    /// Each queue's command processor.
    pub fn cmdproc(&self) -> CmdprocParams {
        CmdprocParams {
            fetch_bits: self.data_bits,
            max_threads: (self.threads / self.cu.slots).max(1),
            max_regs: self.cu.regs / self.cu.slots,
            max_smem: self.smem_bytes() / self.cu.slots,
            block_bits: self.block_bits,
            mem_if: MemIf::Native,
            ..CmdprocParams::presets().into_iter().find(|(n, _)| *n == "compute").expect("cmdproc has a compute preset").1
        }
    }
    /// The scheduler: a stream a queue, an SM a unit.
    pub fn scheduler(&self) -> SchedulerParams {
        SchedulerParams {
            streams: self.queues,
            sms: self.units,
            sm_threads: self.threads,
            sm_regs: self.cu.regs,
            sm_smem: self.smem_bytes(),
            sm_slots: self.cu.slots,
            queue_depth: 1,
            policy: self.policy,
            age_threshold: self.age_threshold,
            reserve: false,
            dispatch_width: 1,
            stream_order: StreamOrder::Dispatch,
            id_bits: self.queue_bits(),
            block_bits: self.block_bits,
            prio_bits: 2,
        }
    }
}

/// The host's register map (docs/gpu.md, "Registers"): byte offsets.
pub mod reg {
    /// Queue `q`'s command processor registers are at `QUEUE * q + offset`
    /// (`cmdproc::reg`).
    pub const QUEUE: u32 = 0x100;
    /// The top's per-queue registers: `TOP + TOP_QUEUE * q + offset`.
    pub const TOP: u32 = 0x400;
    pub const TOP_QUEUE: u32 = 0x20;
    pub const PRIORITY: u32 = 0x00;
    pub const FENCES: u32 = 0x04;
    pub const KERNELS: u32 = 0x08;
    pub const KERR_MASK: u32 = 0x0C;
    pub const KERR_ADDR: u32 = 0x10;
    pub const KERR_BLOCKS: u32 = 0x14;
    pub const STATUS: u32 = 0x480;
    pub const IRQ_ENABLE: u32 = 0x484;
    pub const IRQ_STATUS: u32 = 0x488;
    /// The byte address of queue `q`'s command processor register `offset`.
    pub fn queue(q: usize, offset: u32) -> u32 {
        QUEUE * q as u32 + offset
    }
    /// The byte address of the top's register `offset` of queue `q`.
    pub fn top(q: usize, offset: u32) -> u32 {
        TOP + TOP_QUEUE * q as u32 + offset
    }
}

impl BlockParams for GpuParams {
    const BLOCK: &'static str = "gpu";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max, rule| ParamKind::Int { min, max, rule };
        let mut t = vec![
            ParamInfo::new("queues", int(1, 4, ""), "PM4 rings, one command processor (compute mode) each; queue q's kernels are the scheduler's stream q"),
            ParamInfo::new("units", int(1, 8, ""), "compute units: the scheduler's SMs"),
            ParamInfo::new("data_bits", int(32, 128, "32, 64 or 128"), "the AXI4 master's data width (and each queue's fetch_bits)"),
            ParamInfo::new("threads", int(1, 4096, ""), "threads a compute unit holds (the resource table's accounting; a block runs as one instruction stream)"),
            ParamInfo::new("block_bits", int(1, 20, ""), "a kernel has at most 2^block_bits - 1 blocks"),
            ParamInfo::new("policy", ParamKind::Choice(Policy::NAMES), "the scheduler's pick among the queues' kernels (docs/scheduler.md)"),
            ParamInfo::new("age_threshold", int(0, 65534, ""), "the scheduler's aging: cycles a kernel may wait before it goes first; 0 off"),
        ];
        t.extend(nested_table("cu", CuParams::table()));
        t
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        c.int(&t, "queues", self.queues as i64, true);
        c.int(&t, "units", self.units as i64, true);
        c.int(&t, "data_bits", self.data_bits as i64, matches!(self.data_bits, 32 | 64 | 128));
        c.int(&t, "threads", self.threads as i64, true);
        c.int(&t, "block_bits", self.block_bits as i64, true);
        c.int(&t, "age_threshold", self.age_threshold as i64, true);
        let cu_ok = self.cu.validate();
        let cu_valid = cu_ok.is_ok();
        c.nested("cu", cu_ok);
        if !cu_valid {
            // The rules below divide by the unit's slots and read its sizes.
            return c.finish();
        }
        c.check(self.cu.mem_if == MemIf::Native, "cu.mem_if", self.cu.mem_if.name(), "native: the top joins the units' memory ports itself".to_string());
        let need = self.cu_tag_bits();
        c.check(
            self.cu.tag_bits >= need,
            "cu.tag_bits",
            self.cu.tag_bits,
            format!("at least {need}: a completion carries the queue, the scheduler's tag and the share"),
        );
        c.check(
            self.threads >= self.cu.slots,
            "threads",
            self.threads,
            format!("at least cu.slots ({}): each slot holds threads / cu.slots", self.cu.slots),
        );
        if let Err(e) = self.scheduler().validate() {
            for x in e.0 {
                c.check(false, &format!("scheduler.{}", x.field), x.value, format!("{} (the top derives the scheduler's parameters: docs/gpu.md)", x.allowed));
            }
        }
        if let Err(e) = self.cmdproc().validate() {
            for x in e.0 {
                c.check(false, &format!("cmdproc.{}", x.field), x.value, format!("{} (the top derives each queue's command processor: docs/gpu.md)", x.allowed));
            }
        }
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "two queues, two compute units (the cu's defaults), a 64-bit AXI4 port",
            "small" => "one queue, one small compute unit (the cu's small preset with 64 instructions, 32 registers and 2 KiB of scratchpad), a 32-bit AXI4 port: the quickest cosimulation",
            "fpga" => "two queues, two of small's compute units, a 64-bit AXI4 port: sized for an ECP5 LFE5U-85F (gpurtl synth gpu --preset fpga --target ecp5-85k)",
            _ => "",
        }
    }

    fn presets() -> Vec<(&'static str, Self)> {
        // The cu's small preset with room for the example kernels (64
        // instructions, 32 registers, a 2 KiB scratchpad): `small`'s and
        // `fpga`'s unit.
        let small_unit = || CuParams { tag_bits: 8, imem_depth: 64, regs: 32, words: 512, ..CuParams::presets()[1].1.clone() };
        vec![
            ("default", Self::default()),
            ("small", GpuParams {
                queues: 1,
                units: 1,
                data_bits: 32,
                threads: 64,
                cu: small_unit(),
                ..Self::default()
            }),
            ("fpga", GpuParams {
                queues: 2,
                units: 2,
                threads: 64,
                // small's unit: two of the default's would not leave room
                // for the queues on the LFE5U-85F (26,778 LUT each).
                cu: small_unit(),
                ..Self::default()
            }),
        ]
    }
}

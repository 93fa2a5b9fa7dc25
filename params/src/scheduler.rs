//! Parameters of the resource-table kernel scheduler (docs/scheduler.md).

use crate::{bits_for, clog2, BlockParams, Checker, ParamErrors, ParamInfo, ParamKind};
use serde::{Deserialize, Serialize};

param_enum! {
    /// How the stream scheduler picks among the stream heads.
    pub enum Policy {
        /// Streams in turn; a head that does not fit holds its turn (the baseline).
        Rr = "rr",
        /// The head that leaves the least over on the SM it would use.
        BestFit = "best_fit",
        /// The head that needs the least.
        Least = "least",
        /// The highest-priority head, then the longest waiting.
        Priority = "priority",
    }
}

param_enum! {
    /// When a stream's next kernel may start.
    pub enum StreamOrder {
        /// Once the previous kernel's last block is dispatched.
        Dispatch = "dispatch",
        /// Once the previous kernel's last block has completed.
        Complete = "complete",
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchedulerParams {
    pub streams: u32,
    pub sms: u32,
    pub sm_threads: u32,
    pub sm_regs: u32,
    pub sm_smem: u32,
    pub sm_slots: u32,
    pub queue_depth: u32,
    pub policy: Policy,
    pub age_threshold: u32,
    pub reserve: bool,
    pub dispatch_width: u32,
    pub stream_order: StreamOrder,
    pub id_bits: u32,
    pub block_bits: u32,
    pub prio_bits: u32,
}

impl Default for SchedulerParams {
    fn default() -> Self {
        SchedulerParams {
            streams: 4,
            sms: 8,
            sm_threads: 2048,
            sm_regs: 65536,
            sm_smem: 65536,
            sm_slots: 16,
            queue_depth: 4,
            policy: Policy::BestFit,
            age_threshold: 512,
            reserve: false,
            dispatch_width: 1,
            stream_order: StreamOrder::Dispatch,
            id_bits: 16,
            block_bits: 16,
            prio_bits: 2,
        }
    }
}

/// Age counters' width: ages saturate at 2^AGE_BITS - 1.
pub const AGE_BITS: u32 = 16;
/// Width of the policy scores.
pub const SCORE_BITS: u32 = 10;

impl SchedulerParams {
    /// Stream index bits.
    pub fn stream_bits(&self) -> u32 {
        clog2(self.streams as u64).max(1)
    }
    /// SM index bits.
    pub fn sm_bits(&self) -> u32 {
        clog2(self.sms as u64).max(1)
    }
    /// Kernel tag bits: a tag is the stream index above the entry index,
    /// `(stream << entry_bits) | entry`.
    pub fn tag_bits(&self) -> u32 {
        self.stream_bits() + self.entry_bits()
    }
    /// Queue entry index bits.
    pub fn entry_bits(&self) -> u32 {
        clog2(self.queue_depth as u64).max(1)
    }
    /// Need widths: threads, registers, shared memory (each can express a
    /// need above the capacity, which is rejected).
    pub fn thread_bits(&self) -> u32 {
        bits_for(self.sm_threads as u64)
    }
    pub fn reg_bits(&self) -> u32 {
        bits_for(self.sm_regs as u64)
    }
    pub fn smem_bits(&self) -> u32 {
        bits_for(self.sm_smem as u64)
    }
    /// Width of an SM's free block slot count.
    pub fn slots_bits(&self) -> u32 {
        bits_for(self.sm_slots as u64)
    }
    /// `dsp_count_o`/`cpl_count_i` width: counts 1..dispatch_width.
    pub fn count_bits(&self) -> u32 {
        bits_for(self.dispatch_width as u64)
    }
    /// Aging is on: a threshold and a policy other than round-robin.
    pub fn aging(&self) -> bool {
        self.age_threshold > 0 && self.policy != Policy::Rr
    }
    /// The right shift that scales a resource of capacity `cap` to 8 bits
    /// in the policy scores.
    pub fn score_shift(cap: u32) -> u32 {
        bits_for(cap as u64).saturating_sub(8)
    }
}

impl BlockParams for SchedulerParams {
    const BLOCK: &'static str = "scheduler";

    fn table() -> Vec<ParamInfo> {
        let int = |min, max| ParamKind::Int { min, max, rule: "" };
        vec![
            ParamInfo::new("streams", int(1, 16), "kernel streams, S"),
            ParamInfo::new("sms", int(1, 64), "streaming multiprocessors, M"),
            ParamInfo::new("sm_threads", int(1, 4096), "threads per SM"),
            ParamInfo::new("sm_regs", int(1, 262144), "registers per SM"),
            ParamInfo::new("sm_smem", int(1, 262144), "shared memory bytes per SM"),
            ParamInfo::new("sm_slots", int(1, 64), "block slots per SM (blocks resident at once)"),
            ParamInfo::new("queue_depth", int(1, 16), "kernels per stream queue, Q"),
            ParamInfo::new("policy", ParamKind::Choice(Policy::NAMES), "how a stream head is picked; rr is the baseline"),
            ParamInfo::new("age_threshold", int(0, 65534), "cycles a head may wait before it goes first; 0 turns aging off"),
            ParamInfo::new(
                "reserve",
                ParamKind::Bool,
                "an aged head that has not started and does not fit stops dispatch until it fits (bounds the wait; needs aging: age_threshold > 0 and policy not rr)",
            ),
            ParamInfo::new("dispatch_width", int(1, 8), "blocks dispatched (and completions taken) per cycle, W; at most sms and 2^block_bits - 1"),
            ParamInfo::new(
                "stream_order",
                ParamKind::Choice(StreamOrder::NAMES),
                "dispatch = a stream's next kernel starts after the last block is dispatched; complete = after it completed",
            ),
            ParamInfo::new("id_bits", int(1, 32), "kernel id width"),
            ParamInfo::new("block_bits", int(1, 20), "block count width: a kernel has 1 to 2^block_bits - 1 blocks"),
            ParamInfo::new("prio_bits", int(1, 4), "kernel priority width"),
        ]
    }

    fn validate(&self) -> Result<(), ParamErrors> {
        let t = Self::table();
        let mut c = Checker::default();
        for (name, v) in [
            ("streams", self.streams),
            ("sms", self.sms),
            ("sm_threads", self.sm_threads),
            ("sm_regs", self.sm_regs),
            ("sm_smem", self.sm_smem),
            ("sm_slots", self.sm_slots),
            ("queue_depth", self.queue_depth),
            ("age_threshold", self.age_threshold),
            ("dispatch_width", self.dispatch_width),
            ("id_bits", self.id_bits),
            ("block_bits", self.block_bits),
            ("prio_bits", self.prio_bits),
        ] {
            c.int(&t, name, v as i64, true);
        }
        if (1..=8).contains(&self.dispatch_width) && (1..=64).contains(&self.sms) && (1..=20).contains(&self.block_bits) {
            let most_blocks = (1u32 << self.block_bits) - 1;
            c.check(
                self.dispatch_width <= self.sms && self.dispatch_width <= most_blocks,
                "dispatch_width",
                self.dispatch_width,
                format!(
                    "at most sms ({}) and at most 2^block_bits - 1 ({most_blocks}): one block per SM per cycle, of one kernel",
                    self.sms
                ),
            );
        }
        if self.reserve {
            c.check(
                self.aging(),
                "reserve",
                self.reserve,
                format!(
                    "false unless aging is on (age_threshold {} and policy {}): reserve needs age_threshold > 0 and a policy other than rr",
                    self.age_threshold, self.policy
                ),
            );
        }
        c.finish()
    }

    fn preset_doc(name: &str) -> &'static str {
        match name {
            "default" => "4 streams over 8 SMs, best fit",
            "rr" => "round robin: the baseline of the policy figures",
            "wide" => "16 streams over 64 SMs, queues of 8, 4 blocks a cycle",
            "cuda" => "as CUDA streams: a stream's kernels run one after another, and an aged head that does not fit holds dispatch until it fits",
            "small" => "2 streams over 2 SMs: fits the iCE40-HX8K",
            _ => "",
        }
    }

    fn presets() -> Vec<(&'static str, Self)> {
        let d = Self::default();
        vec![
            ("default", d.clone()),
            ("rr", SchedulerParams { policy: Policy::Rr, ..d.clone() }),
            ("wide", SchedulerParams { streams: 16, sms: 64, queue_depth: 8, dispatch_width: 4, ..d.clone() }),
            ("cuda", SchedulerParams { stream_order: StreamOrder::Complete, reserve: true, ..d.clone() }),
            ("small", SchedulerParams { streams: 2, sms: 2, ..d }),
        ]
    }
}

//! The run budget: the most clock cycles one run may simulate, in the golden
//! model and in the RTL alike (`gpurtl run --max-cycles N`, docs/cli.md).
//!
//! A budget is set around a run with [`within`]; the models' cycle loops ask
//! [`over`] at the top of every cycle and stop when it says so, and the RTL
//! testbenches' [`crate::tb::agents::Bench`] stops with
//! [`crate::cosim::CosimError::Budget`]. [`within`] then reports that the
//! budget ran out, and the caller throws the partial result away (a stopped
//! model's outcome is not a result). Without a budget (tests, benches) every
//! check passes.

use std::cell::Cell;

thread_local! {
    static LIMIT: Cell<u64> = const { Cell::new(u64::MAX) };
    static HIT: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with at most `limit` cycles a simulation; returns its result and
/// whether a simulation in it reached the limit (the result is then partial).
/// Budgets nest: the inner one applies inside, the outer one again after.
pub fn within<R>(limit: u64, f: impl FnOnce() -> R) -> (R, bool) {
    let (old_limit, old_hit) = (LIMIT.with(|l| l.replace(limit)), HIT.with(|h| h.replace(false)));
    struct Restore(u64, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            LIMIT.with(|l| l.set(self.0));
            HIT.with(|h| h.set(self.1));
        }
    }
    let restore = Restore(old_limit, old_hit);
    let r = f();
    let hit = HIT.with(|h| h.get());
    drop(restore);
    (r, hit)
}

/// True when a simulation at `cycle` (cycles simulated so far) has used up
/// the budget: the loop stops there. Records that the budget ran out.
#[inline]
pub fn over(cycle: u64) -> bool {
    let o = cycle >= LIMIT.with(|l| l.get());
    if o {
        HIT.with(|h| h.set(true));
    }
    o
}

/// For a model that computes its length in closed form: a run of `cycles`
/// cycles fits the budget when `cycles <= limit`; records it when not.
pub fn spend(cycles: u64) {
    if cycles > limit() {
        HIT.with(|h| h.set(true));
    }
}

/// The budget in force (`u64::MAX`: none).
pub fn limit() -> u64 {
    LIMIT.with(|l| l.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_applies_inside_only_and_nests() {
        assert!(!over(1 << 40));
        let ((), hit) = within(10, || {
            assert!(!over(9));
            let ((), inner) = within(100, || assert!(!over(50)));
            assert!(!inner);
            assert_eq!(limit(), 10);
            assert!(over(10));
        });
        assert!(hit);
        assert_eq!(limit(), u64::MAX);
        let ((), hit) = within(10, || assert!(!over(3)));
        assert!(!hit);
    }
}

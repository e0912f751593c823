//! Bruck's allgatherv, for any number of ranks: ⌈log₂k⌉ steps, each rank doubling the
//! window of blocks it holds, with per-rank counts.
//!
//! Reference: Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient algorithms for all-to-all
//! communications in multiport message-passing systems", IEEE TPDS 8(11), 1997 (the
//! concatenation algorithm); Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005, the
//! allgather section (MPICH's `MPIR_Allgatherv_intra_brucks`, its allgatherv for short
//! messages on k not a power of two).
//!
//! Before step s rank r holds the blocks r, r + 1, …, r + 2^s − 1 (mod k). In step s it
//! sends the first w_s = min(2^s, k − 2^s) of them to r − 2^s and receives blocks
//! r + 2^s, …, r + 2^s + w_s − 1 from r + 2^s. Every block goes straight to its final
//! place in `out` (block b at Σ_{i<b} c_i), so a window that wraps past rank k − 1 is two
//! regions of one message, and no final rotation is needed. Step 0 sends from `in`.
//!
//! Cost: ⌈log₂k⌉ steps (none when every count is 0). Step s waits for its heaviest
//! window: under full duplex, either port rule, Σ_s t(max_r S_s(r)), S_s(r) the counts of
//! the w_s blocks from r on (cyclically), t(c) = β + cτ for c > 0, else 0; under half
//! duplex Σ_s max_r (t(S_s(r)) + t(S_s(r + 2^s))). With even counts m:
//! ⌈log₂k⌉β + (k − 1)mτ, the least steps and volume. Skewed counts cost each step the
//! window holding the big blocks. Volume (k − 1)·Σ c.
//!
//! Constraints: `complete:K`, any K ≥ 1, any counts.

use smallvec::SmallVec;

use crate::algorithms::broadcast::binomial::ceil_log2;
use crate::algorithms::vcount::{stepped_formula, Blocks};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Regions, Schedule};
use crate::verify::Problem;

/// Bruck's allgatherv schedule.
#[derive(Clone, Debug)]
pub struct BruckAllgatherv {
    k: u32,
    blocks: Blocks,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, blocks) = Blocks::of(problem, "bruck", OpKind::Allgatherv)?;
    Ok(Box::new(BruckAllgatherv { k, blocks }))
}

/// w_s: the blocks a rank sends in step s.
fn width(k: u32, s: u32) -> u32 {
    (1u32 << s).min(k - (1 << s))
}

impl BruckAllgatherv {
    /// Blocks `from`, …, `from + w − 1` (mod k) in `out`: one region, or two where the
    /// window wraps; empty blocks dropped.
    fn window(&self, from: u32, w: u32) -> Regions {
        let (k, b) = (self.k, &self.blocks);
        let end = from + w;
        let parts = if end <= k {
            [(from, end), (0, 0)]
        } else {
            [(from, k), (0, end - k)]
        };
        parts
            .into_iter()
            .map(|(lo, hi)| Region::new(Buf::Out, b.off(lo), b.span(lo..hi)))
            .filter(|r| r.len > 0)
            .collect::<SmallVec<_>>()
    }
}

impl Schedule for BruckAllgatherv {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        if self.blocks.is_empty() {
            0
        } else {
            (ceil_log2(self.k) as usize).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, b) = (self.k, &self.blocks);
        let mut prog = Program::new(rank, self.steps());
        if self.steps() == 0 {
            return prog;
        }
        let own = Region::new(Buf::In, 0, b.len(rank));
        if own.len > 0 {
            prog.push(
                0,
                Op::copy(own, Region::new(Buf::Out, b.off(rank), own.len)),
            );
        }
        for s in 0..ceil_log2(k) {
            let (d, w) = (1u32 << s, width(k, s));
            let from: Regions = if s == 0 {
                std::iter::once(own).filter(|r| r.len > 0).collect()
            } else {
                self.window(rank, w)
            };
            if !from.is_empty() {
                let to = (rank + k - d) % k;
                prog.push(
                    s as usize,
                    Op::Send {
                        to: smallvec::smallvec![to],
                        from,
                    },
                );
            }
            let into = self.window((rank + d) % k, w);
            if !into.is_empty() {
                prog.push(
                    s as usize,
                    Op::Recv {
                        from: (rank + d) % k,
                        into,
                        action: Action::Place,
                    },
                );
            }
        }
        prog
    }
}

/// Σ_s of step s's heaviest window (full duplex) or heaviest send plus receive (half).
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok((k, blocks)) = Blocks::of(problem, "bruck", OpKind::Allgatherv) else {
        return vec![];
    };
    let window = |r: u32, w: u32| -> u64 { (0..w).map(|i| blocks.len((r + i) % k)).sum() };
    stepped_formula(
        params,
        (k, ceil_log2(k)),
        [
            "Σ_s t(max_r S_s(r)), S_s(r) the counts of w_s = min(2^s, k − 2^s) blocks from r",
            "Σ_s max_r (t(S_s(r)) + t(S_s(r + 2^s))), S_s(r) the counts of w_s = min(2^s, k − 2^s) blocks from r",
        ],
        "Bruck et al. 1997; MPICH Bruck allgatherv (Thakur, Rabenseifner & Gropp 2005)",
        |s, r| (window(r, width(k, s)), window((r + (1 << s)) % k, width(k, s))),
    )
}

//! Bruck's all-gather, for any number of ranks: ⌈log₂k⌉ steps.
//!
//! Reference: Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient algorithms for all-to-all
//! communications in multiport message-passing systems", IEEE TPDS 8(11), 1997, the
//! concatenation (index-free) algorithm with one port; Thakur, Rabenseifner & Gropp,
//! "Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1), 2005,
//! the allgather section: Bruck's algorithm for any p, ⌈lg p⌉α + ((p − 1)/p)nβ for a
//! total of n bytes (MPICH's `MPIR_Allgather_intra_brucks`). It is also Saad & Schultz's
//! shift-doubling all-to-all broadcast on a switch (1986, seed 004, §3.3 (F), eq.
//! (3.35)): in step i every processor j reads what processor j + 2^i has collected,
//! through the switch mapping Π(j) = j + 2^i; receiving from r + c is sending to r − c.
//! (3.35) prints N/b_S + log₂(k)τ_S with N = km the total: for k = 2^n an upper bound
//! (Nτ for (k − 1)mτ); for other k the steps are ⌈log₂k⌉ and the printed form is no
//! bound when (⌈log₂k⌉ − log₂k)β > mτ (docs/errata.md, E52).
//!
//! Rank r keeps in `tmp` the blocks of ranks r, r + 1, … (mod k) in that order, its own
//! first (copied from `in` in step 0). In step s (0-based), with c = 2^s, it holds c
//! blocks; it sends the first n = min(c, k − c) of them to r − c and receives n from
//! r + c, which are blocks r + c, …, r + c + n − 1, into positions c, …, c + n − 1.
//! After L = ⌈log₂k⌉ steps it holds all k; a final local rotation (two local copies in
//! the last step) moves position i to block (r + i) mod k of `out`.
//!
//! Cost: L steps (one step of the local copy when k = 1, none when m = 0); in step s each
//! node sends one message of min(2^s, k − 2^s) blocks and receives one, and these sum to
//! k − 1: Lβ + (k − 1)mτ under full duplex, 2(Lβ + (k − 1)mτ) under half duplex, under
//! either port rule. Volume k(k − 1)m, the least possible.
//!
//! Constraints: `complete:K`, any K ≥ 1.

use crate::algorithms::broadcast::binomial::{ceil_log2, complete_ranks};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::Duplex;
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// Bruck's all-gather schedule.
#[derive(Clone, Debug)]
pub struct BruckAllgather {
    k: u32,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "bruck", OpKind::Allgather)?;
    Ok(Box::new(BruckAllgather { k, m: problem.len }))
}

impl Schedule for BruckAllgather {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            (ceil_log2(self.k) as usize).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, m) = (self.k, self.m);
        let mut prog = Program::new(rank, self.steps());
        let input = Region::new(Buf::In, 0, m);
        if m == 0 {
            return prog;
        }
        if k == 1 {
            prog.push(0, Op::copy(input, Region::new(Buf::Out, 0, m)));
            return prog;
        }
        let (k64, r) = (k as u64, rank as u64);
        prog.tmp_len = k64 * m;
        let pos = |i: u64, n: u64| Region::new(Buf::Tmp, i * m, n * m);
        let levels = ceil_log2(k);
        for s in 0..levels {
            let c = 1u64 << s;
            let n = c.min(k64 - c);
            // Send the first n blocks held (step 0: the input, not yet in `tmp`) …
            let from = if s == 0 { input } else { pos(0, n) };
            prog.push(s as usize, Op::send(((r + k64 - c) % k64) as Rank, from));
            // … and receive the next n from r + c.
            prog.push(s as usize, Op::recv(((r + c) % k64) as Rank, pos(c, n)));
        }
        prog.push(0, Op::copy(input, pos(0, 1)));
        // The rotation: position i is block (r + i) mod k.
        let last = levels as usize - 1;
        prog.push(
            last,
            Op::copy(pos(0, k64 - r), Region::new(Buf::Out, r * m, (k64 - r) * m)),
        );
        if r > 0 {
            prog.push(
                last,
                Op::copy(pos(k64 - r, r), Region::new(Buf::Out, 0, r * m)),
            );
        }
        prog
    }
}

/// ⌈log₂k⌉β + (k − 1)mτ under full duplex, twice that under half duplex; either port
/// rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(k) = complete_ranks(problem, "bruck", OpKind::Allgather) else {
        return vec![];
    };
    let m = problem.len;
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let one = ceil_log2(k) as f64 * beta + (k - 1) as f64 * m as f64 * tau;
    let one = if m == 0 { 0.0 } else { one };
    let printed =
        (params.model.duplex == Duplex::Full && k >= 2 && k.is_power_of_two()).then(|| {
            Formula::upper_bound(
                "N/b_S + log₂(k)τ_S as printed (3.35), N = km",
                "Saad & Schultz 1986 (seed 004), §3.3 (F), eq. (3.35)",
                (k as f64).log2() * beta + (k as u64 * m) as f64 * tau,
            )
        });
    let exact = match params.model.duplex {
        Duplex::HalfLink => return vec![],
        Duplex::Full => Formula::exact(
            "⌈log₂k⌉β + (k − 1)mτ",
            "Thakur, Rabenseifner & Gropp 2005, allgather: Bruck, ⌈lg p⌉α + ((p − 1)/p)nβ; Saad & Schultz 1986 (seed 004), (3.35)",
            one,
        ),
        Duplex::Half => Formula::exact(
            "2(⌈log₂k⌉β + (k − 1)mτ)",
            "Bruck et al. 1997, concatenation, each step's send and receive in turn (half duplex)",
            2.0 * one,
        ),
    };
    std::iter::once(exact).chain(printed).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;
    use crate::collective::Collective;

    #[test]
    fn verifies_for_every_rank_count() {
        check_all(OpKind::Allgather, "bruck", &[0, 1, 7], false);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Allgather, "bruck");
    }

    #[test]
    fn takes_ceil_log2_k_steps() {
        for k in ranks() {
            let t = timed("bruck", Collective::Allgather, k, 7);
            let one = ceil_log2(k) as f64 * 0.7 + (k - 1) as f64 * 7.0 * 0.13;
            assert!((t[0] - one).abs() < 1e-9 && (t[1] - 2.0 * one).abs() < 1e-9);
        }
    }
}

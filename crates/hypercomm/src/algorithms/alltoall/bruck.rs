//! Bruck's all-to-all (index algorithm), for any number of ranks: ⌈log₂k⌉ steps.
//!
//! Reference: Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient algorithms for all-to-all
//! communications in multiport message-passing systems", IEEE TPDS 8(11), 1997, the
//! index algorithm with radix 2 and one port; Thakur, Rabenseifner & Gropp,
//! "Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1), 2005,
//! the alltoall section: Bruck's algorithm for short messages, lg p·α + (n/2)·lg p·β when
//! p is a power of two (MPICH's `MPIR_Alltoall_intra_brucks`).
//!
//! The three phases, at rank r, on positions i = 0..k:
//! 1. rotation: position i holds the block of `in` for rank (r + i) mod k;
//! 2. for s = 0..L (L = ⌈log₂k⌉): send to r + 2^s the positions whose index has bit s
//!    set, in increasing order, as one message, and receive the same positions from
//!    r − 2^s. A block travels i = Σ 2^s over its set bits, so the one at position i of
//!    rank j ends at rank j + i, position i;
//! 3. inverse rotation: position i, now the block from rank (r − i) mod k, moves to
//!    block (r − i) mod k of `out`: local copies in the last step.
//!
//! Phase 1 is not a copy here: the IR runs local ops after a step's sends, so a position
//! not yet moved is read from `in` at block (r + i) mod k. A receive may not write what
//! its step sends, so each position alternates between two slots of `tmp` (A =
//! `tmp[0..km]`, B = `tmp[km..2km]`): its t-th arrival goes to A when t is odd, to B
//! when even, and it ends in the slot of popcount(i)'s parity.
//!
//! Cost: L steps (one step of the local copy when k = 1, none when m = 0); in step s each
//! node sends one message of n_s = |{i < k : bit s of i set}| blocks and receives one,
//! and Σ_s n_s = b(k) = Σ_{i<k} popcount(i) (= (k/2)·log₂k for k a power of two):
//! Lβ + b(k)mτ under full duplex, 2(Lβ + b(k)mτ) under half duplex, under either port
//! rule. Volume k·b(k)·m.
//!
//! Constraints: `complete:K`, any K ≥ 1.

use crate::algorithms::broadcast::binomial::{ceil_log2, complete_ranks};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::Duplex;
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Regions, Schedule};
use crate::verify::Problem;

/// Bruck's all-to-all schedule.
#[derive(Clone, Debug)]
pub struct BruckAlltoall {
    k: u32,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "bruck", OpKind::Alltoall)?;
    Ok(Box::new(BruckAlltoall { k, m: problem.len }))
}

/// b(k) = Σ_{i<k} popcount(i): the blocks each rank sends in all.
pub fn bit_sum(k: u32) -> u64 {
    (0..ceil_log2(k)).map(|s| moved_in_step(k, s)).sum()
}

/// n_s: the positions i < k with bit s set.
fn moved_in_step(k: u32, s: u32) -> u64 {
    let (k, c) = (k as u64, 1u64 << s);
    (k >> (s + 1)) * c + (k % (2 * c)).saturating_sub(c)
}

/// Append `r` to `regions`, merging it into the last one when contiguous.
fn push_merged(regions: &mut Regions, r: Region) {
    if let Some(last) = regions.last_mut() {
        if last.buf == r.buf && last.end() == r.off {
            last.len += r.len;
            return;
        }
    }
    regions.push(r);
}

impl BruckAlltoall {
    /// Where rank `r` holds position `i` after `t` of its moves: `in` before the first,
    /// then slots A, B, A, … of `tmp`.
    fn slot(&self, r: Rank, i: u32, t: u32) -> Region {
        let (k, m) = (self.k as u64, self.m);
        match t {
            0 => Region::new(Buf::In, ((r + i) as u64 % k) * m, m),
            t if t % 2 == 1 => Region::new(Buf::Tmp, i as u64 * m, m),
            _ => Region::new(Buf::Tmp, (k + i as u64) * m, m),
        }
    }
}

impl Schedule for BruckAlltoall {
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
        if m == 0 {
            return prog;
        }
        let levels = ceil_log2(k);
        let block = |b: u32| Region::new(Buf::Out, b as u64 * m, m);
        // The own block (position 0) never moves.
        prog.push(0, Op::copy(self.slot(rank, 0, 0), block(rank)));
        if k == 1 {
            return prog;
        }
        // Slot B is used by positions with two set bits or more (i ≥ 3).
        prog.tmp_len = if k > 3 { 2 } else { 1 } * k as u64 * m;
        for s in 0..levels {
            let bit = 1u32 << s;
            let below = bit - 1;
            let (mut from, mut into) = (Regions::new(), Regions::new());
            for i in (bit..k).filter(|i| i & bit != 0) {
                let t = (i & below).count_ones();
                push_merged(&mut from, self.slot(rank, i, t));
                push_merged(&mut into, self.slot(rank, i, t + 1));
            }
            prog.push(
                s as usize,
                Op::Send {
                    to: smallvec::smallvec![(rank + bit) % k],
                    from,
                },
            );
            prog.push(
                s as usize,
                Op::Recv {
                    from: (rank + k - bit) % k,
                    into,
                    action: Action::Place,
                },
            );
        }
        // The inverse rotation: position i came from rank r − i.
        for i in 1..k {
            prog.push(
                levels as usize - 1,
                Op::copy(
                    self.slot(rank, i, i.count_ones()),
                    block((rank + k - i) % k),
                ),
            );
        }
        prog
    }
}

/// ⌈log₂k⌉β + b(k)mτ under full duplex, twice that under half duplex; either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(k) = complete_ranks(problem, "bruck", OpKind::Alltoall) else {
        return vec![];
    };
    let m = problem.len;
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let b = bit_sum(k);
    let one = ceil_log2(k) as f64 * beta + b as f64 * m as f64 * tau;
    let one = if m == 0 { 0.0 } else { one };
    vec![match params.model.duplex {
        Duplex::HalfLink => return vec![],
        Duplex::Full => Formula::exact(
            format!("⌈log₂k⌉β + b(k)mτ, b(k) = Σ_{{i<k}} popcount(i) = {b}"),
            "Thakur, Rabenseifner & Gropp 2005, alltoall: Bruck, lg p α + (n/2)lg p β",
            one,
        ),
        Duplex::Half => Formula::exact(
            format!("2(⌈log₂k⌉β + b(k)mτ), b(k) = Σ_{{i<k}} popcount(i) = {b}"),
            "Bruck et al. 1997, index algorithm, each step's send and receive in turn (half duplex)",
            2.0 * one,
        ),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;

    #[test]
    fn verifies_for_every_rank_count() {
        check_all(OpKind::Alltoall, "bruck", &[0, 1, 7], false);
    }

    #[test]
    fn refuses_a_hypercube() {
        refuses_hypercube(OpKind::Alltoall, "bruck");
    }

    #[test]
    fn bit_sums() {
        for k in 1..=40u32 {
            assert_eq!(
                bit_sum(k),
                (0..k).map(|i| i.count_ones() as u64).sum::<u64>()
            );
        }
        // (k/2) log₂k for a power of two.
        assert_eq!(bit_sum(16), 8 * 4);
    }
}

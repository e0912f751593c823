//! Bruck's alltoallv (the index algorithm with variable blocks), for any number of
//! ranks: ⌈log₂k⌉ steps, each block of its own size.
//!
//! Reference: Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient algorithms for all-to-all
//! communications in multiport message-passing systems", IEEE TPDS 8(11), 1997, the
//! index algorithm with radix 2 and one port; Thakur, Rabenseifner & Gropp, IJHPCA
//! 19(1), 2005, the alltoall section; with a k × k count matrix (`MPI_Alltoallv`,
//! MPI-3.1 §5.8), beyond the papers. The fixed-count form is
//! [`crate::algorithms::alltoall::bruck`].
//!
//! Positions as there: position i of rank r starts as the block r sends r + i (mod k);
//! in step s (0..L, L = ⌈log₂k⌉) rank r sends r + 2^s the positions whose bit s is set,
//! in increasing order, as one message, and receives the same positions from r − 2^s.
//! After t moves position i of rank r holds the block from a = r − low_t(i) to a + i,
//! low_t(i) the sum of i's lowest t set bits: its length C\[a\]\[a + i\] changes from
//! move to move, so every slot is sized from the counts. A position's first move sends
//! from `in` (block r + i at its row prefix sum), its last arrival (the popcount(i)-th)
//! lands straight in `out` (the block from r − i at its column prefix sum: no inverse
//! rotation), and the arrivals between alternate between two slots of `tmp`, A (odd)
//! and B (even), each as large as the largest block it takes, at prefix sums over the
//! positions, so a receive never writes what its step sends.
//!
//! Cost: L steps (one step of the own block's copy when k = 1, none when every count
//! is 0). The imbalance is priced: V_{r,s}, what r sends in step s, is the sum of the
//! blocks at its positions with bit s set, and under full duplex, either port rule, the
//! time is Σ_s max_r t(max(V_{r,s}, V_{r−2^s,s})), t(c) = β + cτ for c > 0, else 0;
//! under half duplex Σ_s max_r (t(V_{r,s}) + t(V_{r−2^s,s})). With equal counts m:
//! Lβ + b(k)mτ, b(k) = Σ_{i<k} popcount(i), the fixed-count Bruck's. Volume
//! Σ_{a,b} C\[a\]\[b\]·popcount((b − a) mod k). Memory: `tmp` of Σ_i (max A block + max B
//! block), at most (L − 1)·k·max C (none for k ≤ 3, no B slot for k ≤ 7).
//!
//! Constraints: `complete:K`, any K ≥ 1, any k × k counts (zeros allowed).

use crate::algorithms::broadcast::binomial::ceil_log2;
use crate::algorithms::vcount::{layout, push_block, push_exchange, stepped_formula};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::counts::{prefix, Layout};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Regions, Schedule};
use crate::verify::Problem;

/// Bruck's alltoallv schedule.
#[derive(Clone, Debug)]
pub struct BruckAlltoallv {
    layout: Layout,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let layout = layout(problem, "bruck", OpKind::Alltoallv)?;
    Ok(Box::new(BruckAlltoallv { layout }))
}

/// The sum of the lowest `t` set bits of `i`.
fn low(i: u32, t: u32) -> u32 {
    let mut rest = i;
    for _ in 0..t {
        rest &= rest.wrapping_sub(1);
    }
    i - rest
}

/// The sender of the block at position `i` of rank `r` after `t` moves (its
/// receiver is that plus i).
fn source(k: u32, r: Rank, i: u32, t: u32) -> Rank {
    (r + k - low(i, t)) % k
}

/// Elements at position `i` of rank `r` after `t` moves.
fn held(l: &Layout, r: Rank, i: u32, t: u32) -> u64 {
    let k = l.nodes();
    let a = source(k, r, i, t);
    l.len(a, (a + i) % k)
}

/// V_{r,s}: what rank `r` sends in step `s`.
fn sent(l: &Layout, r: Rank, s: u32) -> u64 {
    let bit = 1u32 << s;
    (bit..l.nodes())
        .filter(|i| i & bit != 0)
        .map(|i| held(l, r, i, (i & (bit - 1)).count_ones()))
        .sum()
}

/// A rank's slots in `tmp`: slot A of position i at `a[i]`, B at `b[i]`.
struct Slots {
    a: Vec<u64>,
    b: Vec<u64>,
}

impl BruckAlltoallv {
    /// Rank `r`'s slots: A takes arrivals 1, 3, …, B arrivals 2, 4, … of a position,
    /// but not its last (which goes to `out`); each sized to its largest block.
    fn slots(&self, r: Rank) -> Slots {
        let (k, l) = (self.nodes(), &self.layout);
        let size = |parity: u32| -> Vec<u64> {
            (0..k)
                .map(|i| {
                    (1..i.count_ones())
                        .filter(|t| t % 2 == parity)
                        .map(|t| held(l, r, i, t))
                        .max()
                        .unwrap_or(0)
                })
                .collect()
        };
        let a = prefix(&size(1));
        let b: Vec<u64> = prefix(&size(0)).iter().map(|o| o + a[k as usize]).collect();
        Slots { a, b }
    }

    /// Where rank `r` holds position `i` after `t` moves.
    fn slot(&self, slots: &Slots, r: Rank, i: u32, t: u32) -> Region {
        let (k, l) = (self.nodes(), &self.layout);
        let len = held(l, r, i, t);
        if t == 0 {
            Region::new(Buf::In, l.src(r, (r + i) % k), len)
        } else if t == i.count_ones() {
            Region::new(Buf::Out, l.dst((r + k - i) % k, r), len)
        } else if t % 2 == 1 {
            Region::new(Buf::Tmp, slots.a[i as usize], len)
        } else {
            Region::new(Buf::Tmp, slots.b[i as usize], len)
        }
    }
}

impl Schedule for BruckAlltoallv {
    fn nodes(&self) -> u32 {
        self.layout.nodes()
    }
    fn steps(&self) -> usize {
        if self.layout.is_empty() {
            0
        } else {
            (ceil_log2(self.nodes()) as usize).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, l) = (self.nodes(), &self.layout);
        let mut prog = Program::new(rank, self.steps());
        if self.steps() == 0 {
            return prog;
        }
        // The own block (position 0) never moves.
        let own = l.len(rank, rank);
        if own > 0 {
            prog.push(
                0,
                Op::copy(
                    Region::new(Buf::In, l.src(rank, rank), own),
                    Region::new(Buf::Out, l.dst(rank, rank), own),
                ),
            );
        }
        let slots = self.slots(rank);
        prog.tmp_len = slots.b[k as usize];
        for s in 0..ceil_log2(k) {
            let bit = 1u32 << s;
            let (mut from, mut into) = (Regions::new(), Regions::new());
            for i in (bit..k).filter(|i| i & bit != 0) {
                let t = (i & (bit - 1)).count_ones();
                push_block(&mut from, self.slot(&slots, rank, i, t));
                push_block(&mut into, self.slot(&slots, rank, i, t + 1));
            }
            push_exchange(
                &mut prog,
                s as usize,
                ((rank + bit) % k, from),
                ((rank + k - bit) % k, into),
            );
        }
        prog
    }
}

/// Σ_s of step s's largest exchange (full duplex) or largest send plus receive (half
/// duplex), from the counts: V_{r,s} the blocks at r's positions with bit s set.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(l) = layout(problem, "bruck", OpKind::Alltoallv) else {
        return vec![];
    };
    let k = l.nodes();
    stepped_formula(
        params,
        (k, ceil_log2(k)),
        [
            "Σ_s max_r t(max(V_{r,s}, V_{r−2^s,s})), V_{r,s} the counts at r's positions with bit s set",
            "Σ_s max_r (t(V_{r,s}) + t(V_{r−2^s,s})), V_{r,s} the counts at r's positions with bit s set",
        ],
        "Bruck et al. 1997, index algorithm, with a count matrix (MPI-3.1 §5.8)",
        |s, r| (sent(&l, r, s), sent(&l, (r + k - (1 << s)) % k, s)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::alltoall::bruck::bit_sum;
    use crate::algorithms::vcount::test_support::{check_one, random_counts, same_as_fixed, Rng};
    use crate::collective::Collective;
    use crate::counts::Counts;
    use crate::topology::Topology;

    /// On complete:1, 2, 3, 5, 8 (and every k to 12), random matrices with zeros:
    /// verified, and the closed form equal to the simulator under every port and duplex
    /// rule (`check_one`).
    #[test]
    fn verifies_and_meets_its_form_on_random_counts() {
        let mut rng = Rng(0xb0c4_0062);
        for k in 1..=12 {
            let topo = Topology::complete(k);
            for _ in 0..5 {
                let counts = random_counts(OpKind::Alltoallv, k, &mut rng);
                check_one(&topo, "bruck", Collective::Alltoallv, &counts);
            }
        }
    }

    /// Equal counts m: ⌈log₂k⌉β + b(k)mτ, the fixed-count Bruck's (by its form here,
    /// and by the simulator and the form under every rule in `same_as_fixed`).
    #[test]
    fn equal_counts_cost_the_fixed_count_bruck() {
        let params = Params::default();
        let (beta, tau) = (params.model.beta(), params.model.tau());
        for k in 1..=12u32 {
            let topo = Topology::complete(k);
            for m in [0, 1, 3] {
                same_as_fixed(&topo, "bruck", Collective::Alltoallv, m);
            }
            let counts = Counts::uniform(OpKind::Alltoallv, k, 3);
            let p = Problem {
                topology: &topo,
                collective: Collective::Alltoallv,
                len: 3,
                commutative: true,
                counts: Some(&counts),
            };
            let f = formulas(&p, &params)[0].value;
            let want = ceil_log2(k) as f64 * beta + (bit_sum(k) * 3) as f64 * tau;
            assert!((f - want).abs() < 1e-9, "k {k}: {f} vs {want}");
        }
    }

    /// The moving blocks are the counts' own: low_t and the positions' sources.
    #[test]
    fn a_position_holds_the_block_from_r_minus_its_moved_bits() {
        assert_eq!((low(0b1011, 0), low(0b1011, 1), low(0b1011, 2)), (0, 1, 3));
        assert_eq!(low(0b1011, 3), 11);
        // Position 6 of rank 1 on 8 ranks: after one move (bit 1) it holds 7's block
        // for 7 + 6 = 5.
        let c: Vec<Vec<u64>> = (0..8)
            .map(|i| (0..8).map(|j| 10 * i + j).collect())
            .collect();
        let l = Layout::new(OpKind::Alltoallv, 0, 8, &Counts::Matrix(c)).unwrap();
        assert_eq!(held(&l, 1, 6, 1), 75);
    }
}

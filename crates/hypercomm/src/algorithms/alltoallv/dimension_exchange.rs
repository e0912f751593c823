//! Alltoallv by dimension exchange on a hypercube, lowest dimension first: n steps, in
//! step d each node sends its neighbour across dimension d every block it holds whose
//! destination differs from it in bit d, with the blocks' own sizes.
//!
//! Reference: seed 001 (*Hypercube (communication pattern)*), "All-to-all": in every
//! step exchange with i XOR 2^d all messages for the partner's sub cube; Saad & Schultz
//! 1985 (seed 000), §6 (the same exchange, MTADEA, crossing the dimensions from the
//! highest down: [`super::mtadea`], this schedule in that order); with a k × k count matrix (`MPI_Alltoallv`, MPI-3.1 §5.8), beyond the
//! papers. The fixed-count form is [`crate::algorithms::alltoall::dimension_exchange`].
//!
//! Bookkeeping as there: before step t (dimensions 0..t crossed, S = 2^t − 1) column C
//! of node X holds the block C\[a\]\[b\] from a = (X & !S) | (C & S) to
//! b = (C & !S) | (X & S). The columns lie in column order at the prefix sums of their
//! lengths: row 0 is `in` (a = X, b = C), row n is `out` (a = C, b = X), rows 1..n − 1
//! alternate between two banks of `tmp`, so a step sends from one row and receives into
//! the next. Step t sends the runs of 2^t columns whose bit t differs from X's, as one
//! message (one region a run, empty blocks dropped), receives the partner's into the
//! same columns of the next row, and copies the kept runs there.
//!
//! Cost: n steps (one step of a local copy when n = 0, none when every count is 0). The
//! imbalance is priced: V_{X,t}, what X sends in step t, is the sum of its blocks bound
//! across dimension t, and step t waits for the largest exchange: under full duplex,
//! either port rule, Σ_t max_X t(max(V_{X,t}, V_{X⊕2^t,t})), t(c) = β + cτ for c > 0,
//! else 0; under half duplex Σ_t max_X (t(V_{X,t}) + t(V_{X⊕2^t,t})). With equal counts
//! m: n(β + 2^{n−1}mτ), the fixed-count exchange's (seed 001). Volume Σ_{i,j} C\[i\]\[j\]
//! times the Hamming distance of i and j, the least any schedule moves. Memory: two
//! banks of `tmp`, each the largest row it holds (none for n ≤ 1).
//!
//! Constraints: hypercube (any labelling the topology's `cube()` finds: hypercube:N,
//! complete:2^N, …), any k × k counts (zeros allowed).

use crate::algorithms::fit::{self, Built};
use crate::algorithms::vcount::{counts_of, push_block, push_exchange, stepped_formula};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::counts::{prefix, Layout};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Regions, Schedule};
use crate::topology::{DimOrder, Hypercube};
use crate::verify::Problem;

/// The dimension-exchange alltoallv schedule.
#[derive(Clone, Debug)]
pub struct DimensionExchangeAlltoallv {
    cube: Hypercube,
    layout: Layout,
    order: DimOrder,
}

/// The block table of the alltoallv `problem` run by `algo`.
fn layout_of(problem: &Problem<'_>, algo: &str, cube: Hypercube) -> Result<Layout, Error> {
    let wrong_op = || Error::InvalidParameter {
        what: "--op",
        reason: format!("{algo} performs alltoallv, not {}", problem.collective),
    };
    if problem.collective.kind() != OpKind::Alltoallv {
        return Err(wrong_op());
    }
    Layout::new(OpKind::Alltoallv, 0, cube.nodes(), &counts_of(problem)?).ok_or_else(wrong_op)
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    build_in(problem, ("dimension-exchange", DimOrder::Ascending), *cube)
}

/// The exchange `algo` crossing the dimensions in `order` (`mtadea`: descending).
pub(crate) fn build_in(
    problem: &Problem<'_>,
    (algo, order): (&str, DimOrder),
    cube: Hypercube,
) -> Built {
    let layout = layout_of(problem, algo, cube)?;
    Ok(Box::new(DimensionExchangeAlltoallv {
        cube,
        layout,
        order,
    }))
}

/// The dimension an n-cube crosses in step `t`, and the mask S of those crossed before.
fn dim_and_crossed(n: u32, order: DimOrder, t: u32) -> (u32, u32) {
    let below = |d: u32| (1u32 << d) - 1;
    match order {
        DimOrder::Ascending => (t, below(t)),
        DimOrder::Descending => (n - 1 - t, below(n) & !below(n - t)),
    }
}

/// Elements of column `c` of node `x` when the dimensions of `s` are crossed.
fn held(layout: &Layout, x: Rank, s: u32, c: Rank) -> u64 {
    layout.len((x & !s) | (c & s), (c & !s) | (x & s))
}

/// V_{x,t}: what node `x` sends in step `t`, its columns whose bit d (the step's
/// dimension) differs from x's.
fn sent(layout: &Layout, n: u32, order: DimOrder, x: Rank, t: u32) -> u64 {
    let (d, s) = dim_and_crossed(n, order, t);
    (0..layout.nodes())
        .filter(|c| (c ^ x) >> d & 1 == 1)
        .map(|c| held(layout, x, s, c))
        .sum()
}

/// Where a row lies: its buffer, its base offset, its columns' prefix sums.
struct Row {
    buf: Buf,
    base: u64,
    prefix: Vec<u64>,
}

impl Row {
    /// Columns `lo..hi`, one region.
    fn span(&self, lo: u32, hi: u32) -> Region {
        let (a, b) = (self.prefix[lo as usize], self.prefix[hi as usize]);
        Region::new(self.buf, self.base + a, b - a)
    }
}

impl DimensionExchangeAlltoallv {
    /// The prefix sums of node `x`'s row before step `t` (t = n: all crossed).
    fn prefix(&self, x: Rank, t: u32) -> Vec<u64> {
        let n = self.cube.dim();
        let s = if t == n {
            (1u32 << n) - 1
        } else {
            dim_and_crossed(n, self.order, t).1
        };
        let c: Vec<u64> = (0..self.nodes())
            .map(|c| held(&self.layout, x, s, c))
            .collect();
        prefix(&c)
    }
}

impl Schedule for DimensionExchangeAlltoallv {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        if self.layout.is_empty() {
            0
        } else {
            (self.cube.dim() as usize).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (n, k, l) = (self.cube.dim(), self.nodes(), &self.layout);
        let mut prog = Program::new(rank, self.steps());
        if self.steps() == 0 {
            return prog;
        }
        if n == 0 {
            let c = l.len(0, 0);
            prog.push(
                0,
                Op::copy(Region::new(Buf::In, 0, c), Region::new(Buf::Out, 0, c)),
            );
            return prog;
        }
        let prefixes: Vec<Vec<u64>> = (0..=n).map(|t| self.prefix(rank, t)).collect();
        let total = |t: u32| prefixes[t as usize][k as usize];
        // Rows 1, 3, … in bank 0 of `tmp`, rows 2, 4, … in bank 1, after bank 0.
        let bank = |parity: u32| {
            (1..n)
                .filter(|t| t % 2 == parity)
                .map(total)
                .max()
                .unwrap_or(0)
        };
        let bank0 = bank(1);
        prog.tmp_len = bank0 + bank(0);
        let row = |t: u32| Row {
            buf: match t {
                0 => Buf::In,
                t if t == n => Buf::Out,
                _ => Buf::Tmp,
            },
            base: if t > 0 && t < n && t % 2 == 0 {
                bank0
            } else {
                0
            },
            prefix: prefixes[t as usize].clone(),
        };
        for t in 0..n {
            let (cur, next) = (row(t), row(t + 1));
            let d = dim_and_crossed(n, self.order, t).0;
            let peer = self.cube.neighbor(rank, d);
            let run = 1u32 << d;
            let (mut away, mut into) = (Regions::new(), Regions::new());
            for c0 in (0..k).step_by(run as usize) {
                let (from, to) = (cur.span(c0, c0 + run), next.span(c0, c0 + run));
                if (c0 ^ rank) & run != 0 {
                    push_block(&mut away, from);
                    push_block(&mut into, to);
                } else if from.len > 0 {
                    prog.push(t as usize, Op::copy(from, to));
                }
            }
            push_exchange(&mut prog, t as usize, (peer, away), (peer, into));
        }
        prog
    }
}

/// Σ_t of step t's largest exchange (full duplex) or largest send plus receive (half
/// duplex), from the counts: V_{X,t} the blocks X holds bound across dimension t.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    formulas_in(
        problem,
        params,
        ("dimension-exchange", DimOrder::Ascending),
        "seed 001, All-to-all, with a count matrix (MPI-3.1 §5.8)",
    )
}

/// The exact form of `algo` crossing the dimensions in `order`: Σ_t of step t's
/// largest exchange, t crossing dimension d_t.
pub(crate) fn formulas_in(
    problem: &Problem<'_>,
    params: &Params,
    (algo, order): (&str, DimOrder),
    reference: &'static str,
) -> Vec<Formula> {
    let Some(Ok((cube, layout))) =
        fit::cube_of(problem).map(|c| layout_of(problem, algo, c).map(|l| (c, l)))
    else {
        return vec![];
    };
    let n = cube.dim();
    let sends = |x: Rank, t: u32| sent(&layout, n, order, x, t);
    stepped_formula(
        params,
        (cube.nodes(), cube.dim()),
        [
            "Σ_t max_X t(max(V_{X,t}, V_{X⊕2^d,t})), V_{X,t} the counts X holds bound across step t's dimension d",
            "Σ_t max_X (t(V_{X,t}) + t(V_{X⊕2^d,t})), V_{X,t} the counts X holds bound across step t's dimension d",
        ],
        reference,
        |t, x| {
            let d = dim_and_crossed(n, order, t).0;
            (sends(x, t), sends(x ^ (1 << d), t))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::vcount::test_support::{check_one, random_counts, same_as_fixed, Rng};
    use crate::collective::Collective;
    use crate::counts::Counts;
    use crate::topology::Topology;

    fn problem<'a>(topo: &'a Topology, counts: &'a Counts) -> Problem<'a> {
        Problem {
            topology: topo,
            collective: Collective::Alltoallv,
            len: counts.mean(),
            commutative: true,
            counts: Some(counts),
        }
    }

    /// On hypercube:0..4, random matrices with zeros: verified, and the closed form
    /// equal to the simulator under every port and duplex rule (`check_one`).
    #[test]
    fn verifies_and_meets_its_form_on_random_counts() {
        let mut rng = Rng(0x5eed_0062);
        for n in 0..=4 {
            let topo = Topology::hypercube(Hypercube::new(n).unwrap());
            for _ in 0..6 {
                let counts = random_counts(OpKind::Alltoallv, 1 << n, &mut rng);
                check_one(&topo, "dimension-exchange", Collective::Alltoallv, &counts);
            }
        }
    }

    /// Equal counts m: the same time as the fixed-count dimension exchange, n(β +
    /// 2^{n−1}mτ) under full duplex, by the closed form and by the simulator.
    #[test]
    fn equal_counts_cost_the_fixed_count_exchange() {
        for n in 0..=4 {
            let topo = Topology::hypercube(Hypercube::new(n).unwrap());
            for m in [0, 1, 5] {
                same_as_fixed(&topo, "dimension-exchange", Collective::Alltoallv, m);
            }
        }
    }

    /// One heavy block is priced in every step it crosses: on hypercube:3, 40 elements
    /// from 0 to 7 and nothing else cost 3(β + 40τ).
    #[test]
    fn a_heavy_block_is_priced_in_every_step() {
        let topo = Topology::hypercube(Hypercube::new(3).unwrap());
        let mut c = vec![vec![0u64; 8]; 8];
        c[0][7] = 40;
        let counts = Counts::Matrix(c);
        check_one(&topo, "dimension-exchange", Collective::Alltoallv, &counts);
        let params = Params::default();
        let f = formulas(&problem(&topo, &counts), &params)[0].value;
        let want = 3.0 * (params.model.beta() + 40.0 * params.model.tau());
        assert!((f - want).abs() < 1e-9, "{f} vs {want}");
    }
}

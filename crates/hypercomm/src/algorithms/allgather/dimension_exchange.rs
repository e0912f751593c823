//! All-gather by dimension exchange, lowest dimension first.
//!
//! Reference: seed 001 (Wikipedia, *Hypercube (communication pattern)*), "All-gather":
//! for 0 ≤ k < d, exchange the accumulated x with i XOR 2^k and append what arrives;
//! T ≈ log(p)·T_start + (p − 1)n·T_byte, in our notation nβ + (2^n − 1)mτ.
//!
//! Before step t (0-based) a node holds the blocks of the t-subcube through it that
//! spans dimensions 0..t: the aligned range [x & !(2^t − 1), + 2^t) of `out`, so every
//! message is one contiguous region. Step 0 sends from `in` and copies `in` to the
//! node's block of `out`.
//!
//! Cost: n steps; step t exchanges 2^t blocks with one neighbour, so each node sends one
//! message and receives one per step: nβ + (2^n − 1)mτ under full duplex, and
//! 2nβ + (2^{n+1} − 2)mτ under half duplex, under either port rule. Volume
//! 2^n(2^n − 1)m: every node receives every other node's block once.
//!
//! The same schedule with the dimensions in the opposite order is Saad & Schultz's
//! ADEA ([`super::adea`]); [`DimensionExchange`] takes the order as a parameter.
//!
//! Constraints: hypercube.

use smallvec::smallvec;

use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Model};
use crate::error::Error;
use crate::schedule::{
    Action, Buf, Op, Program, Rank, Region, Regions, Schedule, Step, StepStream,
};
use crate::topology::{DimOrder, Hypercube};
use crate::verify::Problem;

/// The all-gather that exchanges everything held across one dimension per step, in a
/// given order: the schedule of `dimension-exchange` (ascending) and `adea`
/// (descending).
#[derive(Clone, Debug)]
pub struct DimensionExchange {
    cube: Hypercube,
    m: u64,
    order: DimOrder,
}

/// The hypercube of an all-gather problem (shared by the all-gather files); `algo`
/// names the algorithm in errors.
pub(crate) fn allgather_cube(
    problem: &Problem<'_>,
    cube: Hypercube,
    algo: &str,
) -> Result<Hypercube, Error> {
    match problem.collective {
        Collective::Allgather => Ok(cube),
        other => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("{algo} performs allgather, not {other}"),
        }),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = allgather_cube(problem, *cube, "dimension-exchange")?;
    Ok(Box::new(DimensionExchange::new(
        cube,
        problem.len,
        DimOrder::Ascending,
    )))
}

impl DimensionExchange {
    /// The exchange of `m`-element blocks crossing the dimensions in `order`.
    pub(crate) fn new(cube: Hypercube, m: u64, order: DimOrder) -> Self {
        DimensionExchange { cube, m, order }
    }

    /// The dimension crossed in step `t`.
    fn dim(&self, t: u32) -> u32 {
        match self.order {
            DimOrder::Ascending => t,
            DimOrder::Descending => self.cube.dim() - 1 - t,
        }
    }

    /// The dimensions crossed before step `t`, as a mask.
    fn crossed(&self, t: u32) -> u32 {
        let low = (1u32 << t) - 1;
        match self.order {
            DimOrder::Ascending => low,
            DimOrder::Descending => low << (self.cube.dim() - t),
        }
    }
}

/// The blocks of `out` (`m` elements each) of the subcube through node `x` spanned by
/// the dimensions of `mask`, as maximal runs of consecutive blocks in increasing order.
///
/// The trailing ones of `mask` make each run 2^t blocks long; the subsets of the other
/// bits, enumerated in increasing order, give the runs' starts. When those other bits
/// are consecutive (bits b..b+h), the runs are 2^h runs at a stride of 2^b blocks: one
/// strided region (ADEA's descending order: after i steps the blocks r, r + 2^{n−i},
/// r + 2·2^{n−i}, …). Otherwise one region per run. So the cost is O(1) for the
/// ascending and the descending orders, 2^{|mask|} at worst for others.
pub(crate) fn subcube_regions(x: Rank, mask: u32, m: u64) -> Regions {
    let low = mask.trailing_ones();
    let run = 1u64 << low;
    let high = mask & !(((1u64 << low) - 1) as u32);
    let base = x & !mask;
    let shift = high.trailing_zeros();
    if high != 0 && (high >> shift).count_ones() == 32 - (high >> shift).leading_zeros() {
        let (stride, count) = (1u64 << shift, 1u64 << high.count_ones());
        return smallvec![Region::strided(
            Buf::Out,
            base as u64 * m,
            run * m,
            stride * m,
            count
        )];
    }
    let mut regions = Regions::with_capacity(1 << high.count_ones());
    let mut s = 0u32;
    loop {
        regions.push(Region::new(Buf::Out, (base | s) as u64 * m, run * m));
        if s == high {
            return regions;
        }
        // The next subset of `high` in increasing order.
        s = s.wrapping_sub(high) & high;
    }
}

impl Schedule for DimensionExchange {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else {
            (self.cube.dim() as usize).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let steps = (0..self.steps()).map(move |t| self.step(rank, t as u32));
        StepStream::new(rank, 0, steps)
    }
}

impl DimensionExchange {
    /// Step `t` of `rank`: the copy of `in` in step 0, then the exchange across the
    /// step's dimension of everything held.
    fn step(&self, rank: Rank, t: u32) -> Step {
        let m = self.m;
        let mut step = Step::default();
        if t == 0 {
            let own = Region::new(Buf::Out, rank as u64 * m, m);
            step.ops.push(Op::copy(Region::new(Buf::In, 0, m), own));
        }
        if t >= self.cube.dim() {
            return step;
        }
        let peer = self.cube.neighbor(rank, self.dim(t));
        let held = self.crossed(t);
        // Send what this node holds (its own block in step 0, not yet in `out`) …
        let from = if t == 0 {
            smallvec![Region::new(Buf::In, 0, m)]
        } else {
            subcube_regions(rank, held, m)
        };
        step.ops.push(Op::Send {
            to: smallvec![peer],
            from,
        });
        // … and receive what the peer holds, in the peer's (increasing) order.
        step.ops.push(Op::Recv {
            from: peer,
            into: subcube_regions(peer, held, m),
            action: Action::Place,
        });
        step
    }
}

/// Time of an exchange-based all-gather: n steps, step t exchanging 2^t blocks each
/// way. Full duplex: nβ + (2^n − 1)mτ; half duplex: twice that.
pub(crate) fn exchange_time(n: u32, m: u64, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let one_way = n as f64 * model.beta() + ((1u64 << n) - 1) as f64 * m as f64 * model.tau();
    match model.duplex {
        Duplex::Full => one_way,
        Duplex::Half | Duplex::HalfLink => 2.0 * one_way,
    }
}

/// nβ + (2^n − 1)mτ under full duplex (seed 001), 2nβ + (2^{n+1} − 2)mτ under half
/// duplex; both under either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) =
        fit::cube_of(problem).map(|c| allgather_cube(problem, c, "dimension-exchange"))
    else {
        return vec![];
    };
    let value = exchange_time(cube.dim(), problem.len, &params.model);
    vec![match params.model.duplex {
        Duplex::Full => Formula::exact(
            "nβ + (2^n − 1)mτ",
            "seed 001, All-gather: log(p)T_start + (p − 1)nT_byte",
            value,
        ),
        Duplex::Half | Duplex::HalfLink => Formula::exact(
            "2nβ + (2^{n+1} − 2)mτ",
            "seed 001, All-gather, each exchange as two transfers (half duplex)",
            value,
        ),
    }]
}

/// What the all-gather tests of this directory share: build a case, verify it, time it
/// under every port and duplex rule and check every closed form returned.
#[cfg(test)]
pub(crate) mod test_support {
    use crate::algorithms::{BuildFn, Formula, FormulaFn, Packets, Params};
    use crate::collective::Collective;
    use crate::cost::model::{Duplex, Model, Ports};
    use crate::cost::simulate;
    use crate::topology::Topology;
    use crate::verify::{verify, Problem, Strictness};

    /// The four port × duplex rules.
    pub const MODELS: [(Ports, Duplex); 4] = [
        (Ports::All, Duplex::Full),
        (Ports::All, Duplex::Half),
        (Ports::One, Duplex::Full),
        (Ports::One, Duplex::Half),
    ];

    /// `hypercube:n`.
    pub fn cube(n: u32) -> Topology {
        format!("hypercube:{n}").parse().expect("a valid hypercube")
    }

    /// One model's result: the simulated time and the forms returned for it.
    pub struct Timed {
        pub ports: Ports,
        pub duplex: Duplex,
        pub time: f64,
        pub formulas: Vec<Formula>,
    }

    /// Build the all-gather on the n-cube with `m` and `packets`, verify it (at most one
    /// message per directed link per step), time it under every model and check that
    /// every form holds. `None` when the constructor refuses `packets`.
    pub fn check(
        build: BuildFn,
        formulas: FormulaFn,
        n: u32,
        m: u64,
        packets: Packets,
    ) -> Option<Vec<Timed>> {
        let topo = cube(n);
        let problem = Problem {
            topology: &topo,
            collective: Collective::Allgather,
            len: m,
            commutative: false,
            counts: None,
        };
        let base = Model::new(1.0, 0.01).unwrap();
        let params = Params {
            packets,
            model: base,
        };
        let sched = build(&problem, &params).ok()?;
        assert_eq!(sched.nodes(), topo.nodes());
        let strict = Strictness {
            ports: Some(Ports::All),
            duplex: None,
            host_ports: None,
        };
        if let Err(v) = verify(problem, sched.as_ref(), strict) {
            panic!("n = {n}, m = {m}, {packets:?}: {v}");
        }
        let mut out = Vec::new();
        for (ports, duplex) in MODELS {
            let model = Model {
                ports,
                duplex,
                ..base
            };
            let time = simulate(&topo, sched.as_ref(), &model).time;
            let fs = formulas(&problem, &Params { packets, model });
            for f in &fs {
                assert!(
                    f.holds_for(time),
                    "n = {n}, m = {m}, {packets:?}, ports {ports}, duplex {duplex}: \
                     {} ({}) = {} but the simulator says {time}",
                    f.expr,
                    f.reference,
                    f.value
                );
            }
            out.push(Timed {
                ports,
                duplex,
                time,
                formulas: fs,
            });
        }
        Some(out)
    }

    /// The exact form whose expression is `expr` among `t`'s, which must be there.
    pub fn exact<'a>(t: &'a Timed, expr: &str) -> &'a Formula {
        t.formulas
            .iter()
            .find(|f| f.is_exact() && f.expr == expr)
            .unwrap_or_else(|| {
                panic!(
                    "no exact form `{expr}` under ports {}, duplex {}",
                    t.ports, t.duplex
                )
            })
    }

    /// Verify the all-gather built by `build` on the n-cube with `m`; the time it took.
    pub fn verify_time(build: BuildFn, n: u32, m: u64) -> std::time::Duration {
        let topo = cube(n);
        let problem = Problem {
            topology: &topo,
            collective: Collective::Allgather,
            len: m,
            commutative: false,
            counts: None,
        };
        let sched = build(&problem, &Params::default()).unwrap();
        let start = std::time::Instant::now();
        verify(problem, sched.as_ref(), Strictness::default())
            .unwrap_or_else(|v| panic!("n = {n}, m = {m}: {v}"));
        start.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{check, exact, verify_time};
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::Packets;

    #[test]
    fn verifies_and_matches_seed_001() {
        for n in 0..=7u32 {
            for m in [0u64, 1, 7] {
                let timed = check(build, formulas, n, m, Packets::Count(1)).unwrap();
                let (k, mf) = ((1u64 << n) as f64, m as f64);
                let (beta, tau) = (1.0, 0.01);
                for t in &timed {
                    let (expr, want) = match t.duplex {
                        Duplex::Full => {
                            ("nβ + (2^n − 1)mτ", n as f64 * beta + (k - 1.0) * mf * tau)
                        }
                        Duplex::Half | Duplex::HalfLink => (
                            "2nβ + (2^{n+1} − 2)mτ",
                            2.0 * n as f64 * beta + (2.0 * k - 2.0) * mf * tau,
                        ),
                    };
                    let want = if m == 0 { 0.0 } else { want };
                    let f = exact(t, expr);
                    assert!(f.holds_for(t.time) && Formula::exact("", "", want).holds_for(t.time));
                }
            }
        }
    }

    #[test]
    fn every_message_is_one_region() {
        let c = Hypercube::new(5).unwrap();
        let s = DimensionExchange::new(c, 3, DimOrder::Ascending);
        for r in 0..c.nodes() {
            for step in s.program(r).steps {
                for op in step.ops {
                    match op {
                        Op::Send { from, .. } => assert_eq!(from.len(), 1),
                        Op::Recv { into, .. } => assert_eq!(into.len(), 1),
                        Op::Local { .. } => {}
                    }
                }
            }
        }
    }

    #[test]
    fn subcube_regions_are_maximal_runs() {
        assert_eq!(
            subcube_regions(0b1011, 0b0011, 2).to_vec(),
            vec![Region::new(Buf::Out, 16, 8)]
        );
        // Consecutive high bits: one strided region of the same blocks.
        let strided = subcube_regions(0b1011, 0b1100, 1);
        assert_eq!(strided.len(), 1);
        assert_eq!(
            strided[0].segments().collect::<Vec<_>>(),
            [0b0011u64, 0b0111, 0b1011, 0b1111]
                .map(|b| Region::new(Buf::Out, b, 1))
                .to_vec()
        );
        assert_eq!(strided[0], Region::strided(Buf::Out, 3, 1, 4, 4));
        // High bits with a gap: one region per run.
        assert_eq!(
            subcube_regions(0b0000, 0b1010, 1).to_vec(),
            [0b0000u64, 0b0010, 0b1000, 0b1010]
                .map(|b| Region::new(Buf::Out, b, 1))
                .to_vec()
        );
        // Runs of two blocks (the trailing one of the mask) at a stride of 4 blocks.
        assert_eq!(
            subcube_regions(0b1010, 0b0101, 1).to_vec(),
            vec![Region::strided(Buf::Out, 0b1010, 2, 4, 2)]
        );
        assert_eq!(
            subcube_regions(5, 0, 4).to_vec(),
            vec![Region::new(Buf::Out, 20, 4)]
        );
    }

    #[test]
    fn verifies_at_n_10() {
        let t = verify_time(build, 10, 7);
        println!("dimension-exchange: verify at n = 10 took {t:?}");
    }
}

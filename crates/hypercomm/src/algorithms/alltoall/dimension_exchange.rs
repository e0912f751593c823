//! All-to-all (total exchange) by dimension exchange, lowest dimension first.
//!
//! Reference: seed 001 (Wikipedia, *Hypercube (communication pattern)*), "All-to-all":
//! in every step exchange with i XOR 2^k "all messages for its k-dimensional sub cube";
//! T ≈ log p (T_start + (p/2)·m·T_byte), in our notation n(β + 2^{n−1}mτ).
//!
//! The seed loops d > k ≥ 0; we cross dimensions 0, 1, …, n − 1, the order of every other
//! `dimension-exchange` of the registry (seed 001's common template). Crossing them from
//! the highest down is Saad & Schultz's MTADEA ([`super::mtadea`]): the same e-cube
//! routing mirrored, same cost. [`DimensionExchange`] takes the order as a parameter.
//!
//! Bookkeeping: node X's `out` is row X of a k × k block matrix that the algorithm
//! transposes by swapping, one dimension per step, that bit between row and column
//! labels. Before the step crossing dimension d, with S the mask of the dimensions
//! already crossed, column C of node X holds A_{a,b} = block b of rank a's `in`, where
//!
//! ```text
//! a = (X & !S) | (C & S),    b = (C & !S) | (X & S).
//! ```
//!
//! The step sends the 2^{n−1} columns whose bit d differs from X's (the blocks whose
//! destination b differs from X in bit d) to X ^ 2^d, in increasing column order, in
//! runs of 2^d columns, as one message (one strided region); the partner's message fills
//! the same columns (its column C' lands in C' ^ 2^d). A receive may not write what the
//! same step sends, so from step 1 on it lands in `tmp` and a local copy puts it in
//! place. Before step 0, S = 0 and C = b: `in` itself is the row, so step 0 receives
//! straight into `out` and copies the kept columns from `in` (on 2 nodes the whole
//! exchange is then one message each way and one copy, as `MPI_Alltoall`'s). After the
//! last step S is every dimension and column C holds A_{C,X}, which is what `out` must
//! hold: no final permutation.
//!
//! Cost: n steps (one step of local copies when n = 0, none when m = 0); in each step
//! every node sends one message of 2^{n−1} blocks to one neighbour and receives one:
//! n(β + 2^{n−1}mτ) under full duplex and n(2β + 2^n mτ) under half duplex, under either
//! port rule. Volume n·2^{2n−1}·m: every block crosses exactly its Hamming distance, the
//! least any schedule moves. Memory: `tmp` of 2^{n−1}m elements (none for n ≤ 1).
//!
//! Constraints: hypercube.

use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Model};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::topology::{DimOrder, Hypercube};
use crate::verify::Problem;

/// The all-to-all that swaps one dimension of the block matrix per step, in a given
/// order: the schedule of `dimension-exchange` (ascending) and `mtadea` (descending).
#[derive(Clone, Debug)]
pub struct DimensionExchange {
    cube: Hypercube,
    m: u64,
    order: DimOrder,
}

/// The hypercube of an all-to-all problem (shared by the all-to-all files); `algo`
/// names the algorithm in errors.
pub(crate) fn alltoall_cube(
    problem: &Problem<'_>,
    cube: Hypercube,
    algo: &str,
) -> Result<Hypercube, Error> {
    match problem.collective {
        Collective::Alltoall => Ok(cube),
        other => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("{algo} performs alltoall, not {other}"),
        }),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = alltoall_cube(problem, *cube, "dimension-exchange")?;
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
}

/// The columns of an n-cube's row whose bit `d` equals `bit`, m elements each: runs of
/// 2^d columns every 2^{d+1} columns, 2^{n−1−d} of them, as one strided region of `buf`
/// (contiguous when d = n − 1).
fn columns(buf: Buf, n: u32, d: u32, bit: u32, m: u64) -> Region {
    let run = (1u64 << d) * m;
    Region::strided(buf, bit as u64 * run, run, 2 * run, 1u64 << (n - 1 - d))
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
        let n = self.cube.dim();
        // Only steps after the first receive through `tmp`.
        let tmp_len = if self.m == 0 || n <= 1 {
            0
        } else {
            (1u64 << (n - 1)) * self.m
        };
        let steps = (0..self.steps()).map(move |t| self.step(rank, t as u32));
        StepStream::new(rank, tmp_len, steps)
    }
}

impl DimensionExchange {
    /// Step `t` of `rank`: the exchange across the step's dimension of the columns
    /// bound across it (a plain copy when n = 0).
    fn step(&self, rank: Rank, t: u32) -> Step {
        let (n, m) = (self.cube.dim(), self.m);
        let mut step = Step::default();
        if n == 0 {
            step.ops.push(Op::copy(
                Region::new(Buf::In, 0, m),
                Region::new(Buf::Out, 0, m),
            ));
            return step;
        }
        let half = 1u64 << (n - 1);
        let d = self.dim(t);
        let peer = self.cube.neighbor(rank, d);
        let mine = (rank >> d) & 1;
        // The row is still `in` before the first step, `out` afterwards.
        let row = if t == 0 { Buf::In } else { Buf::Out };
        // Send the columns bound across dimension d …
        let away = columns(row, n, d, 1 - mine, m);
        step.ops.push(Op::send(peer, away));
        let into = columns(Buf::Out, n, d, 1 - mine, m);
        if t == 0 {
            // … receive the partner's, which belong in the same columns, straight into
            // `out` (this step sends from `in`, so nothing it reads is overwritten),
            // and move the kept columns from `in` …
            step.ops.push(Op::recv(peer, into));
            step.ops.push(Op::copy(
                columns(Buf::In, n, d, mine, m),
                columns(Buf::Out, n, d, mine, m),
            ));
        } else {
            // … later steps send from `out` the very columns they receive: the message
            // lands in `tmp` and a local copy puts it in place.
            let tmp = Region::new(Buf::Tmp, 0, half * m);
            step.ops.push(Op::recv(peer, tmp));
            step.ops.push(Op::copy(tmp, into));
        }
        step
    }
}

/// Time of the exchange all-to-all: n steps of 2^{n−1} blocks each way; full duplex
/// n(β + 2^{n−1}mτ), half duplex n(2β + 2^n mτ); either port rule.
pub(crate) fn exchange_time(n: u32, m: u64, model: &Model) -> f64 {
    if m == 0 || n == 0 {
        return 0.0;
    }
    let one_way = model.beta() + (1u64 << (n - 1)) as f64 * m as f64 * model.tau();
    let per_step = match model.duplex {
        Duplex::Full => one_way,
        Duplex::Half | Duplex::HalfLink => 2.0 * one_way,
    };
    n as f64 * per_step
}

/// n(β + 2^{n−1}mτ) under full duplex (seed 001), n(2β + 2^n mτ) under half duplex;
/// both under either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) =
        fit::cube_of(problem).map(|c| alltoall_cube(problem, c, "dimension-exchange"))
    else {
        return vec![];
    };
    let value = exchange_time(cube.dim(), problem.len, &params.model);
    vec![match params.model.duplex {
        Duplex::Full => Formula::exact(
            "n(β + 2^{n−1}mτ)",
            "seed 001, All-to-all: log p (T_start + (p/2)·m·T_byte)",
            value,
        ),
        Duplex::Half | Duplex::HalfLink => Formula::exact(
            "n(2β + 2^n mτ)",
            "seed 001, All-to-all, each exchange as two transfers (half duplex)",
            value,
        ),
    }]
}

/// What the all-to-all tests of this directory share: build a case, verify it (at most
/// one message sent and one received per node per step), time it under every port and
/// duplex rule and check every closed form returned.
#[cfg(test)]
pub(crate) mod test_support {
    use crate::algorithms::{BuildFn, Formula, FormulaFn, Params};
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

    /// `build`'s schedule of `collective` verifies on hypercube:0..=6 for lengths 0, 1,
    /// 5, 7, 64 and 101 with at most one message per directed link and step, and its
    /// (single) form under each of [`MODELS`] holds for the simulated time.
    pub fn exact_forms_hold(build: BuildFn, formulas: FormulaFn, collective: Collective) {
        for n in 0..=6 {
            let topo = cube(n);
            for m in [0, 1, 5, 7, 64, 101] {
                let problem = Problem {
                    topology: &topo,
                    collective,
                    len: m,
                    commutative: true,
                    counts: None,
                };
                let s = build(&problem, &Params::default()).unwrap();
                let strict = Strictness {
                    ports: Some(Ports::All),
                    duplex: None,
                    host_ports: None,
                };
                verify(problem, s.as_ref(), strict).unwrap_or_else(|v| panic!("n={n} m={m}: {v}"));
                for (ports, duplex) in MODELS {
                    let model = Model {
                        ports,
                        duplex,
                        ..Model::new(1.0, 0.01).unwrap()
                    };
                    let params = Params {
                        model,
                        ..Params::default()
                    };
                    let t = simulate(&topo, s.as_ref(), &model).time;
                    let f = &formulas(&problem, &params)[0];
                    assert!(f.holds_for(t), "n={n} m={m} {ports} {duplex}: {t} vs {f:?}");
                }
            }
        }
    }

    /// `hypercube:n`.
    pub fn cube(n: u32) -> Topology {
        format!("hypercube:{n}").parse().expect("a valid hypercube")
    }

    /// Build and verify `collective` on the n-cube with length `m`.
    pub fn verified(
        build: BuildFn,
        collective: Collective,
        n: u32,
        m: u64,
        commutative: bool,
    ) -> Box<dyn crate::schedule::Schedule> {
        let topo = cube(n);
        let problem = Problem {
            topology: &topo,
            collective,
            len: m,
            commutative,
            counts: None,
        };
        let sched = build(&problem, &Params::default()).expect("builds");
        assert_eq!(sched.nodes(), topo.nodes());
        let strict = Strictness {
            ports: Some(Ports::One),
            duplex: None,
            host_ports: None,
        };
        if let Err(v) = verify(problem, sched.as_ref(), strict) {
            panic!("{collective} on hypercube:{n}, len {m}, commutative {commutative}: {v}");
        }
        sched
    }

    /// The forms returned under each model (β = 0.7, τ = 0.13), each checked against
    /// the simulated time: (ports, duplex, time, forms).
    pub fn timed(
        build: BuildFn,
        formulas: FormulaFn,
        collective: Collective,
        n: u32,
        m: u64,
    ) -> Vec<(Ports, Duplex, f64, Vec<Formula>)> {
        let topo = cube(n);
        let problem = Problem {
            topology: &topo,
            collective,
            len: m,
            commutative: true,
            counts: None,
        };
        let sched = build(&problem, &Params::default()).expect("builds");
        let mut out = Vec::new();
        for (ports, duplex) in MODELS {
            let model = Model {
                ports,
                duplex,
                ..Model::new(0.7, 0.13).unwrap()
            };
            let params = Params {
                model,
                ..Params::default()
            };
            let time = simulate(&topo, sched.as_ref(), &model).time;
            let forms = formulas(&problem, &params);
            assert!(!forms.is_empty(), "no form for {ports}/{duplex}");
            for f in &forms {
                assert!(
                    f.holds_for(time),
                    "{collective} on hypercube:{n}, len {m}, {ports}/{duplex}: {} ({:?}) = {} but simulated {time}",
                    f.expr,
                    f.kind,
                    f.value
                );
            }
            out.push((ports, duplex, time, forms));
        }
        out
    }

    /// Whether `forms` has an exact form written `expr`.
    pub fn has_exact(forms: &[Formula], expr: &str) -> bool {
        forms
            .iter()
            .any(|f| f.expr == expr && f.kind == crate::algorithms::FormulaKind::Exact)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{has_exact, timed, verified};
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::topology::Topology;

    #[test]
    fn verifies_for_every_cube_up_to_7_and_every_length() {
        for n in 0..=7 {
            for m in [0, 1, 7] {
                let s = verified(build, Collective::Alltoall, n, m, false);
                assert_eq!(s.steps(), if m == 0 { 0 } else { n.max(1) as usize });
            }
        }
    }

    #[test]
    fn forms_hold_under_every_model() {
        for n in 0..=7 {
            for m in [0, 1, 7] {
                for (ports, duplex, _, forms) in timed(build, formulas, Collective::Alltoall, n, m)
                {
                    let want = match duplex {
                        Duplex::Full => "n(β + 2^{n−1}mτ)",
                        Duplex::Half | Duplex::HalfLink => "n(2β + 2^n mτ)",
                    };
                    assert!(has_exact(&forms, want), "{ports}/{duplex}: {forms:?}");
                }
            }
        }
    }

    #[test]
    fn every_message_is_half_the_row_in_one_strided_region() {
        let topo = super::test_support::cube(4);
        let problem = Problem {
            topology: &topo,
            collective: Collective::Alltoall,
            len: 3,
            commutative: true,
            counts: None,
        };
        let p = build(&problem, &Params::default()).unwrap().program(5);
        for (t, step) in p.steps.iter().enumerate() {
            let Op::Send { to, from } = &step.ops[0] else {
                panic!("step {t} starts with a send")
            };
            assert_eq!(to[0], 5 ^ (1 << t));
            // Bit t of 5 = 0b0101 is 1 for t = 0, 2: those steps send the columns
            // whose bit t is 0, the others those whose bit t is 1.
            let bit = 1 - ((5 >> t) & 1);
            let cols: Vec<u64> = (0..16).filter(|c| (c >> t) & 1 == bit).collect();
            assert_eq!(from.len(), 1, "step {t}: one region");
            let elems: Vec<u64> = from[0].segments().flat_map(|r| r.off..r.end()).collect();
            let want: Vec<u64> = cols.iter().flat_map(|c| c * 3..c * 3 + 3).collect();
            assert_eq!(elems, want, "step {t}");
            assert_eq!(
                from[0].is_strided(),
                t < 3,
                "step {t}: contiguous only at d = n − 1"
            );
            assert_eq!(step.ops[0].message_len(), 8 * 3);
        }
    }

    #[test]
    fn runs_on_a_complete_graph_of_2_to_the_n_nodes_only() {
        use crate::verify::{verify, Strictness};
        for (topo, fits) in [("complete:16", true), ("complete:6", false)] {
            let topo: Topology = topo.parse().unwrap();
            let problem = Problem {
                topology: &topo,
                collective: Collective::Alltoall,
                len: 3,
                commutative: false,
                counts: None,
            };
            for build in [
                super::build,
                super::super::mtadea::build,
                super::super::smg::build,
            ] {
                match fit::on_cube(build, &problem, &Params::default()) {
                    Ok(s) => {
                        assert!(fits, "{topo}");
                        verify(problem, s.as_ref(), Strictness::default()).unwrap();
                    }
                    Err(e) => assert!(!fits, "{topo}: {e}"),
                }
            }
        }
    }

    #[test]
    fn verifies_at_n_10() {
        let start = std::time::Instant::now();
        verified(build, Collective::Alltoall, 10, 2, false);
        println!(
            "alltoall dimension-exchange, hypercube:10, len 2: verified in {:?}",
            start.elapsed()
        );
    }
}

//! All-reduce by dimension exchange, lowest dimension first.
//!
//! Reference: seed 001 (Wikipedia, *Hypercube (communication pattern)*), "All-gather /
//! all-reduce": for 0 ≤ k < d, exchange the accumulated x with i XOR 2^k and combine
//! what arrives instead of concatenating it. The seed times only the all-gather; with
//! messages that keep their length m the same sum gives log p·(T_start + m·T_byte), in
//! our notation n(β + mτ).
//!
//! Before step t a node holds the combination, in rank order, of the inputs of the
//! aligned range of 2^t ranks through it; its partner across dimension t holds the
//! adjacent range, so the received value is the left operand when the partner's ranks
//! are lower (bit t of the node set) and the right one otherwise. That keeps the result
//! correct for non-commutative operators.
//!
//! Buffers: `out` is the accumulator. Step 0 sends `in`, receives into `out` and combines
//! `in` into it; later steps send `out`, so they receive into `tmp` (a receive may not
//! write what its step sends) and combine `tmp` into `out`.
//!
//! Built by composition: step t is a two-node step on the edge K2 embedded across cube
//! dimension t (`schedule::compose::Embed::cube_dimension`), the n steps in sequence.
//!
//! Cost: n steps (one step of local copies when n = 0, none when m = 0); each node sends
//! and receives one message of m elements per step: n(β + mτ) under full duplex,
//! 2n(β + mτ) under half duplex, under either port rule. Volume n·2^n·m.
//!
//! Constraints: hypercube; any associative operator.

use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::{Duplex, Model};
use crate::error::Error;
use crate::schedule::compose::{Embed, Pair, RegionMap, Sequence};
use crate::schedule::{Action, Buf, Materialized, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The hypercube of a problem whose collective must be of `kind` (shared by the
/// reduction files); `algo` names the algorithm in errors.
pub(crate) fn reduction_cube(
    problem: &Problem<'_>,
    cube: Hypercube,
    algo: &str,
    kind: OpKind,
) -> Result<Hypercube, Error> {
    if problem.collective.kind() != kind {
        return Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("{algo} performs {kind}, not {}", problem.collective),
        });
    }
    Ok(cube)
}

/// How a value that arrives from `peer` combines into the one `rank` holds: on the left
/// when the peer's ranks are lower.
pub(crate) fn side(rank: Rank, peer: Rank) -> Action {
    if peer < rank {
        Action::CombineLeft
    } else {
        Action::CombineRight
    }
}

/// The side on which `rank`'s own input combines into a value received from `peer`
/// (the mirror of [`side`]).
pub(crate) fn own_side(rank: Rank, peer: Rank) -> Action {
    side(peer, rank)
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = reduction_cube(problem, *cube, "dimension-exchange", OpKind::Allreduce)?;
    let m = problem.len;
    let (input, out, tmp) = (
        Region::new(Buf::In, 0, m),
        Region::new(Buf::Out, 0, m),
        Region::new(Buf::Tmp, 0, m),
    );
    let tmp_len = if cube.dim() > 1 { m } else { 0 };
    exchange(&cube, m, input, out, tmp_len, |t, c| {
        let peer = 1 - c;
        if t == 0 {
            // Exchange the inputs; out = (received, in) in rank order.
            vec![
                Op::send(peer, input),
                Op::recv(peer, out),
                Op::Local {
                    from: input,
                    into: out,
                    action: own_side(c, peer),
                },
            ]
        } else {
            // Exchange the accumulators; the received one is combined on its side.
            vec![
                Op::send(peer, out),
                Op::recv(peer, tmp),
                Op::Local {
                    from: tmp,
                    into: out,
                    action: side(c, peer),
                },
            ]
        }
    })
}

/// The exchange reductions (all-reduce, scan) as n steps, step t the two-node step
/// `step(t, c)` (c the side: 1 where the partner's ranks are lower) embedded across
/// cube dimension t ([`Embed::cube_dimension`]), one after another ([`Sequence`]).
/// With m = 0 no step; on the 0-cube one step copying `input` to `out`.
pub(crate) fn exchange(
    cube: &Hypercube,
    m: u64,
    input: Region,
    out: Region,
    tmp_len: u64,
    step: impl Fn(u32, Rank) -> Vec<Op>,
) -> Result<Box<dyn Schedule>, Error> {
    exchange_mapped(cube, m, input, out, |t| {
        (
            Pair::new([step(t, 0), step(t, 1)], tmp_len),
            Box::new(|_, r| r),
        )
    })
}

/// [`exchange`] with each step's pair and the map that places its regions for each
/// rank (where a step's buffers depend on the rank's other bits).
pub(crate) fn exchange_mapped(
    cube: &Hypercube,
    m: u64,
    input: Region,
    out: Region,
    step: impl Fn(u32) -> (Pair, RegionMap),
) -> Result<Box<dyn Schedule>, Error> {
    if m == 0 {
        return Ok(Box::new(crate::algorithms::plan::empty(cube.nodes())));
    }
    if cube.dim() == 0 {
        let mut prog = Program::new(0, 1);
        prog.push(0, Op::copy(input, out));
        return Ok(Box::new(Materialized {
            nodes: 1,
            steps: 1,
            programs: vec![prog],
        }));
    }
    let steps = (0..cube.dim())
        .map(|t| {
            let (pair, map) = step(t);
            Embed::cube_dimension(Box::new(pair), cube, t, map)
                .map(|e| Box::new(e) as Box<dyn Schedule>)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Box::new(Sequence::new(steps)?))
}

/// Time of an exchange reduction (all-reduce, scan): n steps of one m-element message
/// each way; n(β + mτ) under full duplex, 2n(β + mτ) under half; either port rule.
pub(crate) fn exchange_time(n: u32, m: u64, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let one_way = n as f64 * (model.beta() + m as f64 * model.tau());
    match model.duplex {
        Duplex::Full => one_way,
        Duplex::Half | Duplex::HalfLink => 2.0 * one_way,
    }
}

/// The exchange reductions' form under `model`: n(β + mτ) (full duplex, `full_ref`) or
/// 2n(β + mτ) (half duplex, `half_ref`).
pub(crate) fn exchange_formula(
    n: u32,
    m: u64,
    model: &Model,
    full_ref: &'static str,
    half_ref: &'static str,
) -> Formula {
    let value = exchange_time(n, m, model);
    match model.duplex {
        Duplex::Full => Formula::exact("n(β + mτ)", full_ref, value),
        Duplex::Half | Duplex::HalfLink => Formula::exact("2n(β + mτ)", half_ref, value),
    }
}

/// n(β + mτ) under full duplex (seed 001), 2n(β + mτ) under half duplex; both under
/// either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem)
        .map(|c| reduction_cube(problem, c, "dimension-exchange", OpKind::Allreduce))
    else {
        return vec![];
    };
    vec![exchange_formula(
        cube.dim(),
        problem.len,
        &params.model,
        "seed 001, All-gather / all-reduce, with m-element messages in every step",
        "seed 001, All-reduce, each exchange as two transfers (half duplex)",
    )]
}

/// What the reduction tests share: verification in and out of rank order, and a
/// schedule with one combine turned to the wrong side.
#[cfg(test)]
pub(crate) mod test_support {
    use crate::algorithms::{BuildFn, Params};
    use crate::collective::Collective;
    use crate::schedule::{materialize, Action, Op, Rank};
    use crate::verify::{verify_programs, Problem, Strictness, Violation};

    pub use crate::algorithms::alltoall::dimension_exchange::test_support::{
        cube, has_exact, timed, verified,
    };

    /// Build `collective` on the n-cube with length `m`, flip the side of the `nth`
    /// combine (received or local, from 0) of `rank`'s program, and verify; `None` if
    /// that program has fewer combines.
    pub fn with_flipped_combine(
        build: BuildFn,
        collective: Collective,
        n: u32,
        m: u64,
        (rank, nth): (Rank, usize),
        commutative: bool,
    ) -> Option<Result<(), Violation>> {
        let topo = cube(n);
        let problem = Problem {
            topology: &topo,
            collective,
            len: m,
            commutative,
            counts: None,
        };
        let mut s = materialize(build(&problem, &Params::default()).unwrap().as_ref());
        let action = s.programs[rank as usize]
            .steps
            .iter_mut()
            .flat_map(|st| st.ops.iter_mut())
            .filter_map(|op| match op {
                Op::Recv { action, .. } | Op::Local { action, .. } if *action != Action::Place => {
                    Some(action)
                }
                _ => None,
            })
            .nth(nth)?;
        *action = match *action {
            Action::CombineLeft => Action::CombineRight,
            _ => Action::CombineLeft,
        };
        Some(verify_programs(
            problem,
            &s.programs,
            s.steps,
            Strictness::default(),
        ))
    }

    /// Verify every case of `collective` for n = 0..=7, lengths 0, 1, 7, with a
    /// commutative and a non-commutative operator.
    pub fn verify_all(build: BuildFn, collective: impl Fn(u32) -> Vec<Collective>) {
        for n in 0..=7 {
            for c in collective(n) {
                for m in [0, 1, 7] {
                    for commutative in [true, false] {
                        verified(build, c, n, m, commutative);
                    }
                }
            }
        }
    }

    /// Assert that flipping the `nth` combine of `rank` is caught in rank order and
    /// harmless for a commutative operator.
    pub fn flipped_is_caught(build: BuildFn, collective: Collective, n: u32, at: (Rank, usize)) {
        let strict = with_flipped_combine(build, collective, n, 3, at, false)
            .expect("the program has that combine");
        let v = strict.expect_err("a combine on the wrong side must be caught");
        assert_eq!(
            v.kind,
            crate::verify::ViolationKind::PostCondition,
            "{collective}: {v}"
        );
        with_flipped_combine(build, collective, n, 3, at, true)
            .unwrap()
            .expect("a commutative operator does not care about the side");
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::collective::Collective;

    #[test]
    fn verifies_in_rank_order_for_every_cube_up_to_7() {
        verify_all(build, |_| vec![Collective::Allreduce]);
    }

    #[test]
    fn a_combine_on_the_wrong_side_is_caught() {
        // Step 0's local combine of the input, and later steps' of what arrived.
        for rank in [0, 5, 7] {
            for nth in 0..3 {
                flipped_is_caught(build, Collective::Allreduce, 3, (rank, nth));
            }
        }
    }

    #[test]
    fn reductions_run_on_a_complete_graph_of_2_to_the_n_nodes_only() {
        use crate::algorithms::fit::CubeBuild;
        use crate::algorithms::{exclusive_scan, reduce, reduce_scatter, scan};
        use crate::verify::{verify, Strictness};
        let cases: [(CubeBuild, Collective); 5] = [
            (super::build, Collective::Allreduce),
            (reduce::sbt::build, Collective::Reduce { root: 3 }),
            (scan::dimension_exchange::build, Collective::Scan),
            (
                exclusive_scan::dimension_exchange::build,
                Collective::ExclusiveScan,
            ),
            (
                reduce_scatter::recursive_halving::build,
                Collective::ReduceScatter,
            ),
        ];
        for (topo, fits) in [("complete:8", true), ("complete:12", false)] {
            let topo: crate::topology::Topology = topo.parse().unwrap();
            for (cube_build, collective) in cases {
                let build = |p: &Problem<'_>, q: &Params| fit::on_cube(cube_build, p, q);
                let problem = Problem {
                    topology: &topo,
                    collective,
                    len: 3,
                    commutative: false,
                    counts: None,
                };
                match build(&problem, &Params::default()) {
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
    fn issue_form_holds_under_full_duplex() {
        for n in 0..=7 {
            for m in [0, 1, 7] {
                for (ports, duplex, _, forms) in timed(build, formulas, Collective::Allreduce, n, m)
                {
                    let want = match duplex {
                        Duplex::Full => "n(β + mτ)",
                        Duplex::Half | Duplex::HalfLink => "2n(β + mτ)",
                    };
                    assert!(has_exact(&forms, want), "{ports}/{duplex}: {forms:?}");
                }
            }
        }
    }
}

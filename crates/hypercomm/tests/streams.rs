//! The contract of `Schedule::stream`: for every registry algorithm, on hypercube:0 to
//! hypercube:5 and complete:1 to complete:9, two roots, several lengths and packet
//! counts, every rank's stream has the program's header and yields exactly `steps()`
//! steps, equal to `program(rank).steps`.
//! (Algorithms that stream lazily generate their steps one by one; a stream that
//! diverges from the program would verify something other than what runs.)

mod common;

use hypercomm::algorithms::{self, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::schedule::{materialize, Program, Rank, Schedule, Step, StepStream};
use hypercomm::topology::Topology;
use hypercomm::verify::{verify, verify_programs, Problem, Strictness, ViolationKind};

#[test]
fn every_stream_equals_its_program() {
    let mut compared = 0u64;
    common::for_each_small_schedule(&[], |case, _, s| {
        for r in 0..s.nodes() {
            let prog = s.program(r);
            let stream = s.stream(r);
            assert_eq!(
                stream.rank, r,
                "{case}: stream of rank {r} is labelled {}",
                stream.rank
            );
            assert_eq!(stream.tmp_len, prog.tmp_len, "{case}, rank {r}: tmp_len");
            let (lo, hi) = stream.size_hint();
            assert!(
                lo <= s.steps() && hi.map_or(true, |h| h >= s.steps()),
                "{case}, rank {r}: size_hint {lo}, {hi:?}"
            );
            let mut steps = 0;
            for (t, step) in stream.enumerate() {
                assert!(
                    t < s.steps(),
                    "{case}, rank {r}: more than {} steps",
                    s.steps()
                );
                assert_eq!(
                    step, prog.steps[t],
                    "{case}, rank {r}: step {t} differs from the program's"
                );
                steps += 1;
            }
            assert_eq!(steps, s.steps(), "{case}, rank {r}: {steps} steps streamed");
            compared += 1;
        }
    });
    assert!(compared > 10_000, "only {compared} programs compared");
}

/// A registry schedule whose rank `bad` streams `delta` steps too many (> 0) or too
/// few (< 0), with an exact length hint or none.
struct WrongLength {
    inner: Box<dyn Schedule>,
    bad: Rank,
    delta: i64,
    exact_hint: bool,
}

impl Schedule for WrongLength {
    fn nodes(&self) -> u32 {
        self.inner.nodes()
    }
    fn steps(&self) -> usize {
        self.inner.steps()
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let s = self.inner.stream(rank);
        let (r, tmp) = (s.rank, s.tmp_len);
        let steps = self.steps() as i64 + if rank == self.bad { self.delta } else { 0 };
        let extra = (steps - self.steps() as i64).max(0) as usize;
        let it = s
            .chain(std::iter::repeat(Step::default()).take(extra))
            .take(steps as usize);
        if self.exact_hint {
            StepStream::new(r, tmp, it.collect::<Vec<_>>().into_iter())
        } else {
            StepStream::new(r, tmp, it.filter(|_| true))
        }
    }
}

/// `verify` reports a stream of the wrong length as `MalformedProgram` with the same
/// words as `verify_programs`, whether its length is known upfront or found out.
#[test]
fn a_stream_of_the_wrong_length_is_malformed() {
    let topo: Topology = "hypercube:3".parse().unwrap();
    let problem = Problem {
        topology: &topo,
        collective: Collective::Allgather,
        len: 7,
        commutative: true,
    };
    let algo = algorithms::find(OpKind::Allgather, "sba").unwrap();
    for (delta, exact_hint) in [(-1, true), (-1, false), (2, true), (2, false)] {
        let s = WrongLength {
            inner: algo.build(&problem, &Params::packets(1)).unwrap(),
            bad: 5,
            delta,
            exact_hint,
        };
        let steps = s.steps();
        let v = verify(problem, &s, Strictness::default()).unwrap_err();
        assert_eq!(v.kind, ViolationKind::MalformedProgram, "{v}");
        assert_eq!(v.rank, 5);
        let got = (steps as i64 + delta) as usize;
        assert_eq!(v.detail, format!("{got} steps, the schedule has {steps}"));
        let progs = materialize(&s).programs;
        let w = verify_programs(problem, &progs, steps, Strictness::default()).unwrap_err();
        assert_eq!(v, w);
    }
}

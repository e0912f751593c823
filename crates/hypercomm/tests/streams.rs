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
use hypercomm::verify::{
    verify, verify_programs, verify_programs_with, verify_with, Options, Problem, Strictness,
    ViolationKind,
};

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
        counts: None,
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

fn send_step(to: Rank, len: u64) -> Step {
    use hypercomm::schedule::{Buf, Op, Region};
    Step {
        ops: vec![Op::send(to, Region::new(Buf::In, 0, len))],
    }
}

/// A sparse stream is the dense sequence with its idle steps filled in: its iterator
/// yields `len` steps, `next_busy` only the busy ones with their indices, and an index
/// that does not increase stands for the next step, one at or past `len` lengthens it.
#[test]
fn a_sparse_stream_is_its_busy_steps_with_idle_ones_between() {
    let busy = || {
        vec![
            (1, send_step(1, 1)),
            (4, send_step(1, 2)),
            (5, send_step(1, 3)),
        ]
    };
    let dense: Vec<Step> = StepStream::sparse(3, 9, 7, busy().into_iter()).collect();
    assert_eq!(dense.len(), 7);
    for (t, step) in dense.iter().enumerate() {
        let want = busy().into_iter().find(|b| b.0 == t).map(|b| b.1);
        assert_eq!(*step, want.unwrap_or_default(), "step {t}");
    }
    let mut st = StepStream::sparse(3, 9, 7, busy().into_iter());
    assert_eq!((st.rank, st.tmp_len), (3, 9));
    assert_eq!(st.next_busy(), Some((1, send_step(1, 1))));
    assert_eq!(st.next_busy(), Some((4, send_step(1, 2))));
    assert_eq!(st.finish(), 7);
    // Dense streams skip their empty steps the same way.
    let mut d = StepStream::new(3, 0, dense.clone().into_iter());
    let got: Vec<_> = std::iter::from_fn(|| d.next_busy()).collect();
    assert_eq!(got, busy());
    assert_eq!(d.finish(), 7);
    // Out of order: index 2 after 4 is step 5; past the end: the program grows.
    let odd = vec![
        (4, send_step(1, 1)),
        (2, send_step(1, 2)),
        (9, send_step(1, 3)),
    ];
    let mut st = StepStream::sparse(0, 0, 7, odd.clone().into_iter());
    assert_eq!(st.next_busy().map(|b| b.0), Some(4));
    assert_eq!(st.next_busy().map(|b| b.0), Some(5));
    assert_eq!(st.next_busy().map(|b| b.0), Some(9));
    assert_eq!(st.finish(), 10);
    let p = StepStream::sparse(0, 0, 7, odd.into_iter()).into_program();
    assert_eq!(p.steps.len(), 10);
    assert_eq!(p.steps[5], send_step(1, 2));
    assert_eq!(p.steps[9], send_step(1, 3));
}

/// A registry schedule with one op removed from one rank's step, streamed sparsely
/// (busy steps only) as the verifier's fastest path takes it.
struct Broken {
    inner: Box<dyn Schedule>,
    rank: Rank,
    step: usize,
    op: usize,
}

impl Schedule for Broken {
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
        let mut s = self.inner.stream(rank);
        let (r, tmp) = (s.rank, s.tmp_len);
        let (bad, at, op) = (self.rank, self.step, self.op);
        let busy = std::iter::from_fn(move || {
            let (t, mut step) = s.next_busy()?;
            if r == bad && t == at && op < step.ops.len() {
                step.ops.remove(op);
            }
            Some((t, step))
        });
        StepStream::sparse(r, tmp, self.steps(), busy)
    }
}

/// The verifier visits only busy ranks and steps when streaming; it must still report
/// the same first violation as the lock-step walk over whole programs, whichever
/// operation of whichever rank is missing.
#[test]
fn sparse_streaming_finds_the_same_first_violation_as_whole_programs() {
    let topo: Topology = "hypercube:3".parse().unwrap();
    let mut broken = 0;
    for (op, name, collective) in [
        (OpKind::Allgather, "sba", Collective::Allgather),
        (OpKind::Alltoall, "smg", Collective::Alltoall),
        (OpKind::Allgather, "adea", Collective::Allgather),
        (OpKind::Allgather, "tea1", Collective::Allgather),
        (OpKind::Alltoall, "dimension-exchange", Collective::Alltoall),
        (
            OpKind::ReduceScatter,
            "recursive-halving",
            Collective::ReduceScatter,
        ),
    ] {
        let problem = Problem {
            topology: &topo,
            collective,
            len: 3,
            commutative: true,
            counts: None,
        };
        let algo = algorithms::find(op, name).unwrap();
        let s = algo.build(&problem, &Params::packets(1)).unwrap();
        for rank in 0..8 {
            let prog = s.program(rank);
            for (t, step) in prog.steps.iter().enumerate() {
                for i in 0..step.ops.len() {
                    let b = Broken {
                        inner: algo.build(&problem, &Params::packets(1)).unwrap(),
                        rank,
                        step: t,
                        op: i,
                    };
                    let v = verify(problem, &b, Strictness::default());
                    let progs = materialize(&b).programs;
                    let w = verify_programs(problem, &progs, b.steps(), Strictness::default());
                    assert!(
                        v.is_err(),
                        "{name}: dropping op {i} of step {t} at {rank} passes"
                    );
                    assert_eq!(v, w, "{name}: op {i} of step {t} at {rank}");
                    // And with every buffer in cell form from its first write on.
                    let cells = Options::default().promote_at(1);
                    let c = verify_with(problem, &b, Strictness::default(), cells);
                    assert_eq!(v, c, "{name}: op {i} of step {t} at {rank}, cell form");
                    // And on 3 threads, every step split between them (ranks cut into
                    // parts of about a third of the regions each): the same violation.
                    for threads in [2, 3] {
                        let par = Options::default().threads(threads).parallel_from(0);
                        let p = verify_with(problem, &b, Strictness::default(), par);
                        assert_eq!(
                            v, p,
                            "{name}: op {i} of step {t} at {rank}, {threads} threads"
                        );
                        let p = verify_programs_with(
                            problem,
                            &progs,
                            b.steps(),
                            Strictness::default(),
                            par,
                        );
                        assert_eq!(
                            v, p,
                            "{name}: op {i} of step {t} at {rank}, {threads} threads, programs"
                        );
                    }
                    broken += 1;
                }
            }
        }
    }
    assert!(broken > 100, "only {broken} broken schedules");
}

/// At a size where the default options split steps between threads (TEA1 on
/// hypercube:9: a step names up to ~300,000 segments, `PARALLEL_FROM` is 32,768), the
/// verdict on 2 and 3 threads is the sequential one: Ok for the schedule, and the same
/// first violation when one op is dropped, in a low, a middle and the last rank (so
/// in the first, a middle and the last part), and when ops are dropped in two ranks of
/// different parts in one step (the lower rank's violation must win).
#[test]
fn parallel_verification_at_default_thresholds_finds_the_same_violations() {
    let topo: Topology = "hypercube:9".parse().unwrap();
    let collective = Collective::new(OpKind::Allgather, topo.nodes(), None, None, None).unwrap();
    let problem = Problem {
        topology: &topo,
        collective,
        len: 3,
        commutative: true,
        counts: None,
    };
    let algo = algorithms::find(OpKind::Allgather, "tea1").unwrap();
    let s = algo.build(&problem, &Params::default()).unwrap();
    for threads in [2, 3] {
        let opts = Options::default().threads(threads);
        assert_eq!(opts.parallel_from, hypercomm::verify::PARALLEL_FROM);
        verify_with(problem, s.as_ref(), Strictness::default(), opts).unwrap();
    }
    let cases = [
        (3, 4, 2, None),
        (300, 3, 5, None),
        (511, 8, 0, None),
        (200, 0, 0, None),
        (10, 4, 1, Some(500)),
        (10, 4, 12, Some(500)),
        (100, 6, 0, Some(400)),
    ];
    for (rank, step, op, also) in cases {
        let once = Broken {
            inner: algo.build(&problem, &Params::default()).unwrap(),
            rank,
            step,
            op,
        };
        let b = match also {
            None => once,
            Some(high) => Broken {
                inner: Box::new(once),
                rank: high,
                step,
                op,
            },
        };
        let v = verify(problem, &b, Strictness::default());
        assert!(
            v.is_err(),
            "dropping op {op} of step {step} at {rank} passes"
        );
        for threads in [2, 3] {
            let opts = Options::default().threads(threads);
            let w = verify_with(problem, &b, Strictness::default(), opts);
            assert_eq!(
                v, w,
                "op {op} of step {step} at {rank} on {threads} threads"
            );
        }
    }
}

/// A program built whole and idle in most of its steps streams only its busy steps
/// (`From<Program>`), and still reads as the whole program: the same steps, busy ones at
/// their indices, and its full length.
#[test]
fn a_mostly_idle_program_streams_as_itself() {
    for busy_at in [vec![], vec![0], vec![3, 999], vec![1, 2, 500]] {
        let mut prog = Program::new(7, 1000);
        for &s in &busy_at {
            prog.steps[s] = send_step(1, s as u64 + 1);
        }
        let whole: Vec<Step> = StepStream::from(prog.clone()).collect();
        assert_eq!(whole, prog.steps, "{busy_at:?}");
        let mut stream = StepStream::from(prog.clone());
        let mut seen = vec![];
        while let Some((i, step)) = stream.next_busy() {
            assert_eq!(step, prog.steps[i], "{busy_at:?}: step {i}");
            seen.push(i);
        }
        assert_eq!(seen, busy_at);
        assert_eq!(stream.finish(), 1000, "{busy_at:?}");
    }
}

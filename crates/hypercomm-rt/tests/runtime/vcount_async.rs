//! The non-blocking (`immediate_gatherv_into`, …) and persistent (`plan_gatherv`, …)
//! variable-count collectives on threads, on 1, 2, 3, 5 and 8 ranks with random counts
//! (about a third zero): the five calls started together, each by another registry
//! algorithm (every one that fits is used in turn, and `auto`), and completed in
//! another order than started (one polled with `test`, one dropped unfinished); plans
//! run several times with new data each run, and started as requests; every result
//! against the blocking call's and a serial reference. Then the errors: a run with
//! buffers of the wrong length, `native`, counts that disagree.

use hypercomm::collective::OpKind;
use hypercomm_rt::{threads, Algo, Comm, Error, Op, Persistent, Transport};

use crate::reference::Rng;
use crate::vcount::{algos, counts, el, prefix, RANKS};

/// The five calls, in this order everywhere: their outputs on one rank.
type Outs = [Vec<u64>; 5];

/// What the five calls take on one rank.
struct Ins {
    /// gatherv's and allgatherv's send.
    mine: Vec<u64>,
    /// scatterv's send (the root's; empty elsewhere).
    root_data: Vec<u64>,
    /// alltoallv's send.
    blocks: Vec<u64>,
    /// reduce-scatter's send.
    whole: Vec<u64>,
}

/// One problem: per-rank counts `c` (gatherv, scatterv, allgatherv, reduce-scatter),
/// the k × k matrix `m` (alltoallv, row-major: m\[i·k + j\] elements from i to j) and a
/// root.
struct Case {
    k: usize,
    c: Vec<usize>,
    p: Vec<usize>,
    m: Vec<usize>,
    root: u32,
}

impl Case {
    fn new(rng: &mut Rng, k: u32) -> Case {
        let n = k as usize;
        let c = counts(rng, n);
        Case {
            k: n,
            p: prefix(&c),
            c,
            m: counts(rng, n * n),
            root: (rng.next() % k as u64) as u32,
        }
    }

    /// Element i of rank r's input in run `run`.
    fn x(run: u64, r: usize, i: usize) -> u64 {
        el(r as u32, i) ^ (run << 56)
    }

    fn row(&self, i: usize) -> Vec<usize> {
        self.m[i * self.k..][..self.k].to_vec()
    }

    fn col(&self, j: usize) -> Vec<usize> {
        (0..self.k).map(|i| self.m[i * self.k + j]).collect()
    }

    fn total(&self) -> usize {
        self.p[self.k]
    }

    fn ins(&self, run: u64, r: usize) -> Ins {
        let x = |i| Self::x(run, r, i);
        let row = self.row(r);
        Ins {
            mine: (0..self.c[r]).map(x).collect(),
            root_data: match r == self.root as usize {
                true => (0..self.total()).map(x).collect(),
                false => vec![],
            },
            blocks: (0..self.k)
                .flat_map(|j| (0..row[j]).map(move |e| 1000 * j + e))
                .map(x)
                .collect(),
            whole: (0..self.total()).map(x).collect(),
        }
    }

    /// Rank r's outputs, zeroed, of the lengths the calls take.
    fn outs(&self, r: usize) -> Outs {
        let at_root = if r == self.root as usize {
            self.total()
        } else {
            0
        };
        let got = self.col(r).iter().sum();
        [at_root, self.c[r], self.total(), got, self.c[r]].map(|n| vec![0; n])
    }

    /// The serial reference: rank r's outputs in run `run`.
    fn want(&self, run: u64, r: usize) -> Outs {
        let (k, root) = (self.k, self.root as usize);
        let all: Vec<u64> = (0..k)
            .flat_map(|s| (0..self.c[s]).map(move |i| Self::x(run, s, i)))
            .collect();
        let mine = self.p[r]..self.p[r + 1];
        [
            if r == root { all.clone() } else { vec![] },
            mine.clone().map(|i| Self::x(run, root, i)).collect(),
            all,
            (0..k)
                .flat_map(|i| (0..self.m[i * k + r]).map(move |e| Self::x(run, i, 1000 * r + e)))
                .collect(),
            mine.map(|i| (0..k).map(|s| Self::x(run, s, i)).sum())
                .collect(),
        ]
    }

    /// Rank r's results of run `run` by `form` (and by the blocking calls) against the
    /// reference.
    fn check(
        &self,
        names: [&str; 5],
        (run, r): (u64, usize),
        (form, got): (&str, &Outs),
        blocked: &Outs,
        context: &str,
    ) {
        let want = self.want(run, r);
        for (n, op) in OPS.iter().enumerate() {
            let what = format!(
                "{op}/{} k {} rank {r} run {run} counts {:?} matrix {:?} root {}{context}",
                names[n], self.k, self.c, self.m, self.root
            );
            assert_eq!(blocked[n], want[n], "blocking {what}");
            assert_eq!(got[n], want[n], "{form} {what}");
        }
    }
}

const OPS: [OpKind; 5] = [
    OpKind::Gatherv,
    OpKind::Scatterv,
    OpKind::Allgatherv,
    OpKind::Alltoallv,
    OpKind::ReduceScatterv,
];

/// The algorithm of each call in round `i`: every fitting one in turn, and `auto`.
fn names(k: u32, i: usize) -> [&'static str; 5] {
    OPS.map(|op| {
        let v = algos(op, k);
        v[i % v.len()]
    })
}

/// Rounds enough to use every algorithm of every call.
fn rounds(k: u32) -> usize {
    OPS.iter().map(|&op| algos(op, k).len()).max().unwrap()
}

/// The five blocking calls.
fn blocking<X: Transport>(
    comm: &mut Comm<X>,
    case: &Case,
    ins: &Ins,
    names: [&str; 5],
) -> Result<Outs, Error> {
    let r = comm.rank() as usize;
    let is_root = r == case.root as usize;
    let mut outs = case.outs(r);
    let [g, s, a, t, rs] = &mut outs;
    let (row, col) = (case.row(r), case.col(r));
    let a_ = |i: usize| Algo::from(names[i]);
    comm.gatherv_into(
        case.root,
        &ins.mine,
        is_root.then_some(&mut g[..]),
        &case.c,
        a_(0),
    )?;
    let root_data = is_root.then_some(&ins.root_data[..]);
    comm.scatterv_into(case.root, root_data, s, &case.c, a_(1))?;
    comm.all_gatherv_into(&ins.mine, a, &case.c, a_(2))?;
    comm.all_to_allv_into(&ins.blocks, &row, t, &col, a_(3))?;
    comm.reduce_scatter_into(&ins.whole, rs, &case.c, &Op::sum(), a_(4))?;
    Ok(outs)
}

/// The five calls as requests, started in order and waited for in `order`; the one
/// `order` leaves out is dropped unfinished (the drop waits), and the first waited
/// for is polled with `test`.
fn immediate<X: hypercomm_rt::Detach>(
    comm: &mut Comm<X>,
    case: &Case,
    ins: &Ins,
    names: [&str; 5],
    order: &[usize],
) -> Result<Outs, Error>
where
    X::Detached: Send,
{
    let r = comm.rank() as usize;
    let is_root = r == case.root as usize;
    let mut outs = case.outs(r);
    let [g, s, a, t, rs] = &mut outs;
    let (row, col) = (case.row(r), case.col(r));
    let sum = Op::sum();
    let a_ = |i: usize| Algo::from(names[i]);
    std::thread::scope(|scope| {
        let root_data = is_root.then_some(&ins.root_data[..]);
        let gather = is_root.then_some(&mut g[..]);
        let mut reqs = vec![
            Some(comm.immediate_gatherv_into(
                scope,
                case.root,
                &ins.mine,
                gather,
                &case.c,
                a_(0),
            )?),
            Some(comm.immediate_scatterv_into(scope, case.root, root_data, s, &case.c, a_(1))?),
            Some(comm.immediate_all_gatherv_into(scope, &ins.mine, a, &case.c, a_(2))?),
            Some(comm.immediate_all_to_allv_into(scope, &ins.blocks, &row, t, &col, a_(3))?),
            Some(comm.immediate_reduce_scatter_into(
                scope,
                &ins.whole,
                rs,
                &case.c,
                &sum,
                a_(4),
            )?),
        ];
        for (n, &i) in order.iter().enumerate() {
            let mut req = reqs[i].take().expect("each waited for once");
            if n == 0 {
                loop {
                    match req.test() {
                        Ok(done) => break done.map(drop)?,
                        Err(pending) => req = pending,
                    };
                    std::thread::yield_now();
                }
            } else {
                req.wait()?;
            }
        }
        drop(reqs); // the one left unfinished, if any: waited for by its drop
        Ok::<_, Error>(())
    })?;
    Ok(outs)
}

/// Every call's algorithms, on every rank count, non-blocking with the calls completed
/// in another order than started (rotated and reversed per round, one dropped in
/// every third round), against the blocking calls and the reference.
#[test]
fn immediate_varcount_calls_match_the_blocking_ones_in_any_order() {
    let mut rng = Rng::new(2424);
    for k in RANKS {
        for i in 0..rounds(k) {
            let case = Case::new(&mut rng, k);
            let names = names(k, i);
            // Waited for from the (i mod 5)-th on, backwards; one left to its drop.
            let mut order: Vec<usize> = (0..5).map(|n| (i + 5 - n) % 5).collect();
            if i % 3 == 2 {
                order.pop();
            }
            let got = threads::run(k, |comm| {
                let r = comm.rank() as usize;
                let ins = case.ins(i as u64, r);
                let started = immediate(comm, &case, &ins, names, &order)?;
                let blocked = blocking(comm, &case, &ins, names)?;
                Ok::<_, Error>((started, blocked))
            })
            .unwrap();
            for (r, (started, blocked)) in got.iter().enumerate() {
                let order = format!(" order {order:?}");
                case.check(
                    names,
                    (i as u64, r),
                    ("immediate", started),
                    blocked,
                    &order,
                );
            }
        }
    }
}

/// The five plans of `case` on this rank.
fn plans<X: Transport>(
    comm: &mut Comm<X>,
    case: &Case,
    names: [&str; 5],
) -> Result<[Persistent<'static, u64>; 5], Error> {
    let r = comm.rank() as usize;
    let a_ = |i: usize| Algo::from(names[i]);
    Ok([
        comm.plan_gatherv(case.root, &case.c, a_(0))?,
        comm.plan_scatterv(case.root, &case.c, a_(1))?,
        comm.plan_all_gatherv(&case.c, a_(2))?,
        comm.plan_all_to_allv(&case.row(r), &case.col(r), a_(3))?,
        comm.plan_reduce_scatter(&case.c, Op::sum(), a_(4))?,
    ])
}

/// Each plan's send on this rank.
fn sends(ins: &Ins) -> [&[u64]; 5] {
    [
        &ins.mine,
        &ins.root_data,
        &ins.mine,
        &ins.blocks,
        &ins.whole,
    ]
}

/// Plans of every call's algorithms on every rank count, each run five times with new
/// data: by `run`, or (every other run) started as requests on a progress thread and
/// completed last first; each run against the blocking calls and the reference.
#[test]
fn persistent_varcount_plans_run_many_times_with_new_data() {
    let mut rng = Rng::new(4242);
    for k in RANKS {
        for i in 0..rounds(k) {
            let case = Case::new(&mut rng, k);
            let names = names(k, i);
            let got = threads::run(k, |comm| {
                let r = comm.rank() as usize;
                let plans = plans(comm, &case, names)?;
                for (n, plan) in plans.iter().enumerate() {
                    assert_eq!(
                        plan.lens(),
                        (sends(&case.ins(0, r))[n].len(), case.outs(r)[n].len()),
                        "{}",
                        OPS[n]
                    );
                    assert_eq!(plan.ran().auto, names[n] == "auto");
                }
                let mut runs = Vec::new();
                for run in 0..5u64 {
                    let ins = case.ins(run, r);
                    let mut outs = case.outs(r);
                    if run % 2 == 0 {
                        for ((plan, send), out) in plans.iter().zip(sends(&ins)).zip(&mut outs) {
                            plan.run(comm, send, out)?;
                        }
                    } else {
                        std::thread::scope(|s| {
                            let mut reqs = Vec::new();
                            for ((plan, send), out) in plans.iter().zip(sends(&ins)).zip(&mut outs)
                            {
                                reqs.push(plan.start(comm, s, send, out)?);
                            }
                            while let Some(req) = reqs.pop() {
                                req.wait()?;
                            }
                            Ok::<_, Error>(())
                        })?;
                    }
                    runs.push((outs, blocking(comm, &case, &ins, names)?));
                }
                Ok::<_, Error>(runs)
            })
            .unwrap();
            for (r, runs) in got.iter().enumerate() {
                for (run, (planned, blocked)) in runs.iter().enumerate() {
                    let at = (run as u64, r);
                    case.check(names, at, ("persistent", planned), blocked, "");
                }
            }
        }
    }
}

/// A run with buffers of the wrong length is a typed error naming the expected
/// lengths; `native` is refused at plan time; an alltoallv whose counts disagree fails
/// when planned, on every rank, and as a request, at `wait`.
#[test]
fn varcount_plans_and_requests_report_bad_buffers_and_counts() {
    let counts = [2, 0, 3];
    let got = threads::run(3, |comm| {
        let r = comm.rank() as usize;
        let plan = comm.plan_all_gatherv::<u32>(&counts, Algo::Auto)?;
        let mut all = [0u32; 4]; // 5 expected
        let short = plan.run(comm, &vec![1; counts[r]], &mut all).unwrap_err();
        let native = comm
            .plan_reduce_scatter::<u32>(&counts, Op::sum(), Algo::Named("native"))
            .err()
            .map(|e| e.to_string());
        // Rank 0 thinks it sends 2 to rank 1; rank 1 expects 1 from rank 0.
        let sc = if r == 0 { [0, 2, 0] } else { [0; 3] };
        let rc = if r == 1 { [1, 0, 0] } else { [0; 3] };
        let planned = comm.plan_all_to_allv::<u8>(&sc, &rc, Algo::Auto).err();
        let (send, mut recv) = (vec![0u8; sc[1]], vec![0u8; rc[0]]);
        let waited = std::thread::scope(|s| {
            comm.immediate_all_to_allv_into(s, &send, &sc, &mut recv, &rc, Algo::Auto)?
                .wait()
        })
        .err();
        Ok::<_, Error>((short, native, planned, waited))
    })
    .unwrap();
    for (short, native, planned, waited) in got {
        assert!(
            matches!(
                short,
                Error::BufferLength {
                    expected: 5,
                    got: 4,
                    ..
                }
            ),
            "{short}"
        );
        let native = native.expect("native refused");
        assert!(native.contains("persistent"), "{native}");
        for e in [planned, waited] {
            let e = e.expect("a count mismatch").to_string();
            assert!(
                e.contains("rank 0 sends rank 1 2 elements, but rank 1 expects 1"),
                "{e}"
            );
        }
    }
}

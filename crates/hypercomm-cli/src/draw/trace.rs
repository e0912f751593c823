//! When each rank works and waits in each step, under the timing in force, from the
//! library's own cost functions: rounds timing charges a step its slowest node
//! (`cost::step_time`) or its medium (`cost::MediumStep`), as the simulator does;
//! async timing takes each rank's finish times from `cost::async_finish_times`, the
//! simulator's clock. Nothing here prices a transfer its own way, and a test checks
//! that the makespan equals the simulator's time for every registry algorithm.

use hypercomm::cost::model::{Model, Timing};
use hypercomm::cost::{async_finish_times, step_time, MediumStep};
use hypercomm::schedule::{Op, Program, Rank, Step};
use hypercomm::topology::{Medium, Topology};

/// One rank's share of one step: it starts at `begin`, works (its own step time, no
/// peer making it wait) from `work.0` to `work.1`, and is done at `end`; the rest of
/// `begin..end` is waiting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    /// When the rank may start the step.
    pub begin: f64,
    /// When it works: its own step time.
    pub work: (f64, f64),
    /// When it is done with the step.
    pub end: f64,
}

/// What sets a step's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Critical {
    /// The slowest rank (rounds) or the last to finish (async).
    Rank(Rank),
    /// The shared medium (a bus or a shared memory).
    Medium,
}

/// The timing of a whole schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The timing applied (async on a bus or a shared memory is rounds timing).
    pub timing: Timing,
    /// Per step, per rank: its span, for the ranks that communicate in the step.
    pub spans: Vec<Vec<Option<Span>>>,
    /// Per step, when it starts and ends (rounds: the round; async: the earliest
    /// begin and the latest end of its ranks).
    pub steps: Vec<(f64, f64)>,
    /// Per step, what sets its end (none for a step without transfers).
    pub critical: Vec<Option<Critical>>,
    /// The simulated time.
    pub makespan: f64,
    /// What sets the makespan: the last rank to finish (async), or the rank (or the
    /// medium) that sets the most rounds (rounds).
    pub setter: Option<Critical>,
}

/// Whether a step of a program moves data.
pub fn communicates(step: &Step) -> bool {
    step.ops.iter().any(|o| !matches!(o, Op::Local { .. }))
}

/// Time `progs` on `topo` under `model`.
pub fn trace(topo: &Topology, progs: &[Program], steps: usize, model: &Model) -> Trace {
    let medium = match topo.medium_kind() {
        Some(m @ (Medium::Bus | Medium::Shm { .. })) => Some(m),
        _ => None,
    };
    let timing = if medium.is_some() {
        Timing::Rounds
    } else {
        model.timing
    };
    match timing {
        Timing::Rounds => rounds(topo, progs, steps, model, medium),
        Timing::Async => asynchronous(topo, progs, steps, model),
    }
}

fn rounds(
    topo: &Topology,
    progs: &[Program],
    steps: usize,
    model: &Model,
    medium: Option<Medium>,
) -> Trace {
    let mut own = vec![vec![None; progs.len()]; steps];
    let mut round = vec![0.0f64; steps];
    let mut critical = vec![None; steps];
    for s in 0..steps {
        let mut use_of_medium = MediumStep::default();
        for p in progs {
            let step = &p.steps[s];
            if !communicates(step) {
                continue;
            }
            let t = step_time(topo, model, p.rank, step);
            own[s][p.rank as usize] = Some(t);
            if critical[s].is_none() || t > round[s] {
                critical[s] = Some(Critical::Rank(p.rank));
            }
            round[s] = round[s].max(t);
            if medium.is_some() {
                use_of_medium.add(topo, model, p.rank, step);
            }
        }
        if let Some(kind) = medium {
            let m = use_of_medium.time(kind);
            if m > round[s] {
                critical[s] = Some(Critical::Medium);
            }
            round[s] = round[s].max(m);
        }
    }
    let mut clock = 0.0;
    let mut spans = Vec::with_capacity(steps);
    let mut bounds = Vec::with_capacity(steps);
    for (s, row) in own.iter().enumerate() {
        let end = clock + round[s];
        spans.push(
            row.iter()
                .map(|t| {
                    t.map(|t| Span {
                        begin: clock,
                        work: (clock, clock + t),
                        end,
                    })
                })
                .collect(),
        );
        bounds.push((clock, end));
        clock = end;
    }
    // The simulator's sum, in its order.
    let makespan = round.iter().sum();
    let setter = most_frequent(&critical);
    Trace {
        timing: Timing::Rounds,
        spans,
        steps: bounds,
        critical,
        makespan,
        setter,
    }
}

fn asynchronous(topo: &Topology, progs: &[Program], steps: usize, model: &Model) -> Trace {
    let finish = async_finish_times(topo, progs, steps, model);
    let mut spans = Vec::with_capacity(steps);
    let mut bounds = Vec::with_capacity(steps);
    let mut critical = Vec::with_capacity(steps);
    for s in 0..steps {
        let mut row = vec![None; progs.len()];
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        let mut last: Option<(Rank, f64)> = None;
        for (i, p) in progs.iter().enumerate() {
            let step = &p.steps[s];
            if !communicates(step) {
                continue;
            }
            let begin = if s == 0 { 0.0 } else { finish[s - 1][i] };
            let end = finish[s][i];
            let own = step_time(topo, model, p.rank, step);
            // The rank waits for its peers first, then works: its own step time ends
            // the step.
            row[i] = Some(Span {
                begin,
                work: ((end - own).max(begin), end),
                end,
            });
            lo = lo.min(begin);
            hi = hi.max(end);
            if !matches!(last, Some((_, t)) if t >= end) {
                last = Some((p.rank, end));
            }
        }
        critical.push(last.map(|(r, _)| Critical::Rank(r)));
        bounds.push(if lo.is_finite() { (lo, hi) } else { (hi, hi) });
        spans.push(row);
    }
    let last_row = finish.last();
    let makespan = last_row.map_or(0.0, |r| r.iter().copied().fold(0.0, f64::max));
    let setter = last_row.and_then(|r| {
        r.iter()
            .enumerate()
            .filter(|(_, t)| **t == makespan && makespan > 0.0)
            .map(|(i, _)| Critical::Rank(progs[i].rank))
            .next()
    });
    Trace {
        timing: Timing::Async,
        spans,
        steps: bounds,
        critical,
        makespan,
        setter,
    }
}

/// The critical entry that occurs most often (ties: the first to reach the count).
fn most_frequent(critical: &[Option<Critical>]) -> Option<Critical> {
    let mut counts: Vec<(Critical, usize)> = Vec::new();
    for c in critical.iter().flatten() {
        match counts.iter_mut().find(|(k, _)| k == c) {
            Some((_, n)) => *n += 1,
            None => counts.push((*c, 1)),
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == best).map(|(c, _)| c)
}

/// How many steps `what` sets.
pub fn sets(trace: &Trace, what: Critical) -> usize {
    trace.critical.iter().filter(|c| **c == Some(what)).count()
}

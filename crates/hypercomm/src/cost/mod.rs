//! The cost simulator: times a schedule under a [`Model`].
//!
//! Cost of one node in one step (β, τ of the link's class; one transfer of m elements
//! costs β + mτ, Saad & Schultz 1985 eq. 1.1):
//! - `ports = all`: links work in parallel; messages on the same link serialise; a
//!   multicast costs one transfer on each of its links, concurrently (seed 000's
//!   assumption 2: the same data to any number of neighbours costs the same);
//!   the send side takes the busiest outgoing link's time, the receive side likewise.
//! - `ports = one`: all sends serialise (a multicast to p peers is p sends), and so do
//!   all receives.
//! - `duplex = full`: the step takes max(send side, receive side); `half`: their sum.
//!
//! `rounds` timing: a round costs its slowest node; the total is the sum over rounds.
//! This needs only one program at a time: [`simulate`] streams the ranks, so memory
//! grows with the number of steps, not with the number of nodes.
//! `async` timing: a node's transfer in step s begins once both it and its peer have
//! finished step s − 1; it keeps one finish time per node and all programs.

pub mod model;

use serde::Serialize;

use crate::schedule::{Op, Program, Rank, Schedule, Step};
use crate::topology::Topology;
use model::{Duplex, Model, Ports, Timing};

/// What a simulation measured.
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
pub struct Report {
    /// Simulated time.
    pub time: f64,
    /// Rounds in which at least one message moves.
    pub rounds: usize,
    /// Messages (a multicast to p peers counts p).
    pub messages: u64,
    /// Elements moved over links, summed over messages.
    pub volume: u64,
    /// Elements carried by the busiest directed link.
    pub max_link_load: u64,
}

/// Finish time of one side (sends or receives) of a node's step: `transfers` are
/// (peer, elements) in op order, none may start before `base` nor before `begin(peer)`.
fn side(
    topo: &Topology,
    model: &Model,
    rank: Rank,
    transfers: impl Iterator<Item = (Rank, u64)>,
    base: f64,
    begin: &impl Fn(Rank) -> f64,
) -> f64 {
    let mut done = base;
    // Busy-until time per link (`ports = all`) or of the one port (`ports = one`).
    let mut links: Vec<(Rank, f64)> = Vec::new();
    let mut port = base;
    for (peer, len) in transfers {
        let cost = model.link(topo.link_class(rank, peer)).transfer(len);
        let start = begin(peer).max(base);
        let slot = match model.ports {
            Ports::One => &mut port,
            Ports::All => match links.iter().position(|(p, _)| *p == peer) {
                Some(i) => &mut links[i].1,
                None => {
                    links.push((peer, base));
                    &mut links.last_mut().expect("just pushed").1
                }
            },
        };
        *slot = slot.max(start) + cost;
        done = done.max(*slot);
    }
    done
}

/// Finish time of one step at one node that is ready at `ready`; a transfer with
/// `peer` cannot begin before `begin(peer)`. Under half duplex the receives follow
/// the sends.
fn node_step_time(
    topo: &Topology,
    model: &Model,
    rank: Rank,
    step: &Step,
    ready: f64,
    begin: impl Fn(Rank) -> f64,
) -> f64 {
    let sends = step.ops.iter().filter_map(|op| match op {
        Op::Send { to, .. } => Some(to.iter().map(move |&q| (q, op.message_len()))),
        _ => None,
    });
    let send_done = side(topo, model, rank, sends.flatten(), ready, &begin);
    let recvs = step.ops.iter().filter_map(|op| match op {
        Op::Recv { from, .. } => Some((*from, op.message_len())),
        _ => None,
    });
    let recv_base = if model.duplex == Duplex::Half {
        send_done
    } else {
        ready
    };
    let recv_done = side(topo, model, rank, recvs, recv_base, &begin);
    send_done.max(recv_done)
}

/// Message statistics of one program, added into `report`.
fn count(prog: &Program, report: &mut Report) {
    let mut load: Vec<(Rank, u64)> = Vec::new();
    for step in &prog.steps {
        for op in &step.ops {
            if let Op::Send { to, .. } = op {
                let len = op.message_len();
                report.messages += to.len() as u64;
                report.volume += len * to.len() as u64;
                for &q in to {
                    match load.iter_mut().find(|(p, _)| *p == q) {
                        Some((_, l)) => *l += len,
                        None => load.push((q, len)),
                    }
                }
            }
        }
    }
    report.max_link_load = report
        .max_link_load
        .max(load.iter().map(|&(_, l)| l).max().unwrap_or(0));
}

/// Time `schedule` on `topo` under `model`.
///
/// Both timings assume the schedule is well formed (run the verifier first for
/// anything not produced by the registry).
pub fn simulate(topo: &Topology, schedule: &dyn Schedule, model: &Model) -> Report {
    match model.timing {
        Timing::Rounds => simulate_rounds(topo, schedule, model),
        Timing::Async => {
            let progs: Vec<Program> = (0..schedule.nodes()).map(|r| schedule.program(r)).collect();
            simulate_programs(topo, &progs, schedule.steps(), model)
        }
    }
}

fn simulate_rounds(topo: &Topology, schedule: &dyn Schedule, model: &Model) -> Report {
    let mut part = RoundsPartial::new(schedule.steps());
    part.add_ranks(topo, schedule, model, 0..schedule.nodes());
    part.finish()
}

/// The rounds-model simulation of a subset of the ranks, to be merged with the others.
///
/// The library does no threading itself; a caller with several cores splits the
/// ranks, runs [`RoundsPartial::add_ranks`] on each part in its own thread, and
/// [`merge`](RoundsPartial::merge)s: the result equals [`simulate`]'s.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundsPartial {
    round: Vec<f64>,
    busy: Vec<bool>,
    report: Report,
}

impl RoundsPartial {
    /// Nothing simulated yet, for a schedule of `steps` steps.
    pub fn new(steps: usize) -> Self {
        RoundsPartial {
            round: vec![0.0; steps],
            busy: vec![false; steps],
            report: Report::default(),
        }
    }

    /// Generate and time the programs of `ranks`, one at a time.
    pub fn add_ranks(
        &mut self,
        topo: &Topology,
        schedule: &dyn Schedule,
        model: &Model,
        ranks: std::ops::Range<Rank>,
    ) {
        for r in ranks {
            let prog = schedule.program(r);
            for (s, step) in prog.steps.iter().enumerate().take(self.round.len()) {
                if step.ops.iter().any(|o| !matches!(o, Op::Local { .. })) {
                    self.busy[s] = true;
                    let t = node_step_time(topo, model, r, step, 0.0, |_| 0.0);
                    self.round[s] = self.round[s].max(t);
                }
            }
            count(&prog, &mut self.report);
        }
    }

    /// Fold another part into this one.
    pub fn merge(&mut self, other: &RoundsPartial) {
        for (a, b) in self.round.iter_mut().zip(&other.round) {
            *a = a.max(*b);
        }
        for (a, b) in self.busy.iter_mut().zip(&other.busy) {
            *a |= *b;
        }
        self.report.messages += other.report.messages;
        self.report.volume += other.report.volume;
        self.report.max_link_load = self.report.max_link_load.max(other.report.max_link_load);
    }

    /// The report of everything added.
    pub fn finish(mut self) -> Report {
        self.report.time = self.round.iter().sum();
        self.report.rounds = self.busy.iter().filter(|b| **b).count();
        self.report
    }
}

/// Time programs already in memory (rounds or async, as `model.timing` says).
pub fn simulate_programs(
    topo: &Topology,
    progs: &[Program],
    steps: usize,
    model: &Model,
) -> Report {
    let mut report = Report::default();
    for p in progs {
        count(p, &mut report);
    }
    let mut busy = vec![false; steps];
    let mut ready = vec![0.0f64; progs.len()];
    let mut next = vec![0.0f64; progs.len()];
    let mut clock = 0.0f64;
    for s in 0..steps {
        let mut round = 0.0f64;
        for (i, p) in progs.iter().enumerate() {
            let step = &p.steps[s];
            if step.ops.iter().all(|o| matches!(o, Op::Local { .. })) {
                next[i] = ready[i];
                continue;
            }
            busy[s] = true;
            match model.timing {
                Timing::Rounds => {
                    round = round.max(node_step_time(topo, model, p.rank, step, 0.0, |_| 0.0));
                }
                Timing::Async => {
                    next[i] = node_step_time(topo, model, p.rank, step, ready[i], |q| {
                        ready.get(q as usize).copied().unwrap_or(0.0)
                    });
                }
            }
        }
        match model.timing {
            Timing::Rounds => clock += round,
            Timing::Async => std::mem::swap(&mut ready, &mut next),
        }
    }
    report.time = match model.timing {
        Timing::Rounds => clock,
        Timing::Async => ready.iter().copied().fold(0.0, f64::max),
    };
    report.rounds = busy.iter().filter(|b| **b).count();
    report
}

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
//! `async` timing: each transfer of step s occupies both its ends. It begins at the
//! latest of: its sender and its receiver having finished step s − 1 (the data is
//! there, the buffers are free), the sender's port being free and the receiver's port
//! being free; it then keeps both ports busy for β + mτ. Ports: under `ports = one` a
//! node has one send port, which sends its step's messages in op order (a multicast
//! to p peers in the order of its peers), and one receive port, which takes the
//! messages in the order they can start; under `ports = all` each directed link
//! carries its messages in op order, different links overlap. Among the transfers
//! that could go next the one that can start earliest goes first (ties: the lower
//! sender, then its op order). A node finishes step s when its last transfer of the
//! step ends, and no earlier than its start plus its own step time as above (so
//! under `duplex = half` its sends' and receives' times add up, as in `rounds`; the
//! transfers themselves are placed as under full duplex: making a node's sends and
//! receives exclude each other would exceed the rounds time, e.g. on an odd ring,
//! where one step needs 3(β + mτ) instead of the 2(β + mτ) the rules above count).
//! A node without transfers in step s finishes it when it finished s − 1. This keeps
//! one finish time per node and all programs.
//!
//! Under `ports = all` async never exceeds rounds. Under `ports = one` it can: rounds
//! charges a step its busiest port, as if the step's transfers could always be ordered
//! to meet it, but transfers that each hold a send port and a receive port without
//! preemption form an open shop, where no order may reach that bound and list
//! scheduling can exceed it (multipath on hypercube:2 with 298 elements and ν opt
//! takes one τ more). The rounds form is the papers' model; async is what one order
//! achieves.

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
/// `links` is scratch space (its contents are discarded).
fn side(
    topo: &Topology,
    model: &Model,
    rank: Rank,
    transfers: impl Iterator<Item = (Rank, u64)>,
    base: f64,
    begin: &impl Fn(Rank) -> f64,
    links: &mut Vec<(Rank, f64)>,
) -> f64 {
    let mut done = base;
    // Busy-until time per link (`ports = all`) or of the one port (`ports = one`).
    links.clear();
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
    node_step_time_in(topo, model, rank, step, ready, begin, &mut Vec::new())
}

/// The time `rank` needs for `step` on its own, its transfers starting at 0 and no
/// peer making it wait: what `rounds` timing charges the node for the step (a round
/// costs the largest of these). For callers that combine nodes' step times in other
/// ways, e.g. ranks sharing a processor, whose steps run one after another.
pub fn step_time(topo: &Topology, model: &Model, rank: Rank, step: &Step) -> f64 {
    node_step_time(topo, model, rank, step, 0.0, |_| 0.0)
}

/// [`node_step_time`] with the scratch space of [`side`] supplied by the caller.
fn node_step_time_in(
    topo: &Topology,
    model: &Model,
    rank: Rank,
    step: &Step,
    ready: f64,
    begin: impl Fn(Rank) -> f64,
    links: &mut Vec<(Rank, f64)>,
) -> f64 {
    let sends = step.ops.iter().filter_map(|op| match op {
        Op::Send { to, .. } => {
            let len = op.message_len();
            Some(to.iter().map(move |&q| (q, len)))
        }
        _ => None,
    });
    let send_done = side(topo, model, rank, sends.flatten(), ready, &begin, links);
    let recvs = step.ops.iter().filter_map(|op| match op {
        Op::Recv { from, .. } => Some((*from, op.message_len())),
        _ => None,
    });
    let recv_base = if model.duplex == Duplex::Half {
        send_done
    } else {
        ready
    };
    let recv_done = side(topo, model, rank, recvs, recv_base, &begin, links);
    send_done.max(recv_done)
}

/// Message statistics of one program, added into `report`.
/// ([`RoundsPartial::add_ranks`] counts the same in its pass over the steps.)
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

    /// Generate and time the programs of `ranks`, one at a time, each written over the
    /// previous one ([`Schedule::program_into`]), so the buffers are reused.
    pub fn add_ranks(
        &mut self,
        topo: &Topology,
        schedule: &dyn Schedule,
        model: &Model,
        ranks: std::ops::Range<Rank>,
    ) {
        let mut prog = Program::default();
        let mut links: Vec<(Rank, f64)> = Vec::new();
        let mut load: Vec<(Rank, u64)> = Vec::new();
        for r in ranks {
            schedule.program_into(r, &mut prog);
            // One pass over the program: the statistics of `count` and the step times.
            load.clear();
            for (s, step) in prog.steps.iter().enumerate() {
                let mut comm = false;
                // Transfers of the step, and the last one's (peer, elements).
                let (mut transfers, mut last) = (0usize, (0 as Rank, 0u64));
                for op in &step.ops {
                    match op {
                        Op::Send { to, .. } => {
                            comm = true;
                            let len = op.message_len();
                            self.report.messages += to.len() as u64;
                            self.report.volume += len * to.len() as u64;
                            for &q in to {
                                match load.iter_mut().find(|(p, _)| *p == q) {
                                    Some((_, l)) => *l += len,
                                    None => load.push((q, len)),
                                }
                                last = (q, len);
                            }
                            transfers += to.len();
                        }
                        Op::Recv { from, .. } => {
                            comm = true;
                            transfers += 1;
                            last = (*from, op.message_len());
                        }
                        Op::Local { .. } => {}
                    }
                }
                if comm && s < self.round.len() {
                    self.busy[s] = true;
                    // One transfer (the common step of a tree; local ops cost nothing):
                    // what `node_step_time` computes for it, under every port and duplex
                    // rule, in the same floating-point operations.
                    let t = if transfers == 1 {
                        let (peer, len) = last;
                        let cost = model.link(topo.link_class(r, peer)).transfer(len);
                        0.0f64.max(0.0 + cost)
                    } else {
                        node_step_time_in(topo, model, r, step, 0.0, |_| 0.0, &mut links)
                    };
                    self.round[s] = self.round[s].max(t);
                }
            }
            self.report.max_link_load = self
                .report
                .max_link_load
                .max(load.iter().map(|&(_, l)| l).max().unwrap_or(0));
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
    for (s, busy) in busy.iter_mut().enumerate() {
        let mut round = 0.0f64;
        for p in progs {
            let step = &p.steps[s];
            if step.ops.iter().all(|o| matches!(o, Op::Local { .. })) {
                continue;
            }
            *busy = true;
            if model.timing == Timing::Rounds {
                round = round.max(node_step_time(topo, model, p.rank, step, 0.0, |_| 0.0));
            }
        }
        match model.timing {
            Timing::Rounds => clock += round,
            Timing::Async => {
                async_step(topo, model, progs, s, &ready, &mut next);
                std::mem::swap(&mut ready, &mut next);
            }
        }
    }
    report.time = match model.timing {
        Timing::Rounds => clock,
        Timing::Async => ready.iter().copied().fold(0.0, f64::max),
    };
    report.rounds = busy.iter().filter(|b| **b).count();
    report
}

/// One queue of transfers of an async step: a node's sends (`ports = one`) or one
/// directed link's messages (`ports = all`), in op order.
struct Queue {
    from: Rank,
    /// (receiver, cost) in op order; `head` is the next to go.
    transfers: Vec<(Rank, f64)>,
    head: usize,
    /// When the queue's previous transfer ends.
    free: f64,
}

/// Time step `s` of every program under async timing (see the module doc): `ready[r]`
/// is when rank r finished step s − 1; `next[r]` becomes when it finishes step s.
fn async_step(
    topo: &Topology,
    model: &Model,
    progs: &[Program],
    s: usize,
    ready: &[f64],
    next: &mut [f64],
) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    next.copy_from_slice(ready);
    let at = |r: Rank| ready.get(r as usize).copied().unwrap_or(0.0);
    let mut queues: Vec<Queue> = Vec::new();
    for (i, p) in progs.iter().enumerate() {
        let first = queues.len();
        for op in &p.steps[s].ops {
            let Op::Send { to, .. } = op else { continue };
            let len = op.message_len();
            for &q in to {
                let cost = model.link(topo.link_class(p.rank, q)).transfer(len);
                let queue = match model.ports {
                    Ports::One => first,
                    Ports::All => (first..queues.len())
                        .find(|&j| queues[j].transfers[0].0 == q)
                        .unwrap_or(queues.len()),
                };
                if queue == queues.len() {
                    queues.push(Queue {
                        from: i as Rank,
                        transfers: Vec::new(),
                        head: 0,
                        free: 0.0,
                    });
                }
                queues[queue].transfers.push((q, cost));
            }
        }
    }
    // Busy-until of each node's send and receive port (`ports = one`; under
    // `ports = all` a link's queue is its only user).
    let nodes = progs.len();
    let mut send_until = vec![0.0f64; nodes];
    let mut recv_until = vec![0.0f64; nodes];
    let get = |v: &[f64], r: Rank| v.get(r as usize).copied().unwrap_or(0.0);
    let earliest = |queue: &Queue, send_until: &[f64], recv_until: &[f64]| -> f64 {
        let (p, (q, _)) = (queue.from, queue.transfers[queue.head]);
        let start = at(p).max(at(q)).max(queue.free);
        match model.ports {
            Ports::One => start.max(get(send_until, p)).max(get(recv_until, q)),
            Ports::All => start,
        }
    };
    // Lazy list scheduling: a queue's key only grows as ports fill up, so a popped
    // key that is still its queue's earliest start is the least of all.
    let key = |t: f64| t.to_bits(); // t ≥ 0: the bits order like the values
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = queues
        .iter()
        .enumerate()
        .map(|(j, queue)| Reverse((key(earliest(queue, &send_until, &recv_until)), j)))
        .collect();
    while let Some(Reverse((k, j))) = heap.pop() {
        let start = earliest(&queues[j], &send_until, &recv_until);
        if key(start) > k {
            heap.push(Reverse((key(start), j)));
            continue;
        }
        let queue = &mut queues[j];
        let (p, (q, cost)) = (queue.from, queue.transfers[queue.head]);
        let end = start + cost;
        queue.free = end;
        queue.head += 1;
        for (v, r) in [(&mut send_until, p), (&mut recv_until, q)] {
            if let Some(t) = v.get_mut(r as usize) {
                *t = t.max(end);
            }
        }
        for r in [p, q] {
            if let Some(t) = next.get_mut(r as usize) {
                *t = t.max(end);
            }
        }
        if queue.head < queue.transfers.len() {
            let again = earliest(&queues[j], &send_until, &recv_until);
            heap.push(Reverse((key(again), j)));
        }
    }
    // A node's step lasts at least its own step time (under half duplex, the sum of
    // its two sides).
    for (i, p) in progs.iter().enumerate() {
        let step = &p.steps[s];
        if step.ops.iter().any(|o| !matches!(o, Op::Local { .. })) {
            let own = node_step_time(topo, model, p.rank, step, ready[i], |_| 0.0);
            next[i] = next[i].max(own);
        }
    }
}

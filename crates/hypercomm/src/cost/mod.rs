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
use crate::topology::{Medium, Topology};
use model::{Duplex, Model, Ports, Timing};
use smallvec::SmallVec;

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
#[allow(clippy::too_many_arguments)]
fn side(
    topo: &Topology,
    model: &Model,
    rank: Rank,
    ports: Option<u32>,
    transfers: impl Iterator<Item = (Rank, u64)>,
    base: f64,
    begin: &impl Fn(Rank) -> f64,
    links: &mut Vec<(Rank, f64)>,
) -> f64 {
    let mut done = base;
    // Busy-until time per link (`ports = all`) or of the one port (`ports = one`).
    links.clear();
    let mut port = base;
    // S ports (S ≥ 2) of a side: a transfer waits for its link and for the port that
    // frees first (list scheduling in op order; exact when the links are at most S).
    let mut split: SmallVec<[f64; 4]> = SmallVec::new();
    if let Some(p) = ports.filter(|&p| p >= 2) {
        split.resize(p.min(64) as usize, base);
    }
    for (peer, len) in transfers {
        let cost = model.link(topo.link_class(rank, peer)).transfer(len);
        let start = begin(peer).max(base);
        if !split.is_empty() {
            let link = match links.iter().position(|(p, _)| *p == peer) {
                Some(i) => i,
                None => {
                    links.push((peer, base));
                    links.len() - 1
                }
            };
            let (i, free) =
                split
                    .iter()
                    .copied()
                    .enumerate()
                    .fold(
                        (0, f64::INFINITY),
                        |b, (i, t)| if t < b.1 { (i, t) } else { b },
                    );
            let end = start.max(links[link].1).max(free) + cost;
            links[link].1 = end;
            split[i] = end;
            done = done.max(end);
            continue;
        }
        let slot = match ports {
            Some(_) => &mut port,
            None => match links.iter().position(|(p, _)| *p == peer) {
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
    let ports = node_ports(topo, model, rank);
    // On a bus or a shared memory the medium prices the transfers between processing
    // elements; a node's own step counts only its host links.
    let priced = |peer: Rank| node_priced(topo, rank, peer);
    let sends = step.ops.iter().filter_map(|op| match op {
        Op::Send { to, .. } => {
            let len = op.message_len();
            Some(to.iter().filter(|&&q| priced(q)).map(move |&q| (q, len)))
        }
        _ => None,
    });
    let send_done = side(
        topo,
        model,
        rank,
        ports.send(),
        sends.flatten(),
        ready,
        &begin,
        links,
    );
    let recvs = step.ops.iter().filter_map(|op| match op {
        Op::Recv { from, .. } if priced(*from) => Some((*from, op.message_len())),
        _ => None,
    });
    let recv_base = if model.duplex == Duplex::Half {
        send_done
    } else {
        ready
    };
    let recv_done = side(
        topo,
        model,
        rank,
        ports.recv(),
        recvs,
        recv_base,
        &begin,
        links,
    );
    let done = send_done.max(recv_done);
    if model.duplex != Duplex::HalfLink {
        return done;
    }
    // Half-link duplex: a link carries one direction at a time, so the transfers both
    // ways on one link follow each other.
    links.clear();
    for op in &step.ops {
        let len = op.message_len();
        let peers: &[Rank] = match op {
            Op::Send { to, .. } => to,
            Op::Recv { from, .. } => std::slice::from_ref(from),
            Op::Local { .. } => &[],
        };
        for &q in peers.iter().filter(|&&q| priced(q)) {
            let cost = model.link(topo.link_class(rank, q)).transfer(len);
            match links.iter_mut().find(|(p, _)| *p == q) {
                Some((_, t)) => *t += cost,
                None => links.push((q, cost)),
            }
        }
    }
    let both = links.iter().map(|&(_, t)| t).fold(0.0, f64::max);
    done.max(ready + both)
}

/// The port rule of `rank`: the host's own (`host_ports`), one each way on a switch
/// (a crossbar connects each input to one output at a time), the model's otherwise.
pub fn node_ports(topo: &Topology, model: &Model, rank: Rank) -> Ports {
    if Some(rank) == topo.host() {
        model.host_ports
    } else if topo.medium_kind() == Some(Medium::Switch) {
        Ports::One
    } else {
        model.ports
    }
}

/// Whether the transfer between `rank` and `peer` is priced at the nodes (every
/// transfer but those between processing elements of a bus or a shared memory, which
/// the medium prices).
fn node_priced(topo: &Topology, rank: Rank, peer: Rank) -> bool {
    match topo.medium_kind() {
        Some(Medium::Bus | Medium::Shm { .. }) => {
            let host = topo.host();
            Some(rank) == host || Some(peer) == host
        }
        _ => true,
    }
}

/// Whether the topology's medium prices transfers (a bus or a shared memory).
fn medium_priced(topo: &Topology) -> bool {
    matches!(topo.medium_kind(), Some(Medium::Bus | Medium::Shm { .. }))
}

/// What one step asks of a shared medium, summed over the ranks added so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MediumStep {
    /// Bus: the transfers' times, one per send operation (a multicast is heard by all
    /// its receivers at once).
    pub bus: f64,
    /// Shared memory: writes (one per send operation) and reads (one per receive).
    pub writes: u64,
    pub reads: u64,
    /// The most writes, and reads, of one processor.
    pub max_writes: u64,
    pub max_reads: u64,
    /// The longest write and read (β + mτ).
    pub write_cost: f64,
    pub read_cost: f64,
}

impl MediumStep {
    /// Add `rank`'s step (transfers with the host are not the medium's).
    pub fn add(&mut self, topo: &Topology, model: &Model, rank: Rank, step: &Step) {
        let (mut w, mut r) = (0u64, 0u64);
        for op in &step.ops {
            let len = op.message_len();
            match op {
                Op::Send { to, .. } if to.iter().any(|&q| !node_priced(topo, rank, q)) => {
                    let cost = model.net.transfer(len);
                    self.bus += cost;
                    w += 1;
                    self.write_cost = self.write_cost.max(cost);
                }
                Op::Recv { from, .. } if !node_priced(topo, rank, *from) => {
                    r += 1;
                    self.read_cost = self.read_cost.max(model.net.transfer(len));
                }
                _ => {}
            }
        }
        self.writes += w;
        self.reads += r;
        self.max_writes = self.max_writes.max(w);
        self.max_reads = self.max_reads.max(r);
    }
    /// Fold another part's use of the same step in.
    pub fn merge(&mut self, o: &MediumStep) {
        self.bus += o.bus;
        self.writes += o.writes;
        self.reads += o.reads;
        self.max_writes = self.max_writes.max(o.max_writes);
        self.max_reads = self.max_reads.max(o.max_reads);
        self.write_cost = self.write_cost.max(o.write_cost);
        self.read_cost = self.read_cost.max(o.read_cost);
    }
    /// The step's time on `medium`:
    /// - bus: the transfers one after another (seed 004, §2 (A): the bus is
    ///   time-shared), Σ (β + m_i τ);
    /// - shared memory with S = k* accesses: a write phase, then a read phase; a phase
    ///   of a accesses, at most S at once and one per processor at once, takes
    ///   L = max(⌈a/S⌉, most accesses of one processor) rounds (McNaughton's
    ///   wrap-around fills S columns of length L without putting one processor twice
    ///   in a round), each round charged its longest access: L_w·(β + m_w τ) +
    ///   L_r·(β + m_r τ), m the largest message (seed 004, §2 (B));
    /// - switch: nothing beyond the nodes' own one-port rule.
    pub fn time(&self, medium: Medium) -> f64 {
        match medium {
            Medium::Bus => self.bus,
            Medium::Shm { accesses } => {
                let s = accesses.max(1) as u64;
                let lw = self.writes.div_ceil(s).max(self.max_writes);
                let lr = self.reads.div_ceil(s).max(self.max_reads);
                let w = if lw == 0 {
                    0.0
                } else {
                    lw as f64 * self.write_cost
                };
                let r = if lr == 0 {
                    0.0
                } else {
                    lr as f64 * self.read_cost
                };
                w + r
            }
            Medium::Switch => 0.0,
        }
    }
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
                load.extend(to.iter().map(|&q| (q, len)));
            }
        }
    }
    report.max_link_load = report.max_link_load.max(most_to_one_peer(&mut load));
}

/// The most elements sent to one peer among `(peer, elements)` sends: sorted by peer
/// and summed per peer (a search per send was quadratic in the peers: the pairwise
/// all-to-all on complete:4096 took minutes).
fn most_to_one_peer(load: &mut [(Rank, u64)]) -> u64 {
    load.sort_unstable_by_key(|&(q, _)| q);
    load.chunk_by(|a, b| a.0 == b.0)
        .map(|run| run.iter().map(|&(_, l)| l).sum::<u64>())
        .max()
        .unwrap_or(0)
}

/// Time `schedule` on `topo` under `model`.
///
/// Both timings assume the schedule is well formed (run the verifier first for
/// anything not produced by the registry).
pub fn simulate(topo: &Topology, schedule: &dyn Schedule, model: &Model) -> Report {
    match model.timing {
        Timing::Rounds => simulate_rounds(topo, schedule, model),
        // A bus or a shared memory serialises a step's transfers through one medium:
        // async timing is rounds timing there.
        Timing::Async if medium_priced(topo) => simulate_rounds(topo, schedule, model),
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
    /// Per step, the use of a bus or shared memory (empty on other topologies).
    medium: Vec<MediumStep>,
    kind: Option<Medium>,
    report: Report,
}

impl RoundsPartial {
    /// Nothing simulated yet, for a schedule of `steps` steps.
    pub fn new(steps: usize) -> Self {
        RoundsPartial {
            round: vec![0.0; steps],
            busy: vec![false; steps],
            medium: Vec::new(),
            kind: None,
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
        let medium = medium_priced(topo);
        if medium && self.medium.len() != self.round.len() {
            self.medium = vec![MediumStep::default(); self.round.len()];
            self.kind = topo.medium_kind();
        }
        // One transfer is timed directly only where a node's ports and links alone
        // price it.
        let direct = !medium && model.duplex != Duplex::HalfLink;
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
                                load.push((q, len));
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
                    if medium {
                        self.medium[s].add(topo, model, r, step);
                    }
                    let t = if transfers == 1 && direct && node_ports(topo, model, r) == model.ports
                    {
                        let (peer, len) = last;
                        let cost = model.link(topo.link_class(r, peer)).transfer(len);
                        0.0f64.max(0.0 + cost)
                    } else {
                        node_step_time_in(topo, model, r, step, 0.0, |_| 0.0, &mut links)
                    };
                    self.round[s] = self.round[s].max(t);
                }
            }
            self.report.max_link_load = self.report.max_link_load.max(most_to_one_peer(&mut load));
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
        if self.medium.is_empty() {
            self.medium = other.medium.clone();
            self.kind = other.kind;
        } else {
            for (a, b) in self.medium.iter_mut().zip(&other.medium) {
                a.merge(b);
            }
        }
        self.report.messages += other.report.messages;
        self.report.volume += other.report.volume;
        self.report.max_link_load = self.report.max_link_load.max(other.report.max_link_load);
    }

    /// The report of everything added.
    pub fn finish(mut self) -> Report {
        for (t, m) in self.round.iter_mut().zip(&self.medium) {
            if let Some(kind) = self.kind {
                *t = t.max(m.time(kind));
            }
        }
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
    // A bus or a shared memory serialises a step: async timing is rounds timing there.
    let timing = if medium_priced(topo) {
        Timing::Rounds
    } else {
        model.timing
    };
    for (s, busy) in busy.iter_mut().enumerate() {
        let mut round = 0.0f64;
        let mut medium = MediumStep::default();
        for p in progs {
            let step = &p.steps[s];
            if step.ops.iter().all(|o| matches!(o, Op::Local { .. })) {
                continue;
            }
            *busy = true;
            if timing == Timing::Rounds {
                round = round.max(node_step_time(topo, model, p.rank, step, 0.0, |_| 0.0));
                if medium_priced(topo) {
                    medium.add(topo, model, p.rank, step);
                }
            }
        }
        if let Some(kind) = topo.medium_kind() {
            round = round.max(medium.time(kind));
        }
        match timing {
            Timing::Rounds => clock += round,
            Timing::Async => {
                async_step(topo, model, progs, s, &ready, &mut next);
                std::mem::swap(&mut ready, &mut next);
            }
        }
    }
    report.time = match timing {
        Timing::Rounds => clock,
        Timing::Async => ready.iter().copied().fold(0.0, f64::max),
    };
    report.rounds = busy.iter().filter(|b| **b).count();
    report
}

/// When every rank finishes every step under async timing: row s holds each rank's
/// finish time of step s, the clock [`simulate_programs`] keeps (its time is the
/// largest entry of the last row). For consumers that show the timing (the CLI's
/// drawings); a bus or a shared memory has no async clock of its own (their async
/// timing is rounds timing).
pub fn async_finish_times(
    topo: &Topology,
    progs: &[Program],
    steps: usize,
    model: &Model,
) -> Vec<Vec<f64>> {
    let mut ready = vec![0.0f64; progs.len()];
    let mut next = vec![0.0f64; progs.len()];
    (0..steps)
        .map(|s| {
            async_step(topo, model, progs, s, &ready, &mut next);
            std::mem::swap(&mut ready, &mut next);
            ready.clone()
        })
        .collect()
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
                let queue = match node_ports(topo, model, p.rank).send() {
                    Some(1) => first,
                    _ => (first..queues.len())
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
        let one = |r: Rank, recv: bool| {
            let ports = node_ports(topo, model, r);
            (if recv { ports.recv() } else { ports.send() }) == Some(1)
        };
        let mut start = start;
        if one(p, false) {
            start = start.max(get(send_until, p));
        }
        if one(q, true) {
            start = start.max(get(recv_until, q));
        }
        start
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

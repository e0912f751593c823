//! The tester helper shared by `harness.rs` and `properties.rs`: [`check`] runs one case
//! (algorithm × topology × collective × length × packets × β, τ) through every code path
//! of the library — build, verify, both timings of the simulator under every port and
//! duplex rule asked for, the closed forms, the lower bound, the JSON document — and
//! says what went wrong in one line that names the case.

#![allow(dead_code)] // each test binary uses a different part of this module

use hypercomm::algorithms::{Algorithm, FormulaKind, Packets, Params};
use hypercomm::bounds::lower_bound;
use hypercomm::collective::{Collective, OpKind};
use hypercomm::cost::model::{Duplex, Model, Ports, Timing};
use hypercomm::cost::{simulate, simulate_programs, Report};
use hypercomm::error::Error;
use hypercomm::schedule::json::Document;
use hypercomm::schedule::{materialize, Op, Program, Rank, Schedule};
use hypercomm::topology::{Medium, Topology};
use hypercomm::verify::{
    verify, verify_programs, verify_with, Options, Problem, Strictness, ViolationKind,
};

/// Relative tolerance of every comparison between times.
pub const TOL: f64 = 1e-9;

/// The four port × duplex rules.
pub const ALL_MODELS: [(Ports, Duplex); 4] = [
    (Ports::All, Duplex::Full),
    (Ports::All, Duplex::Half),
    (Ports::One, Duplex::Full),
    (Ports::One, Duplex::Half),
];

/// One case.
#[derive(Clone, Copy, Debug)]
pub struct Case<'a> {
    pub algo: &'static Algorithm,
    pub topo: &'a Topology,
    pub collective: Collective,
    pub len: u64,
    pub packets: Packets,
    pub beta: f64,
    pub tau: f64,
    /// Port and duplex rules to simulate (each under `rounds` and `async`).
    pub models: &'a [(Ports, Duplex)],
    /// Whether to round-trip the schedule through its JSON document (costly at n = 10).
    pub json: bool,
    /// Whether to go through both entry points of the verifier (`verify` on the
    /// schedule, `verify_programs`) and the simulator (`simulate` streaming the
    /// schedule, `simulate_programs`) and compare them; otherwise the programs are
    /// generated once and only the `_programs` entries are used.
    pub both_entries: bool,
}

/// What one case exercised; summed over a matrix to prove no check was vacuous.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Cases built and checked.
    pub built: u64,
    /// Cases the constructor rejected, as it must (packets out of range).
    pub rejected: u64,
    /// Exact formulas compared with the simulator.
    pub exact: u64,
    /// Continuous optima (lower estimates) compared with the simulator.
    pub lower_estimates: u64,
    /// Upper-bound formulas compared with the simulator.
    pub upper_bounds: u64,
    /// Lower bounds (`bounds::lower_bound`) compared with the simulator.
    pub lower_bounds: u64,
    /// JSON round trips.
    pub json: u64,
    /// Size of the schedules checked, in [`units`].
    pub units: u64,
    /// Cases checked slim (too large for every model; see [`check`]).
    pub slim: u64,
    /// Cases on a topology the algorithm does not fit, refused as they must be.
    pub unfit: u64,
    /// Schedules of an algorithm kept as published with a known flaw
    /// (`Algorithm::published_flaw`) that the verifier rejected, as it must.
    pub caught: u64,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.built += o.built;
        self.rejected += o.rejected;
        self.exact += o.exact;
        self.lower_estimates += o.lower_estimates;
        self.upper_bounds += o.upper_bounds;
        self.lower_bounds += o.lower_bounds;
        self.json += o.json;
        self.unfit += o.unfit;
        self.units += o.units;
        self.slim += o.slim;
        self.caught += o.caught;
    }
}

/// `hypercube:n`.
pub fn cube(n: u32) -> Topology {
    format!("hypercube:{n}").parse().expect("a valid hypercube")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOL * a.abs().max(b.abs()).max(1.0)
}

fn le(a: f64, b: f64) -> bool {
    a <= b + TOL * a.abs().max(b.abs()).max(1.0)
}

/// A lower bound on the elements any correct schedule moves over links, from the
/// collective's contract alone (each element must cross at least its distance).
fn min_volume(topo: &Topology, c: &Collective, m: u64) -> Option<u64> {
    let k = topo.nodes();
    let dist_sum = |root: u32| (0..k).map(|r| topo.distance(root, r) as u64).sum::<u64>();
    match *c {
        Collective::P2p { src, dst } => Some(topo.distance(src, dst) as u64 * m),
        Collective::Broadcast { .. } => Some((k as u64 - 1) * m),
        Collective::Scatter { root } | Collective::Gather { root } => Some(dist_sum(root) * m),
        Collective::Allgather => Some(k as u64 * (k as u64 - 1) * m),
        // Every PE's block leaves the host once.
        Collective::Download => Some((k as u64 - 1) * m),
        Collective::Alltoall => Some((0..k).map(dist_sum).sum::<u64>() * m),
        Collective::Transpose => Some(
            (0..k)
                .map(|r| topo.distance(r, hypercomm::collective::transposed(k, r)) as u64)
                .sum::<u64>()
                * m,
        ),
        _ => None,
    }
}

/// Whether the constructor must accept, must reject, or may do either with `packets`.
/// `Opt` and 1 always build; more than one packet for an unpipelined algorithm, or more
/// packets than elements, never does. A pipelined algorithm may resolve ν against a
/// share of the message (multipath splits it over the n paths, ⌈m/n⌉ each), so
/// counts between ⌈m/n⌉ and m may be refused.
fn packets_expectation(algo: &Algorithm, topo: &Topology, m: u64, p: Packets) -> (bool, bool) {
    match p {
        Packets::Opt | Packets::Count(1) => (true, false),
        Packets::Count(c) => {
            let share = m.div_ceil(topo.degree().max(1) as u64).max(1);
            let must = algo.pipelined && c <= share;
            let never = !algo.pipelined || c > m.max(1);
            (must, never)
        }
    }
}

/// The rounds model as `cost/mod.rs` documents it, written independently of the
/// simulator: one transfer of m elements costs β + mτ of its link's class; under
/// `ports all` transfers on one link serialise, different links overlap (a multicast
/// costs one transfer on each of its links) and a side takes its busiest link's time;
/// under `ports one` all sends serialise (a multicast to p peers is p sends), and so
/// do all receives; full duplex takes max(send side, receive side), half their sum.
///
/// Returns the rounds total (Σ over rounds of the slowest node) and a floor of the
/// async time: a node's step ends no earlier than its previous step's end plus its
/// own step time, nor earlier than each peer's previous step's end plus the transfer
/// with that peer ("a node's transfer in step s begins once both it and its peer have
/// finished step s − 1").
pub fn reference_times(
    topo: &Topology,
    progs: &[Program],
    steps: usize,
    model: &Model,
) -> (f64, f64) {
    let mut floor = vec![0.0f64; progs.len()];
    let mut total = 0.0;
    for s in 0..steps {
        let mut round = medium_time(topo, progs, s, model);
        let mut next = floor.clone();
        for (i, prog) in progs.iter().enumerate() {
            let me = prog.rank;
            let cost = |q: Rank, len: u64| model.link(topo.link_class(me, q)).transfer(len);
            let mut sends: Vec<(Rank, f64)> = Vec::new();
            let mut recvs: Vec<(Rank, f64)> = Vec::new();
            for op in &prog.steps[s].ops {
                match op {
                    Op::Send { to, .. } => {
                        sends.extend(to.iter().map(|&q| (q, cost(q, op.message_len()))))
                    }
                    Op::Recv { from, .. } => recvs.push((*from, cost(*from, op.message_len()))),
                    Op::Local { .. } => {}
                }
            }
            if sends.is_empty() && recvs.is_empty() {
                continue;
            }
            // A bus or a shared memory prices its processors' transfers itself (below);
            // a switch is one port each way.
            let medium = topo.medium_kind();
            let on_medium = |q: Rank| {
                matches!(medium, Some(Medium::Bus | Medium::Shm { .. }))
                    && topo.host().is_none_or(|h| h != q && h != me)
            };
            sends.retain(|&(q, _)| !on_medium(q));
            recvs.retain(|&(q, _)| !on_medium(q));
            let ports = if Some(me) == topo.host() {
                model.host_ports
            } else if medium == Some(Medium::Switch) {
                Ports::One
            } else {
                model.ports
            };
            let side = |list: &[(Rank, f64)], n: Option<u32>| -> f64 {
                match n {
                    Some(1) => list.iter().map(|&(_, c)| c).sum(),
                    // S ≥ 2 ports: in op order, each transfer waits for its link and
                    // for the port that frees first.
                    Some(n) => {
                        let mut port = vec![0.0f64; n as usize];
                        let mut link: Vec<(Rank, f64)> = Vec::new();
                        let mut done = 0.0f64;
                        for &(q, c) in list {
                            let l = link.iter().position(|(p, _)| *p == q).unwrap_or_else(|| {
                                link.push((q, 0.0));
                                link.len() - 1
                            });
                            let i = (0..port.len())
                                .min_by(|&a, &b| port[a].total_cmp(&port[b]))
                                .unwrap_or(0);
                            let end = link[l].1.max(port[i]) + c;
                            link[l].1 = end;
                            port[i] = end;
                            done = done.max(end);
                        }
                        done
                    }
                    None => {
                        let mut per_link: Vec<(Rank, f64)> = Vec::new();
                        for &(q, c) in list {
                            match per_link.iter_mut().find(|(p, _)| *p == q) {
                                Some((_, t)) => *t += c,
                                None => per_link.push((q, c)),
                            }
                        }
                        per_link.iter().map(|&(_, t)| t).fold(0.0, f64::max)
                    }
                }
            };
            let (ts, tr) = (side(&sends, ports.send()), side(&recvs, ports.recv()));
            let t = match model.duplex {
                Duplex::Full => ts.max(tr),
                Duplex::Half => ts + tr,
                // One direction at a time on a link: both ways on one link add up.
                Duplex::HalfLink => {
                    let mut both: Vec<(Rank, f64)> = Vec::new();
                    for &(q, c) in sends.iter().chain(&recvs) {
                        match both.iter_mut().find(|(p, _)| *p == q) {
                            Some((_, t)) => *t += c,
                            None => both.push((q, c)),
                        }
                    }
                    both.iter().map(|&(_, t)| t).fold(ts.max(tr), f64::max)
                }
            };
            round = round.max(t);
            let peers = sends.iter().chain(&recvs);
            let waits = peers.map(|&(q, c)| floor.get(q as usize).copied().unwrap_or(0.0) + c);
            next[i] = waits.fold(floor[i] + t, f64::max);
        }
        floor = next;
        total += round;
    }
    (total, floor.into_iter().fold(0.0, f64::max))
}

/// Step `s` on a bus (its send operations one after another) or a shared memory (a
/// write phase, then a read phase, each ⌈accesses/S⌉ rounds or a processor's most
/// accesses, whichever is more, at its longest access), as `cost/mod.rs` documents.
fn medium_time(topo: &Topology, progs: &[Program], s: usize, model: &Model) -> f64 {
    let kind = match topo.medium_kind() {
        Some(k @ (Medium::Bus | Medium::Shm { .. })) => k,
        _ => return 0.0,
    };
    let host = topo.host();
    let (mut bus, mut w, mut r, mut mw, mut mr, mut cw, mut cr) =
        (0.0, 0u64, 0u64, 0u64, 0u64, 0.0f64, 0.0f64);
    for p in progs {
        let (mut pw, mut pr) = (0u64, 0u64);
        for op in &p.steps[s].ops {
            let c = model.net.transfer(op.message_len());
            match op {
                Op::Send { to, .. }
                    if Some(p.rank) != host && to.iter().any(|&q| Some(q) != host) =>
                {
                    bus += c;
                    pw += 1;
                    cw = cw.max(c);
                }
                Op::Recv { from, .. } if Some(p.rank) != host && Some(*from) != host => {
                    pr += 1;
                    cr = cr.max(c);
                }
                _ => {}
            }
        }
        w += pw;
        r += pr;
        mw = mw.max(pw);
        mr = mr.max(pr);
    }
    match kind {
        Medium::Shm { accesses } => {
            let a = accesses.max(1) as u64;
            w.div_ceil(a).max(mw) as f64 * cw + r.div_ceil(a).max(mr) as f64 * cr
        }
        _ => bus,
    }
}

fn same_counts(a: &Report, b: &Report) -> bool {
    a.rounds == b.rounds
        && a.messages == b.messages
        && a.volume == b.volume
        && a.max_link_load == b.max_link_load
}

/// Above this many [`units`] a schedule is checked slim (see [`check`]).
pub const SLIM_UNITS: u64 = 300_000;

/// The size of programs: one unit per op, region and peer.
pub fn units(progs: &[Program]) -> u64 {
    progs.iter().map(program_units).sum()
}

fn program_units(p: &Program) -> u64 {
    p.steps
        .iter()
        .flat_map(|s| &s.ops)
        .map(|op| {
            1 + match op {
                Op::Send { to, from } => to.len() + from.len(),
                Op::Recv { into, .. } => 1 + into.len(),
                Op::Local { .. } => 2,
            } as u64
        })
        .sum()
}

/// The size of the case's schedule in [`units`], generating one program at a time
/// and stopping past `cap`; 1 when it does not build (the error path is cheap).
pub fn probe(case: &Case<'_>, cap: u64) -> u64 {
    let problem = Problem {
        topology: case.topo,
        collective: case.collective,
        len: case.len,
        commutative: true,
        counts: None,
    };
    let params = Params {
        packets: case.packets,
        model: Model::new(case.beta, case.tau).expect("valid β, τ"),
    };
    let Ok(s) = case.algo.build(&problem, &params) else {
        return 1;
    };
    let mut total = 1;
    for r in 0..s.nodes() {
        total += program_units(&s.program(r));
        if total > cap {
            break;
        }
    }
    total
}

/// Run one case through every code path; `Err` names the case and what failed.
pub fn check(case: &Case<'_>) -> Result<Tally, String> {
    let Case {
        algo,
        topo,
        collective,
        len: m,
        packets,
        beta,
        tau,
        models,
        json,
        both_entries,
    } = *case;
    let name = format!(
        "{}/{} on {topo}, {collective}, len {m}, {packets:?}, β = {beta}, τ = {tau}",
        algo.op, algo.name
    );
    let fail = |what: String| Err(format!("{name}: {what}"));
    let mut tally = Tally::default();

    let problem = Problem {
        topology: topo,
        collective,
        len: m,
        commutative: true,
        counts: None,
    };
    let base = Model::new(beta, tau).map_err(|e| format!("{name}: {e}"))?;
    let params = Params {
        packets,
        model: base,
    };

    // An algorithm that does not fit the topology must say so, and build nothing.
    if algo.fits(topo).is_err() {
        return match algo.build(&problem, &params) {
            Err(Error::AlgorithmDoesNotFit { .. }) => {
                tally.unfit += 1;
                Ok(tally)
            }
            Err(e) => fail(format!("does not fit, but build says: {e}")),
            Ok(_) => fail("does not fit, but build gave a schedule".into()),
        };
    }

    // Build (or be refused for a packet count out of range, and only then).
    let (must_build, never_build) = packets_expectation(algo, topo, m, packets);
    let sched: Box<dyn Schedule> = match algo.build(&problem, &params) {
        Ok(s) if never_build => {
            return fail(format!(
                "built with {} steps, but {packets:?} is out of range",
                s.steps()
            ))
        }
        Ok(s) => s,
        Err(e) if must_build => return fail(format!("build failed: {e}")),
        Err(Error::InvalidParameter {
            what: "--packets", ..
        }) => {
            tally.rejected += 1;
            return Ok(tally);
        }
        Err(e) => return fail(format!("build failed with the wrong error: {e}")),
    };
    tally.built += 1;
    let k = topo.nodes();
    if sched.nodes() != k {
        return fail(format!("{} programs for {k} nodes", sched.nodes()));
    }
    let steps = sched.steps();

    // Verify: every rule, and at most one message per directed link per step (every
    // registry algorithm claims it: ESBT by edge-disjointness, the others by
    // construction; the cost model would otherwise serialise and break the formulas).
    let strict = Strictness {
        ports: Some(Ports::All),
        duplex: None,
        host_ports: None,
    };
    let progs = materialize(sched.as_ref()).programs;
    let verified = if both_entries {
        verify(problem, sched.as_ref(), strict)
    } else {
        verify_programs(problem, &progs, steps, strict)
    };
    // An algorithm kept as published with a known flaw may fail its post-condition
    // (and only that); such a schedule is still timed and compared with its formulas,
    // but not with the lower bound, which holds for correct schedules only.
    let caught = match verified {
        Err(v) if algo.published_flaw().is_some() && v.kind == ViolationKind::PostCondition => {
            tally.caught += 1;
            true
        }
        Err(v) => return fail(format!("verify: {v}")),
        Ok(()) => false,
    };
    // The symbolic buffers in cell form from their first write on, and every step
    // split between 2 threads, must verify alike.
    if both_entries && !caught {
        let opts = Options::default().promote_at(1).threads(2).parallel_from(0);
        if let Err(v) = verify_with(problem, sched.as_ref(), strict, opts) {
            return fail(format!(
                "verify with buffers in cell form on 2 threads: {v}"
            ));
        }
    }
    // Schedules of Θ(k²) ops (all-gather at n = 10: millions of regions) are checked
    // slim: the papers' model only, no second simulator entry, no JSON.
    let size = units(&progs);
    tally.units += size;
    let slim = size > SLIM_UNITS;
    tally.slim += u64::from(slim);
    let models: &[(Ports, Duplex)] = if slim { &ALL_MODELS[..1] } else { models };
    let json = json && !slim;

    // Time it under every port and duplex rule and both timings; both simulator
    // entries (streaming `simulate`, `simulate_programs`) are compared under the first.
    for (idx, &(ports, duplex)) in models.iter().enumerate() {
        let rounds = Model {
            ports,
            duplex,
            timing: Timing::Rounds,
            ..base
        };
        let asynch = Model {
            timing: Timing::Async,
            ..rounds
        };
        let at = format!("ports {ports}, duplex {duplex}");
        let r = simulate_programs(topo, &progs, steps, &rounds);
        let a = simulate_programs(topo, &progs, steps, &asynch);
        let r2 = if idx == 0 && both_entries {
            if !slim {
                let a2 = simulate(topo, sched.as_ref(), &asynch);
                if !close(a.time, a2.time) || !same_counts(&a, &a2) {
                    return fail(format!(
                        "{at}: async simulate {a2:?} differs from simulate_programs {a:?}"
                    ));
                }
            }
            simulate(topo, sched.as_ref(), &rounds)
        } else {
            r.clone()
        };
        if !(r.time.is_finite() && r.time >= 0.0 && a.time >= 0.0) {
            return fail(format!("{at}: time {} (async {})", r.time, a.time));
        }
        if !close(r.time, r2.time) || !same_counts(&r, &r2) {
            return fail(format!(
                "{at}: simulate (streaming) {r:?} differs from simulate_programs {r2:?}"
            ));
        }
        if !same_counts(&r, &a) {
            return fail(format!(
                "{at}: rounds {r:?} and async {a:?} count differently"
            ));
        }
        // Under `ports all` every link has its own queue, so async never exceeds rounds.
        // Under `ports one` it may: the rounds model charges a step its busiest port,
        // as if the step's transfers could always be ordered to meet it, but placing
        // non-preemptive transfers that each hold a send and a receive port is an open
        // shop, where list scheduling can exceed the busiest port (e.g. multipath on
        // hypercube:2, 298 elements, ν opt: async exceeds rounds by one τ). There, the
        // check is that async leaves no idle time it could not account for: every
        // transfer starts at 0 or at the end of a transfer or of a node's own step time,
        // so async ≤ 2 × the sum of all transfer times.
        if ports == Ports::All && !le(a.time, r.time) {
            return fail(format!("{at}: async {} > rounds {}", a.time, r.time));
        }
        if ports == Ports::One {
            let all: f64 = progs
                .iter()
                .flat_map(|p| {
                    p.steps
                        .iter()
                        .flat_map(move |st| st.ops.iter().map(move |o| (p.rank, o)))
                })
                .filter_map(|(from, o)| match o {
                    Op::Send { to, .. } => Some(
                        to.iter()
                            .map(|&q| {
                                base.link(topo.link_class(from, q))
                                    .transfer(o.message_len())
                            })
                            .sum::<f64>(),
                    ),
                    _ => None,
                })
                .sum();
            if !le(a.time, 2.0 * all) {
                return fail(format!(
                    "{at}: async {} exceeds twice the sum of all transfers, {all}",
                    a.time
                ));
            }
        }
        let (reference, async_floor) = reference_times(topo, &progs, steps, &rounds);
        if !close(r.time, reference) {
            return fail(format!(
                "{at}: the simulator says {} but the documented rounds model gives {reference}",
                r.time
            ));
        }
        if !le(async_floor, a.time) {
            return fail(format!(
                "{at}: async {} is less than the chain of steps and transfers, {async_floor}",
                a.time
            ));
        }
        if r.rounds > steps {
            return fail(format!("{at}: {} busy rounds of {steps} steps", r.rounds));
        }
        if (m == 0 || k == 1) && (r.time != 0.0 || r.volume != 0) {
            return fail(format!(
                "{at}: nothing to move but time {} volume {}",
                r.time, r.volume
            ));
        }
        if let Some(v) = min_volume(topo, &collective, m).filter(|_| !caught) {
            if r.volume < v {
                return fail(format!(
                    "{at}: volume {} < {v}, the least any schedule moves",
                    r.volume
                ));
            }
        }
        if r.max_link_load > r.volume {
            return fail(format!(
                "{at}: link load {} > volume {}",
                r.max_link_load, r.volume
            ));
        }
        // `--packets opt` is resolved at build time under the build's model: the forms
        // are those of the ν the schedule uses. Under the build's own model the registry
        // resolves `opt` alike and adds the continuous optimum's estimates.
        let fparams = Params {
            packets: match (packets, sched.packets()) {
                (Packets::Opt, Some(_)) if rounds == params.model => Packets::Opt,
                (Packets::Opt, Some(nu)) => Packets::Count(nu),
                _ => packets,
            },
            model: rounds,
        };
        for f in algo.formulas(&problem, &fparams) {
            if !(f.value.is_finite() && f.value >= 0.0) {
                return fail(format!("{at}: formula {} = {}", f.expr, f.value));
            }
            // Our own comparison, then `holds_for` must agree with it.
            let (holds, what) = match f.kind {
                FormulaKind::Exact => {
                    tally.exact += 1;
                    (close(f.value, r.time), "exact formula")
                }
                FormulaKind::UpperBound => {
                    tally.upper_bounds += 1;
                    (le(r.time, f.value), "upper bound")
                }
                FormulaKind::Estimate => {
                    tally.lower_estimates += 1;
                    (le(f.value, r.time), "lower estimate")
                }
            };
            if !holds {
                return fail(format!(
                    "{at}: {what} {} ({}) = {} but the simulator says {}",
                    f.expr, f.reference, f.value, r.time
                ));
            }
            if f.holds_for(r.time) != holds {
                return fail(format!(
                    "{at}: Formula::holds_for({}) disagrees on {what} {} = {}",
                    r.time, f.expr, f.value
                ));
            }
        }
        if let Some(lb) = lower_bound(topo, &collective, m, &rounds).filter(|_| !caught) {
            tally.lower_bounds += 1;
            if !le(lb, r.time) {
                return fail(format!("{at}: lower bound {lb} > simulated {}", r.time));
            }
        }
    }

    // The JSON document: to_json → parse → the same document, the same programs, and
    // the parsed programs verify and time like the schedule.
    if json {
        tally.json += 1;
        let doc = Document::new(
            topo.clone(),
            collective,
            m,
            Some(algo.name),
            true,
            sched.as_ref(),
        );
        let text = doc.to_json();
        let parsed = match Document::parse(&text) {
            Ok(d) => d,
            Err(e) => return fail(format!("JSON does not parse back: {e}")),
        };
        if parsed != doc {
            return fail("JSON round trip changed the document".into());
        }
        if parsed.programs != progs || parsed.steps != steps {
            return fail("the document's programs differ from the schedule's".into());
        }
        if parsed.to_json() != text {
            return fail("to_json is not stable across a round trip".into());
        }
        let pproblem = Problem {
            topology: &parsed.topology,
            collective: parsed.collective,
            len: parsed.len,
            commutative: parsed.commutative,
            counts: None,
        };
        match verify_programs(pproblem, &parsed.programs, parsed.steps, strict) {
            Err(v) if !caught => return fail(format!("the parsed document does not verify: {v}")),
            Ok(()) if caught => {
                return fail("the parsed document verifies, the schedule did not".into())
            }
            _ => {}
        }
        let again = simulate(&parsed.topology, &parsed.schedule(), &base);
        let orig = simulate(topo, sched.as_ref(), &base);
        if !close(again.time, orig.time) || !same_counts(&again, &orig) {
            return fail(format!(
                "the parsed document times {again:?}, the schedule {orig:?}"
            ));
        }
    }
    Ok(tally)
}

/// A small deterministic generator (SplitMix64) for sampled roots and destinations.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The collective of `op` with `root` as its root (or source) and `dst` as its
/// destination; kinds without them ignore them.
pub fn collective(op: OpKind, k: u32, root: u32, dst: u32) -> Collective {
    if op == OpKind::Transpose {
        // Also where k is no square: an algorithm must refuse such a topology.
        return Collective::Transpose;
    }
    Collective::new(
        op,
        k,
        Some(root as u64),
        Some(root as u64),
        Some(dst as u64),
    )
    .expect("ranks are in range")
}

/// Every registry schedule on small topologies (hypercube:0 to hypercube:5, `extra`
/// topologies, complete:1 to complete:9), roots 0 and k − 1, lengths 0, 1, 7 and 100,
/// packet counts 1, 3 and opt for pipelined algorithms: `f(case, topology, schedule)`
/// for each that builds, `case` naming it.
pub fn for_each_small_schedule(extra: &[&str], mut f: impl FnMut(&str, &Topology, &dyn Schedule)) {
    for algo in hypercomm::algorithms::all() {
        let topologies = (0..=5u32)
            .map(|n| format!("hypercube:{n}"))
            .chain(extra.iter().map(|t| t.to_string()))
            .chain((1..=9u32).map(|k| format!("complete:{k}")));
        for name in topologies {
            let topo: Topology = name.parse().unwrap();
            if algo.fits(&topo).is_err() {
                continue;
            }
            let k = topo.nodes();
            for root in [0, k - 1] {
                let Ok(c) = Collective::new(
                    algo.op,
                    k,
                    Some(root as u64),
                    Some(root as u64),
                    Some((k - 1 - root) as u64),
                ) else {
                    continue;
                };
                for len in [0u64, 1, 7, 100] {
                    let problem = Problem {
                        topology: &topo,
                        collective: c,
                        len,
                        commutative: true,
                        counts: None,
                    };
                    let counts: &[Packets] = if algo.pipelined {
                        &[Packets::Count(1), Packets::Count(3), Packets::Opt]
                    } else {
                        &[Packets::Count(1)]
                    };
                    for &packets in counts {
                        let params = Params {
                            packets,
                            ..Params::default()
                        };
                        let Ok(s) = algo.build(&problem, &params) else {
                            continue;
                        };
                        let case = format!("{algo:?}, {name}, root {root}, len {len}, {packets:?}");
                        f(&case, &topo, s.as_ref());
                    }
                }
            }
        }
    }
}

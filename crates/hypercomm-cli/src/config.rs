//! Validation of the raw arguments ([`crate::args`]) into a typed configuration.
//!
//! Every check here returns a [`hypercomm::error::Error`], which the commands report on
//! stderr with exit code 2. The library's own parsers (`Topology`, `OpKind`, `Packets`,
//! `Ports`, `Duplex`, `Timing`) produce messages that name the valid choices; the CLI
//! adds the checks that protect the process itself: lengths whose counts would overflow,
//! schedules too large to hold in memory, and runtime buffers larger than the memory
//! available ([`memory_limit`]).

use hypercomm::algorithms::{self, Algorithm, Packets, Params, Shape};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::cost::model::{LinkCost, Model, Timing};
use hypercomm::error::Error;
use hypercomm::topology::Topology;
use hypercomm::verify::{Problem, Strictness};

use crate::args::{CheckArgs, ModelArgs, ProblemArgs};
use hypercomm::counts::Counts;

/// Largest count of elements a buffer, a volume or a link load may reach: 2^53, so that
/// every count is exact both as `u64` and as `f64`.
pub const MAX_ELEMENTS: u64 = 1 << 53;

/// Largest nodes × steps of a schedule whose programs are all held in memory (to time
/// it with `--timing async`, or to print it).
pub const MAX_MATERIALIZED: u64 = 50_000_000;

/// Most nodes a verification holds the symbolic buffers of (it streams the steps, so
/// the steps do not count, but every rank's `in`, `out` and `tmp` state is kept).
pub const MAX_VERIFIED_NODES: u32 = 1 << 20;

/// Largest nodes × steps of a schedule timed by streaming its programs (rounds timing
/// without verification); beyond it the simulation would run for hours.
pub const MAX_STREAMED: u64 = 1 << 32;

/// A validated problem: where, what, how much.
#[derive(Clone, Debug, PartialEq)]
pub struct ProblemConfig {
    /// The interconnect.
    pub topology: Topology,
    /// The collective with its root, source and destination.
    pub collective: Collective,
    /// Elements per message (per block for scatter and gather).
    pub len: u64,
    /// A variable-count collective's counts (`--counts`), checked.
    pub counts: Option<Counts>,
}

impl ProblemConfig {
    /// The library's view of the problem (reductions taken as commutative).
    pub fn problem(&self) -> Problem<'_> {
        Problem {
            topology: &self.topology,
            collective: self.collective,
            len: self.len,
            commutative: true,
            counts: self.counts.as_ref(),
        }
    }
}

/// A validated run of one algorithm.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The problem.
    pub problem: ProblemConfig,
    /// The registry entry to run.
    pub algo: &'static Algorithm,
    /// Packets as requested (`opt` or a count), before [`params_for`] adapts them.
    pub packets: Packets,
    /// Packets and model as given to the algorithm.
    pub params: Params,
    /// Which model rules the verifier enforces.
    pub strictness: Strictness,
    /// Whether to verify at all.
    pub verify: bool,
}

/// Validate the problem arguments.
pub fn problem(args: &ProblemArgs) -> Result<ProblemConfig, Error> {
    let topology: Topology = args.topology.parse()?;
    let kind: OpKind = args.op.parse()?;
    let counts = match &args.counts {
        Some(path) => {
            let c = read_counts(path)?;
            c.check(kind, topology.nodes())
                .map_err(|e| Error::InvalidParameter {
                    what: "--counts",
                    reason: format!("{}: {e}", path.display()),
                })?;
            Some(c)
        }
        None => None,
    };
    let len = args
        .len
        .or(counts.as_ref().map(Counts::mean))
        .unwrap_or_default();
    let mut p = problem_of(topology, kind, len, [args.root, args.src, args.dst])?;
    p.counts = counts;
    Ok(p)
}

/// Read a `--counts` file: a JSON list of counts, or a list of lists (alltoallv).
pub fn read_counts(path: &std::path::Path) -> Result<Counts, Error> {
    let bad = |reason: String| Error::InvalidParameter {
        what: "--counts",
        reason: format!("{}: {reason}", path.display()),
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| {
        // serde names the untagged enum ("did not match any variant of untagged enum
        // Counts"): say instead which element is not a count.
        let what = match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => not_a_count(&v).unwrap_or_else(|| e.to_string()),
            Err(_) => e.to_string(),
        };
        bad(format!(
            "{what}; valid: a JSON list of whole numbers, one per rank ([2, 0, 5]), or for \
             alltoallv a list of lists, one row per rank ([[0, 3], [1, 0]])"
        ))
    })
}

/// Where a parsed `--counts` value stops being a list of counts or a list of lists of
/// counts (each a whole number up to 2^64 − 1).
fn not_a_count(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let count = |x: &Value| x.as_u64().is_some();
    let Value::Array(items) = v else {
        return Some(format!("{v} is not a list"));
    };
    let nested = items.first().is_some_and(Value::is_array);
    for (i, x) in items.iter().enumerate() {
        match (nested, x) {
            (false, x) if count(x) => {}
            (true, Value::Array(row)) => {
                if let Some((j, y)) = row.iter().enumerate().find(|(_, y)| !count(y)) {
                    return Some(format!("element [{i}][{j}], {y}, is not a whole number"));
                }
            }
            (true, x) => return Some(format!("element {i}, {x}, is not a list (row 0 is)")),
            (false, x) => return Some(format!("element {i}, {x}, is not a whole number")),
        }
    }
    None
}

/// Validate a problem from parsed parts; `ranks` are the optional root, source and
/// destination as given.
pub fn problem_of(
    topology: Topology,
    kind: OpKind,
    len: u64,
    ranks: [Option<u64>; 3],
) -> Result<ProblemConfig, Error> {
    let [root, src, dst] = ranks;
    check_rank_flags(kind, root.is_some(), src.is_some() || dst.is_some())?;
    check_len(&topology, kind, len)?;
    let collective = Collective::new(kind, topology.nodes(), root, src, dst)?;
    Ok(ProblemConfig {
        topology,
        collective,
        len,
        counts: None,
    })
}

/// Reject `--root` for collectives without a root and `--src`/`--dst` outside p2p, so a
/// mistyped command does not silently ignore them.
pub fn check_rank_flags(kind: OpKind, root: bool, ends: bool) -> Result<(), Error> {
    if root && !kind.has_root() {
        let rooted: Vec<&str> = OpKind::ALL
            .iter()
            .filter(|k| k.has_root())
            .map(|k| k.name())
            .collect();
        return Err(Error::InvalidParameter {
            what: "--root",
            reason: format!(
                "{kind} has no root; --root applies to: {}{}",
                rooted.join(" "),
                if kind == OpKind::P2p {
                    " (p2p takes --src and --dst)"
                } else {
                    ""
                }
            ),
        });
    }
    if ends && kind != OpKind::P2p {
        return Err(Error::InvalidParameter {
            what: "--src/--dst",
            reason: format!("they apply to p2p only, not {kind}"),
        });
    }
    Ok(())
}

/// Check that `len` keeps every buffer, volume and link load of `kind` on `topology`
/// below [`MAX_ELEMENTS`]: a rank's buffers hold up to nodes × len elements (nodes² ×
/// len for all-to-all and all-gather), and data crosses at most degree + 1 links.
pub fn check_len(topology: &Topology, kind: OpKind, len: u64) -> Result<(), Error> {
    check_len_as(topology, kind, len, "--len")
}

/// [`check_len`] for the flag `what` that sets the length (bench's `--max-size`).
pub fn check_len_as(
    topology: &Topology,
    kind: OpKind,
    len: u64,
    what: &'static str,
) -> Result<(), Error> {
    let k = u64::from(topology.nodes());
    let spread = match kind {
        OpKind::Alltoall | OpKind::Allgather => k.saturating_mul(k),
        _ => k,
    };
    let factor = spread
        .saturating_mul(u64::from(topology.degree()) + 1)
        .max(1);
    let max = MAX_ELEMENTS / factor;
    if len > max {
        // Say which product is bounded: on complete:16777216 a broadcast's limit of 32
        // read as an error when put as "volumes", its volume being only K·len.
        let of = match kind {
            OpKind::Alltoall | OpKind::Allgather => "K² × (links per node + 1)",
            _ => "K × (links per node + 1)",
        };
        return Err(Error::InvalidParameter {
            what,
            reason: format!(
                "{len} is too large for {kind} on {topology}; valid: 0..={max} (the \
                 length times {of}, here {factor}, must stay below 2^53 elements, a \
                 bound on any link's or rank's load that keeps the simulator exact)"
            ),
        });
    }
    Ok(())
}

/// The machine model of the arguments (unset β and τ take the library's defaults; unset
/// host β_h and τ_h equal β and τ).
pub fn model(args: &ModelArgs) -> Result<Model, Error> {
    let default = Model::default();
    let mut model = Model::new(
        args.beta.unwrap_or(default.beta()),
        args.tau.unwrap_or(default.tau()),
    )?;
    model.host = host_link(args, &model)?;
    model.ports = args.ports.parse()?;
    model.host_ports = args
        .host_ports
        .as_deref()
        .unwrap_or("one")
        .parse()
        .map_err(|e| match e {
            Error::InvalidParameter { reason, .. } => Error::InvalidParameter {
                what: "--host-ports",
                reason,
            },
            e => e,
        })?;
    model.duplex = args.duplex.parse()?;
    model.timing = args.timing.parse()?;
    Ok(model)
}

/// [`model`] for `topology`: on a machine without a host, the host options
/// (`--host-beta`, `--host-tau`, `--host-ports`) are refused (they were accepted on
/// hypercube:3, and the model line printed a host link the machine does not have).
pub fn model_on(args: &ModelArgs, topology: &Topology) -> Result<Model, Error> {
    let given = [
        ("--host-beta", args.host_beta.is_some()),
        ("--host-tau", args.host_tau.is_some()),
        ("--host-ports", args.host_ports.is_some()),
    ];
    let hosted = topology.host().is_some();
    if let (false, Some(&(what, _))) = (hosted, given.iter().find(|(_, g)| *g)) {
        return Err(Error::InvalidParameter {
            what,
            reason: format!(
                "{topology} has no host; valid: a topology with one (hypercube:N+host, \
                 ring:K+host@0, …), or no host options"
            ),
        });
    }
    model(args)
}

/// The cost of a host link: `--host-beta` and `--host-tau`, each defaulting to the
/// processing-element link's value.
fn host_link(args: &ModelArgs, model: &Model) -> Result<LinkCost, Error> {
    let beta = args.host_beta.unwrap_or(model.beta());
    let tau = args.host_tau.unwrap_or(model.tau());
    for (what, v) in [("--host-beta", beta), ("--host-tau", tau)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(Error::InvalidParameter {
                what,
                reason: format!("{v} must be a finite number ≥ 0"),
            });
        }
    }
    Ok(LinkCost { beta, tau })
}

/// The verifier's rules: with `strict`, the model's port and duplex rules.
pub fn strictness(strict: bool, model: &Model) -> Strictness {
    if strict {
        Strictness::of(model)
    } else {
        Strictness::default()
    }
}

/// The parameters an algorithm gets: non-pipelined algorithms run with one packet
/// when `opt` was asked for (an explicit count > 1 is left for the library to reject).
pub fn params_for(algo: &Algorithm, packets: Packets, model: Model) -> Params {
    let packets = match packets {
        Packets::Opt if !algo.pipelined => Packets::Count(1),
        p => p,
    };
    Params { packets, model }
}

/// A run of `algo` on `problem` with the given packets, model and checks.
pub fn run(
    problem: ProblemConfig,
    algo: &'static Algorithm,
    packets: Packets,
    model: Model,
    check: &CheckArgs,
) -> RunConfig {
    RunConfig {
        problem,
        algo,
        packets,
        params: params_for(algo, packets, model),
        strictness: strictness(check.strict, &model),
        verify: !check.no_verify,
    }
}

/// The registry entry `name` of the problem's collective.
pub fn algorithm(problem: &ProblemConfig, name: &str) -> Result<&'static Algorithm, Error> {
    algorithms::lookup(&problem.topology, problem.collective.kind(), name)
}

/// Whether the run holds every program in memory: async timing does; verification
/// streams the steps (and is limited by [`MAX_VERIFIED_NODES`] instead).
pub fn materializes(model: &Model) -> bool {
    model.timing == Timing::Async
}

/// Refuse to verify a schedule of more than [`MAX_VERIFIED_NODES`] nodes.
pub fn check_verified_nodes(nodes: u32) -> Result<(), Error> {
    if nodes > MAX_VERIFIED_NODES {
        return Err(Error::TooLarge(format!(
            "{nodes} nodes exceeds {MAX_VERIFIED_NODES}, the limit for verifying; pass \
             --no-verify (with --timing rounds) to time it without verifying"
        )));
    }
    Ok(())
}

/// Refuse to verify `algo` on `nodes` nodes when the verifier's memory
/// ([`Algorithm::verify_bytes`], an estimate from above) exceeds what this process may
/// take ([`memory_limit`]): TEA1 and TEA2 on hypercube:13 and up would abort in the
/// allocator instead.
pub fn check_verify_memory(algo: &Algorithm, nodes: u32) -> Result<(), Error> {
    check_verify_memory_in(algo, nodes, memory_limit())
}

/// [`check_verify_memory`] against a given limit.
pub fn check_verify_memory_in(
    algo: &Algorithm,
    nodes: u32,
    limit: MemoryLimit,
) -> Result<(), Error> {
    let need = algo.verify_bytes(nodes);
    if need <= limit.bytes {
        return Ok(());
    }
    Err(Error::TooLarge(format!(
        "verifying {} ({}) on {nodes} nodes would take about {} ({need} bytes), more than \
         the {} {}; pass --no-verify (with --timing rounds) to time it without verifying",
        algo.name,
        algo.op,
        gib(need),
        gib(limit.bytes),
        limit.source,
    )))
}

/// The most nodes² of an algorithm whose work grows with it ([`Algorithm::quadratic`])
/// that the CLI simulates: 2^28, hypercube:14, about a minute of CPU for TEA1
/// (hypercube:18 would take hours).
pub const MAX_QUADRATIC: u64 = 1 << 28;

/// Refuse to simulate an algorithm whose work grows with nodes² beyond
/// [`MAX_QUADRATIC`].
pub fn check_quadratic(algo: &Algorithm, nodes: u32) -> Result<(), Error> {
    let pairs = u64::from(nodes).pow(2);
    if algo.quadratic() && pairs > MAX_QUADRATIC {
        return Err(Error::TooLarge(format!(
            "{} ({}) moves blocks between every pair of nodes: {nodes}² = {pairs} pairs \
             exceeds {MAX_QUADRATIC} (2^28, hypercube:14), the limit for simulating it; use \
             fewer nodes or another algorithm",
            algo.name, algo.op
        )));
    }
    Ok(())
}

/// The most work one command verifies or simulates, over all its runs (all the rows
/// of `compare` and `sweep`), in units of about a microsecond each: 2^22, some seconds.
/// The work of a run is estimated from a sample of its ranks before it starts
/// ([`hypercomm::schedule::work`]: busy steps + operations + regions + peers over all
/// ranks), weighted when verified by [`Algorithm::verify_weight`] (the algorithms whose
/// verifier state holds a cell per block cost more a unit) and divided by the units the
/// simulator does in a microsecond when only simulated ([`UNITS_PER_SIMULATED_ROUNDS`],
/// [`UNITS_PER_SIMULATED_ASYNC`], times [`Algorithm::simulate_weight`]), plus a cost per
/// node ([`NODE_NS_VERIFIED`], [`NODE_NS_ROUNDS`], [`NODE_NS_ASYNC`]: every node's
/// state is set up and checked, and its program streamed, however little it does) and
/// per node and step ([`NODE_STEP_NS_STREAMED`], [`NODE_STEP_NS_ASYNC`]: a program is
/// built with all its steps, idle ones included). A run past what is left is refused (`compare` and `sweep` time it
/// unverified if that fits, else show the error in its row) and the command goes on.
/// `compare --topology hypercube:18 --op allgather` ran for hours: SBA, the daisy chain
/// and SMG do nodes² work, the rotated-exchange all-gather 2^n regions per node and
/// step. The estimate also bounds the verifier's state, a few runs per region written.
pub const MAX_WORK: u64 = 1 << 22;

/// Units of work the rounds simulation (which streams the programs) does in the time
/// of one verified unit: 5 to 28 ns a unit for every registry algorithm on
/// hypercube:10 and :14, torus:32x32 and complete:1024 (`cargo run --release -p
/// hypercomm --example simulate_rate -- hypercube:14`), 48 to 139 ns for the nesbt
/// scatter and gather, whose cost is their nodes × steps ([`NODE_STEP_NS_STREAMED`]),
/// 70 ns for the rotated-exchange all-reduce on :14 ([`Algorithm::simulate_weight`]).
/// 2^22 × 64 units is about 4 s at 16 ns: the all-reduce by dimension exchange on
/// hypercube:20 (188 M units) fits.
pub const UNITS_PER_SIMULATED_ROUNDS: u64 = 64;

/// Units of work the async simulation (list scheduling over programs held in memory)
/// does in the time of one verified unit: 30 to 280 ns a unit (the same runs as
/// [`UNITS_PER_SIMULATED_ROUNDS`]).
pub const UNITS_PER_SIMULATED_ASYNC: u64 = 8;

/// What a run costs per node besides its work, in nanoseconds, verified: scattering
/// 100 elements by the SBT on hypercube:17 does 8 units a node and takes 5 s verified,
/// about 38 µs a node.
pub const NODE_NS_VERIFIED: u64 = 32_000;

/// What a run costs per node besides its work, in nanoseconds, rounds-timed: the SBT
/// broadcast on hypercube:20 took 0.04 s for its 7.3 M units, under 40 ns a node.
pub const NODE_NS_ROUNDS: u64 = 64;

/// What a run costs per node besides its work, in nanoseconds, timed async (every
/// program held in memory): the SBT broadcast on hypercube:20 took 3.0 s, ADEA on
/// :18 about 3 µs a node.
pub const NODE_NS_ASYNC: u64 = 3_000;

/// What a run costs per node and step, in nanoseconds, streamed (verified or
/// rounds-timed): a program is built with all its steps, idle ones included, about
/// 1 ns each (the nesbt scatter on hypercube:14, 16,384 × 16,383 in 0.2 s).
pub const NODE_STEP_NS_STREAMED: u64 = 4;

/// What a run costs per node and step, in nanoseconds, timed async: 45 to 170 ns (the
/// nesbt scatter on hypercube:12 in 0.75 s, :14 in 45 s).
pub const NODE_STEP_NS_ASYNC: u64 = 125;

/// The work this command's runs have taken so far ([`MAX_WORK`]).
static WORK_SPENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Refuse a run whose estimated work exceeds what is left of [`MAX_WORK`], else take
/// it from what is left. `model` says how the run is timed (async timing holds every
/// program and costs more a unit than rounds).
pub fn check_work(
    algo: &Algorithm,
    schedule: &dyn hypercomm::schedule::Schedule,
    problem: &Problem<'_>,
    verify: bool,
    model: &Model,
) -> Result<(), Error> {
    use std::sync::atomic::Ordering::Relaxed;
    let spent = WORK_SPENT.load(Relaxed).min(MAX_WORK);
    let left = MAX_WORK - spent;
    let nodes = schedule.nodes();
    let materialized = model.timing == Timing::Async;
    let (weight, per, node_ns, step_ns) = if verify {
        (
            algo.verify_weight(nodes),
            1,
            NODE_NS_VERIFIED,
            NODE_STEP_NS_STREAMED,
        )
    } else if materialized {
        (
            algo.simulate_weight(),
            UNITS_PER_SIMULATED_ASYNC,
            NODE_NS_ASYNC,
            NODE_STEP_NS_ASYNC,
        )
    } else {
        (
            algo.simulate_weight(),
            UNITS_PER_SIMULATED_ROUNDS,
            NODE_NS_ROUNDS,
            NODE_STEP_NS_STREAMED,
        )
    };
    let k = u64::from(nodes);
    let fixed = k
        .saturating_mul(node_ns)
        .saturating_add(
            k.saturating_mul(schedule.steps() as u64)
                .saturating_mul(step_ns),
        )
        .div_ceil(1000);
    let limit = left.saturating_sub(fixed).saturating_mul(per) / weight;
    // Every packet is sent at least once, a unit each, and the estimate below holds a
    // rank's whole program (ν steps for a pipeline's root) before counting it: refuse
    // ν beyond the units left (unscaled, so that one program stays some hundred MB)
    // before building any program. `--packets 30000000` on hypercube:3 aborted here.
    if let Some(nu) = schedule.packets() {
        let most = (left.saturating_sub(fixed) / weight).max(1);
        if nu > most {
            return Err(Error::TooLarge(format!(
                "{} ({}) on {nodes} nodes in {nu} packets is more work than is left of the \
                 limit of {MAX_WORK} units (2^22, about a microsecond each) for one \
                 command, a unit at least for every packet; valid: --packets 1..={most} \
                 for this run (an explicit count where `opt` picks more, as it does with \
                 β = 0), or a smaller --len",
                algo.name, algo.op,
            )));
        }
    }
    let named: Vec<u32> = problem.collective.root().into_iter().collect();
    let work = hypercomm::schedule::work::estimate(schedule, &named, limit);
    if work <= limit && fixed <= left {
        WORK_SPENT.fetch_add(work.saturating_mul(weight).div_ceil(per) + fixed, Relaxed);
        return Ok(());
    }
    let what = if verify { "verifying" } else { "simulating" };
    let earlier = if spent > 0 {
        format!(" ({spent} of it taken by this command's earlier runs)")
    } else {
        String::new()
    };
    Err(Error::TooLarge(format!(
        "{what} {} ({}) on {nodes} nodes is more work than is left of the limit of \
         {MAX_WORK} units (2^22, about a microsecond each) for one command{earlier}: its \
         busy steps, operations, regions and peers over all ranks exceed {limit} besides \
         {fixed} for its nodes and steps; use \
         fewer nodes, a smaller --len or fewer --packets, or another algorithm",
        algo.name, algo.op,
    )))
}

/// Why a verified or async-timed run was refused, and what to do.
pub const HINT_NO_VERIFY: &str = "the limit for holding every program in memory (async \
     timing); use --timing rounds, which streams the programs";

/// Why a printed schedule was refused, and what to do.
pub const HINT_PRINT: &str = "the limit for holding every program in memory; use fewer \
     nodes, a smaller --len or an explicit --packets";

/// Why a streamed simulation was refused, and what to do.
pub const HINT_STREAM: &str = "the limit for simulating; use fewer nodes, a smaller \
     --len or an explicit --packets";

/// The limit and hint that apply to a run that holds every program in memory or not.
pub fn size_limit(materialized: bool) -> (u64, &'static str) {
    if materialized {
        (MAX_MATERIALIZED, HINT_NO_VERIFY)
    } else {
        (MAX_STREAMED, HINT_STREAM)
    }
}

/// Refuse a schedule of `nodes` × `steps` beyond `limit`; `hint` says what to do.
pub fn check_size(nodes: u32, steps: usize, limit: u64, hint: &str) -> Result<(), Error> {
    let size = u64::from(nodes).saturating_mul(steps as u64);
    if size > limit {
        return Err(Error::TooLarge(format!(
            "{nodes} nodes × {steps} steps = {size} exceeds {limit}, {hint}"
        )));
    }
    Ok(())
}

/// Most timed calls of `run --iters`, and of `bench --iters` and `--warmup` per size:
/// each rank keeps every call's time, and the MPI binary gathers them all on every rank
/// (k² · iters · 8 bytes); 10,000 calls of a large message already take minutes.
pub const MAX_RUN_ITERS: u64 = 10_000;

/// Backends this binary runs (`run`, `bench`, `calibrate`).
pub const BACKENDS: &[&str] = &["threads"];

/// Largest `--ranks` of the runtime commands (threads of one process).
pub const MAX_RANKS: u64 = hypercomm_rt::threads::MAX_RANKS as u64;

/// Largest bytes a runtime command may allocate over all ranks' buffers when the memory
/// available is unknown (not Linux, or `/proc/meminfo` unreadable): 64 GiB.
pub const MAX_RT_BYTES: u64 = 1 << 36;

/// What a runtime command may allocate ([`memory_limit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimit {
    /// Bytes.
    pub bytes: u64,
    /// Whether it was measured on this machine (else the fixed [`MAX_RT_BYTES`]).
    pub available: bool,
    /// Where the figure comes from, for messages: e.g. "available (MemAvailable in
    /// /proc/meminfo)", "left under the address-space limit (RLIMIT_AS)".
    pub source: &'static str,
}

impl MemoryLimit {
    /// The fixed [`MAX_RT_BYTES`], where the memory available is unknown or not this
    /// machine's to count.
    pub const FIXED: MemoryLimit = MemoryLimit {
        bytes: MAX_RT_BYTES,
        available: false,
        source: "allowed (the memory available is unknown here)",
    };

    /// The tighter of two limits.
    pub fn min(self, other: MemoryLimit) -> MemoryLimit {
        if other.bytes < self.bytes {
            other
        } else {
            self
        }
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes (the kernel's estimate of the
/// memory a new process can take without swapping).
pub fn mem_available(meminfo: &str) -> Option<u64> {
    meminfo_field(meminfo, "MemAvailable:")
}

/// A `kB` field of `/proc/meminfo` or `/proc/self/status` (`VmSize:`), in bytes.
fn meminfo_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let mut words = line[name.len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

/// The soft limit of `/proc/self/limits` on the line starting with `name` (`Max address
/// space`, `Max data size`), in bytes; `None` when unlimited or absent.
pub fn soft_limit(limits: &str, name: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// Bytes a cgroup may still take: `memory.max` (v2) or `memory.limit_in_bytes` (v1)
/// minus the current usage; `None` for `max` or an unreadable figure.
pub fn cgroup_room(max: &str, current: &str) -> Option<u64> {
    let max: u64 = max.trim().parse().ok()?;
    let current: u64 = current.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

/// The directories of this process's memory cgroup: v2 (`0::/path` of
/// `/proc/self/cgroup`, under `/sys/fs/cgroup`) and v1 (the `memory` controller's
/// line, under `/sys/fs/cgroup/memory`), with the files of the limit and the usage.
fn cgroup_files(cgroup: &str) -> Vec<(std::path::PathBuf, &'static str, &'static str)> {
    let mut out = Vec::new();
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let path = path.trim_start_matches('/');
        if id == "0" && ctrl.is_empty() {
            let dir = std::path::Path::new("/sys/fs/cgroup").join(path);
            out.push((dir, "memory.max", "memory.current"));
        } else if ctrl.split(',').any(|c| c == "memory") {
            let dir = std::path::Path::new("/sys/fs/cgroup/memory").join(path);
            out.push((dir, "memory.limit_in_bytes", "memory.usage_in_bytes"));
        }
    }
    out
}

/// The memory a runtime command (or a verification) may take: on Linux, the least of
/// `MemAvailable` of `/proc/meminfo`, the room left under the soft `RLIMIT_AS` (less
/// the address space in use, `VmSize`) and `RLIMIT_DATA` (less `VmData`) of
/// `/proc/self/limits`, and the room left in the process's memory cgroup (v2
/// `memory.max` less `memory.current`, or v1's `memory.limit_in_bytes` less
/// `memory.usage_in_bytes`); elsewhere, or if none can be read, [`MAX_RT_BYTES`].
pub fn memory_limit() -> MemoryLimit {
    if !cfg!(target_os = "linux") {
        return MemoryLimit::FIXED;
    }
    let read = |p: &std::path::Path| std::fs::read_to_string(p).ok();
    let mut found: Option<MemoryLimit> = None;
    let mut take = |bytes: Option<u64>, source: &'static str| {
        if let Some(bytes) = bytes {
            let l = MemoryLimit {
                bytes,
                available: true,
                source,
            };
            found = Some(found.map_or(l, |f| f.min(l)));
        }
    };
    take(
        read("/proc/meminfo".as_ref()).and_then(|t| mem_available(&t)),
        "available (MemAvailable in /proc/meminfo)",
    );
    if let (Some(limits), Some(status)) = (
        read("/proc/self/limits".as_ref()),
        read("/proc/self/status".as_ref()),
    ) {
        let room = |name, used| {
            let limit = soft_limit(&limits, name)?;
            Some(limit.saturating_sub(meminfo_field(&status, used).unwrap_or(0)))
        };
        take(
            room("Max address space", "VmSize:"),
            "left under the address-space limit (RLIMIT_AS, ulimit -v)",
        );
        take(
            room("Max data size", "VmData:"),
            "left under the data-size limit (RLIMIT_DATA, ulimit -d)",
        );
    }
    if let Some(cgroup) = read("/proc/self/cgroup".as_ref()) {
        let mut dirs = cgroup_files(&cgroup);
        // v2 at the root when /proc/self/cgroup names none (a namespaced view).
        dirs.push(("/sys/fs/cgroup".into(), "memory.max", "memory.current"));
        for (dir, max, current) in dirs {
            if let (Some(m), Some(c)) = (read(&dir.join(max)), read(&dir.join(current))) {
                take(
                    cgroup_room(&m, &c),
                    "left in the memory cgroup (memory.max less memory.current)",
                );
                break;
            }
        }
    }
    found.unwrap_or(MemoryLimit::FIXED)
}

/// `bytes` in GiB, one decimal.
fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// Check `--backend` against the backends this binary runs.
pub fn backend(name: &str) -> Result<String, Error> {
    let b = name.trim().to_ascii_lowercase();
    if BACKENDS.contains(&b.as_str()) {
        return Ok(b);
    }
    Err(Error::InvalidParameter {
        what: "--backend",
        reason: format!(
            "`{name}`; valid: {} (MPI runs through the hypercomm-mpi binary)",
            BACKENDS.join(" ")
        ),
    })
}

/// Check `--backend` given to hypercomm-mpi's `run` and `bench`: absent or `mpi` (it
/// was ignored, so `--backend threads` ran on MPI without a word).
pub fn mpi_backend(name: Option<&str>) -> Result<(), Error> {
    match name.map(|n| n.trim().to_ascii_lowercase()) {
        None => Ok(()),
        Some(b) if b == "mpi" => Ok(()),
        Some(_) => Err(Error::InvalidParameter {
            what: "--backend",
            reason: format!(
                "`{}`: hypercomm-mpi is the MPI backend; valid: mpi, or no --backend ({} through \
                 the hypercomm binary)",
                name.unwrap_or_default(),
                BACKENDS.join(" ")
            ),
        }),
    }
}

/// Check `--ranks`: 1 to [`MAX_RANKS`].
pub fn ranks(k: u64) -> Result<u32, Error> {
    if (1..=MAX_RANKS).contains(&k) {
        return Ok(k as u32);
    }
    Err(Error::InvalidParameter {
        what: "--ranks",
        reason: format!("{k}; valid: 1..={MAX_RANKS}"),
    })
}

/// Check `--timeout`: a positive number of seconds.
pub fn timeout(secs: f64) -> Result<std::time::Duration, Error> {
    if secs.is_finite() && secs > 0.0 && secs < 1e9 {
        return Ok(std::time::Duration::from_secs_f64(secs));
    }
    // 1e308 printed as 309 digits.
    let shown = if secs.is_finite() && secs.abs() >= 1e9 {
        format!("{secs:e}")
    } else {
        secs.to_string()
    };
    Err(Error::InvalidParameter {
        what: "--timeout",
        reason: format!("{shown}; valid: a number of seconds > 0 (and below 1e9)"),
    })
}

/// A validated runtime problem: the collective on `complete:ranks`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RtProblem {
    /// Number of ranks.
    pub ranks: u32,
    /// The collective with its root, source and destination.
    pub collective: Collective,
    /// The reduction operator.
    pub reduce: crate::runtime::ReduceOp,
    /// How long a rank waits for a peer.
    pub timeout: std::time::Duration,
    /// `--skew` of the variable-count collectives' counts (0 for the others).
    pub skew: f64,
}

/// Validate the problem of `run` and `bench` (the backend is checked by the caller,
/// which knows which backends it runs).
pub fn rt_problem(args: &crate::args::RtProblemArgs) -> Result<RtProblem, Error> {
    let k = ranks(args.ranks)?;
    let kind: OpKind = args.op.parse()?;
    check_rank_flags(
        kind,
        args.root.is_some(),
        args.src.is_some() || args.dst.is_some(),
    )?;
    let collective = Collective::new(kind, k, args.root, args.src, args.dst)?;
    rt_topology(kind, k)?;
    let reduce = match &args.reduce_op {
        None => crate::runtime::ReduceOp::Sum,
        Some(_) if !kind.is_reduction() => {
            let reductions: Vec<&str> = OpKind::ALL
                .iter()
                .filter(|k| k.is_reduction())
                .map(|k| k.name())
                .collect();
            return Err(Error::InvalidParameter {
                what: "--reduce-op",
                reason: format!(
                    "{kind} is not a reduction; --reduce-op applies to: {}",
                    reductions.join(" ")
                ),
            });
        }
        Some(s) => s.parse()?,
    };
    let skew = match args.skew {
        Some(_) if !kind.is_varcount() => {
            return Err(Error::InvalidParameter {
                what: "--skew",
                reason: format!(
                    "{kind} has one count per block; --skew applies to: gatherv scatterv \
                     allgatherv alltoallv reduce-scatterv"
                ),
            })
        }
        Some(s) if !(0.0..=1.0).contains(&s) => {
            return Err(Error::InvalidParameter {
                what: "--skew",
                reason: format!("{s}; valid: a number from 0 (even counts) to 1"),
            })
        }
        Some(s) => s,
        None if kind.is_varcount() => 0.5,
        None => 0.0,
    };
    Ok(RtProblem {
        ranks: k,
        collective,
        reduce,
        timeout: timeout(args.timeout)?,
        skew,
    })
}

/// The machine the runtime builds `kind`'s schedules for on `k` ranks
/// ([`hypercomm_rt::topology_for`]: `complete:k`, or `hypercube:n+host` for a
/// download on 2^n + 1 ranks); a download on any other count is refused.
pub fn rt_topology(kind: OpKind, k: u32) -> Result<Topology, Error> {
    hypercomm_rt::topology_for(kind, k).ok_or_else(|| hypercomm_rt::select::no_download_machine(k))
}

/// `auto`, `native` (the backend's own collective; refused on threads by [`rt_run`]
/// and [`rt_bench`]), or the registry algorithm `name` of `kind` if it fits
/// [`rt_topology`] (the error names the algorithms that fit).
pub fn rt_algo(k: u32, kind: OpKind, name: &str) -> Result<crate::runtime::AlgoChoice, Error> {
    rt_algo_shaped(k, kind, name, false)
}

/// [`rt_algo`], where with `shaped` (a `--shape` given) an algorithm that takes a shape
/// need not fit `complete:k` by itself (`product` on a prime k runs as `1xk`).
pub fn rt_algo_shaped(
    k: u32,
    kind: OpKind,
    name: &str,
    shaped: bool,
) -> Result<crate::runtime::AlgoChoice, Error> {
    use crate::runtime::AlgoChoice;
    if name.trim().eq_ignore_ascii_case("auto") {
        return Ok(AlgoChoice::Auto);
    }
    if name.trim().eq_ignore_ascii_case(hypercomm_rt::NATIVE) {
        return Ok(AlgoChoice::Native);
    }
    let topology = rt_topology(kind, k)?;
    let algo = algorithms::lookup(&topology, kind, name)?;
    if shaped && algo.takes_shape() {
        return Ok(AlgoChoice::Named(algo));
    }
    algo.fits(&topology)
        .map_err(|reason| Error::AlgorithmDoesNotFit {
            algo: algo.name.to_string(),
            topology: topology.to_string(),
            reason,
            valid: algorithms::names(algorithms::fitting(&topology, kind)),
        })?;
    Ok(AlgoChoice::Named(algo))
}

/// Refuse a run whose buffers (`bytes` over all ranks, `which` says what they are) do
/// not fit in `limit`, so that it fails here, with exit 2, rather than in the allocator
/// (an abort) or at the hands of the OOM killer; `what` is the flag to lower.
pub fn check_rt_bytes(
    bytes: u64,
    which: &str,
    limit: MemoryLimit,
    what: &'static str,
) -> Result<(), Error> {
    if bytes <= limit.bytes {
        return Ok(());
    }
    let have = limit.source;
    Err(Error::InvalidParameter {
        what,
        reason: format!(
            "{which} would take {bytes} bytes ({}), more than the {} bytes ({}) {have}; \
             valid: a smaller {what} or fewer --ranks",
            gib(bytes),
            limit.bytes,
            gib(limit.bytes),
        ),
    })
}

/// Where the ranks of a runtime command live, which decides what its memory check
/// counts and against what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Every rank in this process (the threads backend): all ranks' buffers together,
    /// against this machine's memory ([`memory_limit`]).
    Together,
    /// A rank per process (MPI), perhaps on several machines: the largest rank's
    /// buffers, against a limit every rank agrees on, so that they all reach the same
    /// verdict (each machine's `MemAvailable`, read at each rank's own moment, would
    /// not): the MPI binary takes the least over the job's ranks of [`memory_limit`]
    /// divided by the ranks sharing the machine, or [`MemoryLimit::FIXED`] where that
    /// is unknown. An allocation that fails is still an error, not an abort.
    OnePerProcess(MemoryLimit),
}

impl Placement {
    /// What the ranks' buffers may take, counted as [`Placement`] says.
    pub fn limit(self) -> MemoryLimit {
        match self {
            Placement::Together => memory_limit(),
            Placement::OnePerProcess(limit) => limit,
        }
    }
}

/// Elements of the ranks' `in` and `out` buffers, plus `out` again `extra` times (`run`
/// holds each rank's serial reference beside its `out`): summed over the ranks when
/// they are [`Placement::Together`], the largest rank's otherwise.
fn rank_elems(c: Collective, k: u32, m: u64, extra_out: u64, placement: Placement) -> u64 {
    let per_rank = (0..k).map(|r| {
        let out = c.out_len(k, m, r);
        c.in_len(k, m, r)
            .saturating_add(out.saturating_mul(1 + extra_out))
    });
    match placement {
        Placement::Together => per_rank.fold(0u64, u64::saturating_add),
        Placement::OnePerProcess(_) => per_rank.max().unwrap_or(0),
    }
}

/// Bytes `run` allocates with `m` elements per message: the ranks' `in`, `out` and
/// serial reference (a copy of `out`), of 8-byte elements, summed over the ranks or the
/// largest rank's, as `placement` says.
pub fn run_bytes(c: Collective, k: u32, m: u64, placement: Placement) -> u64 {
    // A variable-count collective's counts reach 2m (`--skew 1`).
    let m = if c.kind().is_varcount() {
        m.saturating_mul(2)
    } else {
        m
    };
    rank_elems(c, k, m, 1, placement).saturating_mul(8)
}

/// Bytes `bench` allocates at its largest size `m` (bytes per message): the ranks' `in`
/// and `out` (summed or the largest rank's, as `placement` says), and the memcpy
/// reference's source and destination, each of the bytes nccl-tests counts for the
/// collective ([`crate::runtime::bench::nccl`]).
pub fn bench_bytes(c: Collective, k: u32, m: u64, placement: Placement) -> u64 {
    let size = usize::try_from(m).unwrap_or(usize::MAX);
    let memcpy = crate::runtime::bench::nccl(c.kind(), k, size).0 as u64;
    rank_elems(c, k, m, 0, placement).saturating_add(memcpy.saturating_mul(2))
}

/// Validate `hypercomm run` (the threads backend).
pub fn rt_run(args: &crate::args::RtRunArgs) -> Result<crate::runtime::RunConfig, Error> {
    let cfg = rt_run_in(args, Placement::Together, None)?;
    no_native_on_threads([cfg.algo])?;
    Ok(cfg)
}

/// The threads backend has no collectives of its own: `--algo native` is bad input.
fn no_native_on_threads(
    algos: impl IntoIterator<Item = crate::runtime::AlgoChoice>,
) -> Result<(), Error> {
    if algos
        .into_iter()
        .any(|a| a == crate::runtime::AlgoChoice::Native)
    {
        return Err(Error::InvalidParameter {
            what: "--algo",
            reason: "native: the threads backend has no collectives of its own (native is \
                     the MPI library's, in hypercomm-mpi); valid: auto or a registry name"
                .into(),
        });
    }
    Ok(())
}

/// `--shape`: `None` when absent; `node` is `node` (the backend's nodes × processes per
/// node: hypercomm-mpi's, `None` on threads, where it is refused); else `AxB…`,
/// checked against the `k` ranks and given only with algorithms that take a shape
/// (for `bench`, at least one of those listed).
pub fn rt_shape(
    arg: Option<&str>,
    k: u32,
    algos: &[crate::runtime::AlgoChoice],
    node: Option<Shape>,
) -> Result<Option<Shape>, Error> {
    use crate::runtime::AlgoChoice;
    let Some(arg) = arg else {
        return Ok(None);
    };
    let shape = if arg.trim().eq_ignore_ascii_case("node") {
        node.ok_or_else(|| Error::InvalidParameter {
            what: "--shape",
            reason: "node: the threads backend has one node (nodes × processes per node \
                     comes from MPI_Comm_split_type, in hypercomm-mpi); valid: AxB… whose \
                     product is --ranks"
                .into(),
        })?
    } else {
        arg.parse::<Shape>()?
    };
    shape.check(k)?;
    let takes = |a: &AlgoChoice| matches!(a, AlgoChoice::Named(a) if a.takes_shape());
    if !algos.iter().any(takes) {
        let names: Vec<&str> = algos.iter().map(|a| a.name()).collect();
        return Err(Error::InvalidParameter {
            what: "--shape",
            reason: format!(
                "{shape}: --algo {} takes no shape; valid: --algo product (alltoall, \
                 allgather), or no --shape",
                names.join(",")
            ),
        });
    }
    Ok(Some(shape))
}

/// Validate `hypercomm run` for ranks placed as `placement` (the MPI binary: a rank per
/// process); `node` is the backend's nodes × processes per node, for `--shape node`.
pub fn rt_run_in(
    args: &crate::args::RtRunArgs,
    placement: Placement,
    node: Option<Shape>,
) -> Result<crate::runtime::RunConfig, Error> {
    let p = rt_problem(&args.problem)?;
    let kind = p.collective.kind();
    let algo = rt_algo_shaped(p.ranks, kind, &args.algo, args.shape.is_some())?;
    let shape = rt_shape(args.shape.as_deref(), p.ranks, &[algo], node)?;
    let packets: Packets = args.packets.parse()?;
    if let (crate::runtime::AlgoChoice::Auto, Packets::Count(_)) = (algo, packets) {
        return Err(Error::InvalidParameter {
            what: "--packets",
            reason: "a count needs a named --algo (auto plans with `opt`); valid with auto: opt"
                .into(),
        });
    }
    if let (crate::runtime::AlgoChoice::Native, Packets::Count(_)) = (algo, packets) {
        return Err(Error::InvalidParameter {
            what: "--packets",
            reason: "a count needs a registry --algo (native is the backend's own \
                     collective, not a schedule); valid with native: opt"
                .into(),
        });
    }
    check_len(&rt_topology(kind, p.ranks)?, kind, args.len)?;
    check_rt_bytes(
        run_bytes(p.collective, p.ranks, args.len, placement),
        "the ranks' buffers (in, out and the serial reference)",
        placement.limit(),
        "--len",
    )?;
    if !(1..=MAX_RUN_ITERS).contains(&args.iters) {
        return Err(Error::InvalidParameter {
            what: "--iters",
            reason: format!("{}; valid: 1..={MAX_RUN_ITERS}", args.iters),
        });
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    Ok(crate::runtime::RunConfig {
        collective: p.collective,
        ranks: p.ranks,
        len: args.len as usize,
        algo,
        shape,
        packets,
        reduce: p.reduce,
        seed,
        inject_error: args.inject_error,
        iters: args.iters as usize,
        counts: crate::runtime::draw_counts(p.collective, p.ranks, args.len as usize, p.skew, seed),
        skew: p.skew,
    })
}

/// Message sizes from `min` to `max` bytes, doubling (`0` is followed by 1).
pub fn bench_sizes(min: u64, max: u64) -> Result<Vec<usize>, Error> {
    if min > max {
        return Err(Error::InvalidParameter {
            what: "--min-size",
            reason: format!("{min} is above --max-size {max}; valid: 0..={max}"),
        });
    }
    // Doubling stops before it passes `max` or overflows (a saturating doubling never
    // passed u64::MAX: `--max-size 18446744073709551615` looped for ever).
    let sizes = std::iter::successors(
        Some(min),
        |&s| if s == 0 { Some(1) } else { s.checked_mul(2) },
    )
    .take_while(|&s| s <= max)
    .map(|s| usize::try_from(s).unwrap_or(usize::MAX))
    .collect();
    Ok(sizes)
}

/// Validate `hypercomm bench` (the threads backend).
pub fn rt_bench(args: &crate::args::BenchArgs) -> Result<crate::runtime::BenchConfig, Error> {
    let cfg = rt_bench_in(args, Placement::Together, None)?;
    no_native_on_threads(cfg.algos.iter().copied())?;
    Ok(cfg)
}

/// Validate `hypercomm bench` for ranks placed as `placement` (the MPI binary: a rank
/// per process); `node` as for [`rt_run_in`].
pub fn rt_bench_in(
    args: &crate::args::BenchArgs,
    placement: Placement,
    node: Option<Shape>,
) -> Result<crate::runtime::BenchConfig, Error> {
    let p = rt_problem(&args.problem)?;
    let kind = p.collective.kind();
    let topology = rt_topology(kind, p.ranks)?;
    // Each name as `run --algo` takes it, or `all`: every fitting algorithm but those
    // kept with their published flaw (SSA), which do not perform the collective (named,
    // they run where they verify). `all,auto` times auto beside every one; a name
    // given twice (`all,binomial`) runs once, where it first appears.
    let mut algos: Vec<crate::runtime::AlgoChoice> = Vec::new();
    for name in args.algo.split(',') {
        let more = if name.trim().eq_ignore_ascii_case("all") {
            algorithms::fitting(&topology, kind)
                .into_iter()
                .filter(|a| a.published_flaw().is_none())
                .map(crate::runtime::AlgoChoice::Named)
                .collect()
        } else {
            vec![rt_algo_shaped(p.ranks, kind, name, args.shape.is_some())?]
        };
        for a in more {
            if !algos.contains(&a) {
                algos.push(a);
            }
        }
    }
    if algos.is_empty() {
        return Err(Error::InvalidParameter {
            what: "--algo",
            reason: format!("no algorithm performs {kind} on {topology}"),
        });
    }
    let shape = rt_shape(args.shape.as_deref(), p.ranks, &algos, node)?;
    if let Some(n) = args.iters.filter(|n| !(1..=MAX_RUN_ITERS).contains(n)) {
        return Err(Error::InvalidParameter {
            what: "--iters",
            reason: format!("{n}; valid: 1..={MAX_RUN_ITERS}"),
        });
    }
    if let Some(n) = args.warmup.filter(|&n| n > MAX_RUN_ITERS) {
        return Err(Error::InvalidParameter {
            what: "--warmup",
            reason: format!("{n}; valid: 0..={MAX_RUN_ITERS}"),
        });
    }
    if args.in_place && !crate::runtime::has_in_place(kind) {
        return Err(Error::InvalidParameter {
            what: "--in-place",
            reason: format!(
                "{kind} has no in-place form; valid: allgather, allreduce, scan, \
                 exclusive-scan (broadcast is in place already)"
            ),
        });
    }
    if args.persistent {
        check_persistent(kind, args.in_place, &algos)?;
    }
    check_len_as(&topology, kind, args.max_size, "--max-size")?;
    let sizes = bench_sizes(args.min_size, args.max_size)?;
    let largest = *sizes.last().expect("at least one size") as u64;
    check_len_as(&topology, kind, largest, "--max-size")?;
    check_rt_bytes(
        bench_bytes(p.collective, p.ranks, largest, placement),
        "the ranks' buffers at the largest size",
        placement.limit(),
        "--max-size",
    )?;
    Ok(crate::runtime::BenchConfig {
        collective: p.collective,
        ranks: p.ranks,
        algos,
        shape,
        sizes,
        iters: args.iters,
        warmup: args.warmup,
        reduce: p.reduce,
        in_place: args.in_place,
        persistent: args.persistent,
        interleave: args.interleave,
        barrier: args.barrier.into(),
        skew: p.skew,
    })
}

/// `bench --persistent` times what `plan_*` plans: refused, naming the valid choices,
/// for a collective without a persistent form, with `--in-place` (a plan runs on
/// separate `in` and `out`) and with `native` (the MPI library's collective is no
/// schedule to plan).
fn check_persistent(
    kind: OpKind,
    in_place: bool,
    algos: &[crate::runtime::AlgoChoice],
) -> Result<(), Error> {
    if !crate::runtime::has_persistent(kind) {
        let valid: Vec<&str> = OpKind::ALL
            .into_iter()
            .filter(|&k| crate::runtime::has_persistent(k))
            .map(OpKind::name)
            .collect();
        return Err(Error::InvalidParameter {
            what: "--persistent",
            reason: format!(
                "{kind} has no persistent form (plan_*); valid: {}",
                valid.join(", ")
            ),
        });
    }
    if in_place {
        return Err(Error::InvalidParameter {
            what: "--persistent",
            reason: "not with --in-place: a persistent call runs on separate send and \
                     receive buffers"
                .into(),
        });
    }
    if algos.contains(&crate::runtime::AlgoChoice::Native) {
        return Err(Error::InvalidParameter {
            what: "--persistent",
            reason: "not with --algo native: the MPI library's own collective is no \
                     schedule to plan; valid: auto or registry names"
                .into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   23000000 kB\n";
        assert_eq!(mem_available(text), Some(23_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
    }

    /// The rlimits of `/proc/self/limits` (soft column), and cgroup room.
    #[test]
    fn rlimits_and_cgroups_are_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max data size             unlimited            unlimited            bytes     \n\
                      Max address space         4294967296           unlimited            bytes     \n";
        assert_eq!(soft_limit(limits, "Max address space"), Some(1 << 32));
        assert_eq!(soft_limit(limits, "Max data size"), None);
        assert_eq!(soft_limit(limits, "Max stack size"), None);
        assert_eq!(cgroup_room("1000000\n", "250000\n"), Some(750_000));
        assert_eq!(cgroup_room("max\n", "250000\n"), None);
        assert_eq!(cgroup_room("100", "250"), Some(0));
        let files = cgroup_files("12:memory:/a/b\n0::/user.slice/x\n3:cpu:/\n");
        assert_eq!(
            files,
            vec![
                (
                    std::path::PathBuf::from("/sys/fs/cgroup/memory/a/b"),
                    "memory.limit_in_bytes",
                    "memory.usage_in_bytes"
                ),
                (
                    std::path::PathBuf::from("/sys/fs/cgroup/user.slice/x"),
                    "memory.max",
                    "memory.current"
                ),
            ]
        );
        let here = memory_limit();
        assert!(here.bytes > 0 && !here.source.is_empty());
    }

    /// Verifying TEA1 on hypercube:13 is refused under 4 GiB, naming where the limit
    /// comes from; ADEA on hypercube:16 is not.
    #[test]
    fn verification_beyond_the_memory_is_refused() {
        let limit = MemoryLimit {
            bytes: 4 << 30,
            available: true,
            source: "left under the address-space limit (RLIMIT_AS, ulimit -v)",
        };
        let tea1 = algorithms::find(OpKind::Allgather, "tea1").unwrap();
        let e = check_verify_memory_in(tea1, 1 << 13, limit).unwrap_err();
        assert!(matches!(e, Error::TooLarge(_)));
        let e = e.to_string();
        for needle in ["tea1", "8192 nodes", "RLIMIT_AS", "--no-verify"] {
            assert!(e.contains(needle), "no `{needle}`: {e}");
        }
        assert!(check_verify_memory_in(tea1, 1 << 10, limit).is_ok());
        let adea = algorithms::find(OpKind::Allgather, "adea").unwrap();
        assert!(check_verify_memory_in(adea, 1 << 16, limit).is_ok());
    }

    /// TEA's simulation is refused beyond hypercube:14 (hypercube:18 would take hours);
    /// ADEA's is not.
    #[test]
    fn quadratic_algorithms_are_simulated_up_to_hypercube_14() {
        let tea2 = algorithms::find(OpKind::Allgather, "tea2").unwrap();
        assert!(check_quadratic(tea2, 1 << 14).is_ok());
        let e = check_quadratic(tea2, 1 << 15).unwrap_err().to_string();
        assert!(e.contains("tea2") && e.contains("2^28"), "{e}");
        let adea = algorithms::find(OpKind::Allgather, "adea").unwrap();
        assert!(check_quadratic(adea, 1 << 20).is_ok());
    }

    /// Sizes double up to the maximum and stop, even at u64::MAX (a saturating
    /// doubling never passed it: `bench --max-size 18446744073709551615` never ended).
    #[test]
    fn bench_sizes_end() {
        assert_eq!(bench_sizes(0, 4).unwrap(), vec![0, 1, 2, 4]);
        assert_eq!(bench_sizes(3, 20).unwrap(), vec![3, 6, 12]);
        let all = bench_sizes(1, u64::MAX).unwrap();
        assert_eq!(all.len(), 64);
        assert_eq!(*all.last().unwrap() as u64, 1 << 63);
        assert!(bench_sizes(5, 4).is_err());
    }

    /// Buffers beyond the limit are refused with the bytes needed and the bytes there.
    #[test]
    fn buffers_beyond_the_memory_are_refused_naming_both() {
        let limit = MemoryLimit {
            bytes: 1000,
            available: true,
            source: "available (MemAvailable in /proc/meminfo)",
        };
        assert!(check_rt_bytes(1000, "buffers", limit, "--len").is_ok());
        let e = check_rt_bytes(1001, "buffers", limit, "--len")
            .unwrap_err()
            .to_string();
        for needle in ["--len", "1001 bytes", "1000 bytes", "MemAvailable"] {
            assert!(e.contains(needle), "no `{needle}`: {e}");
        }
        let e = check_rt_bytes(u64::MAX, "buffers", MemoryLimit::FIXED, "--max-size")
            .unwrap_err()
            .to_string();
        assert!(e.contains(&MAX_RT_BYTES.to_string()), "{e}");
    }

    /// `run` counts in, out and the reference of each rank: an all-reduce of m elements
    /// on k ranks takes 3·k·m·8 bytes; `bench` in and out, and memcpy's two buffers.
    /// With a rank per process (MPI), the largest rank's share; memcpy's two buffers are
    /// of nccl-tests' bytes (k·m for an all-gather).
    #[test]
    fn the_estimates_count_every_buffer() {
        use Placement::Together;
        #[allow(non_snake_case)]
        let OnePerProcess = Placement::OnePerProcess(MemoryLimit::FIXED);
        assert_eq!(
            run_bytes(Collective::Allreduce, 2, 1000, Together),
            2 * 3 * 1000 * 8
        );
        // All-gather: in m, out k·m.
        assert_eq!(
            run_bytes(Collective::Allgather, 3, 10, Together),
            3 * (10 + 2 * 30) * 8
        );
        assert_eq!(
            run_bytes(Collective::Allgather, 3, 10, OnePerProcess),
            (10 + 2 * 30) * 8
        );
        // Scatter: only the root has an `in` (k·m).
        assert_eq!(
            run_bytes(Collective::Scatter { root: 1 }, 4, 10, OnePerProcess),
            (40 + 2 * 10) * 8
        );
        assert_eq!(
            bench_bytes(Collective::Allreduce, 2, 1000, Together),
            2 * 2000 + 2 * 1000
        );
        assert_eq!(
            bench_bytes(Collective::Allgather, 4, 1000, Together),
            4 * (1000 + 4000) + 2 * 4000
        );
        assert_eq!(
            bench_bytes(Collective::Allgather, 4, 1000, OnePerProcess),
            (1000 + 4000) + 2 * 4000
        );
    }
}

//! Validation of the raw arguments ([`crate::args`]) into a typed configuration.
//!
//! Every check here returns a [`hypercomm::error::Error`], which the commands report on
//! stderr with exit code 2. The library's own parsers (`Topology`, `OpKind`, `Packets`,
//! `Ports`, `Duplex`, `Timing`) produce messages that name the valid choices; the CLI
//! adds the checks that protect the process itself: lengths whose counts would overflow,
//! and schedules too large to hold in memory.

use hypercomm::algorithms::{self, Algorithm, Packets, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::cost::model::{LinkCost, Model, Timing};
use hypercomm::error::Error;
use hypercomm::topology::Topology;
use hypercomm::verify::{Problem, Strictness};

use crate::args::{CheckArgs, ModelArgs, ProblemArgs};

/// Largest count of elements a buffer, a volume or a link load may reach: 2^53, so that
/// every count is exact both as `u64` and as `f64`.
pub const MAX_ELEMENTS: u64 = 1 << 53;

/// Largest nodes × steps of a schedule whose programs are all held in memory (to verify
/// it, to time it with `--timing async`, or to print it).
pub const MAX_MATERIALIZED: u64 = 50_000_000;

/// Largest nodes × steps of a schedule timed by streaming its programs (rounds timing
/// without verification); beyond it the simulation would run for hours.
pub const MAX_STREAMED: u64 = 1 << 32;

/// A validated problem: where, what, how much.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProblemConfig {
    /// The interconnect.
    pub topology: Topology,
    /// The collective with its root, source and destination.
    pub collective: Collective,
    /// Elements per message (per block for scatter and gather).
    pub len: u64,
}

impl ProblemConfig {
    /// The library's view of the problem (reductions taken as commutative).
    pub fn problem(&self) -> Problem<'_> {
        Problem {
            topology: &self.topology,
            collective: self.collective,
            len: self.len,
            commutative: true,
        }
    }
}

/// A validated run of one algorithm.
#[derive(Clone, Copy, Debug)]
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
    problem_of(topology, kind, args.len, [args.root, args.src, args.dst])
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
    })
}

/// Reject `--root` for collectives without a root and `--src`/`--dst` outside p2p, so a
/// mistyped command does not silently ignore them.
fn check_rank_flags(kind: OpKind, root: bool, ends: bool) -> Result<(), Error> {
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
        return Err(Error::InvalidParameter {
            what: "--len",
            reason: format!(
                "{len} is too large for {kind} on {topology}; valid: 0..={max} \
                 (volumes must stay below 2^53 elements)"
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
    model.duplex = args.duplex.parse()?;
    model.timing = args.timing.parse()?;
    Ok(model)
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
        Strictness {
            ports: Some(model.ports),
            duplex: Some(model.duplex),
        }
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

/// Whether the run holds every program in memory.
pub fn materializes(verify: bool, model: &Model) -> bool {
    verify || model.timing == Timing::Async
}

/// Why a verified or async-timed run was refused, and what to do.
pub const HINT_NO_VERIFY: &str = "the limit for holding every program in memory; pass \
     --no-verify (with --timing rounds) to time it without building every program";

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

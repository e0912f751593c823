//! One run's facts — the problem, the model, the verifier's verdict, the simulated cost,
//! the closed forms and the lower bound — shared by `simulate`, `compare` and `verify`.

use hypercomm::algorithms::{Formula, Packets};
use hypercomm::bounds::lower_bound;
use hypercomm::collective::Collective;
use hypercomm::cost::model::{Model, Timing};
use hypercomm::cost::{self, Report};
use hypercomm::error::Error;
use hypercomm::schedule::{materialize, Program, Rank};
use hypercomm::verify::{self, Problem, Strictness, Violation, ViolationKind};
use serde::Serialize;

use crate::config::{self, RunConfig};

/// Packets as reported: `"opt"` or a count.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PacketsOut {
    /// `"opt"`.
    Word(&'static str),
    /// An explicit count.
    Count(u64),
}

impl From<Packets> for PacketsOut {
    fn from(p: Packets) -> Self {
        match p {
            Packets::Opt => PacketsOut::Word("opt"),
            Packets::Count(n) => PacketsOut::Count(n),
        }
    }
}

/// The model as reported.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelOut {
    /// Start-up time β.
    pub beta: f64,
    /// Time per element τ.
    pub tau: f64,
    /// Start-up time β_h of a host link.
    pub host_beta: f64,
    /// Time per element τ_h of a host link.
    pub host_tau: f64,
    /// `all` or `one`.
    pub ports: String,
    /// `full` or `half`.
    pub duplex: String,
    /// `rounds` or `async`.
    pub timing: String,
}

impl From<&Model> for ModelOut {
    fn from(m: &Model) -> Self {
        ModelOut {
            beta: m.beta(),
            tau: m.tau(),
            host_beta: m.host.beta,
            host_tau: m.host.tau,
            ports: m.ports.to_string(),
            duplex: m.duplex.to_string(),
            timing: m.timing.to_string(),
        }
    }
}

/// A violation as reported: the library's fields plus its one-line message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ViolationOut {
    /// The verifier's violation (kind, step, rank, peer, region, detail).
    #[serde(flatten)]
    pub violation: Violation,
    /// The violation's `Display` form.
    pub message: String,
}

/// Everything one run established. Serialises as the JSON object of `simulate`, of each
/// row of `compare` and of `verify`; absent facts are `null`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// The topology, e.g. `hypercube:3`.
    pub topology: String,
    /// Its number of nodes.
    pub nodes: u32,
    /// The collective's name.
    pub op: &'static str,
    /// The algorithm's name (a schedule file may have none).
    pub algo: Option<String>,
    /// Elements per message or block.
    pub len: u64,
    /// Root of a rooted collective.
    pub root: Option<Rank>,
    /// Source of p2p.
    pub src: Option<Rank>,
    /// Destination of p2p.
    pub dst: Option<Rank>,
    /// Packets as requested (`"opt"` or a count; 1 for non-pipelined algorithms).
    pub packets: Option<PacketsOut>,
    /// Packets per message the pipelined schedule uses (ν, `--packets opt` resolved).
    pub nu: Option<u64>,
    /// The machine model.
    pub model: ModelOut,
    /// Whether the model's port and duplex rules were verification rules.
    pub strict: bool,
    /// The verdict; `null` when verification was skipped or impossible.
    pub verified: Option<bool>,
    /// The first rule broken, if any.
    pub violation: Option<ViolationOut>,
    /// Lock-step rounds of the schedule, idle ones included.
    pub steps: Option<usize>,
    /// Simulated time.
    pub time: Option<f64>,
    /// Rounds in which a message moves.
    pub rounds: Option<usize>,
    /// Messages sent.
    pub messages: Option<u64>,
    /// Elements moved over links.
    pub volume: Option<u64>,
    /// Elements carried by the busiest directed link.
    pub max_link_load: Option<u64>,
    /// The algorithm's first closed form.
    pub formula: Option<Formula>,
    /// All its closed forms that apply.
    pub formulas: Vec<Formula>,
    /// A lower bound on any algorithm's time.
    pub lower_bound: Option<f64>,
    /// time / lower_bound.
    pub ratio: Option<f64>,
    /// Why this run could not be made (`compare` rows only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why verification was skipped, when it was too large ([`run_or_unverified`]).
    #[serde(skip)]
    pub note: Option<String>,
}

impl RunReport {
    /// A report of the problem with nothing measured yet.
    pub fn blank(problem: &Problem<'_>, algo: Option<&str>, model: &Model, strict: bool) -> Self {
        let c = problem.collective;
        let (src, dst) = match c {
            Collective::P2p { src, dst } => (Some(src), Some(dst)),
            _ => (None, None),
        };
        RunReport {
            topology: problem.topology.to_string(),
            nodes: problem.topology.nodes(),
            op: c.kind().name(),
            algo: algo.map(str::to_string),
            len: problem.len,
            root: if src.is_some() { None } else { c.root() },
            src,
            dst,
            packets: None,
            nu: None,
            model: model.into(),
            strict,
            verified: None,
            violation: None,
            steps: None,
            time: None,
            rounds: None,
            messages: None,
            volume: None,
            max_link_load: None,
            formula: None,
            formulas: Vec::new(),
            // The bounds know even counts only.
            lower_bound: lower_bound(problem.topology, &c, problem.len, model)
                .filter(|_| problem.counts.is_none())
                .map(|b| b + 0.0),
            ratio: None,
            error: None,
            note: None,
        }
    }

    /// Record a verdict.
    pub fn set_verdict(&mut self, verdict: Result<(), Violation>) {
        self.verified = Some(verdict.is_ok());
        self.violation = verdict.err().map(|v| ViolationOut {
            message: v.to_string(),
            violation: v,
        });
    }

    /// Record a simulation of a schedule of `steps` steps.
    pub fn set_cost(&mut self, steps: usize, r: &Report) {
        self.steps = Some(steps);
        self.time = Some(r.time + 0.0); // -0 (nothing to send, a negative times 0) is 0
        self.rounds = Some(r.rounds);
        self.messages = Some(r.messages);
        self.volume = Some(r.volume);
        self.max_link_load = Some(r.max_link_load);
        self.ratio = match self.lower_bound {
            Some(lb) if lb > 0.0 => Some(r.time / lb),
            _ => None,
        };
    }

    /// Record the closed forms.
    pub fn set_formulas(&mut self, mut formulas: Vec<Formula>) {
        for f in &mut formulas {
            f.value += 0.0; // -0 is 0
        }
        self.formula = formulas.first().cloned();
        self.formulas = formulas;
    }

    /// Whether the run failed verification.
    pub fn failed(&self) -> bool {
        self.verified == Some(false)
    }
}

/// Verify (unless `strict` is `None`) and time programs held in memory. A schedule whose
/// programs are malformed (wrong count or step count) is not timed: the simulator
/// assumes well-formed programs.
pub fn evaluate_programs(
    report: &mut RunReport,
    problem: Problem<'_>,
    progs: &[Program],
    steps: usize,
    model: &Model,
    strict: Option<Strictness>,
) {
    if let Some(strict) = strict {
        let opts = crate::parallel::verify_options(progs.len() as u32);
        report.set_verdict(verify::verify_programs_with(
            problem, progs, steps, strict, opts,
        ));
    }
    let malformed = matches!(&report.violation,
        Some(v) if v.violation.kind == ViolationKind::MalformedProgram);
    if !malformed {
        let cost = cost::simulate_programs(problem.topology, progs, steps, model);
        report.set_cost(steps, &cost);
    }
}

/// [`run`], and when verifying is too large (more nodes than the verifier takes, or
/// more memory than there is: [`config::check_verify_memory`]) with rounds timing,
/// which streams, the same run unverified, with the reason as its `note` (`compare`
/// and `sweep` skip such a verification; `simulate` refuses it).
pub fn run_or_unverified(cfg: &RunConfig) -> Result<RunReport, Error> {
    match run(cfg) {
        Err(Error::TooLarge(why)) if cfg.verify && cfg.params.model.timing == Timing::Rounds => {
            let mut cfg = cfg.clone();
            cfg.verify = false;
            let mut report = run(&cfg)?;
            report.note = Some(format!("not verified: {why}"));
            Ok(report)
        }
        r => r,
    }
}

/// Build, verify, time and cost one registry algorithm.
pub fn run(cfg: &RunConfig) -> Result<RunReport, Error> {
    let problem = cfg.problem.problem();
    let model = &cfg.params.model;
    let mut report = RunReport::blank(
        &problem,
        Some(cfg.algo.name),
        model,
        cfg.strictness != Strictness::default(),
    );
    report.packets = Some(cfg.params.packets.into());
    // Before building: TEA1's schedule on hypercube:13 takes seconds to plan.
    config::check_quadratic(cfg.algo, problem.topology.nodes())?;
    if cfg.verify {
        config::check_verify_memory(cfg.algo, problem.topology.nodes())?;
    }
    let schedule = cfg.algo.build(&problem, &cfg.params)?;
    report.nu = schedule.packets();
    let (nodes, steps) = (schedule.nodes(), schedule.steps());
    let (limit, hint) = config::size_limit(config::materializes(model));
    config::check_size(nodes, steps, limit, hint)?;
    if cfg.verify {
        config::check_verified_nodes(nodes)?;
    }
    config::check_work(cfg.algo, schedule.as_ref(), &problem, cfg.verify, model)?;
    if model.timing == Timing::Async {
        let progs = materialize(schedule.as_ref()).programs;
        let strict = cfg.verify.then_some(cfg.strictness);
        evaluate_programs(&mut report, problem, &progs, steps, model, strict);
    } else {
        // Verification streams the steps (one step of every rank in memory), then the
        // rounds simulation streams the ranks.
        if cfg.verify {
            let opts = crate::parallel::verify_options(nodes);
            report.set_verdict(verify::verify_with(
                problem,
                schedule.as_ref(),
                cfg.strictness,
                opts,
            ));
        }
        let malformed = matches!(&report.violation,
            Some(v) if v.violation.kind == ViolationKind::MalformedProgram);
        if malformed {
            report.set_formulas(cfg.algo.formulas(&problem, &cfg.params));
            return Ok(report);
        }
        let cost = crate::parallel::simulate(problem.topology, schedule.as_ref(), model);
        report.set_cost(steps, &cost);
    }
    report.set_formulas(cfg.algo.formulas(&problem, &cfg.params));
    check_finite(&report)?;
    Ok(report)
}

/// Refuse a report whose simulated time (or first closed form) is not a finite number:
/// β and τ so large (`--beta 1e308 --tau 1e308`) that the time overflows to infinity,
/// and the ratio to the bound is NaN.
pub fn check_finite(report: &RunReport) -> Result<(), Error> {
    let values = [
        ("simulated time", report.time),
        ("closed form", report.formula.as_ref().map(|f| f.value)),
    ];
    for (what, v) in values {
        if let Some(v) = v.filter(|v| !v.is_finite()) {
            return Err(Error::InvalidParameter {
                what: "--beta/--tau",
                reason: format!(
                    "the {what} is {v}: β and τ (and β_h, τ_h) are too large for this \
                     problem; valid: values for which the time stays finite (below about \
                     1e308)"
                ),
            });
        }
    }
    Ok(())
}

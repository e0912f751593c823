//! `hypercomm sweep`: run algorithms of one collective over a range of lengths (`--len
//! A..B`), of hypercube dimensions (`--dims A..B`) or of machine sizes in any topology
//! family (`--nodes A..B`), one row per point and algorithm, as CSV or JSON, and
//! optionally draw the times as an SVG chart ([`crate::plot`]).
//!
//! Every point is verified unless `--no-verify`; a point whose schedule is too large to
//! verify ([`config::MAX_VERIFIED_NODES`]) is timed without verification. A row
//! whose run is impossible (e.g. `--packets` an algorithm cannot take at that length)
//! says `error` and the sweep goes on.

pub mod range;

use hypercomm::algorithms::{self, Algorithm, Packets};
use hypercomm::collective::OpKind;
use hypercomm::cost::model::Model;
use hypercomm::error::Error;
use hypercomm::topology::Topology;
use serde::{Serialize, Serializer};

use crate::args::{SweepArgs, SweepFormat};
use crate::config::{self, ProblemConfig};
use crate::plot::{Chart, Series};
use crate::report::{self, RunReport};
use crate::{compare, output, CliError, Io, Outcome};

/// What is swept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Elements per message, on a fixed topology.
    Len,
    /// Hypercube dimensions, at a fixed length.
    Dims,
    /// Machine sizes K of one topology family, at a fixed length.
    Nodes,
}

/// One point of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The swept value: the length or the dimension.
    pub x: u64,
    /// The problem at this point.
    pub problem: ProblemConfig,
}

/// A validated sweep.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// What is swept.
    pub axis: Axis,
    /// Whether the points grow geometrically (a log axis in the chart).
    pub geometric: bool,
    /// The points, ascending.
    pub points: Vec<Point>,
    /// The algorithms, in registry order.
    pub algos: Vec<&'static Algorithm>,
    /// Packets as requested.
    pub packets: Packets,
    /// The machine model.
    pub model: Model,
}

/// How a row's schedule was checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verified {
    /// It verified.
    Yes,
    /// It broke a rule.
    No,
    /// Verification was skipped (`--no-verify`, or too large to hold in memory).
    Skipped,
    /// The run could not be made.
    Error,
}

impl Verified {
    /// The CSV cell: `true`, `false`, `skipped` or `error`.
    pub fn cell(self) -> &'static str {
        match self {
            Verified::Yes => "true",
            Verified::No => "false",
            Verified::Skipped => "skipped",
            Verified::Error => "error",
        }
    }
}

/// JSON: `true`, `false`, `null` (skipped) or `"error"`.
impl Serialize for Verified {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Verified::Yes => s.serialize_bool(true),
            Verified::No => s.serialize_bool(false),
            Verified::Skipped => s.serialize_none(),
            Verified::Error => s.serialize_str("error"),
        }
    }
}

/// One algorithm at one point. Serialises as one object of the JSON array; the CSV
/// has the same columns (without `error`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Elements per message or block.
    pub len: u64,
    /// Nodes of the topology.
    pub nodes: u32,
    /// The algorithm.
    pub algo: &'static str,
    /// Simulated time (rounds or async, per `--timing`).
    pub time: Option<f64>,
    /// Rounds in which a message moves.
    pub rounds: Option<usize>,
    /// Messages sent.
    pub messages: Option<u64>,
    /// Elements moved over links.
    pub volume: Option<u64>,
    /// The value of the algorithm's first closed form.
    pub formula: Option<f64>,
    /// A lower bound on any algorithm's time.
    pub lower_bound: Option<f64>,
    /// The verdict.
    pub verified: Verified,
    /// Why the run could not be made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The swept value (the length or the dimension).
    #[serde(skip)]
    pub x: u64,
    /// The violation, when verification failed.
    #[serde(skip)]
    pub violation: Option<String>,
    /// Why verification was skipped, when it was too large.
    #[serde(skip)]
    pub note: Option<String>,
}

/// The CSV header.
pub const CSV_HEADER: &str =
    "len,nodes,algo,time,rounds,messages,volume,formula,lower_bound,verified";

/// Validate the arguments into a sweep.
pub fn configure(args: &SweepArgs) -> Result<Sweep, Error> {
    let kind: OpKind = args.op.parse()?;
    let (axis, geometric, points) = points(args, kind)?;
    // The host options need machines with a host: those the sweep built say (a hosted
    // one, or the first, named if refused).
    let machines = || points.iter().map(|p| &p.problem.topology);
    let model = match machines()
        .find(|t| t.host().is_some())
        .or(machines().next())
    {
        Some(t) => config::model_on(&args.model, t)?,
        None => config::model(&args.model)?,
    };
    let packets: Packets = args.packets.parse()?;
    let algos = select(&points, args.algo.as_deref())?;
    Ok(Sweep {
        axis,
        geometric,
        points,
        algos,
        packets,
        model,
    })
}

/// The points of `--len` (or of `--dims` at one `--len`).
fn points(args: &SweepArgs, kind: OpKind) -> Result<(Axis, bool, Vec<Point>), Error> {
    let ranks = [args.root, args.src, args.dst];
    let lens = range::parse("--len", &args.len)?;
    if let Some(nodes) = &args.nodes {
        let len = single_len(&args.len, &lens.values, "--nodes")?;
        let sizes = range::parse("--nodes", nodes)?;
        check_spec(&args.topology)?;
        let mut points = Vec::new();
        for &k in &sizes.values {
            if let Some(topology) = topology_of_size(&args.topology, k)? {
                points.push(point(k, topology, kind, len, ranks)?);
            }
        }
        if points.is_empty() {
            return Err(Error::InvalidParameter {
                what: "--nodes",
                reason: format!(
                    "`{nodes}` holds no size of the family of `{}` (tori, meshes and \
                     generalized hypercubes need K = Q², hypercubes K = 2^n, shm:K,S K ≥ S)",
                    args.topology
                ),
            });
        }
        return Ok((Axis::Nodes, sizes.geometric, points));
    }
    let Some(dims) = &args.dims else {
        let topology: Topology = args.topology.parse()?;
        let points = lens
            .values
            .iter()
            .map(|&len| point(len, topology.clone(), kind, len, ranks))
            .collect::<Result<_, _>>()?;
        return Ok((Axis::Len, lens.geometric, points));
    };
    let len = single_len(&args.len, &lens.values, "--dims")?;
    let dims = range::parse("--dims", dims)?;
    let points = dims
        .values
        .iter()
        .map(|&d| point(d, topology_at(&args.topology, d)?, kind, len, ranks))
        .collect::<Result<_, _>>()?;
    Ok((Axis::Dims, dims.geometric, points))
}

fn point(
    x: u64,
    topology: Topology,
    kind: OpKind,
    len: u64,
    ranks: [Option<u64>; 3],
) -> Result<Point, Error> {
    let problem = config::problem_of(topology, kind, len, ranks)?;
    Ok(Point { x, problem })
}

/// The one length of a `--dims` or `--nodes` sweep.
fn single_len(spec: &str, lens: &[u64], axis: &str) -> Result<u64, Error> {
    match lens {
        [len] if !spec.contains("..") => Ok(*len),
        _ => Err(Error::InvalidParameter {
            what: "--len",
            reason: format!("`{spec}`: with {axis}, give one length M"),
        }),
    }
}

/// The machine of `spec`'s family with `k` processors, or `None` when the family has
/// none of that size: a ring, path, complete graph, bus or switch of k; a shared memory
/// of k with `spec`'s S (`shm:K,S`; S = k for `shm`; none when k < S); a square torus,
/// mesh or generalized hypercube Q × Q when k = Q², Q ≥ 2; the n-cube when k = 2^n. A `+host`
/// suffix is kept (k counts the processing elements).
fn topology_of_size(spec: &str, k: u64) -> Result<Option<Topology>, Error> {
    let spec = &normal(spec);
    check_family(spec, "--nodes")?;
    let (base, host) = match spec.strip_suffix("+host") {
        Some(b) => (b, "+host"),
        None => (spec.as_str(), ""),
    };
    let (family, rest) = base.split_once(':').unwrap_or((base, ""));
    let square = (k as f64).sqrt().round() as u64;
    let name = match family {
        _ if k == 0 => return Ok(None),
        "ring" | "path" | "complete" | "bus" | "switch" => format!("{family}:{k}"),
        "shm" => {
            let s = match rest.split_once(',') {
                Some((_, s)) => s
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| Error::InvalidParameter {
                        what: "--topology",
                        reason: format!("`{spec}`: S of shm:K,S must be a whole number ≥ 1"),
                    })?,
                None => k,
            };
            if s > k {
                return Ok(None);
            }
            format!("shm:{k},{s}")
        }
        "torus" | "mesh" | "ghc" if square * square == k && square >= 2 => {
            format!("{family}:{square}x{square}")
        }
        "torus" | "mesh" | "ghc" => return Ok(None),
        "hypercube" if k.is_power_of_two() => format!("hypercube:{}", k.trailing_zeros()),
        "hypercube" => return Ok(None),
        _ => {
            return Err(Error::InvalidParameter {
                what: "--nodes",
                reason: format!(
                    "it applies to the families ring, path, complete, torus, mesh, ghc, bus, \
                     shm, switch and hypercube, not `{spec}`"
                ),
            })
        }
    };
    format!("{name}{host}").parse().map(Some)
}

/// Refuse a `--topology` of a `--nodes` sweep that names a family and more, but is no
/// topology: only the family is kept, so `bus:x` was swept as buses and
/// `hypercube:3+hostx` as hosted cubes, exit 0. A family alone (`ring`, `shm`,
/// `bus+host`) names the family; with parameters, the spec must parse as `--topology`
/// does elsewhere (its error names the spec and the valid form), its size then replaced.
fn check_spec(spec: &str) -> Result<(), Error> {
    if spec.contains(':') {
        spec.parse::<Topology>()?;
    }
    Ok(())
}

/// A topology spec as the parser reads it, for the family checks: without blanks and in
/// lower case (`hypercube:3 + HOST@0` was swept as plain cubes, the host dropped).
fn normal(spec: &str) -> String {
    spec.chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase()
}

/// Refuse a `--topology` whose family a `--nodes` or `--dims` sweep (`axis`) would not
/// keep: a product (`ring:3*complete:4` was swept as rings) and a host linked to some
/// nodes (`+host@0` was dropped, or widened to `+host`), both shapes of one size.
fn check_family(spec: &str, axis: &'static str) -> Result<(), Error> {
    let why = if spec.contains('*') {
        "a product of topologies is no family of machine sizes"
    } else if spec.contains("+host@") {
        "+host@A,B,… links the host to nodes of one machine size"
    } else {
        return Ok(());
    };
    Err(Error::InvalidParameter {
        what: axis,
        reason: format!(
            "`{spec}`: {why}; valid: one of the families ring, path, complete, torus, \
             mesh, ghc, bus, shm, switch, hypercube (--dims: hypercube only), with +host \
             for a host linked to every node"
        ),
    })
}

/// The topology of `spec`'s family with dimension `dim` (`hypercube:3+host` and
/// `hypercube` give `hypercube:{dim}+host` and `hypercube:{dim}`).
fn topology_at(spec: &str, dim: u64) -> Result<Topology, Error> {
    let spec = &normal(spec);
    check_family(spec, "--dims")?;
    let (family, rest) = spec.split_once(':').unwrap_or((spec, "0"));
    if !family.eq_ignore_ascii_case("hypercube") {
        // `ring` was read as `ring:0`, refused as a ring without nodes.
        return Err(Error::InvalidParameter {
            what: "--dims",
            reason: format!(
                "it applies to the hypercube family, not `{spec}`; valid: hypercube or \
                 hypercube:N (with +host), or --nodes for the other families"
            ),
        });
    }
    let given: Topology = format!("{family}:{rest}").parse()?;
    if given.as_hypercube().is_none() {
        return Err(Error::InvalidParameter {
            what: "--dims",
            reason: format!("it applies to the hypercube family, not {given}"),
        });
    }
    let host = if given.host().is_some() { "+host" } else { "" };
    format!("{family}:{dim}{host}").parse()
}

/// The algorithms of `--algo` (every one that fits some point if absent), in registry
/// order; at a point it does not fit, it has no row.
fn select(points: &[Point], list: Option<&str>) -> Result<Vec<&'static Algorithm>, Error> {
    let problem = &points[0].problem;
    let kind = problem.collective.kind();
    let fits_some =
        |a: &&'static Algorithm| points.iter().any(|p| a.fits(&p.problem.topology).is_ok());
    let fitting: Vec<&'static Algorithm> = algorithms::for_op(kind).filter(fits_some).collect();
    let topo = &problem.topology;
    if fitting.is_empty() {
        return Err(compare::no_algorithm(problem, kind));
    }
    let Some(list) = list else {
        return Ok(fitting);
    };
    let mut chosen = Vec::new();
    for name in list.split(',') {
        let algo = config::algorithm(problem, name)?;
        let at = points
            .iter()
            .find(|p| algo.fits(&p.problem.topology).is_ok())
            .map_or(problem, |p| &p.problem);
        algo.fits(&at.topology)
            .map_err(|reason| Error::AlgorithmDoesNotFit {
                algo: algo.name.to_string(),
                topology: topo.to_string(),
                reason,
                valid: algorithms::names(fitting.clone()),
            })?;
        chosen.push(algo);
    }
    Ok(fitting
        .into_iter()
        .filter(|a| chosen.iter().any(|c| std::ptr::eq(*c, *a)))
        .collect())
}

/// Run every algorithm at every point it fits (a `--nodes` sweep crosses machines that
/// not every algorithm fits): points ascending, algorithms in registry order.
pub fn rows(sweep: &Sweep, args: &SweepArgs) -> Vec<Row> {
    let cells = sweep.points.iter().flat_map(|p| {
        let fits = |a: &&&'static Algorithm| a.fits(&p.problem.topology).is_ok();
        sweep.algos.iter().filter(fits).map(move |a| (p, *a))
    });
    cells.map(|(p, a)| cell(sweep, p, a, args)).collect()
}

/// One algorithm at one point; a schedule too large to verify is timed unverified.
fn cell(sweep: &Sweep, point: &Point, algo: &'static Algorithm, args: &SweepArgs) -> Row {
    let cfg = config::run(
        point.problem.clone(),
        algo,
        sweep.packets,
        sweep.model,
        &args.check,
    );
    row(point, algo, report::run_or_unverified(&cfg))
}

fn row(point: &Point, algo: &'static Algorithm, result: Result<RunReport, Error>) -> Row {
    let p = &point.problem;
    let mut row = Row {
        len: p.len,
        nodes: p.topology.nodes(),
        algo: algo.name,
        time: None,
        rounds: None,
        messages: None,
        volume: None,
        formula: None,
        lower_bound: None,
        verified: Verified::Error,
        error: None,
        x: point.x,
        violation: None,
        note: None,
    };
    match result {
        Ok(r) => fill(&mut row, r),
        Err(e) => row.error = Some(e.to_string()),
    }
    row
}

fn fill(row: &mut Row, r: RunReport) {
    row.time = r.time;
    row.rounds = r.rounds;
    row.messages = r.messages;
    row.volume = r.volume;
    row.formula = r.formula.map(|f| f.value);
    row.lower_bound = r.lower_bound;
    row.verified = match r.verified {
        Some(true) => Verified::Yes,
        Some(false) => Verified::No,
        None => Verified::Skipped,
    };
    row.violation = r.violation.map(|v| v.message);
    row.note = r.note;
}

/// The rows as CSV under [`CSV_HEADER`]; absent values are empty cells, numbers are
/// written exactly (shortest round-trip form).
pub fn csv(rows: &[Row]) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    for r in rows {
        let cells = [
            r.len.to_string(),
            r.nodes.to_string(),
            r.algo.to_string(),
            cell_of(r.time),
            cell_of(r.rounds),
            cell_of(r.messages),
            cell_of(r.volume),
            cell_of(r.formula),
            cell_of(r.lower_bound),
            r.verified.cell().to_string(),
        ];
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

fn cell_of<T: ToString>(x: Option<T>) -> String {
    x.map_or_else(String::new, |v| v.to_string())
}

/// The chart of the sweep: one series per algorithm and the lower bound, dashed.
pub fn chart(sweep: &Sweep, rows: &[Row], op: &str) -> Chart {
    let mut series: Vec<Series> = sweep
        .algos
        .iter()
        .map(|a| Series {
            name: a.name.to_string(),
            points: points_of(rows.iter().filter(|r| r.algo == a.name), |r| r.time),
            dashed: false,
        })
        .collect();
    let first_per_point = rows.iter().filter(|r| r.algo == sweep.algos[0].name);
    series.push(Series {
        name: "lower bound".into(),
        points: points_of(first_per_point, |r| r.lower_bound),
        dashed: true,
    });
    Chart {
        title: title(sweep, op),
        x_label: x_label(sweep),
        y_label: format!(
            "time (β = {}, τ = {})",
            output::num(sweep.model.beta()),
            output::num(sweep.model.tau())
        ),
        x_log: sweep.geometric || spans_decades(&sweep.points),
        y_log: true,
        series,
    }
}

fn points_of<'a>(
    rows: impl Iterator<Item = &'a Row>,
    y: impl Fn(&Row) -> Option<f64>,
) -> Vec<(f64, f64)> {
    rows.filter_map(|r| y(r).map(|v| (r.x as f64, v))).collect()
}

/// Whether listed points ≥ 1 span two decades or more (then a log axis reads better).
fn spans_decades(points: &[Point]) -> bool {
    let (lo, hi) = (points[0].x, points[points.len() - 1].x);
    lo >= 1 && hi >= 100 * lo
}

fn title(sweep: &Sweep, op: &str) -> String {
    let p = &sweep.points[0].problem;
    let m = &sweep.model;
    let at = match sweep.axis {
        Axis::Len => p.topology.to_string(),
        Axis::Dims => format!("hypercubes, len {}", p.len),
        Axis::Nodes => {
            let last = &sweep.points[sweep.points.len() - 1].problem.topology;
            format!("{} to {last}, len {}", p.topology, p.len)
        }
    };
    format!(
        "{op} on {at}: ports {}, duplex {}, timing {}",
        m.ports, m.duplex, m.timing
    )
}

fn x_label(sweep: &Sweep) -> String {
    match sweep.axis {
        Axis::Len => "len (elements per message)".into(),
        Axis::Dims => "hypercube dimension n (2^n nodes)".into(),
        Axis::Nodes => "processors K".into(),
    }
}

/// Run the command.
pub fn run(args: &SweepArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    let sweep = configure(args)?;
    output::not_same_file(
        args.html.as_deref(),
        "--html",
        args.svg.as_deref(),
        "--svg's file",
    )?;
    let rows = rows(&sweep, args);
    if rows.iter().all(|r| r.error.is_some()) {
        return Err(nothing_ran(&rows));
    }
    if let Some(path) = &args.svg {
        let op = sweep.points[0].problem.collective.kind().name();
        crate::draw::write_file(path, &crate::plot::svg(&chart(&sweep, &rows, op)))?;
    }
    if let Some(path) = &args.html {
        let op = sweep.points[0].problem.collective.kind().name();
        let svg = crate::plot::svg(&chart(&sweep, &rows, op));
        let page = crate::draw::html::sweep_page(svg, &rows, &sweep, &args.check);
        crate::draw::write_file(path, &page)?;
    }
    let text = match args.format {
        SweepFormat::Csv => csv(&rows),
        SweepFormat::Json => output::json(&rows),
    };
    io.out.write_all(text.as_bytes())?;
    io.out.flush()?;
    diagnostics(&sweep, &rows, io);
    Ok(if rows.iter().any(|r| r.verified == Verified::No) {
        Outcome::Failed
    } else {
        Outcome::Ok
    })
}

/// The first error of each algorithm, when no row could run.
fn nothing_ran(rows: &[Row]) -> CliError {
    let mut firsts: Vec<(String, String)> = Vec::new();
    for r in rows {
        if !firsts.iter().any(|(a, _)| a == r.algo) {
            firsts.push((r.algo.to_string(), r.error.clone().unwrap_or_default()));
        }
    }
    CliError::NothingRan(firsts)
}

/// Failed verifications and impossible runs on stderr, one line each.
fn diagnostics(sweep: &Sweep, rows: &[Row], io: &mut Io<'_>) {
    let at = match sweep.axis {
        Axis::Len => "len",
        Axis::Dims => "dimension",
        Axis::Nodes => "K =",
    };
    for r in rows {
        if let Some(v) = &r.violation {
            let _ = writeln!(
                io.err,
                "error: `{}` at {at} {} failed verification: {v}",
                r.algo, r.x
            );
        }
        if let Some(e) = &r.error {
            let _ = writeln!(io.err, "warning: `{}` at {at} {}: {e}", r.algo, r.x);
        }
        if let Some(n) = &r.note {
            let _ = writeln!(io.err, "note: `{}` at {at} {}: {n}", r.algo, r.x);
        }
    }
}

//! `hypercomm compare`: every registry algorithm of a collective that fits the
//! topology, run on the same problem and model, fastest first.

use std::cmp::Ordering;

use hypercomm::algorithms::{self, Packets};
use hypercomm::collective::OpKind;
use hypercomm::cost::model::Model;
use hypercomm::error::Error;

use crate::args::{CompareArgs, Format};
use crate::config::{self, ProblemConfig};
use crate::report::{self, RunReport};
use crate::{output, CliError, Io, Outcome};

/// Run every fitting algorithm; a row whose run is impossible (e.g. `--packets` it
/// cannot take) carries the error instead of failing the command.
pub fn rows(
    problem: ProblemConfig,
    packets: Packets,
    model: Model,
    args: &CompareArgs,
) -> Result<Vec<RunReport>, Error> {
    let kind = problem.collective.kind();
    let algos = algorithms::fitting(&problem.topology, kind);
    if algos.is_empty() {
        return Err(no_algorithm(&problem, kind));
    }
    let mut rows: Vec<RunReport> = algos
        .into_iter()
        .map(|algo| {
            let cfg = config::run(problem.clone(), algo, packets, model, &args.check);
            report::run_or_unverified(&cfg).unwrap_or_else(|e| {
                let p = problem.problem();
                let mut r = RunReport::blank(&p, Some(algo.name), &model, args.check.strict);
                r.packets = Some(cfg.params.packets.into());
                r.error = Some(e.to_string());
                r
            })
        })
        .collect();
    rows.sort_by(fastest_first);
    Ok(rows)
}

/// Rows with a time by increasing time, then rows without, each by name.
fn fastest_first(a: &RunReport, b: &RunReport) -> Ordering {
    match (a.time, b.time) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
    .then_with(|| a.algo.cmp(&b.algo))
}

/// The error for a collective without algorithms on the topology, naming those with.
pub(crate) fn no_algorithm(problem: &ProblemConfig, kind: OpKind) -> Error {
    let with: Vec<&str> = OpKind::ALL
        .into_iter()
        .filter(|&k| !algorithms::fitting(&problem.topology, k).is_empty())
        .map(OpKind::name)
        .collect();
    // Why the collective's first algorithm does not fit (e.g. a download on a host
    // linked to some PEs only), said once.
    let why = match algorithms::for_op(kind)
        .next()
        .map(|a| a.fits(&problem.topology))
    {
        Some(Err(why)) => format!(" ({why})"),
        _ => String::new(),
    };
    let with = if with.is_empty() {
        "none".into()
    } else {
        with.join(" ")
    };
    Error::InvalidParameter {
        what: "--op",
        reason: format!(
            "no algorithm performs {kind} on {}{why}; collectives with algorithms: {with}",
            problem.topology,
        ),
    }
}

/// Run the command.
pub fn run(args: &CompareArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    let counts = args.problem.counts.as_deref();
    output::not_same_file(args.html.as_deref(), "--html", counts, output::COUNTS_INPUT)?;
    let problem = config::problem(&args.problem)?;
    let model = config::model_on(&args.model, &problem.topology)?;
    let packets: Packets = args.packets.parse()?;
    let rows = rows(problem.clone(), packets, model, args)?;
    if rows.iter().all(|r| r.error.is_some()) {
        return Err(CliError::NothingRan(
            rows.iter()
                .map(|r| {
                    (
                        r.algo.clone().unwrap_or_default(),
                        r.error.clone().unwrap_or_default(),
                    )
                })
                .collect(),
        ));
    }
    if let Some(path) = &args.html {
        let page = crate::draw::html::compare_page(&rows, &problem, packets, model, &args.check);
        crate::draw::write_file(path, &page)?;
    }
    let text = match args.format {
        Format::Text => text(&rows, packets),
        Format::Json => output::json(&rows),
    };
    io.out.write_all(text.as_bytes())?;
    io.out.flush()?;
    for r in &rows {
        if let Some(n) = &r.note {
            let _ = writeln!(io.err, "note: `{}` {n}", output::opt(r.algo.as_deref()));
        }
    }
    for r in rows.iter().filter(|r| r.failed()) {
        let why = r.violation.as_ref().map_or("", |v| v.message.as_str());
        let _ = writeln!(
            io.err,
            "error: `{}` failed verification: {why}",
            output::opt(r.algo.as_deref())
        );
    }
    Ok(if rows.iter().any(RunReport::failed) {
        Outcome::Failed
    } else {
        Outcome::Ok
    })
}

/// The comparison as a text table under a one-line summary of the problem.
pub fn text(rows: &[RunReport], packets: Packets) -> String {
    let first = &rows[0];
    let packets = output::packets(Some(packets.into()));
    let head = format!(
        "{} ({} nodes), {}, len {}, packets {}\n{}\n\n",
        first.topology,
        first.nodes,
        output::collective_line(first),
        first.len,
        packets,
        output::model_line(&first.model)
    );
    let header = [
        "algo",
        "verified",
        "time",
        "rounds",
        "messages",
        "volume",
        "formula",
        "bound",
        "ratio",
        "closed form",
    ];
    let body: Vec<Vec<String>> = rows.iter().map(row).collect();
    head + &output::table(&header, &body)
}

/// One row of the text table.
fn row(r: &RunReport) -> Vec<String> {
    let verified = match (&r.error, r.verified) {
        (Some(_), _) => "error".to_string(),
        (None, Some(true)) => "yes".into(),
        (None, Some(false)) => "NO".into(),
        (None, None) => "skipped".into(),
    };
    let last = match (&r.error, &r.formula) {
        (Some(e), _) => e.clone(),
        (None, Some(f)) => f.expr.clone(),
        (None, None) => "-".into(),
    };
    vec![
        output::opt(r.algo.as_deref()),
        verified,
        output::opt_num(r.time),
        output::opt(r.rounds),
        output::opt(r.messages),
        output::opt(r.volume),
        output::opt_num(r.formula.as_ref().map(|f| f.value)),
        output::opt_num(r.lower_bound),
        output::opt_num(r.ratio),
        last,
    ]
}

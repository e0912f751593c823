//! Self-contained HTML pages: the reports of `compare --html` and `sweep --html` and
//! the page of `draw --html`. Everything is inline (SVG, CSS; no script, no network),
//! so a page opens offline as it was written.

use hypercomm::algorithms::{self, Packets};
use hypercomm::collective::OpKind;
use hypercomm::cost::model::Model;

use crate::args::CheckArgs;
use crate::config::{self, ProblemConfig};
use crate::output;
use crate::plot::{self, Bars};
use crate::report::{self, RunReport};
use crate::sweep::{Row, Sweep};

/// One part of a page.
#[derive(Clone, Debug, PartialEq)]
pub enum Section {
    /// A heading.
    Heading(String),
    /// A paragraph of text.
    Text(String),
    /// A table: header and rows; each row is a `<tr class="row">`.
    Table(Vec<String>, Vec<Vec<String>>),
    /// An SVG document, inlined (an XML declaration is dropped).
    Svg(String),
}

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const CSS: &str = "body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
svg { display: block; margin: 1em 0; max-width: 100%; height: auto; }";

/// A whole page.
pub fn page(title: &str, sections: &[Section]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    );
    for s in sections {
        match s {
            Section::Heading(h) => out.push_str(&format!("<h2>{}</h2>\n", esc(h))),
            Section::Text(t) => out.push_str(&format!("<p>{}</p>\n", esc(t))),
            Section::Table(header, rows) => {
                out.push_str("<table>\n<thead><tr>");
                for h in header {
                    out.push_str(&format!("<th>{}</th>", esc(h)));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for row in rows {
                    out.push_str("<tr class=\"row\">");
                    for cell in row {
                        let num = cell.parse::<f64>().is_ok() || cell == "-";
                        let class = if num { " class=\"num\"" } else { "" };
                        out.push_str(&format!("<td{class}>{}</td>", esc(cell)));
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody>\n</table>\n");
            }
            Section::Svg(svg) => {
                let body = match svg.find("<svg") {
                    Some(i) => &svg[i..],
                    None => svg.as_str(),
                };
                out.push_str(body);
                out.push('\n');
            }
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// The registry's reference of an algorithm of `op`.
fn reference(op: &str, algo: Option<&str>) -> String {
    let found = op
        .parse::<OpKind>()
        .ok()
        .zip(algo)
        .and_then(|(k, a)| algorithms::find(k, a));
    found.map_or_else(|| "-".into(), |a| a.reference.to_string())
}

/// The model and parameters of a run, one sentence.
fn parameters(r: &RunReport, packets: Packets, check: &CheckArgs) -> String {
    format!(
        "{} ({} nodes), {}, len {}, packets {}. Model: {}. Verification: {}.",
        r.topology,
        r.nodes,
        output::collective_line(r),
        r.len,
        output::packets(Some(packets.into())),
        output::model_line(&r.model),
        match (check.no_verify, check.strict) {
            (true, _) => "skipped (--no-verify)",
            (false, true) => "strict (the model's port and duplex rules enforced)",
            (false, false) => "on",
        }
    )
}

/// The drawing of the fastest row that ran, or a sentence saying why there is none.
fn fastest_drawing(
    rows: &[&RunReport],
    problem: &ProblemConfig,
    packets: Packets,
    model: Model,
    check: &CheckArgs,
) -> Vec<Section> {
    let fastest = rows
        .iter()
        .filter(|r| r.time.is_some() && r.error.is_none())
        .min_by(|a, b| a.time.unwrap_or(0.0).total_cmp(&b.time.unwrap_or(0.0)));
    let Some(best) = fastest else {
        return vec![Section::Text("No algorithm ran: nothing to draw.".into())];
    };
    let name = best.algo.clone().unwrap_or_default();
    let drawn = config::algorithm(problem, &name).and_then(|algo| {
        let cfg = config::run(problem.clone(), algo, packets, model, check);
        crate::draw::svg_of(&cfg, best)
    });
    let heading = Section::Heading(format!("The fastest: {name}"));
    match drawn {
        Ok(svg) => vec![heading, Section::Svg(svg)],
        Err(e) => vec![heading, Section::Text(format!("Not drawn: {e}"))],
    }
}

/// The header of the comparison table.
const TABLE: [&str; 8] = [
    "algorithm",
    "verified",
    "time",
    "time/bound",
    "messages",
    "volume",
    "closed form",
    "reference",
];

/// One row of the comparison table, from a compare row.
fn table_row(r: &RunReport) -> Vec<String> {
    let closed = match (&r.error, &r.formula) {
        (Some(e), _) => format!("error: {e}"),
        (None, Some(f)) => output::formula_line(f),
        (None, None) => "-".into(),
    };
    vec![
        output::opt(r.algo.as_deref()),
        output::verdict(r),
        output::opt_num(r.time),
        output::opt_num(r.ratio),
        output::opt(r.messages),
        output::opt(r.volume),
        closed,
        reference(r.op, r.algo.as_deref()),
    ]
}

/// The page of `compare --html`: its rows (as `compare` computed them), their times
/// as bars beside the lower bound, and the fastest algorithm drawn.
pub fn compare_page(
    rows: &[RunReport],
    problem: &ProblemConfig,
    packets: Packets,
    model: Model,
    check: &CheckArgs,
) -> String {
    let first = &rows[0];
    let timed: Vec<&RunReport> = rows.iter().filter(|r| r.time.is_some()).collect();
    let bars = Bars {
        title: format!("{} on {}, len {}", first.op, first.topology, first.len),
        y_label: "time".into(),
        groups: timed
            .iter()
            .map(|r| output::opt(r.algo.as_deref()))
            .collect(),
        series: vec!["simulated time".into()],
        values: timed.iter().map(|r| vec![r.time.unwrap_or(0.0)]).collect(),
        marks: timed
            .iter()
            .map(|r| vec![r.lower_bound.unwrap_or(0.0)])
            .collect(),
        mark_name: "lower bound".into(),
    };
    let mut sections = vec![
        Section::Text(parameters(first, packets, check)),
        Section::Heading("Comparison, fastest first".into()),
        Section::Table(
            TABLE.iter().map(|s| s.to_string()).collect(),
            rows.iter().map(table_row).collect(),
        ),
        Section::Heading("Times".into()),
        Section::Svg(plot::bars(&bars)),
    ];
    let all: Vec<&RunReport> = rows.iter().collect();
    sections.extend(fastest_drawing(&all, problem, packets, model, check));
    let title = format!("hypercomm compare: {} on {}", first.op, first.topology);
    page(&title, &sections)
}

/// The page of `sweep --html`: the sweep's chart, its rows, and the fastest algorithm
/// at the last point drawn (run once more there for its report).
pub fn sweep_page(chart_svg: String, rows: &[Row], sweep: &Sweep, check: &CheckArgs) -> String {
    let last = &sweep.points[sweep.points.len() - 1];
    let op = last.problem.collective.kind().name();
    let header = [
        "x",
        "nodes",
        "len",
        "algorithm",
        "verified",
        "time",
        "bound",
        "messages",
        "volume",
        "closed form",
        "reference",
    ];
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.x.to_string(),
                r.nodes.to_string(),
                r.len.to_string(),
                r.algo.to_string(),
                r.verified.cell().to_string(),
                output::opt_num(r.time),
                output::opt_num(r.lower_bound),
                output::opt(r.messages),
                output::opt(r.volume),
                output::opt_num(r.formula),
                reference(op, Some(r.algo)),
            ]
        })
        .collect();
    let fastest = rows
        .iter()
        .filter(|r| r.x == last.x && r.error.is_none())
        .filter_map(|r| r.time.map(|t| (t, r.algo)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let report = fastest.and_then(|(_, name)| {
        let algo = config::algorithm(&last.problem, name).ok()?;
        let cfg = config::run(
            last.problem.clone(),
            algo,
            sweep.packets,
            sweep.model,
            check,
        );
        report::run_or_unverified(&cfg).ok()
    });
    let mut sections = Vec::new();
    if let Some(r) = &report {
        sections.push(Section::Text(format!(
            "At the last point: {}",
            parameters(r, sweep.packets, check)
        )));
    }
    sections.push(Section::Svg(chart_svg));
    sections.push(Section::Heading("Every point".into()));
    sections.push(Section::Table(
        header.iter().map(|s| s.to_string()).collect(),
        body,
    ));
    let reports: Vec<&RunReport> = report.iter().collect();
    sections.extend(fastest_drawing(
        &reports,
        &last.problem,
        sweep.packets,
        sweep.model,
        check,
    ));
    page(
        &format!("hypercomm sweep: {op} on {}", last.problem.topology),
        &sections,
    )
}

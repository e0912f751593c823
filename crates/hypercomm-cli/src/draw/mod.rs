//! `hypercomm draw`: a schedule drawn on its machine, step by step and as a timeline,
//! as an SVG document (through the `svg` crate) or an HTML page around it; and the
//! HTML reports of `compare --html` and `sweep --html` ([`html`]).
//!
//! Drawing is a consumer like the verifier and the simulator: it reads the programs
//! an algorithm builds and the simulator's report, and changes neither. [`layout`]
//! places the machine, [`rounds`] draws each step's transfers on it, [`trace`] times
//! every rank's work and waits with the library's cost functions and [`timeline`]
//! draws them. Machines of more than [`layout::MAX_DRAWN`] nodes get the timeline of
//! steps and a per-dimension summary instead, and the picture says so.

pub mod html;
pub mod layout;
pub mod rounds;
pub mod timeline;
pub mod trace;

use std::path::Path as FsPath;

use hypercomm::cost::model::Model;
use hypercomm::error::Error;
use hypercomm::schedule::{materialize, Op, Program, Rank};
use hypercomm::topology::Topology;
use svg::node::element::{Definitions, Group, Marker, Path, Pattern, Rectangle, Style, Text};
use svg::Document;

use crate::args::DrawArgs;
use crate::config::{self, RunConfig};
use crate::output;
use crate::report::{self, RunReport};
use crate::{simulate, CliError, Io, Outcome};

/// Width of a picture.
pub const WIDTH: f64 = 1000.0;

/// One message of one step: sender, receiver, elements, and the colour key (the index
/// of the first piece it carries, in units of the schedule's smallest message: the
/// origin block of a block collective, the packet of a pipeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// Sender.
    pub from: Rank,
    /// Receiver.
    pub to: Rank,
    /// Elements.
    pub len: u64,
    /// Colour key.
    pub key: u64,
}

/// Every step's messages (a multicast is one per receiver).
pub fn transfers(progs: &[Program], steps: usize) -> Vec<Vec<Transfer>> {
    let sends = || {
        progs.iter().flat_map(|p| {
            p.steps.iter().enumerate().flat_map(move |(s, step)| {
                step.ops.iter().filter_map(move |op| match op {
                    Op::Send { to, from } => Some((s, p.rank, to, from, op.message_len())),
                    _ => None,
                })
            })
        })
    };
    let piece = sends()
        .map(|(.., len)| len)
        .filter(|&l| l > 0)
        .min()
        .unwrap_or(1);
    let mut out = vec![Vec::new(); steps];
    for (s, rank, to, from, len) in sends() {
        let key = from.first().map_or(0, |r| r.off / piece);
        for &q in to {
            out[s].push(Transfer {
                from: rank,
                to: q,
                len,
                key,
            });
        }
    }
    out
}

/// Tableau 10, the colours of the sweep's chart.
pub fn colour(key: u64) -> &'static str {
    crate::plot::COLOURS[(key % crate::plot::COLOURS.len() as u64) as usize]
}

/// A time as the reports print it.
pub fn fmt_num(x: f64) -> String {
    output::num(x)
}

/// The style sheet every picture carries.
const STYLE: &str = "
text { font-family: sans-serif; font-size: 11px; fill: #222; }
.title { font-size: 15px; font-weight: bold; }
.section-title, .panel-title { font-weight: bold; }
.note { fill: #a33; }
.label { text-anchor: middle; font-size: 9px; }
.node { fill: white; stroke: #333; stroke-width: 1.2; }
.node.host { fill: #fff3c4; }
.node.critical, .work.critical { stroke: #d62728; stroke-width: 3; }
text.critical, text.setter { fill: #d62728; font-weight: bold; }
.link { fill: none; stroke: #bbb; stroke-width: 1; }
.link.idle { stroke: #ddd; stroke-dasharray: 3 2; }
.transfer { fill: none; opacity: 0.85; }
.medium-line, .tap { stroke: #777; stroke-width: 2; }
.medium-box { fill: #eee; stroke: #777; }
.medium.critical .medium-line, .medium.critical .medium-box { stroke: #d62728; }
.rank-label { text-anchor: end; }
.work.send { fill: #1f77b4; }
.work.recv { fill: #2ca02c; }
.work.both { fill: #9467bd; }
.wait { fill: url(#hatch); stroke: #bbb; stroke-width: 0.5; }
.message { stroke: #555; stroke-width: 0.6; opacity: 0.5; }
.tick { stroke: #eee; }
.tick-label { text-anchor: middle; fill: #666; }
.step-bar { fill: #1f77b4; }
.dim-bar { fill: #ff7f0e; }
.link-busy { fill: #ff7f0e; }
";

/// Arrow heads and the hatching of waits.
fn defs() -> Definitions {
    Definitions::new()
        .add(
            Marker::new()
                .set("id", "arrow")
                .set("viewBox", "0 0 10 10")
                .set("refX", 8)
                .set("refY", 5)
                .set("markerUnits", "userSpaceOnUse")
                .set("markerWidth", 9)
                .set("markerHeight", 9)
                .set("orient", "auto-start-reverse")
                .add(
                    Path::new()
                        .set("d", "M0,0 L10,5 L0,10 z")
                        .set("fill", "context-stroke")
                        .set("class", "arrow-head"),
                ),
        )
        .add(
            Pattern::new()
                .set("id", "hatch")
                .set("width", 4)
                .set("height", 4)
                .set("patternUnits", "userSpaceOnUse")
                .add(
                    Path::new()
                        .set("d", "M0,4 L4,0")
                        .set("stroke", "#999")
                        .set("stroke-width", 0.7),
                ),
        )
}

/// What a picture shows: one schedule's programs on its machine, with the report of
/// the same run.
pub struct Picture<'a> {
    /// The machine.
    pub topology: &'a Topology,
    /// Every rank's program.
    pub programs: &'a [Program],
    /// The schedule's steps.
    pub steps: usize,
    /// The model in force.
    pub model: &'a Model,
    /// The run's report (its time is the simulator's).
    pub report: &'a RunReport,
}

/// The picture as an SVG document.
pub fn document(p: &Picture<'_>) -> Document {
    let transfers = transfers(p.programs, p.steps);
    let trace = trace::trace(p.topology, p.programs, p.steps, p.model);
    let r = p.report;
    let mut lines = vec![
        format!(
            "{} {} on {} ({} nodes), len {}",
            output::opt(r.algo.as_deref()),
            output::collective_line(r),
            r.topology,
            r.nodes,
            r.len
        ),
        output::model_line(&r.model),
        format!(
            "time {} (lower bound {}, ratio {}), {} messages, {} elements, verified: {}",
            output::opt_num(r.time),
            output::opt_num(r.lower_bound),
            output::opt_num(r.ratio),
            output::opt(r.messages),
            output::opt(r.volume),
            output::verdict(r)
        ),
    ];
    let layout = layout::layout(p.topology);
    if layout.is_none() {
        lines.push(format!(
            "The machine has {} nodes, more than the {} drawn: shown instead are one bar per step and the volume per dimension.",
            p.topology.nodes(),
            layout::MAX_DRAWN
        ));
    }
    let mut body = Group::new();
    let mut y = 0.0;
    for (i, line) in lines.iter().enumerate() {
        let class = match i {
            0 => "title",
            3 => "note",
            _ => "subtitle",
        };
        y += if i == 0 { 20.0 } else { 16.0 };
        body = body.add(
            Text::new(line.clone())
                .set("class", class)
                .set("x", 10)
                .set("y", y),
        );
    }
    y += 14.0;
    let mut place = |g: Group, h: f64, body: Group| {
        let placed = body.add(g.set("transform", format!("translate(10 {y})")));
        y += h + 16.0;
        placed
    };
    match &layout {
        Some(l) => {
            let (g, h) = rounds::panels(l, &transfers, &trace, WIDTH - 20.0);
            body = place(g, h, body);
            let (g, h) = timeline::ranks(
                p.topology,
                p.model,
                p.programs,
                &transfers,
                &trace,
                WIDTH - 20.0,
            );
            body = place(g, h, body);
        }
        None => {
            let (g, h) = timeline::steps(&transfers, &trace, WIDTH - 20.0);
            body = place(g, h, body);
            let (g, h) = timeline::dimensions(p.topology, &transfers, WIDTH - 20.0);
            body = place(g, h, body);
        }
    }
    let height = y.ceil();
    Document::new()
        .set("width", WIDTH)
        .set("height", height)
        .set("viewBox", (0, 0, WIDTH, height))
        .set("class", "hypercomm-drawing")
        .add(Style::new(STYLE))
        .add(defs())
        .add(
            Rectangle::new()
                .set("width", "100%")
                .set("height", "100%")
                .set("fill", "white"),
        )
        .add(body)
}

/// The schedule of a run, built again and held in memory, and its picture; the report
/// is the run's own.
pub fn svg_of(cfg: &RunConfig, report: &RunReport) -> Result<String, Error> {
    let problem = cfg.problem.problem();
    let schedule = cfg.algo.build(&problem, &cfg.params)?;
    let (limit, hint) = config::size_limit(true);
    config::check_size(schedule.nodes(), schedule.steps(), limit, hint)?;
    let m = materialize(schedule.as_ref());
    let picture = Picture {
        topology: problem.topology,
        programs: &m.programs,
        steps: m.steps,
        model: &cfg.params.model,
        report,
    };
    Ok(document(&picture).to_string())
}

/// Write `text` to `path`; a path that cannot be written is bad input (exit 2).
pub fn write_file(path: &FsPath, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text).map_err(|source| CliError::WriteFile {
        path: path.to_path_buf(),
        source,
    })
}

/// Run the command: simulate as `simulate` does, draw, write the files, print the
/// report.
pub fn run(args: &DrawArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    let cfg = simulate::configure(&args.run)?;
    output::not_same_file(
        args.html.as_deref(),
        "--html",
        args.svg.as_deref(),
        "--svg's file",
    )?;
    let counts = args.run.problem.counts.as_deref();
    output::not_same_file(args.svg.as_deref(), "--svg", counts, output::COUNTS_INPUT)?;
    output::not_same_file(args.html.as_deref(), "--html", counts, output::COUNTS_INPUT)?;
    let report = report::run(&cfg)?;
    let svg = svg_of(&cfg, &report)?;
    if let Some(path) = &args.svg {
        write_file(path, &svg)?;
    }
    if let Some(path) = &args.html {
        let title = format!(
            "{} {} on {}",
            output::opt(report.algo.as_deref()),
            report.op,
            report.topology
        );
        write_file(path, &html::page(&title, &[html::Section::Svg(svg)]))?;
    }
    simulate::write_report(&report, args.run.format, io)
}

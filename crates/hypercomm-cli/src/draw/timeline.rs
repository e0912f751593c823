//! Space-time diagrams: every rank's row along the time axis, with its work in each
//! step (blue when it only sends, green when it only receives, purple when both), its
//! waits hatched, each message a thin line from its sender to its receiver, and the
//! rank that sets the makespan marked, and (up to [`MAX_LINK_ROWS`] of them) each
//! directed link in use with its messages; for machines too large for that, one bar per
//! step and the volume crossing each dimension.

use svg::node::element::{Group, Line, Rectangle, Text};

use super::trace::{sets, Critical, Trace};
use super::{fmt_num, Transfer};
use hypercomm::cost::model::Model;
use hypercomm::cost::node_ports;
use hypercomm::schedule::{Op, Program};
use hypercomm::topology::{Factor, Medium, Topology};

/// Left margin (rank labels) and row height.
const LEFT: f64 = 70.0;
const ROW: f64 = 14.0;

/// x of time `t` in a plot `width` wide.
fn x_of(t: f64, makespan: f64, width: f64) -> f64 {
    if makespan > 0.0 {
        LEFT + (width - LEFT - 20.0) * t / makespan
    } else {
        LEFT
    }
}

/// A section of class `class` under its title.
fn titled(class: &str, title: String) -> Group {
    Group::new().set("class", class.to_string()).add(
        Text::new(title)
            .set("class", "section-title")
            .set("x", 0)
            .set("y", 12),
    )
}

/// The time axis: ticks and the step boundaries of rounds timing.
fn axis(trace: &Trace, width: f64, top: f64, bottom: f64) -> Group {
    let mut g = Group::new().set("class", "axis");
    for i in 0..=5 {
        let t = trace.makespan * i as f64 / 5.0;
        let x = x_of(t, trace.makespan, width);
        g = g
            .add(
                Line::new()
                    .set("class", "tick")
                    .set("x1", x)
                    .set("y1", top)
                    .set("x2", x)
                    .set("y2", bottom),
            )
            .add(
                Text::new(fmt_num(t))
                    .set("class", "tick-label")
                    .set("x", x)
                    .set("y", bottom + 12.0),
            );
    }
    g
}

/// Every rank's row.
pub fn ranks(
    topo: &Topology,
    model: &Model,
    progs: &[Program],
    transfers: &[Vec<Transfer>],
    trace: &Trace,
    width: f64,
) -> (Group, f64) {
    let n = progs.len();
    let links = link_rows(topo, transfers);
    let top = 18.0;
    let bottom = top + (n + links.len()) as f64 * ROW;
    let ms = trace.makespan;
    let title = format!(
        "timeline ({} timing): work, waits (hatched) and messages of every rank; links in use",
        trace.timing
    );
    let mut g = titled("timeline", title).add(axis(trace, width, top, bottom));
    let setter = trace.setter;
    for (i, p) in progs.iter().enumerate() {
        let y = top + i as f64 * ROW;
        let mut class = "rank-label".to_string();
        if setter == Some(Critical::Rank(p.rank)) {
            class.push_str(" critical");
        }
        g = g.add(
            Text::new(format!("rank {}", p.rank))
                .set("class", class)
                .set("x", LEFT - 6.0)
                .set("y", y + ROW - 3.0),
        );
        for (s, row) in trace.spans.iter().enumerate() {
            let Some(span) = row[i] else { continue };
            let (sends, recvs) = p.steps[s].ops.iter().fold((false, false), |(a, b), op| {
                (
                    a || matches!(op, Op::Send { .. }),
                    b || matches!(op, Op::Recv { .. }),
                )
            });
            let kind = match (sends, recvs) {
                (true, true) => "work both",
                (true, false) => "work send",
                _ => "work recv",
            };
            let critical = trace.critical[s] == Some(Critical::Rank(p.rank));
            let class = if critical {
                format!("{kind} critical")
            } else {
                kind.to_string()
            };
            g = g.add(bar(&class, span.work.0, span.work.1, y, ms, width));
            for (a, b) in [(span.begin, span.work.0), (span.work.1, span.end)] {
                if b > a {
                    g = g.add(bar("wait", a, b, y, ms, width));
                }
            }
        }
    }
    // Messages: from the sender's row as its work begins to the receiver's row as it
    // ends (the sender's work in the step, under either timing).
    let row_of = |r: u32| progs.iter().position(|p| p.rank == r);
    for (s, ts) in transfers.iter().enumerate() {
        for t in ts {
            let (Some(a), Some(b)) = (row_of(t.from), row_of(t.to)) else {
                continue;
            };
            let Some(span) = trace.spans[s][a] else {
                continue;
            };
            g = g.add(
                Line::new()
                    .set("class", "message")
                    .set("x1", x_of(span.work.0, ms, width))
                    .set("y1", top + a as f64 * ROW + ROW / 2.0)
                    .set("x2", x_of(span.work.1, ms, width))
                    .set("y2", top + b as f64 * ROW + ROW / 2.0),
            );
        }
    }
    // Links: each directed link's messages of a step from its sender's start, back to
    // back on the link (one after another on the node when it has one send port), each
    // its own β + mτ.
    for (j, &(a, b)) in links.iter().enumerate() {
        g = g.add(
            Text::new(format!("link {a}→{b}"))
                .set("class", "rank-label link-label")
                .set("x", LEFT - 6.0)
                .set("y", top + (n + j) as f64 * ROW + ROW - 3.0),
        );
    }
    for (s, ts) in transfers.iter().enumerate() {
        // (queue, busy until): a link, or a sender with one send port.
        let mut free: Vec<((u32, u32), f64)> = Vec::new();
        for m in ts {
            let (Some(j), Some(i)) = (
                links.iter().position(|l| *l == (m.from, m.to)),
                row_of(m.from),
            ) else {
                continue;
            };
            let Some(span) = trace.spans[s][i] else {
                continue;
            };
            let one_port = node_ports(topo, model, m.from).send() == Some(1);
            let queue = if one_port {
                (m.from, m.from)
            } else {
                (m.from, m.to)
            };
            let at = match free.iter_mut().find(|(q, _)| *q == queue) {
                Some((_, t)) => t,
                None => {
                    free.push((queue, span.work.0));
                    &mut free.last_mut().expect("just pushed").1
                }
            };
            let cost = model.link(topo.link_class(m.from, m.to)).transfer(m.len);
            let y = top + (n + j) as f64 * ROW;
            g = g.add(bar("link-busy", *at, *at + cost, y, ms, width));
            *at += cost;
        }
    }
    g = g.add(setter_text(trace, 0.0, bottom + 30.0));
    (g, bottom + 40.0)
}

/// Most link rows a timeline gets; with more links in use it shows the ranks only.
pub const MAX_LINK_ROWS: usize = 32;

/// The directed links that carry messages, when they are few enough to list and the
/// machine has links of its own (not a bus or a shared memory).
fn link_rows(topo: &Topology, transfers: &[Vec<Transfer>]) -> Vec<(u32, u32)> {
    if matches!(topo.medium_kind(), Some(Medium::Bus | Medium::Shm { .. })) {
        return Vec::new();
    }
    let mut links: Vec<(u32, u32)> = transfers.iter().flatten().map(|t| (t.from, t.to)).collect();
    links.sort_unstable();
    links.dedup();
    if links.len() > MAX_LINK_ROWS {
        links.clear();
    }
    links
}

fn bar(class: &str, a: f64, b: f64, y: f64, ms: f64, width: f64) -> Rectangle {
    let (xa, xb) = (x_of(a, ms, width), x_of(b, ms, width));
    Rectangle::new()
        .set("class", class.to_string())
        .set("x", xa)
        .set("y", y + 1.0)
        .set("width", (xb - xa).max(0.5))
        .set("height", ROW - 2.0)
}

/// The sentence naming what sets the makespan.
pub fn setter_text(trace: &Trace, x: f64, y: f64) -> Text {
    let busy = trace.critical.iter().flatten().count();
    let what = match (trace.setter, trace.timing) {
        (Some(Critical::Rank(r)), hypercomm::cost::model::Timing::Async) => format!(
            "rank {r} finishes last, at {}: it sets the makespan",
            fmt_num(trace.makespan)
        ),
        (Some(c @ Critical::Rank(r)), _) => format!(
            "makespan {}: rank {r} is the slowest node of {} of the {busy} rounds with transfers (ringed in red)",
            fmt_num(trace.makespan),
            sets(trace, c)
        ),
        (Some(c @ Critical::Medium), _) => format!(
            "makespan {}: the shared medium sets {} of the {busy} rounds with transfers",
            fmt_num(trace.makespan),
            sets(trace, c)
        ),
        (None, _) => "nothing is sent: the makespan is 0".to_string(),
    };
    Text::new(what)
        .set("class", "setter")
        .set("x", x)
        .set("y", y)
}

/// One bar per step (large machines): when it runs, its messages and elements.
pub fn steps(transfers: &[Vec<Transfer>], trace: &Trace, width: f64) -> (Group, f64) {
    let busy: Vec<usize> = (0..transfers.len())
        .filter(|&s| !transfers[s].is_empty())
        .collect();
    let top = 18.0;
    let bottom = top + busy.len() as f64 * ROW;
    let ms = trace.makespan;
    let title = format!(
        "timeline ({} timing): one bar per step with transfers",
        trace.timing
    );
    let mut g = titled("timeline steps", title).add(axis(trace, width, top, bottom));
    for (i, &s) in busy.iter().enumerate() {
        let y = top + i as f64 * ROW;
        let (a, b) = trace.steps[s];
        let elements: u64 = transfers[s].iter().map(|t| t.len).sum();
        g = g
            .add(
                Text::new(format!("step {s}"))
                    .set("class", "rank-label")
                    .set("x", LEFT - 6.0)
                    .set("y", y + ROW - 3.0),
            )
            .add(bar("step-bar", a, b, y, ms, width))
            .add({
                // Right of the bar, or left of it near the right edge.
                let (x, anchor) = if x_of(b, ms, width) > width - 220.0 {
                    (x_of(a, ms, width) - 4.0, "end")
                } else {
                    (x_of(b, ms, width) + 4.0, "start")
                };
                Text::new(format!(
                    "{} messages, {elements} elements",
                    transfers[s].len()
                ))
                .set("class", "bar-label")
                .set("text-anchor", anchor)
                .set("x", x)
                .set("y", y + ROW - 3.0)
            });
    }
    g = g.add(setter_text(trace, 0.0, bottom + 30.0));
    (g, bottom + 40.0)
}

/// The dimension a transfer crosses: a product's factor (a cube's bit), the host's
/// links, the medium, or several at once.
fn dimension(topo: &Topology, a: u32, b: u32) -> String {
    if topo.host().is_some_and(|h| h == a || h == b) {
        return "host links".into();
    }
    let Some(factors) = topo.factors() else {
        return "medium".into();
    };
    let (ca, cb) = (topo.coords(a), topo.coords(b));
    let differ: Vec<usize> = (0..factors.len()).filter(|&i| ca[i] != cb[i]).collect();
    match differ.as_slice() {
        [i] => match (factors[*i], factors.len()) {
            (Factor::Cube(_), n) => {
                let x = ca[*i] ^ cb[*i];
                let bit = x.trailing_zeros();
                match (x.is_power_of_two(), n) {
                    (true, 1) => format!("dimension {bit}"),
                    (true, _) => format!("factor {i} (cube), bit {bit}"),
                    (false, _) => format!("factor {i} (cube), several bits"),
                }
            }
            (f, _) => format!("factor {i} ({})", f.family()),
        },
        _ => "several dimensions".into(),
    }
}

/// Messages and elements per dimension, as bars.
pub fn dimensions(topo: &Topology, transfers: &[Vec<Transfer>], width: f64) -> (Group, f64) {
    let mut rows: Vec<(String, u64, u64)> = Vec::new();
    for t in transfers.iter().flatten() {
        let d = dimension(topo, t.from, t.to);
        match rows.iter_mut().find(|(k, _, _)| *k == d) {
            Some((_, m, v)) => {
                *m += 1;
                *v += t.len;
            }
            None => rows.push((d, 1, t.len)),
        }
    }
    rows.sort();
    let most = rows.iter().map(|r| r.2).max().unwrap_or(1).max(1);
    let mut g = titled(
        "dimensions",
        "volume per dimension (elements over links)".into(),
    );
    let label_w = 190.0;
    for (i, (d, m, v)) in rows.iter().enumerate() {
        let y = 18.0 + i as f64 * ROW * 1.3;
        let w = (width - label_w - 220.0) * *v as f64 / most as f64;
        g = g
            .add(
                Text::new(d.clone())
                    .set("class", "rank-label")
                    .set("x", label_w - 6.0)
                    .set("y", y + ROW - 3.0),
            )
            .add(
                Rectangle::new()
                    .set("class", "dim-bar")
                    .set("x", label_w)
                    .set("y", y + 1.0)
                    .set("width", w.max(0.5))
                    .set("height", ROW - 2.0),
            )
            .add(
                Text::new(format!("{m} messages, {v} elements"))
                    .set("class", "bar-label")
                    .set("x", label_w + w + 4.0)
                    .set("y", y + ROW - 3.0),
            );
    }
    (g, 30.0 + rows.len() as f64 * ROW * 1.3)
}

//! The machine once per step with the step's transfers on it: idle links in light
//! grey, each transfer an arrow from sender to receiver whose width grows with its
//! elements and whose colour is the first piece it carries; the node (or medium) that
//! sets the step's time ringed in red.

use svg::node::element::{Circle, Group, Line, Path, Rectangle, Text};

use super::layout::{control, Layout, MediumShape, RADIUS, UNIT};
use super::trace::{Critical, Trace};
use super::{colour, fmt_num, Transfer};
use hypercomm::topology::Medium;

/// Most step panels drawn; the timeline shows every step.
pub const MAX_PANELS: usize = 48;

/// Space for a panel's title.
const TITLE: f64 = 34.0;

/// The panels of the busy steps, in rows no wider than `width`; returns the group and
/// its height.
pub fn panels(
    layout: &Layout,
    transfers: &[Vec<Transfer>],
    trace: &Trace,
    width: f64,
) -> (Group, f64) {
    let (pw, ph) = (layout.width.max(190.0), layout.height + TITLE);
    let per_row = ((width / pw).floor() as usize).max(1);
    let max_len = transfers
        .iter()
        .flatten()
        .map(|t| t.len)
        .max()
        .unwrap_or(1)
        .max(1);
    let busy: Vec<usize> = (0..transfers.len())
        .filter(|&s| !transfers[s].is_empty())
        .collect();
    let mut group = Group::new().set("class", "rounds");
    for (i, &s) in busy.iter().take(MAX_PANELS).enumerate() {
        let (col, row) = (i % per_row, i / per_row);
        let panel = panel(layout, s, &transfers[s], trace, max_len).set(
            "transform",
            format!("translate({} {})", col as f64 * pw, row as f64 * ph),
        );
        group = group.add(panel);
    }
    let rows = busy.len().min(MAX_PANELS).div_ceil(per_row);
    let mut height = rows as f64 * ph;
    if busy.len() > MAX_PANELS {
        group = group.add(
            Text::new(format!(
                "{} more steps with transfers are not drawn here; the timeline below shows every step.",
                busy.len() - MAX_PANELS
            ))
            .set("class", "note")
            .set("x", 4)
            .set("y", height + 14.0),
        );
        height += 22.0;
    }
    (group, height)
}

/// One step on the machine.
fn panel(layout: &Layout, s: usize, transfers: &[Transfer], trace: &Trace, max_len: u64) -> Group {
    let (t0, t1) = trace.steps[s];
    let elements: u64 = transfers.iter().map(|t| t.len).sum();
    let mut g = Group::new().set("class", "step").set("data-step", s).add(
        Text::new(format!("step {s}: {} → {}", fmt_num(t0), fmt_num(t1)))
            .set("class", "panel-title")
            .set("x", 6)
            .set("y", 13),
    );
    g = g.add(
        Text::new(format!("{} messages, {elements} elements", transfers.len()))
            .set("class", "panel-sub")
            .set("x", 6)
            .set("y", 26),
    );
    let mut body = Group::new().set("transform", format!("translate(0 {TITLE})"));
    if let Some(m) = &layout.medium {
        body = body.add(medium(
            m,
            layout,
            trace.critical[s] == Some(Critical::Medium),
        ));
    }
    for &(a, b) in &layout.links {
        let used = transfers
            .iter()
            .any(|t| (t.from, t.to) == (a, b) || (t.from, t.to) == (b, a));
        let class = if used { "link used" } else { "link idle" };
        body = body.add(curve(layout, a, b, 0.0).set("class", class));
    }
    for t in transfers {
        let w = 1.0 + 5.0 * t.len as f64 / max_len as f64;
        body = body.add(
            curve(layout, t.from, t.to, 0.12)
                .set("class", "transfer")
                .set("stroke", colour(t.key))
                .set("stroke-width", format!("{w:.2}"))
                .set("marker-end", "url(#arrow)")
                .set("data-len", t.len),
        );
    }
    let critical = trace.critical[s];
    for (r, &(x, y)) in layout.pos.iter().enumerate() {
        let r = r as u32;
        let mut class = if Some(r) == layout.host {
            "node host".to_string()
        } else {
            "node".to_string()
        };
        if critical == Some(Critical::Rank(r)) {
            class.push_str(" critical");
        }
        body = body
            .add(
                Circle::new()
                    .set("class", class)
                    .set("cx", x)
                    .set("cy", y)
                    .set("r", RADIUS),
            )
            .add(
                Text::new(if Some(r) == layout.host {
                    "H".to_string()
                } else {
                    r.to_string()
                })
                .set("class", "label")
                .set("x", x)
                .set("y", y + 4.0),
            );
    }
    g = g.add(body);
    g
}

/// The shared medium and its taps.
fn medium(m: &MediumShape, layout: &Layout, critical: bool) -> Group {
    let class = if critical {
        "medium critical"
    } else {
        "medium"
    };
    let name = match m.kind {
        Medium::Bus => "bus".to_string(),
        Medium::Shm { accesses } => format!("shared memory, {accesses} accesses a round"),
        Medium::Switch => "crossbar switch".to_string(),
    };
    let pes: Vec<(f64, f64)> = layout
        .pos
        .iter()
        .enumerate()
        .filter(|(r, _)| Some(*r as u32) != layout.host)
        .map(|(_, p)| *p)
        .collect();
    let mut g = Group::new().set("class", class);
    let bottom = match m.kind {
        Medium::Bus => {
            g = g.add(
                Line::new()
                    .set("class", "medium-line")
                    .set("x1", m.x.0)
                    .set("y1", m.y)
                    .set("x2", m.x.1)
                    .set("y2", m.y),
            );
            m.y
        }
        Medium::Shm { .. } => {
            g = g.add(
                Rectangle::new()
                    .set("class", "medium-box")
                    .set("x", m.x.0)
                    .set("y", m.y)
                    .set("width", m.x.1 - m.x.0)
                    .set("height", UNIT * 0.4),
            );
            m.y
        }
        Medium::Switch => {
            // A crossbar: one row wire per processor, crossed by its column wire.
            let rows = pes.len().max(1);
            let h = UNIT * 0.8;
            for i in 0..rows {
                let y = m.y + h * (i as f64 + 0.5) / rows as f64;
                g = g.add(
                    Line::new()
                        .set("class", "medium-line")
                        .set("x1", m.x.0)
                        .set("y1", y)
                        .set("x2", m.x.1)
                        .set("y2", y),
                );
            }
            m.y + h
        }
    };
    for &(x, y) in &pes {
        g = g.add(
            Line::new()
                .set("class", "tap")
                .set("x1", x)
                .set("y1", y + RADIUS)
                .set("x2", x)
                .set("y2", bottom),
        );
    }
    g.add(
        Text::new(name)
            .set("class", "medium-name")
            .set("x", m.x.0)
            .set("y", bottom + 14.0),
    )
}

/// A link or transfer between two nodes as a quadratic curve.
fn curve(layout: &Layout, a: u32, b: u32, bend: f64) -> Path {
    let (pa, pb) = (layout.pos[a as usize], layout.pos[b as usize]);
    // On a medium every transfer arcs over the row.
    let bend = if layout.medium.is_some() && bend > 0.0 {
        0.3
    } else {
        bend
    };
    let c = control(pa, pb, bend, &layout.pos);
    // Stop short of the receiver's circle so the arrow head shows.
    let (dx, dy) = (pb.0 - c.0, pb.1 - c.1);
    let d = (dx * dx + dy * dy).sqrt().max(1e-9);
    let end = if bend > 0.0 {
        (
            pb.0 - dx / d * (RADIUS + 2.0),
            pb.1 - dy / d * (RADIUS + 2.0),
        )
    } else {
        pb
    };
    Path::new().set(
        "d",
        format!(
            "M{:.1},{:.1} Q{:.1},{:.1} {:.1},{:.1}",
            pa.0, pa.1, c.0, c.1, end.0, end.1
        ),
    )
}

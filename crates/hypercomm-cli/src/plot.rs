//! A line chart as a standalone SVG document, written by hand: axes (linear or log),
//! grid, one `<polyline>` per series (dashed ones for bounds), point markers and a
//! legend; and a grouped bar chart on a log axis ([`bars`], `hypercomm tables --svg`).
//! The output is deterministic: the same chart gives the same bytes.

use std::fmt::Write as _;

use crate::output::num;

/// One line of the chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The legend entry.
    pub name: String,
    /// (x, y) in data units, x ascending; points a log axis cannot show are left out.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed, in black (bounds).
    pub dashed: bool,
}

/// A line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// The title above the plot.
    pub title: String,
    /// The label under the x axis.
    pub x_label: String,
    /// The label beside the y axis.
    pub y_label: String,
    /// Whether x is on a log scale.
    pub x_log: bool,
    /// Whether y is on a log scale.
    pub y_log: bool,
    /// The lines, drawn and listed in the legend in this order.
    pub series: Vec<Series>,
}

/// Canvas size.
const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 520.0;
/// The plot area: left, top, right, bottom.
const AREA: [f64; 4] = [90.0, 50.0, 660.0, 450.0];
/// Colours of the solid series, in turn (Tableau 10).
pub(crate) const COLOURS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// One axis: its domain, scale and ticks.
#[derive(Clone, Debug, PartialEq)]
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<f64>,
}

impl Scale {
    /// The axis for `values`, widened to whole decades (log) or to round steps.
    fn new(values: impl Iterator<Item = f64>, log: bool) -> Self {
        let vals: Vec<f64> = values
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (min, max) = if vals.is_empty() {
            (1.0, 10.0)
        } else {
            (min, max)
        };
        if log {
            log_scale(min, max)
        } else {
            linear_scale(min, max)
        }
    }

    /// Where `v` falls, from 0 (lo) to 1 (hi).
    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// Whether `v` can be drawn.
    fn shows(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }
}

fn log_scale(min: f64, max: f64) -> Scale {
    let lo_exp = min.log10().floor() as i32;
    let hi_exp = (max.log10().ceil() as i32).max(lo_exp + 1);
    let every = ((hi_exp - lo_exp) as usize).div_ceil(10).max(1);
    Scale {
        lo: 10f64.powi(lo_exp),
        hi: 10f64.powi(hi_exp),
        log: true,
        ticks: (lo_exp..=hi_exp)
            .step_by(every)
            .map(|e| 10f64.powi(e))
            .collect(),
    }
}

fn linear_scale(min: f64, max: f64) -> Scale {
    let span = if max > min {
        max - min
    } else {
        min.abs().max(1.0)
    };
    let step = nice_step(span / 8.0);
    let lo = (min / step).floor() * step;
    let hi = ((max / step).ceil() * step).max(lo + step);
    let n = ((hi - lo) / step).round() as usize;
    Scale {
        lo,
        hi,
        log: false,
        ticks: (0..=n).map(|i| lo + i as f64 * step).collect(),
    }
}

/// The smallest 1, 2 or 5 × 10^k at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let pow = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * pow)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * pow)
}

/// A tick label: plain below 10^5, `1e6` style beyond on log axes.
fn tick_label(v: f64, log: bool) -> String {
    let e = v.log10().round() as i32;
    if log && !(-3..5).contains(&e) {
        format!("1e{e}")
    } else {
        num(v)
    }
}

/// Escape text for SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> String {
    let xs = Scale::new(all(chart, |p| p.0), chart.x_log);
    let ys = Scale::new(all(chart, |p| p.1), chart.y_log);
    let mut out = String::new();
    header(&mut out, &chart.title, &chart.x_label, &chart.y_label);
    grid(&mut out, &xs, &ys);
    for (i, s) in chart.series.iter().enumerate() {
        line(&mut out, s, pen(chart, i), &xs, &ys);
    }
    legend(&mut out, chart);
    out.push_str("</svg>\n");
    out
}

fn all(chart: &Chart, f: fn(&(f64, f64)) -> f64) -> impl Iterator<Item = f64> + '_ {
    chart
        .series
        .iter()
        .flat_map(move |s| s.points.iter().map(f))
}

/// Colour and width of series `i`: solid series get thinner in turn, so that a line
/// drawn over an equal one leaves its edges visible.
fn pen(chart: &Chart, i: usize) -> (&'static str, f64) {
    if chart.series[i].dashed {
        return ("#000000", 1.5);
    }
    let solid = chart.series.iter().filter(|s| !s.dashed).count();
    let shrink = 2.0 * i as f64 / (solid.max(2) - 1) as f64;
    (COLOURS[i % COLOURS.len()], 3.5 - shrink)
}

/// Pixel position of a data point.
fn at(xs: &Scale, ys: &Scale, (x, y): (f64, f64)) -> (f64, f64) {
    let [l, t, r, b] = AREA;
    (l + xs.frac(x) * (r - l), b - ys.frac(y) * (b - t))
}

fn header(out: &mut String, title: &str, x_label: &str, y_label: &str) {
    let [l, t, r, b] = AREA;
    let _ = writeln!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{:.1}\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n\
         <text transform=\"translate(24 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        (l + r) / 2.0,
        esc(title),
        (l + r) / 2.0,
        b + 45.0,
        esc(x_label),
        (t + b) / 2.0,
        esc(y_label),
    );
}

/// A grouped bar chart: for each group (an operation) one bar per series (a machine),
/// its height a time on a log axis, with a black tick at a second value (the paper's
/// printed entry) across it.
#[derive(Clone, Debug, PartialEq)]
pub struct Bars {
    /// The title above the plot.
    pub title: String,
    /// The label beside the y axis.
    pub y_label: String,
    /// The groups along x, in order.
    pub groups: Vec<String>,
    /// The bars of every group, in order (the legend).
    pub series: Vec<String>,
    /// `values[g][s]`: the bar of series s in group g (not drawn unless finite and > 0).
    pub values: Vec<Vec<f64>>,
    /// `marks[g][s]`: the tick across that bar (likewise).
    pub marks: Vec<Vec<f64>>,
    /// The legend entry of the ticks.
    pub mark_name: String,
}

/// The bar chart as an SVG document: one `<rect class="bar">` per drawn bar and one
/// `<line class="mark">` per drawn tick, each with `data-group` and `data-series`.
pub fn bars(chart: &Bars) -> String {
    let cells = chart.values.iter().chain(&chart.marks).flatten().copied();
    let ys = Scale::new(cells, true);
    let [l, t, r, b] = AREA;
    let mut out = String::new();
    header(&mut out, &chart.title, "", &chart.y_label);
    out.push_str("<g class=\"grid\" stroke=\"#dddddd\">\n");
    y_lines(&mut out, &ys);
    out.push_str("</g>\n<g class=\"ticks\">\n");
    y_ticks(&mut out, &ys);
    out.push_str("</g>\n");
    let groups = chart.groups.len().max(1) as f64;
    let per = chart.series.len().max(1) as f64;
    let slot = (r - l) / groups;
    let width = slot * 0.8 / per;
    for (g, name) in chart.groups.iter().enumerate() {
        let x0 = l + g as f64 * slot + slot * 0.1;
        let _ = writeln!(
            out,
            "<text class=\"group\" x=\"{:.2}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            l + (g as f64 + 0.5) * slot,
            b + 18.0,
            esc(name)
        );
        for (s, series) in chart.series.iter().enumerate() {
            let x = x0 + s as f64 * width;
            let data = format!(
                "data-group=\"{}\" data-series=\"{}\"",
                esc(name),
                esc(series)
            );
            let at = |grid: &[Vec<f64>]| {
                let v = grid.get(g).and_then(|v| v.get(s)).copied();
                v.filter(|v| ys.shows(*v))
            };
            if let Some(v) = at(&chart.values) {
                let top = b - ys.frac(v) * (b - t);
                let _ = writeln!(
                    out,
                    "<rect class=\"bar\" {data} x=\"{x:.2}\" y=\"{top:.2}\" width=\"{:.2}\" \
                     height=\"{:.2}\" fill=\"{}\"><title>{} {}: {}</title></rect>",
                    width * 0.9,
                    b - top,
                    COLOURS[s % COLOURS.len()],
                    esc(name),
                    esc(series),
                    num(v)
                );
            }
            if let Some(v) = at(&chart.marks) {
                let py = b - ys.frac(v) * (b - t);
                let _ = writeln!(
                    out,
                    "<line class=\"mark\" {data} x1=\"{x:.2}\" y1=\"{py:.2}\" x2=\"{:.2}\" \
                     y2=\"{py:.2}\" stroke=\"#000000\" stroke-width=\"2\"/>",
                    x + width * 0.9
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "<rect x=\"{l}\" y=\"{t}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000000\"/>",
        r - l,
        b - t
    );
    let x = r + 20.0;
    out.push_str("<g class=\"legend\">\n");
    for (i, s) in chart.series.iter().enumerate() {
        let y = t + 10.0 + 22.0 * i as f64;
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"{}\" width=\"30\" height=\"10\" fill=\"{}\"/>\n\
             <text x=\"{}\" y=\"{}\">{}</text>",
            y - 5.0,
            COLOURS[i % COLOURS.len()],
            x + 38.0,
            y + 4.0,
            esc(s)
        );
    }
    let y = t + 10.0 + 22.0 * chart.series.len() as f64;
    let _ = writeln!(
        out,
        "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#000000\" stroke-width=\"2\"/>\n\
         <text x=\"{}\" y=\"{}\">{}</text>",
        x + 30.0,
        x + 38.0,
        y + 4.0,
        esc(&chart.mark_name)
    );
    out.push_str("</g>\n</svg>\n");
    out
}

/// The frame, grid lines and tick labels.
fn grid(out: &mut String, xs: &Scale, ys: &Scale) {
    let [l, t, r, b] = AREA;
    out.push_str("<g class=\"grid\" stroke=\"#dddddd\">\n");
    for &x in &xs.ticks {
        let px = l + xs.frac(x) * (r - l);
        let _ = writeln!(
            out,
            "<line x1=\"{px:.2}\" y1=\"{t}\" x2=\"{px:.2}\" y2=\"{b}\"/>"
        );
    }
    y_lines(out, ys);
    out.push_str("</g>\n<g class=\"ticks\">\n");
    for &x in &xs.ticks {
        let px = l + xs.frac(x) * (r - l);
        let label = tick_label(x, xs.log);
        let _ = writeln!(
            out,
            "<text x=\"{px:.2}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
            b + 18.0
        );
    }
    y_ticks(out, ys);
    let _ = writeln!(
        out,
        "</g>\n<rect x=\"{l}\" y=\"{t}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000000\"/>",
        r - l,
        b - t
    );
}

/// The horizontal grid lines at the y ticks.
fn y_lines(out: &mut String, ys: &Scale) {
    let [l, t, r, b] = AREA;
    for &y in &ys.ticks {
        let py = b - ys.frac(y) * (b - t);
        let _ = writeln!(
            out,
            "<line x1=\"{l}\" y1=\"{py:.2}\" x2=\"{r}\" y2=\"{py:.2}\"/>"
        );
    }
}

/// The y tick labels, left of the plot.
fn y_ticks(out: &mut String, ys: &Scale) {
    let [l, t, _, b] = AREA;
    for &y in &ys.ticks {
        let py = b - ys.frac(y) * (b - t) + 4.0;
        let label = tick_label(y, ys.log);
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{py:.2}\" text-anchor=\"end\">{label}</text>",
            l - 6.0
        );
    }
}

/// The dash attribute of a dashed series.
fn dash(s: &Series) -> &'static str {
    if s.dashed {
        " stroke-dasharray=\"6 4\""
    } else {
        ""
    }
}

/// One series: a polyline and a marker per point.
fn line(out: &mut String, s: &Series, (colour, width): (&str, f64), xs: &Scale, ys: &Scale) {
    let pts: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter(|(x, y)| xs.shows(*x) && ys.shows(*y))
        .map(|&p| at(xs, ys, p))
        .collect();
    let coords: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.2},{y:.2}")).collect();
    let dash = dash(s);
    let _ = writeln!(
        out,
        "<polyline class=\"series\" data-name=\"{}\" fill=\"none\" stroke=\"{colour}\" \
         stroke-width=\"{width}\"{dash} points=\"{}\"/>",
        esc(&s.name),
        coords.join(" ")
    );
    if !s.dashed {
        for (x, y) in pts {
            let _ = writeln!(
                out,
                "<circle cx=\"{x:.2}\" cy=\"{y:.2}\" r=\"{}\" fill=\"{colour}\"/>",
                width + 1.0
            );
        }
    }
}

/// The legend, right of the plot: a swatch and the name of each series.
fn legend(out: &mut String, chart: &Chart) {
    let x = AREA[2] + 20.0;
    out.push_str("<g class=\"legend\">\n");
    for (i, s) in chart.series.iter().enumerate() {
        let y = AREA[1] + 10.0 + 22.0 * i as f64;
        let dash = dash(s);
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{}\" stroke-width=\"2\"{dash}/>\n\
             <text x=\"{}\" y=\"{}\">{}</text>",
            x + 30.0,
            pen(chart, i).0,
            x + 38.0,
            y + 4.0,
            esc(&s.name)
        );
    }
    out.push_str("</g>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales() {
        let s = log_scale(3.0, 2000.0);
        assert_eq!((s.lo, s.hi), (1.0, 10000.0));
        assert_eq!(s.ticks, [1.0, 10.0, 100.0, 1000.0, 10000.0]);
        let s = linear_scale(1.0, 12.0);
        assert_eq!((s.lo, s.hi), (0.0, 12.0));
        assert_eq!(s.ticks, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
        let s = linear_scale(5.0, 5.0);
        assert!(s.lo <= 5.0 && s.hi > 5.0);
        assert_eq!(tick_label(1e6, true), "1e6");
        assert_eq!(tick_label(100.0, true), "100");
        assert_eq!(tick_label(0.001, true), "0.001");
    }

    #[test]
    fn one_polyline_per_series_and_a_legend() {
        let chart = Chart {
            title: "a < b".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_log: true,
            y_log: true,
            series: vec![
                Series {
                    name: "one".into(),
                    points: vec![(1.0, 2.0), (10.0, 0.0), (100.0, 30.0)],
                    dashed: false,
                },
                Series {
                    name: "bound".into(),
                    points: vec![],
                    dashed: true,
                },
            ],
        };
        let s = svg(&chart);
        assert!(s.starts_with("<?xml"));
        assert_eq!(s.matches("<polyline").count(), 2);
        assert_eq!(
            s.matches("<circle").count(),
            2,
            "y = 0 is not drawn on a log axis"
        );
        assert!(s.contains("a &lt; b") && s.contains(">one</text>"));
        assert!(s.trim_end().ends_with("</svg>"));
    }
}

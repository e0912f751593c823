//! Text and JSON rendering: numbers, aligned key–value blocks, tables, and the report of
//! one run.

use std::fmt::Write as _;

use hypercomm::algorithms::{Formula, FormulaKind};
use serde::Serialize;

use crate::report::{ModelOut, PacketsOut, RunReport};

/// [`not_same_file`]'s `other_is` for the `--counts` input.
pub const COUNTS_INPUT: &str = "the --counts file read as input";

/// Refuse an output file `out` (the flag `what`) that names the same file as `other`
/// (`other_is` says which: "--svg's file" in `draw` and `sweep`, where the page was
/// written over the drawing; "the --counts file read as input" in `compare` and
/// `draw`, where the counts were written over with the report).
pub fn not_same_file(
    out: Option<&std::path::Path>,
    what: &'static str,
    other: Option<&std::path::Path>,
    other_is: &str,
) -> Result<(), hypercomm::error::Error> {
    let (Some(out), Some(other)) = (out, other) else {
        return Ok(());
    };
    if !same_file(out, other) {
        return Ok(());
    }
    Err(hypercomm::error::Error::InvalidParameter {
        what,
        reason: format!(
            "{} is also {other_is}, which the output would replace; valid: another file",
            out.display()
        ),
    })
}

/// Whether two paths name one file: compared through their directory (`f` and `./f`),
/// and through the files themselves when both exist (a symbolic link and its target).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    let norm = |p: &std::path::Path| {
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        match (std::fs::canonicalize(dir), p.file_name()) {
            (Ok(d), Some(f)) => d.join(f),
            _ => p.to_path_buf(),
        }
    };
    if norm(a) == norm(b) {
        return true;
    }
    matches!(
        (std::fs::canonicalize(a), std::fs::canonicalize(b)),
        (Ok(x), Ok(y)) if x == y
    )
}

/// A number for people: integers without a fraction, others with at most six decimals
/// and no trailing zeros.
pub fn num(x: f64) -> String {
    let x = x + 0.0; // -0 (a time of nothing, computed as a negative times 0) prints as 0
    if !x.is_finite() {
        return x.to_string();
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// An optional value, or `-`.
pub fn opt<T: ToString>(x: Option<T>) -> String {
    x.map_or_else(|| "-".into(), |v| v.to_string())
}

/// An optional number, or `-`.
pub fn opt_num(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), num)
}

/// Pretty JSON of `value`, newline-terminated.
pub fn json<T: Serialize + ?Sized>(value: &T) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("reports always serialise");
    s.push('\n');
    s
}

/// Display width of `s` (characters; every character of our output is one column).
fn width(s: &str) -> usize {
    s.chars().count()
}

/// Lines `key  value` with the values aligned; a value with several lines continues
/// under itself.
pub fn block(pairs: &[(&str, String)]) -> String {
    let w = pairs.iter().map(|(k, _)| width(k)).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in pairs {
        for (i, line) in value.lines().enumerate() {
            let k = if i == 0 { *key } else { "" };
            let pad = w - width(k);
            let _ = writeln!(out, "{k}{:pad$}  {line}", "");
        }
    }
    out
}

/// A table with a header row; columns left-aligned, separated by two spaces, no
/// trailing spaces.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    let mut out = String::new();
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&head).chain(rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = w - width(cell);
            let _ = write!(line, "{cell}{:pad$}", "");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The model in one line; host links are shown when they differ from the others.
pub fn model_line(m: &ModelOut) -> String {
    let host = if (m.host_beta, m.host_tau) == (m.beta, m.tau) {
        String::new()
    } else {
        format!(", host β = {}, τ = {}", num(m.host_beta), num(m.host_tau))
    };
    format!(
        "β = {}, τ = {}{host}, ports {}, duplex {}, timing {}",
        num(m.beta),
        num(m.tau),
        m.ports,
        m.duplex,
        m.timing
    )
}

/// The collective with its ranks, e.g. `broadcast, root 0` or `p2p, 0 → 7`.
pub fn collective_line(r: &RunReport) -> String {
    match (r.root, r.src, r.dst) {
        (_, Some(s), Some(d)) => format!("{}, {s} → {d}", r.op),
        (Some(root), _, _) => format!("{}, root {root}", r.op),
        _ => r.op.to_string(),
    }
}

/// How a closed form relates to the simulated time, in words.
pub fn formula_kind(f: &Formula) -> &'static str {
    match f.kind {
        FormulaKind::Exact => "exact",
        FormulaKind::UpperBound => "upper bound",
        FormulaKind::Estimate => "estimate",
    }
}

/// One closed form: `value = expr (exact; reference)`.
pub fn formula_line(f: &Formula) -> String {
    format!(
        "{} = {} ({}; {})",
        num(f.value),
        f.expr,
        formula_kind(f),
        f.reference
    )
}

/// The verdict in words.
pub fn verdict(r: &RunReport) -> String {
    match (r.verified, &r.violation) {
        (Some(true), _) => "yes".into(),
        (Some(false), Some(v)) => format!("NO: {}", v.message),
        (Some(false), None) => "NO".into(),
        (None, _) => "skipped".into(),
    }
}

/// Packets as requested, or `-`.
pub fn packets(p: Option<PacketsOut>) -> String {
    match p {
        Some(PacketsOut::Word(w)) => w.to_string(),
        Some(PacketsOut::Count(n)) => n.to_string(),
        None => "-".into(),
    }
}

/// The text report of one run.
pub fn run_text(r: &RunReport) -> String {
    let formulas = if r.formulas.is_empty() {
        "-".to_string()
    } else {
        r.formulas
            .iter()
            .map(formula_line)
            .collect::<Vec<_>>()
            .join("\n")
    };
    block(&[
        ("topology", format!("{} ({} nodes)", r.topology, r.nodes)),
        ("collective", collective_line(r)),
        ("algorithm", opt(r.algo.as_deref())),
        ("len", r.len.to_string()),
        (
            "packets",
            match r.nu {
                Some(nu) => format!("{} (ν = {nu})", packets(r.packets)),
                None => packets(r.packets),
            },
        ),
        ("model", model_line(&r.model)),
        ("strict", if r.strict { "yes" } else { "no" }.into()),
        ("verified", verdict(r)),
        ("steps", opt(r.steps)),
        ("time", opt_num(r.time)),
        ("rounds", opt(r.rounds)),
        ("messages", opt(r.messages)),
        ("volume", opt(r.volume)),
        ("max link load", opt(r.max_link_load)),
        ("closed form", formulas),
        ("lower bound", opt_num(r.lower_bound)),
        ("time / bound", opt_num(r.ratio)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(3.0), "3");
        assert_eq!(num(3.25), "3.25");
        assert_eq!(num(0.1 + 0.2), "0.3");
        assert_eq!(num(-0.0000001), "0");
        assert_eq!(num(1e20), "100000000000000000000");
    }

    #[test]
    fn tables_align_without_trailing_spaces() {
        let t = table(&["a", "bb"], &[vec!["xxx".into(), "y".into()]]);
        assert_eq!(t, "a    bb\nxxx  y\n");
    }
}

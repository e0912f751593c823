//! `hypercomm tables`: seed 004's Tables 1 and 2 regenerated
//! ([`hypercomm::tables`]): for each of the 30 cells the printed entry evaluated, the
//! corrected upper bound, the exact time of the paper's algorithm (built, verified,
//! simulated), and the best registry algorithm on the machine; `--svg FILE` draws them
//! (for each operation the six machines side by side).

use std::io::Write;

use hypercomm::tables::{self, Cell, Params004};

use crate::args::{ListFormat, TablesArgs};
use crate::{CliError, Io, Outcome};

/// Run `hypercomm tables`.
pub fn run(args: &TablesArgs, io: &mut Io<'_>) -> Result<Outcome, CliError> {
    let model = hypercomm::cost::model::Model::new(args.beta, args.tau)?;
    // Above u32 the library could not be told the number given: the same refusal here.
    let wide = |v: u64, what: &'static str, valid: String| match u32::try_from(v) {
        Ok(v) => Ok(v),
        Err(_) => Err(hypercomm::error::Error::InvalidParameter {
            what,
            reason: format!("{v}; valid: {valid}"),
        }),
    };
    let k = wide(
        args.nodes,
        "--nodes",
        format!(
            "4, 16 or 64 (a square and a power of two, at most {})",
            tables::MAX_NODES
        ),
    )?;
    let kstar = wide(args.kstar, "--kstar", format!("1..={k} (1 ≤ k* ≤ K)"))?;
    let p = Params004 {
        k,
        kstar,
        n: args.data,
        beta: model.beta(),
        tau: model.tau(),
    };
    if let Some(path) = &args.svg {
        check_directory(path)?;
    }
    let cells = tables::cells(&p)?;
    check_finite(&cells)?;
    if let Some(path) = &args.svg {
        std::fs::write(path, crate::plot::bars(&chart(&cells, &p))).map_err(|source| {
            CliError::WriteFile {
                path: path.clone(),
                source,
            }
        })?;
    }
    match args.format {
        ListFormat::Json => {
            let v: Vec<serde_json::Value> = cells
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "table": c.table,
                        "architecture": c.architecture,
                        "operation": c.operation,
                        "topology": c.topology,
                        "printed": c.printed,
                        "corrected": c.corrected,
                        "exact": c.exact,
                        "algorithm": c.algorithm,
                        "best": c.best,
                        "best_algorithm": c.best_algorithm,
                        "len": c.len,
                        "verified": c.verified,
                    })
                })
                .collect();
            let text = serde_json::to_string_pretty(&v).map_err(std::io::Error::other)?;
            writeln!(io.out, "{text}")?;
        }
        ListFormat::Markdown => markdown(&cells, &p, io.out)?,
        ListFormat::Text => text(&cells, &p, io.out)?,
    }
    Ok(if cells.iter().all(|c| c.verified) {
        Outcome::Ok
    } else {
        Outcome::Failed
    })
}

/// Refuse cells whose times are infinite: β and τ so large (`--beta 1e308`) that a
/// time overflows (a cell without an algorithm is NaN, shown as "–").
fn check_finite(cells: &[Cell]) -> Result<(), hypercomm::error::Error> {
    let infinite = cells.iter().find(|c| {
        [c.printed, c.corrected, c.exact]
            .iter()
            .any(|v| v.is_infinite())
    });
    match infinite {
        Some(c) => Err(hypercomm::error::Error::InvalidParameter {
            what: "--beta/--tau",
            reason: format!(
                "a time of {} on the {} is infinite: β and τ are too large for these \
                 tables; valid: values for which the times stay finite (below about 1e308)",
                c.operation, c.architecture
            ),
        }),
        None => Ok(()),
    }
}

/// Refuse an SVG path whose directory does not exist, before computing the cells.
fn check_directory(path: &std::path::Path) -> Result<(), hypercomm::error::Error> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => Err(hypercomm::error::Error::InvalidParameter {
            what: "--svg",
            reason: format!(
                "the directory {} does not exist; create it first, or name a file in an \
                 existing directory",
                dir.display()
            ),
        }),
        _ => Ok(()),
    }
}

/// The chart: for each operation the six machines' exact times as bars, the printed
/// entries as ticks.
pub fn chart(cells: &[Cell], p: &Params004) -> crate::plot::Bars {
    let at = |op: &str, arch: &str, f: fn(&Cell) -> f64| {
        cells
            .iter()
            .find(|c| c.operation == op && c.architecture == arch)
            .map_or(f64::NAN, f)
    };
    let grid = |f: fn(&Cell) -> f64| -> Vec<Vec<f64>> {
        tables::OPERATIONS
            .iter()
            .map(|op| tables::ARCHITECTURES.iter().map(|a| at(op, a, f)).collect())
            .collect()
    };
    crate::plot::Bars {
        title: format!("Saad & Schultz, Tables 1 and 2: {}", header(p)),
        y_label: "time of the paper's algorithm (simulated, verified)".into(),
        groups: tables::OPERATIONS.iter().map(|s| s.to_string()).collect(),
        series: tables::ARCHITECTURES
            .iter()
            .map(|s| s.to_string())
            .collect(),
        values: grid(|c| c.exact),
        marks: grid(|c| c.printed),
        mark_name: "printed entry".into(),
    }
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "–".into()
    }
}

/// The note for a cell whose best registry algorithm beats the paper's algorithm for
/// it: "ours faster", or "the paper's, faster" when that algorithm is itself one of
/// seed 004's (the D_x/D_y broadcast's first remedy on the grid).
fn note(c: &Cell) -> &'static str {
    if c.best + 1e-9 >= c.exact {
        return "";
    }
    let of_the_paper = hypercomm::algorithms::all().iter().any(|a| {
        a.name == c.best_algorithm && a.reference.starts_with("Saad & Schultz 1986 (seed 004)")
    });
    if of_the_paper {
        " (the paper's, faster)"
    } else {
        " (ours faster)"
    }
}

fn header(p: &Params004) -> String {
    format!(
        "K = {}, k* = {}, N = {}, τ_X (β) = {}, 1/b_X (τ) = {}",
        p.k, p.kstar, p.n, p.beta, p.tau
    )
}

fn text(cells: &[Cell], p: &Params004, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "Saad & Schultz, Tables 1 and 2: {}", header(p))?;
    let mut table = 0;
    for c in cells {
        if c.table != table {
            table = c.table;
            writeln!(
                out,
                "\nTable {table}\n{:<13} {:<14} {:>6} {:>12} {:>12} {:>12} {:<22} {:>12} {:<22} {}",
                "operation",
                "architecture",
                "len",
                "printed",
                "corrected",
                "exact",
                "algorithm",
                "best",
                "best algorithm",
                "verified"
            )?;
        }
        writeln!(
            out,
            "{:<13} {:<14} {:>6} {:>12} {:>12} {:>12} {:<22} {:>12} {:<22} {}{}",
            c.operation,
            c.architecture,
            c.len,
            num(c.printed),
            num(c.corrected),
            num(c.exact),
            c.algorithm,
            num(c.best),
            c.best_algorithm,
            c.verified,
            note(c)
        )?;
    }
    Ok(())
}

fn markdown(cells: &[Cell], p: &Params004, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", header(p))?;
    let mut table = 0;
    for c in cells {
        if c.table != table {
            table = c.table;
            writeln!(out, "\n**Table {table}**\n")?;
            writeln!(out, "| operation | architecture | len | printed | corrected | exact | algorithm | best | best algorithm | verified |")?;
            writeln!(out, "|---|---|---:|---:|---:|---:|---|---:|---|---|")?;
        }
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {}{} | {} |",
            c.operation,
            c.architecture,
            c.len,
            num(c.printed),
            num(c.corrected),
            num(c.exact),
            c.algorithm,
            num(c.best),
            c.best_algorithm,
            note(c),
            c.verified
        )?;
    }
    Ok(())
}

//! Rendering of the runtime commands' reports: text, JSON and CSV. Every backend prints
//! through these functions, so their output is identical.

use std::fmt::Write as _;

use serde::Serialize;

use super::bench::{BenchReport, BenchRow};
use super::calibrate::PingPong;
use super::run::RunReport;
use super::CalibrationInfo;
use crate::output::{block, json, num, table};

/// A duration in seconds, in the unit that suits it (ns, µs, ms, s).
pub fn secs(t: f64) -> String {
    let (v, unit) = if t < 1e-6 {
        (t * 1e9, "ns")
    } else if t < 1e-3 {
        (t * 1e6, "µs")
    } else if t < 1.0 {
        (t * 1e3, "ms")
    } else {
        (t, "s")
    };
    format!("{v:.3} {unit}")
}

/// `x` with `digits` significant digits, or `-`.
pub fn sig(x: Option<f64>, digits: usize) -> String {
    match x {
        None => "-".into(),
        Some(v) if v == 0.0 || !v.is_finite() => num(v),
        Some(v) => {
            let mag = v.abs().log10().floor() as i32;
            let decimals = (digits as i32 - 1 - mag).max(0) as usize;
            format!("{v:.decimals$}")
        }
    }
}

/// The bandwidth of a time per byte `tau` (s/B) in GB/s: `∞` for τ = 0 (bandwidth for
/// free, which `calibrate` refuses to save), `n/a` for a negative or non-finite τ.
pub fn gbps(tau: f64) -> String {
    if tau == 0.0 {
        "∞".into()
    } else if tau.is_finite() && tau > 0.0 {
        sig(Some(1e-9 / tau), 3)
    } else {
        "n/a".into()
    }
}

/// The calibration in one line.
pub fn calibration_line(c: &CalibrationInfo) -> String {
    let bands = match c.bands.len() {
        0 => String::new(),
        n => format!(
            ", corrected in {n} size bands from {}",
            size(c.bands[0].from as usize)
        ),
    };
    format!(
        "β = {}, τ = {:.4e} s/B{bands} ({})",
        secs(c.beta),
        c.tau,
        c.source.as_deref().unwrap_or("the runtime's defaults")
    )
}

/// `hypercomm run`'s report as text.
pub fn run_text(r: &RunReport) -> String {
    let op = match (r.root, r.src, r.dst, r.reduce_op) {
        (_, Some(s), Some(d), _) => format!("{}, {s} → {d}", r.op),
        (Some(root), _, _, Some(o)) => format!("{}, root {root}, {o}", r.op),
        (Some(root), _, _, None) => format!("{}, root {root}", r.op),
        (None, _, _, Some(o)) => format!("{}, {o}", r.op),
        _ => r.op.clone(),
    };
    let algo = match (&r.shape, r.auto) {
        (_, true) => format!("{} (chosen by auto)", r.algo),
        (Some(shape), false) => format!("{} (shape {shape})", r.algo),
        (None, false) => r.algo.clone(),
    };
    let correct = match &r.mismatch {
        None => format!(
            "yes ({} elements checked against the serial reference, after each call)",
            r.checked
        ),
        Some(m) => format!(
            "NO: rank {} element {} is {}, expected {}",
            m.rank, m.index, m.got, m.expected
        ),
    };
    let predicted = match (r.predicted, r.measured_over_predicted) {
        (Some(p), Some(ratio)) => format!(
            "{} (measured / predicted = {})",
            secs(p),
            sig(Some(ratio), 3)
        ),
        (Some(p), None) => secs(p),
        _ => "-".into(),
    };
    block(&[
        ("backend", r.backend.clone()),
        ("op", op),
        ("algorithm", algo),
        ("ranks", r.ranks.to_string()),
        (
            "len",
            format!(
                "{} elements of {} bytes ({} bytes)",
                r.len, r.elem_bytes, r.bytes
            ),
        ),
        ("packets", r.packets.clone()),
        ("seed", r.seed.to_string()),
        (
            "time",
            format!(
                "{} (median of {} calls, the slowest rank's; fastest call {}; fastest \
                 rank {})",
                secs(r.time),
                r.iters,
                secs(r.min),
                secs(r.time_min)
            ),
        ),
        ("predicted", predicted),
        ("calibration", calibration_line(&r.calibration)),
        ("correct", correct),
    ])
}

/// `hypercomm run`'s report in `format` (`json` or text).
pub fn run(r: &RunReport, as_json: bool) -> String {
    if as_json {
        json(r)
    } else {
        run_text(r)
    }
}

/// The columns of `bench`'s CSV, in order.
pub const BENCH_CSV_HEADER: &str = "algo,auto,size,bytes,iters,avg_us,min_us,max_us,\
algbw_gbps,busbw_gbps,predicted_us,measured_over_predicted,memcpy_gbps,busbw_over_memcpy";

/// The columns `bench --persistent` adds to its CSV.
pub const BENCH_CSV_PERSISTENT: &str = ",persistent,persistent_over_plain";

/// The last column of `bench`'s CSV: the schedule's digest (`BenchRow::schedule`).
pub const BENCH_CSV_SCHEDULE: &str = ",schedule";

fn csv_opt(x: Option<f64>) -> String {
    x.map_or_else(String::new, |v| format!("{v}"))
}

/// `hypercomm bench`'s rows as CSV.
pub fn bench_csv(r: &BenchReport) -> String {
    let mut s = String::from(BENCH_CSV_HEADER);
    if r.persistent {
        s.push_str(BENCH_CSV_PERSISTENT);
    }
    s.push_str(BENCH_CSV_SCHEDULE);
    s.push('\n');
    for row in &r.rows {
        let _ = write!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            row.algo,
            row.auto,
            row.size,
            row.bytes,
            row.iters,
            row.avg_us,
            row.min_us,
            row.max_us,
            row.algbw_gbps,
            row.busbw_gbps,
            csv_opt(row.predicted_us),
            csv_opt(row.measured_over_predicted),
            csv_opt(row.memcpy_gbps),
            csv_opt(row.busbw_over_memcpy),
        );
        if r.persistent {
            let _ = write!(
                s,
                ",{},{}",
                row.persistent,
                csv_opt(row.persistent_over_plain)
            );
        }
        let _ = write!(s, ",{}", row.schedule.as_deref().unwrap_or(""));
        s.push('\n');
    }
    s
}

/// A size in bytes with a binary prefix when it is a whole number of them.
pub fn size(b: usize) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if b >= 1 << shift && b & ((1 << shift) - 1) == 0 {
            return format!("{} {unit}", b >> shift);
        }
    }
    format!("{b} B")
}

fn text_row(row: &BenchRow, persistent: bool) -> Vec<String> {
    let mut cells = vec![
        size(row.size),
        if row.auto {
            format!("{} (auto)", row.algo)
        } else {
            row.algo.clone()
        },
        row.iters.to_string(),
        sig(Some(row.avg_us), 4),
        sig(Some(row.min_us), 4),
        sig(Some(row.max_us), 4),
        sig(Some(row.algbw_gbps), 3),
        sig(Some(row.busbw_gbps), 3),
        sig(row.predicted_us, 4),
        sig(row.measured_over_predicted, 3),
        sig(row.memcpy_gbps, 3),
        sig(row.busbw_over_memcpy, 3),
    ];
    if persistent {
        let call = if row.persistent {
            "persistent"
        } else {
            "plain"
        };
        cells.insert(2, call.to_string());
        cells.push(sig(row.persistent_over_plain, 3));
    }
    cells
}

/// `hypercomm bench`'s report as a text table with a header naming the conventions.
pub fn bench_text(r: &BenchReport) -> String {
    let mut s = String::new();
    let rooted = r
        .root
        .map_or(String::new(), |root| format!(", root {root}"));
    let reduce = r.reduce_op.map_or(String::new(), |o| format!(", {o}"));
    let _ = writeln!(
        s,
        "# {}{rooted}{reduce} on {} ranks, {} backend",
        r.op, r.ranks, r.backend
    );
    if let Some(shape) = &r.shape {
        let _ = writeln!(
            s,
            "# shape {shape} (row-major, the last factor fastest) for the algorithms that take one"
        );
    }
    let _ = writeln!(
        s,
        "# latency over ranks (µs), a {} barrier between calls; algbw = bytes/avg, busbw = algbw × {} (nccl-tests), GB/s",
        r.barrier,
        sig(Some(r.busbw_factor), 4)
    );
    if r.interleave {
        let _ = writeln!(
            s,
            "# interleaved: the algorithms of a size took turns call by call"
        );
    }
    let _ = writeln!(
        s,
        "# predicted: cost model, {}",
        calibration_line(&r.calibration)
    );
    let _ = writeln!(
        s,
        "# memcpy: one thread copying `bytes` bytes (best of 5 trials), same run"
    );
    if r.persistent {
        let _ = writeln!(
            s,
            "# call: plain (algorithm chosen, plan looked up per call) or persistent (plan_* \
             once, run per call); pers/plain = the persistent avg / the plain avg above it"
        );
    }
    let mut header = vec![
        "size",
        "algo",
        "iters",
        "avg_us",
        "min_us",
        "max_us",
        "algbw",
        "busbw",
        "pred_us",
        "meas/pred",
        "memcpy",
        "busbw/memcpy",
    ];
    if r.persistent {
        header.insert(2, "call");
        header.push("pers/plain");
    }
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| text_row(row, r.persistent))
        .collect();
    s.push_str(&table(&header, &rows));
    s
}

/// `hypercomm bench`'s report: text, JSON or CSV.
pub fn bench(r: &BenchReport, format: crate::args::BenchFormat) -> String {
    match format {
        crate::args::BenchFormat::Text => bench_text(r),
        crate::args::BenchFormat::Json => json(r),
        crate::args::BenchFormat::Csv => bench_csv(r),
    }
}

/// What `hypercomm calibrate` prints as JSON.
#[derive(Clone, Debug, Serialize)]
pub struct CalibrationReport {
    /// The backend.
    pub backend: String,
    /// Ranks that took part.
    pub ranks: u32,
    /// How each pair measured.
    pub pattern: super::calibrate::Pattern,
    /// One-way times per size (mean over pairs).
    pub points: Vec<PingPong>,
    /// Fitted start-up time, seconds.
    pub beta: f64,
    /// Fitted time per byte, seconds.
    pub tau: f64,
    /// The per-size bands of the fit (none when the one line fits every point within
    /// [`super::calibrate::BAND_TOLERANCE`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bands: Vec<hypercomm_rt::select::Band>,
    /// The bands of data its sender wrote since the receiver last read it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fresh: Vec<hypercomm_rt::select::Band>,
    /// (bytes, one-way seconds) of a message between two ranks run as fibers of one CPU
    /// (`calibrate::same_cpu_points`; none on other backends, or with a CPU per rank).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_cpu: Vec<(usize, f64)>,
    /// The bands fitted to `same_cpu`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub same_cpu_bands: Vec<hypercomm_rt::select::Band>,
    /// The share of a lone message's length at which the bands price each end when its
    /// idle sender helps copy it, by size: (bytes, share) (`shared-copy`; none when not
    /// measured: fewer than 2 CPUs, or no size from `threads::SHARED_COPY_FROM`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_copy: Vec<(u64, f64)>,
    /// Where it was saved.
    pub saved: String,
}

/// `hypercomm calibrate`'s report as text.
pub fn calibration_text(r: &CalibrationReport) -> String {
    let how = match r.pattern {
        super::calibrate::Pattern::Exchange => {
            "both ranks of a pair send and receive at once; one-way time: the median exchange"
        }
        super::calibrate::Pattern::PingPong => "one-way time: half the median round trip",
    };
    let mut s = format!(
        "# {} on the {} backend, {} ranks ({how}, mean over pairs)\n",
        r.pattern.name(),
        r.backend,
        r.ranks
    );
    let banded = |bytes: usize| {
        let band = r.bands.iter().rev().find(|b| b.from <= bytes as u64);
        band.map(|b| b.beta + b.tau * bytes as f64)
    };
    let rows: Vec<Vec<String>> = r
        .points
        .iter()
        .map(|p| {
            let fitted = r.beta + r.tau * p.bytes as f64;
            let mut row = vec![
                size(p.bytes),
                secs(p.time),
                secs(fitted),
                sig(Some(p.time / fitted), 3),
            ];
            if !r.bands.is_empty() {
                let b = banded(p.bytes).unwrap_or(fitted);
                row.extend([secs(b), sig(Some(p.time / b), 3)]);
            }
            if !r.fresh.is_empty() {
                let band = r.fresh.iter().rev().find(|b| b.from <= p.bytes as u64);
                let f = band.map_or(fitted, |b| b.beta + b.tau * p.bytes as f64);
                row.extend([secs(p.fresh), sig(Some(p.fresh / f), 3)]);
            }
            if !r.same_cpu_bands.is_empty() {
                let t = r
                    .same_cpu
                    .iter()
                    .find(|q| q.0 == p.bytes)
                    .map_or(0.0, |q| q.1);
                let band = r
                    .same_cpu_bands
                    .iter()
                    .rev()
                    .find(|b| b.from <= p.bytes as u64);
                let f = band.map_or(fitted, |b| b.beta + b.tau * p.bytes as f64);
                row.extend([secs(t), sig(Some(t / f), 3)]);
            }
            row
        })
        .collect();
    let mut head = vec!["size", "measured", "fitted", "ratio"];
    if !r.bands.is_empty() {
        head.extend(["banded", "ratio"]);
    }
    if !r.fresh.is_empty() {
        head.extend(["fresh", "ratio"]);
    }
    if !r.same_cpu_bands.is_empty() {
        head.extend(["same CPU", "ratio"]);
    }
    s.push_str(&table(&head, &rows));
    if let Some(first) = r.bands.first() {
        s.push_str(&format!(
            "# one line misfits by more than {:.0}%: {} size bands from {} (the `banded` \
             columns), which auto and the predictions use\n",
            100.0 * super::calibrate::BAND_TOLERANCE,
            r.bands.len(),
            size(first.from as usize)
        ));
    }
    if !r.fresh.is_empty() {
        s.push_str(
            "# fresh: the same exchange of data its sender wrote since the receiver last \
             read it (partial sums, forwarded blocks), and its fit's ratio; the `fresh` \
             bands price such messages\n",
        );
    }
    if !r.same_cpu_bands.is_empty() {
        s.push_str(
            "# same CPU: one message between two ranks run as fibers of one CPU (pairs of \
             fibers, one pair a CPU), and its fit's ratio; the `same-cpu` bands price such \
             messages when ranks share CPUs as fibers\n",
        );
    }
    let mut lines = vec![
        ("beta", format!("{:e} s ({})", r.beta, secs(r.beta))),
        ("tau", format!("{:e} s/B ({} GB/s)", r.tau, gbps(r.tau))),
    ];
    if !r.shared_copy.is_empty() {
        let shares: Vec<String> = r
            .shared_copy
            .iter()
            .map(|&(bytes, share)| format!("{} {share:.3}", size(bytes as usize)))
            .collect();
        lines.push((
            "shared-copy",
            format!(
                "{} (a lone message's idle sender helps copy it: each end is priced at \
                 this share of its length)",
                shares.join(", ")
            ),
        ));
    }
    lines.push(("saved", r.saved.clone()));
    s.push_str(&block(&lines));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// τ = 0 is infinite bandwidth, not 1e-9/1e-300 printed to 300 digits.
    #[test]
    fn bandwidth_of_a_zero_or_negative_tau_is_not_a_number() {
        assert_eq!(gbps(1e-10), "10.0");
        assert_eq!(gbps(0.0), "∞");
        assert_eq!(gbps(-1e-10), "n/a");
        assert_eq!(gbps(f64::NAN), "n/a");
    }
}

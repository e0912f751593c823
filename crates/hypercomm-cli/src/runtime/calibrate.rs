//! `hypercomm calibrate`: β and τ of a backend from point-to-point transfers.
//!
//! Ranks pair up, (0, 1), (2, 3), …, and every pair measures at once at sizes 1 B,
//! 4 B, 16 B, … (powers of 4), in one of two [`Pattern`]s:
//! - `exchange` (the default): both ranks send and receive at once
//!   (`send_receive_into`, OSU's bidirectional pattern), and the one-way time is the
//!   median exchange. This is what a step of the collectives does (every rank sends and
//!   receives in the same step, all ranks at once), so τ includes the sharing of memory
//!   bandwidth between ranks that copy at the same time;
//! - `pingpong`: the even rank sends, the odd rank receives and sends the message back;
//!   the one-way time is half the median round trip (one rank copies at a time: the
//!   point-to-point latency and bandwidth of OSU's `osu_latency`).
//!
//! Medians, not means, so that a rank descheduled on a shared machine does not skew a
//! size; each size's time is averaged over the pairs. [`fit`] fits `t(n) = β + τ·n` by least squares on the relative error
//! (each point weighted by 1/t², so the small sizes, which fix β, count as much as the
//! large ones, which fix τ).
//!
//! The file is the runtime's format ([`hypercomm_rt::Calibration::parse`]):
//! `beta = …` and `tau = …` lines with `#` comments. Where it goes and where `run` and
//! `bench` read it is [`CalibrationSource`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use hypercomm_rt::select::CALIBRATION_ENV;
use hypercomm_rt::{Calibration, Comm, Transport};
use serde::Serialize;

use super::CalibrationInfo;

/// One ping-pong size: bytes and the one-way time (half the median round trip), seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PingPong {
    /// Message size, bytes.
    pub bytes: usize,
    /// Half the median round trip, seconds.
    pub time: f64,
}

/// Ping-pong sizes: powers of 4 from 1 B up to `max` bytes.
pub fn sizes(max: usize) -> Vec<usize> {
    std::iter::successors(Some(1usize), |&s| s.checked_mul(4))
        .take_while(|&s| s <= max.max(1))
        .collect()
}

/// Round trips at `bytes` when the user gave none: about 256 MiB moved, 50 to 5000.
pub fn default_reps(bytes: usize) -> u64 {
    ((256usize << 20) / bytes.max(1)).clamp(50, 5000) as u64
}

/// How a pair of ranks measures a transfer (`--pattern` of both `calibrate` commands).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Both ranks send and receive at once (bidirectional); one-way time = the exchange.
    Exchange,
    /// One way and back; one-way time = half the round trip.
    #[value(name = "pingpong")]
    PingPong,
}

impl Pattern {
    /// The name used on the command line and in the calibration file.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Exchange => "exchange",
            Pattern::PingPong => "ping-pong",
        }
    }
}

/// Rank `comm.rank()`'s part: `pattern` with its partner at every size, `reps(size)`
/// repetitions each after two untimed ones, each timed. The even rank of each pair
/// returns its one-way times; odd ranks, and the last rank of an odd count, return none.
pub fn calibrate_rank<X: Transport>(
    comm: &mut Comm<X>,
    sizes: &[usize],
    reps: &dyn Fn(usize) -> u64,
    pattern: Pattern,
) -> hypercomm_rt::Result<Vec<PingPong>> {
    let (r, k) = (comm.rank(), comm.size());
    let partner = if r % 2 == 0 { r + 1 } else { r - 1 };
    let active = partner < k;
    let mut points = Vec::new();
    for &bytes in sizes {
        let mut buf = vec![(r % 251) as u8; bytes];
        let mut other = vec![0u8; bytes];
        let n = reps(bytes);
        let mut trips = Vec::with_capacity(n as usize);
        comm.barrier()?;
        if active {
            for i in 0..n + 2 {
                let start = Instant::now();
                match pattern {
                    Pattern::Exchange => {
                        comm.send_receive_into(partner, &buf, partner, &mut other)?;
                        std::mem::swap(&mut buf, &mut other);
                    }
                    Pattern::PingPong if r % 2 == 0 => {
                        comm.send(partner, &buf)?;
                        comm.receive_into(partner, &mut buf)?;
                    }
                    Pattern::PingPong => {
                        comm.receive_into(partner, &mut buf)?;
                        comm.send(partner, &buf)?;
                    }
                }
                if i >= 2 {
                    trips.push(start.elapsed().as_secs_f64());
                }
            }
        }
        if active && r % 2 == 0 {
            trips.sort_by(f64::total_cmp);
            let median = trips[trips.len() / 2];
            let time = match pattern {
                Pattern::Exchange => median,
                Pattern::PingPong => median / 2.0,
            };
            points.push(PingPong { bytes, time });
        }
    }
    comm.barrier()?;
    Ok(points)
}

/// The mean over pairs of each size's time (`per_rank` holds each rank's points).
pub fn average(per_rank: &[Vec<PingPong>]) -> Vec<PingPong> {
    let pairs: Vec<&Vec<PingPong>> = per_rank.iter().filter(|p| !p.is_empty()).collect();
    let Some(first) = pairs.first() else {
        return vec![];
    };
    (0..first.len())
        .map(|i| PingPong {
            bytes: first[i].bytes,
            time: pairs.iter().map(|p| p[i].time).sum::<f64>() / pairs.len() as f64,
        })
        .collect()
}

/// β and τ of `t = β + τ·n` by weighted least squares (weights 1/t²: relative error);
/// a negative estimate is clamped to 0 (the runtime refuses negative values).
pub fn fit(points: &[PingPong]) -> Calibration {
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points.iter().filter(|p| p.time > 0.0) {
        let (x, y) = (p.bytes as f64, p.time);
        let w = 1.0 / (y * y);
        sw += w;
        sx += w * x;
        sy += w * y;
        sxx += w * x * x;
        sxy += w * x * y;
    }
    let det = sw * sxx - sx * sx;
    if sw == 0.0 {
        return Calibration::default();
    }
    if det.abs() <= f64::EPSILON * sw * sxx {
        // One size: all of it is start-up.
        return Calibration {
            beta: sy / sw,
            tau: 0.0,
        };
    }
    let tau = (sw * sxy - sx * sy) / det;
    let beta = (sy - tau * sx) / sw;
    Calibration {
        beta: beta.max(0.0),
        tau: tau.max(0.0),
    }
}

/// Where `calibrate` saves, after checking `--reps`: `output`, else the default
/// ([`CalibrationSource::from_env`]); an error when neither names a path.
pub fn output_path(
    output: Option<PathBuf>,
    reps: Option<u64>,
) -> Result<PathBuf, hypercomm::error::Error> {
    use hypercomm::error::Error;
    if reps == Some(0) {
        return Err(Error::InvalidParameter {
            what: "--reps",
            reason: "0; valid: a whole number ≥ 1".into(),
        });
    }
    output
        .or(CalibrationSource::from_env().path)
        .ok_or_else(|| {
            Error::MissingParameter(
                "no default calibration path (neither HYPERCOMM_CALIBRATION, XDG_CONFIG_HOME \
             nor HOME is set): pass --output FILE"
                    .into(),
            )
        })
}

/// Write `text` to `path`, creating its directory.
pub fn save(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)
}

/// The text of a calibration file.
pub fn file_text(
    c: Calibration,
    backend: &str,
    ranks: u32,
    pattern: Pattern,
    points: &[PingPong],
) -> String {
    let mut s = format!(
        "# hypercomm calibration of the {backend} backend: {ranks} ranks, {} at {} sizes\n\
         # one-way time t(n) = beta + tau * n (seconds, n in bytes), least squares on the relative error\n",
        pattern.name(),
        points.len()
    );
    for p in points {
        s.push_str(&format!("#   {:>10} B  {:.4e} s\n", p.bytes, p.time));
    }
    s.push_str(&format!("beta = {:e}\ntau = {:e}\n", c.beta, c.tau));
    s
}

/// Where the calibration lives: the file `HYPERCOMM_CALIBRATION` names (the runtime
/// reads it there), else `$XDG_CONFIG_HOME/hypercomm/calibration.conf`, else
/// `$HOME/.config/hypercomm/calibration.conf`. `calibrate` writes there by default;
/// `run`, `bench` and their `auto` read it when it exists, the runtime's defaults
/// otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationSource {
    /// The path, if one can be named.
    pub path: Option<PathBuf>,
    /// Whether it came from `HYPERCOMM_CALIBRATION` (then it must exist).
    pub from_env: bool,
}

impl CalibrationSource {
    /// The source from the environment.
    pub fn from_env() -> Self {
        if let Some(p) = std::env::var_os(CALIBRATION_ENV).filter(|p| !p.is_empty()) {
            return CalibrationSource {
                path: Some(PathBuf::from(p)),
                from_env: true,
            };
        }
        let dir = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|p| !p.is_empty())
                    .map(|h| Path::new(&h).join(".config"))
            });
        CalibrationSource {
            path: dir.map(|d| d.join("hypercomm").join("calibration.conf")),
            from_env: false,
        }
    }

    /// The calibration to use: the file if it exists (or was named by the
    /// environment, which makes a missing file an error), the defaults otherwise.
    pub fn load(&self) -> hypercomm_rt::Result<CalibrationInfo> {
        match &self.path {
            Some(p) if self.from_env || p.exists() => Ok(CalibrationInfo::new(
                Calibration::load(p)?,
                Some(p.display().to_string()),
            )),
            _ => Ok(CalibrationInfo::new(Calibration::default(), None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_a_line() {
        let pts: Vec<PingPong> = sizes(1 << 20)
            .into_iter()
            .map(|b| PingPong {
                bytes: b,
                time: 2e-6 + 5e-10 * b as f64,
            })
            .collect();
        let c = fit(&pts);
        assert!((c.beta - 2e-6).abs() < 1e-12, "{c:?}");
        assert!((c.tau - 5e-10).abs() < 1e-16, "{c:?}");
    }

    #[test]
    fn file_text_parses_back() {
        let c = Calibration {
            beta: 1.5e-6,
            tau: 2.5e-10,
        };
        let pts = [PingPong {
            bytes: 4,
            time: 1e-6,
        }];
        assert_eq!(
            Calibration::parse(&file_text(c, "threads", 2, Pattern::Exchange, &pts)).unwrap(),
            c
        );
    }

    #[test]
    fn sizes_are_powers_of_four() {
        assert_eq!(sizes(100), vec![1, 4, 16, 64]);
        assert_eq!(sizes(0), vec![1]);
    }
}

//! The documented JSON form of a schedule (`hypercomm schedule` writes it,
//! `hypercomm verify --schedule FILE` reads it).
//!
//! ```json
//! {
//!   "format": "hypercomm-schedule/1",
//!   "topology": "hypercube:1",
//!   "collective": {"kind": "broadcast", "root": 0},
//!   "len": 4,
//!   "algo": "sbt",
//!   "commutative": true,
//!   "steps": 1,
//!   "programs": [
//!     {"rank": 0, "tmp_len": 0, "steps": [[
//!       {"send": {"to": [1], "from": [{"buf": "in", "off": 0, "len": 4}]}},
//!       {"local": {"from": {"buf": "in", "off": 0, "len": 4}, "into": {"buf": "out", "off": 0, "len": 4}}}
//!     ]]},
//!     {"rank": 1, "tmp_len": 0, "steps": [[
//!       {"recv": {"from": 0, "into": [{"buf": "out", "off": 0, "len": 4}]}}
//!     ]]}
//!   ]
//! }
//! ```
//!
//! - `collective.kind`: `p2p` (with `src`, `dst`), `broadcast`, `scatter`, `gather`,
//!   `reduce` (with `root`), `allgather`, `alltoall`, `allreduce`, `scan`,
//!   `exclusive-scan`, `reduce-scatter`.
//! - `len`: m, as in `--len`. `commutative`: whether combines may reorder (default true).
//! - `counts` (optional): a variable-count collective's counts, as `--counts` takes them
//!   (a list of one count per rank, or for alltoallv a list of rows); absent, every
//!   count is `len`.
//! - `steps`: the number of lock-step rounds; every program has that many.
//! - an op is `send` (`to`: ranks, `from`: regions), `recv` (`from`: a rank, `into`:
//!   regions, `action`: `place` (default), `combine_left` or `combine_right`) or `local`
//!   (`from`, `into`: one region each, `action`).
//! - a region is `buf` (`in`, `out`, `tmp`), `off`, `len`: `len` elements from `off`;
//!   or a strided region, with `count` (≥ 2) and `stride` as well: `count` segments of
//!   `len / count` elements, segment j at `off + j·stride` (`len` a multiple of
//!   `count`, `stride` at least a segment), e.g. ADEA's
//!   `{"buf": "out", "off": 1, "len": 4, "stride": 4, "count": 4}` (blocks 1, 5, 9, 13
//!   of one element). A strided region holds at most 2^20 segments
//!   ([`MAX_SEGMENTS`](crate::schedule::MAX_SEGMENTS)), one step of a program names at most 2^22
//!   ([`MAX_STEP_SEGMENTS`]) and a document 2^26 ([`MAX_DOCUMENT_SEGMENTS`]), counting
//!   a strided region's `count` and any other region as 1: the verifier's work is
//!   bounded before it begins.
//!
//! Parsing reports the JSON path of the first problem (e.g.
//! `programs[1].steps[0][0].recv.from`); what parses but breaks a rule (a wrong peer, a
//! program with too few steps) is the verifier's business and comes back as a
//! [`Violation`](crate::verify::Violation).

use serde::{Deserialize, Serialize};

use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::{Materialized, Op, Program, Region, Schedule};
use crate::topology::Topology;

/// The format tag of this version.
pub const FORMAT: &str = "hypercomm-schedule/1";

/// The most segments one step of one program may name (2^22; a strided region counts
/// its `count`, at most [`MAX_SEGMENTS`](crate::schedule::MAX_SEGMENTS), any other region 1), so that the verifier's
/// work and memory per step stay bounded (a few hundred MB, a fraction of a second):
/// ADEA's busiest step on hypercube:20 names 2^20.
pub const MAX_STEP_SEGMENTS: u64 = 1 << 22;

/// The most segments a whole document may name (2^26), so that verifying a file takes
/// seconds at most: ADEA's schedule on hypercube:13, written out, names about 2^25.
pub const MAX_DOCUMENT_SEGMENTS: u64 = 1 << 26;

/// A schedule with the problem it solves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    pub format: String,
    pub topology: Topology,
    #[serde(deserialize_with = "strict_collective")]
    pub collective: Collective,
    pub len: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algo: Option<String>,
    #[serde(default = "yes")]
    pub commutative: bool,
    /// A variable-count collective's counts (a list, or a list of lists for
    /// alltoallv); absent: every count `len`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<crate::counts::Counts>,
    pub steps: usize,
    pub programs: Vec<Program>,
}

fn yes() -> bool {
    true
}

/// The collective, refusing fields its kind does not take: serde's internally tagged
/// enum denies unknown fields of the variants with parameters only, so `{"kind":
/// "allgather", "root": 1}` read as an all-gather and the root was silently dropped.
fn strict_collective<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Collective, D::Error> {
    use serde::de::Error as _;
    let map = serde_json::Map::<String, serde_json::Value>::deserialize(de)?;
    let c: Collective =
        serde_json::from_value(serde_json::Value::Object(map.clone())).map_err(D::Error::custom)?;
    let known = match serde_json::to_value(c) {
        Ok(serde_json::Value::Object(k)) => k,
        _ => return Ok(c),
    };
    match map.keys().find(|f| !known.contains_key(*f)) {
        Some(f) => Err(D::Error::custom(format!(
            "unknown field `{f}` for kind `{}`; valid: {}",
            c.kind(),
            known
                .keys()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(c),
    }
}

impl Document {
    /// The document of `schedule` (every program is generated).
    pub fn new(
        topology: Topology,
        collective: Collective,
        len: u64,
        algo: Option<&str>,
        commutative: bool,
        schedule: &dyn Schedule,
    ) -> Self {
        Document {
            format: FORMAT.into(),
            topology,
            collective,
            len,
            algo: algo.map(str::to_string),
            commutative,
            counts: None,
            steps: schedule.steps(),
            programs: (0..schedule.nodes()).map(|r| schedule.program(r)).collect(),
        }
    }

    /// Parse a document, reporting the JSON path of the first problem.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let doc: Document = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            Error::MalformedSchedule {
                path: if path == "." {
                    "(document)".into()
                } else {
                    path
                },
                reason: e.into_inner().to_string(),
            }
        })?;
        if doc.format != FORMAT {
            return Err(Error::MalformedSchedule {
                path: "format".into(),
                reason: format!("`{}` is not supported; valid: `{FORMAT}`", doc.format),
            });
        }
        doc.check_segments()?;
        doc.collective
            .check_ranks(doc.topology.nodes())
            .map_err(|e| Error::MalformedSchedule {
                path: "collective".into(),
                reason: e.to_string(),
            })?;
        Ok(doc)
    }

    /// Refuse a document that names more segments than [`MAX_STEP_SEGMENTS`] in one
    /// step of one program or [`MAX_DOCUMENT_SEGMENTS`] in all (a strided region counts
    /// its `count`, any other region 1): the verifier's work is bounded before it
    /// starts.
    fn check_segments(&self) -> Result<(), Error> {
        let mut total = 0u64;
        for (i, prog) in self.programs.iter().enumerate() {
            for (s, step) in prog.steps.iter().enumerate() {
                let named: u64 = step
                    .ops
                    .iter()
                    .flat_map(|op| -> Box<dyn Iterator<Item = &Region>> {
                        match op {
                            Op::Send { from, .. } => Box::new(from.iter()),
                            Op::Recv { into, .. } => Box::new(into.iter()),
                            Op::Local { from, into, .. } => Box::new([from, into].into_iter()),
                        }
                    })
                    .map(|r| r.count.max(1))
                    .fold(0, u64::saturating_add);
                let path = || format!("programs[{i}].steps[{s}]");
                if named > MAX_STEP_SEGMENTS {
                    return Err(Error::MalformedSchedule {
                        path: path(),
                        reason: format!(
                            "the step names {named} segments (a strided region counts its \
                             `count`), more than {MAX_STEP_SEGMENTS} (2^22), the most one \
                             step of a program may name"
                        ),
                    });
                }
                total = total.saturating_add(named);
                if total > MAX_DOCUMENT_SEGMENTS {
                    return Err(Error::MalformedSchedule {
                        path: path(),
                        reason: format!(
                            "the programs name more than {MAX_DOCUMENT_SEGMENTS} (2^26) \
                             segments up to here (a strided region counts its `count`), \
                             the most a schedule file may name"
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a document always serialises")
    }

    /// The programs as a [`Schedule`].
    pub fn schedule(&self) -> Materialized {
        Materialized {
            nodes: self.programs.len() as u32,
            steps: self.steps,
            programs: self.programs.clone(),
        }
    }
}

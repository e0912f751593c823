//! The collectives: what each rank holds before (its `in` buffer) and what it must hold
//! after (its `out` buffer). The verifier checks schedules against these contracts.
//!
//! `len` (m) is elements per message for point-to-point and broadcast, per rank's block
//! for scatter, gather and all-gather, per ordered pair for all-to-all, and per vector for
//! the reductions (the papers' m; Saad & Schultz 1985, §§2–6).

use crate::counts::{prefix, Counts, Layout};
use crate::error::Error;
use crate::schedule::Rank;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The kind of a collective, without its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    P2p,
    Broadcast,
    Scatter,
    Gather,
    Allgather,
    Alltoall,
    Reduce,
    Allreduce,
    Scan,
    ExclusiveScan,
    ReduceScatter,
    Download,
    Transpose,
    Gatherv,
    Scatterv,
    Allgatherv,
    Alltoallv,
    ReduceScatterv,
}

impl OpKind {
    /// Every kind, in the order the CLI lists them.
    pub const ALL: [OpKind; 18] = [
        OpKind::P2p,
        OpKind::Broadcast,
        OpKind::Scatter,
        OpKind::Gather,
        OpKind::Allgather,
        OpKind::Alltoall,
        OpKind::Reduce,
        OpKind::Allreduce,
        OpKind::Scan,
        OpKind::ExclusiveScan,
        OpKind::ReduceScatter,
        OpKind::Download,
        OpKind::Transpose,
        OpKind::Gatherv,
        OpKind::Scatterv,
        OpKind::Allgatherv,
        OpKind::Alltoallv,
        OpKind::ReduceScatterv,
    ];
    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::P2p => "p2p",
            OpKind::Broadcast => "broadcast",
            OpKind::Scatter => "scatter",
            OpKind::Gather => "gather",
            OpKind::Allgather => "allgather",
            OpKind::Alltoall => "alltoall",
            OpKind::Reduce => "reduce",
            OpKind::Allreduce => "allreduce",
            OpKind::Scan => "scan",
            OpKind::ExclusiveScan => "exclusive-scan",
            OpKind::ReduceScatter => "reduce-scatter",
            OpKind::Download => "download",
            OpKind::Transpose => "transpose",
            OpKind::Gatherv => "gatherv",
            OpKind::Scatterv => "scatterv",
            OpKind::Allgatherv => "allgatherv",
            OpKind::Alltoallv => "alltoallv",
            OpKind::ReduceScatterv => "reduce-scatterv",
        }
    }
    /// Whether the collective takes per-rank counts ([`crate::counts::Counts`]): MPI's
    /// `MPI_Gatherv`, `MPI_Scatterv`, `MPI_Allgatherv`, `MPI_Alltoallv` and
    /// `MPI_Reduce_scatter`.
    pub fn is_varcount(self) -> bool {
        matches!(
            self,
            OpKind::Gatherv
                | OpKind::Scatterv
                | OpKind::Allgatherv
                | OpKind::Alltoallv
                | OpKind::ReduceScatterv
        )
    }
    /// Whether the collective combines data with an operator.
    pub fn is_reduction(self) -> bool {
        matches!(
            self,
            OpKind::Reduce
                | OpKind::Allreduce
                | OpKind::Scan
                | OpKind::ExclusiveScan
                | OpKind::ReduceScatter
                | OpKind::ReduceScatterv
        )
    }
    /// Whether the collective has a root.
    pub fn has_root(self) -> bool {
        matches!(
            self,
            OpKind::Broadcast
                | OpKind::Scatter
                | OpKind::Gather
                | OpKind::Reduce
                | OpKind::Gatherv
                | OpKind::Scatterv
        )
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for OpKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let t = s.trim().to_ascii_lowercase().replace('_', "-");
        let alias = match t.as_str() {
            "bcast" => "broadcast",
            "all-gather" => "allgather",
            "all-to-all" | "total-exchange" => "alltoall",
            "all-reduce" => "allreduce",
            "exscan" => "exclusive-scan",
            "transposition" => "transpose",
            "all-gatherv" | "all-gather-v" | "allgather-v" => "allgatherv",
            "all-to-allv" | "all-to-all-v" | "alltoall-v" => "alltoallv",
            "gather-v" => "gatherv",
            "scatter-v" => "scatterv",
            "reduce-scatter-v" => "reduce-scatterv",
            other => other,
        };
        OpKind::ALL
            .into_iter()
            .find(|k| k.name() == alias)
            .ok_or_else(|| Error::UnknownOp {
                given: s.to_string(),
                valid: OpKind::ALL.map(|k| k.name()).join(" "),
            })
    }
}

/// A collective with its parameters (root, source, destination).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Collective {
    /// Move `in` of `src` to `out` of `dst` (Saad & Schultz 1985, §3).
    P2p { src: Rank, dst: Rank },
    /// Every rank's `out` gets the root's `in` (§2).
    Broadcast { root: Rank },
    /// Rank r's `out` gets block r of the root's `in` (§5).
    Scatter { root: Rank },
    /// Block r of the root's `out` gets rank r's `in` (§5).
    Gather { root: Rank },
    /// Block r of every `out` gets rank r's `in` (§4).
    Allgather,
    /// Block i of rank j's `out` gets block j of rank i's `in` (§6).
    Alltoall,
    /// The root's `out` gets in_0 ⊕ in_1 ⊕ … ⊕ in_{k−1}.
    Reduce { root: Rank },
    /// Every `out` gets in_0 ⊕ … ⊕ in_{k−1}.
    Allreduce,
    /// Rank r's `out` gets in_0 ⊕ … ⊕ in_r (seed 001, prefix sum).
    Scan,
    /// Rank r's `out` gets in_0 ⊕ … ⊕ in_{r−1}; rank 0's is left undefined.
    ExclusiveScan,
    /// Rank r's `out` gets block r of in_0 ⊕ … ⊕ in_{k−1}.
    ReduceScatter,
    /// Downloading from a host (Gichev 1992, seed 003): the host, the last rank k − 1,
    /// holds one block of m elements for each other rank (a processing element, PE)
    /// and none for itself; PE r's `out` gets block r of the host's `in`. The host's
    /// `out` is empty. Only topologies with a host run it (`hypercube:N+host`).
    Download,
    /// The ranks as a Q × Q matrix (k = Q², rank x·Q + y at (x, y)): rank (x, y)'s
    /// `out` gets rank (y, x)'s `in`, m elements (seed 004, §3.5 (D): the grid's
    /// diagonal algorithm moves block (x, y) to (y, x) only, a transposition of the
    /// grid, not a multiscatter). The diagonal keeps its own.
    Transpose,
    /// `MPI_Gatherv`: rank r's `in` holds c_r elements; the root's `out` gets them all,
    /// rank r's at Σ_{i<r} c_i. Counts in [`crate::verify::Problem::counts`]; without
    /// them every c_r is m (a gather).
    Gatherv { root: Rank },
    /// `MPI_Scatterv`: the root's `in` holds Σ c_r elements; rank r's `out` gets the
    /// c_r from Σ_{i<r} c_i on.
    Scatterv { root: Rank },
    /// `MPI_Allgatherv`: every `out` gets every rank's c_r elements, rank r's at
    /// Σ_{i<r} c_i.
    Allgatherv,
    /// `MPI_Alltoallv`: rank i sends C\[i\]\[j\] elements to rank j; i's `in` holds its row
    /// (block j at Σ_{j'<j} C\[i\]\[j'\]), j's `out` its column (block i at
    /// Σ_{i'<i} C\[i'\]\[j\]).
    Alltoallv,
    /// `MPI_Reduce_scatter`: every `in` holds Σ c_r elements; rank r's `out` gets the
    /// c_r elements from Σ_{i<r} c_i on of in_0 ⊕ … ⊕ in_{k−1}.
    ReduceScatterv,
}

/// The rank that holds the block rank `r` gets in a transposition of `k` = Q² ranks
/// (its mirror across the diagonal); `r` itself when k is not a square.
pub fn transposed(k: u32, r: Rank) -> Rank {
    let q = square_side(k).unwrap_or(1);
    if q * q != k {
        return r;
    }
    (r % q) * q + r / q
}

/// Q with Q² = k, if k is a square.
pub fn square_side(k: u32) -> Option<u32> {
    let q = (k as f64).sqrt().round() as u32;
    (q * q == k).then_some(q)
}

/// A run of a rank's `out` that must hold, element for element, the combination over
/// `ranks` (half-open rank ranges in combination order) of their `in[off..off+len]`.
/// For data movement `ranks` is one rank. With `block = Some(b)`, the run is instead
/// blocks of `b` elements of consecutive ranks from `ranks[0].0` on, each their
/// `in[off..off+b]` (a gather's or an all-gather's result, in O(1) space).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub start: u64,
    pub len: u64,
    pub off: u64,
    pub ranks: Vec<(Rank, Rank)>,
    pub block: Option<u64>,
}

impl Collective {
    /// The kind of this collective.
    pub fn kind(&self) -> OpKind {
        match self {
            Collective::P2p { .. } => OpKind::P2p,
            Collective::Broadcast { .. } => OpKind::Broadcast,
            Collective::Scatter { .. } => OpKind::Scatter,
            Collective::Gather { .. } => OpKind::Gather,
            Collective::Allgather => OpKind::Allgather,
            Collective::Alltoall => OpKind::Alltoall,
            Collective::Reduce { .. } => OpKind::Reduce,
            Collective::Allreduce => OpKind::Allreduce,
            Collective::Scan => OpKind::Scan,
            Collective::ExclusiveScan => OpKind::ExclusiveScan,
            Collective::ReduceScatter => OpKind::ReduceScatter,
            Collective::Download => OpKind::Download,
            Collective::Transpose => OpKind::Transpose,
            Collective::Gatherv { .. } => OpKind::Gatherv,
            Collective::Scatterv { .. } => OpKind::Scatterv,
            Collective::Allgatherv => OpKind::Allgatherv,
            Collective::Alltoallv => OpKind::Alltoallv,
            Collective::ReduceScatterv => OpKind::ReduceScatterv,
        }
    }

    /// The fixed-count collective a variable-count one is when every count is m
    /// (`self` for the others).
    pub fn fixed(&self) -> Collective {
        match *self {
            Collective::Gatherv { root } => Collective::Gather { root },
            Collective::Scatterv { root } => Collective::Scatter { root },
            Collective::Allgatherv => Collective::Allgather,
            Collective::Alltoallv => Collective::Alltoall,
            Collective::ReduceScatterv => Collective::ReduceScatter,
            c => c,
        }
    }

    /// Build the collective of `kind` from optional parameters, checking ranks against
    /// `nodes`. The root defaults to 0; point-to-point needs `src` and `dst`.
    pub fn new(
        kind: OpKind,
        nodes: u32,
        root: Option<u64>,
        src: Option<u64>,
        dst: Option<u64>,
    ) -> Result<Self, Error> {
        let check = |what: &'static str, r: u64| -> Result<Rank, Error> {
            if r < nodes as u64 {
                Ok(r as Rank)
            } else {
                Err(Error::RankOutOfRange {
                    what,
                    rank: r,
                    nodes,
                })
            }
        };
        let root = check("root", root.unwrap_or(0))?;
        Ok(match kind {
            OpKind::P2p => Collective::P2p {
                src: check(
                    "source",
                    src.ok_or_else(|| Error::MissingParameter("p2p needs --src".into()))?,
                )?,
                dst: check(
                    "destination",
                    dst.ok_or_else(|| Error::MissingParameter("p2p needs --dst".into()))?,
                )?,
            },
            OpKind::Broadcast => Collective::Broadcast { root },
            OpKind::Scatter => Collective::Scatter { root },
            OpKind::Gather => Collective::Gather { root },
            OpKind::Allgather => Collective::Allgather,
            OpKind::Alltoall => Collective::Alltoall,
            OpKind::Reduce => Collective::Reduce { root },
            OpKind::Allreduce => Collective::Allreduce,
            OpKind::Scan => Collective::Scan,
            OpKind::ExclusiveScan => Collective::ExclusiveScan,
            OpKind::ReduceScatter => Collective::ReduceScatter,
            OpKind::Download => Collective::Download,
            OpKind::Gatherv => Collective::Gatherv { root },
            OpKind::Scatterv => Collective::Scatterv { root },
            OpKind::Allgatherv => Collective::Allgatherv,
            OpKind::Alltoallv => Collective::Alltoallv,
            OpKind::ReduceScatterv => Collective::ReduceScatterv,
            OpKind::Transpose => {
                if square_side(nodes).is_none() {
                    return Err(Error::InvalidParameter {
                        what: "--op",
                        reason: format!(
                            "transpose needs a square number of ranks (Q × Q), not {nodes}"
                        ),
                    });
                }
                Collective::Transpose
            }
        })
    }

    /// The root, if the collective has one (the source for point-to-point).
    pub fn root(&self) -> Option<Rank> {
        match *self {
            Collective::Broadcast { root }
            | Collective::Scatter { root }
            | Collective::Gather { root }
            | Collective::Reduce { root }
            | Collective::Gatherv { root }
            | Collective::Scatterv { root } => Some(root),
            Collective::P2p { src, .. } => Some(src),
            _ => None,
        }
    }

    /// Whether the rank ranges are in the collective's range `0..nodes`.
    pub fn check_ranks(&self, nodes: u32) -> Result<(), Error> {
        let ranks: &[(&'static str, Rank)] = match self {
            Collective::P2p { src, dst } => &[("source", *src), ("destination", *dst)],
            Collective::Broadcast { root }
            | Collective::Scatter { root }
            | Collective::Gather { root }
            | Collective::Reduce { root }
            | Collective::Gatherv { root }
            | Collective::Scatterv { root } => &[("root", *root)],
            _ => &[],
        };
        for &(what, r) in ranks {
            if r >= nodes {
                return Err(Error::RankOutOfRange {
                    what,
                    rank: r as u64,
                    nodes,
                });
            }
        }
        Ok(())
    }

    /// Length of rank `r`'s `in` buffer with `k` ranks and length `m`.
    pub fn in_len(&self, k: u32, m: u64, r: Rank) -> u64 {
        let k = k as u64;
        match self.fixed() {
            Collective::P2p { src, .. } => {
                if r == src {
                    m
                } else {
                    0
                }
            }
            Collective::Broadcast { root } => {
                if r == root {
                    m
                } else {
                    0
                }
            }
            Collective::Scatter { root } => {
                if r == root {
                    k * m
                } else {
                    0
                }
            }
            Collective::Alltoall | Collective::ReduceScatter => k * m,
            // The host (the last rank) holds a block for each of the k − 1 PEs.
            Collective::Download => {
                if r as u64 + 1 == k {
                    (k - 1) * m
                } else {
                    0
                }
            }
            _ => m,
        }
    }

    /// Length of rank `r`'s `out` buffer with `k` ranks and length `m`.
    pub fn out_len(&self, k: u32, m: u64, r: Rank) -> u64 {
        let k = k as u64;
        match self.fixed() {
            Collective::P2p { dst, .. } => {
                if r == dst {
                    m
                } else {
                    0
                }
            }
            Collective::Gather { root } => {
                if r == root {
                    k * m
                } else {
                    0
                }
            }
            Collective::Reduce { root } => {
                if r == root {
                    m
                } else {
                    0
                }
            }
            Collective::Allgather | Collective::Alltoall => k * m,
            Collective::Download => {
                if r as u64 + 1 == k {
                    0
                } else {
                    m
                }
            }
            _ => m,
        }
    }

    /// What rank `r`'s `out` must hold after the collective (see [`Segment`]).
    pub fn expected(&self, k: u32, m: u64, r: Rank) -> Vec<Segment> {
        let one = |start: u64, off: u64, from: Rank| Segment {
            start,
            len: m,
            off,
            ranks: vec![(from, from + 1)],
            block: None,
        };
        // Every rank's block side by side, from input offset `off`.
        let blocks = |off: u64| Segment {
            start: 0,
            len: k as u64 * m,
            off,
            ranks: vec![(0, 1)],
            block: Some(m),
        };
        let all = |start: u64, off: u64, upto: Rank| Segment {
            start,
            len: m,
            off,
            ranks: vec![(0, upto)],
            block: None,
        };
        let mut v = match self.fixed() {
            Collective::P2p { src, dst } => {
                if r == dst {
                    vec![one(0, 0, src)]
                } else {
                    vec![]
                }
            }
            Collective::Broadcast { root } => vec![one(0, 0, root)],
            Collective::Scatter { root } => vec![one(0, r as u64 * m, root)],
            Collective::Gather { root } => {
                if r == root {
                    vec![blocks(0)]
                } else {
                    vec![]
                }
            }
            Collective::Allgather => vec![blocks(0)],
            Collective::Alltoall => vec![blocks(r as u64 * m)],
            Collective::Reduce { root } => {
                if r == root {
                    vec![all(0, 0, k)]
                } else {
                    vec![]
                }
            }
            Collective::Allreduce => vec![all(0, 0, k)],
            Collective::Scan => vec![all(0, 0, r + 1)],
            Collective::ExclusiveScan => {
                if r == 0 {
                    vec![]
                } else {
                    vec![all(0, 0, r)]
                }
            }
            Collective::ReduceScatter => vec![all(0, r as u64 * m, k)],
            Collective::Download => {
                if r + 1 == k {
                    vec![]
                } else {
                    vec![one(0, r as u64 * m, k - 1)]
                }
            }
            Collective::Transpose => vec![one(0, 0, transposed(k, r))],
            _ => unreachable!("fixed() maps the variable-count collectives away"),
        };
        v.retain(|s| s.len > 0);
        v
    }
}

impl Collective {
    /// Length of rank `r`'s `in` with `counts` (checked against the collective), or as
    /// [`in_len`](Self::in_len) without.
    pub fn in_len_with(&self, k: u32, m: u64, counts: Option<&Counts>, r: Rank) -> u64 {
        self.lens_with(k, m, counts, r).0
    }

    /// Length of rank `r`'s `out` with `counts`, or as [`out_len`](Self::out_len)
    /// without.
    pub fn out_len_with(&self, k: u32, m: u64, counts: Option<&Counts>, r: Rank) -> u64 {
        self.lens_with(k, m, counts, r).1
    }

    fn lens_with(&self, k: u32, m: u64, counts: Option<&Counts>, r: Rank) -> (u64, u64) {
        let root = self.root().unwrap_or(0);
        match (self, counts) {
            (Collective::Alltoallv, Some(Counts::Matrix(c))) => (
                c[r as usize].iter().sum(),
                c.iter().map(|row| row[r as usize]).sum(),
            ),
            // The host (the last rank) sends every PE its portion.
            (Collective::Download, Some(Counts::PerRank(c))) => {
                if r + 1 == k {
                    (c.iter().sum(), 0)
                } else {
                    (0, c[r as usize])
                }
            }
            (_, Some(Counts::PerRank(c))) if self.kind().is_varcount() => {
                let (mine, all) = (c[r as usize], c.iter().sum::<u64>());
                let at_root = |x: u64| if r == root { x } else { 0 };
                match self {
                    Collective::Gatherv { .. } => (mine, at_root(all)),
                    Collective::Scatterv { .. } => (at_root(all), mine),
                    Collective::Allgatherv => (mine, all),
                    _ => (all, mine),
                }
            }
            _ => (self.in_len(k, m, r), self.out_len(k, m, r)),
        }
    }

    /// What rank `r`'s `out` must hold with `counts` (one segment per non-empty block),
    /// or as [`expected`](Self::expected) without.
    pub fn expected_with(&self, k: u32, m: u64, counts: Option<&Counts>, r: Rank) -> Vec<Segment> {
        if let (Collective::Download, Some(Counts::PerRank(c))) = (self, counts) {
            // PE r's portion, from its offset in the host's `in`.
            let (len, off) = (c[r as usize], prefix(c)[r as usize]);
            return if r + 1 == k || len == 0 {
                vec![]
            } else {
                vec![Segment {
                    start: 0,
                    len,
                    off,
                    ranks: vec![(k - 1, k)],
                    block: None,
                }]
            };
        }
        let Some(counts) = counts.filter(|_| self.kind().is_varcount()) else {
            return self.expected(k, m, r);
        };
        let root = self.root().unwrap_or(0);
        let seg = |start: u64, len: u64, off: u64, ranks: (Rank, Rank)| Segment {
            start,
            len,
            off,
            ranks: vec![ranks],
            block: None,
        };
        let mut v = match (Layout::new(self.kind(), root, k, counts), counts) {
            (Some(l), _) => (0..k)
                .map(|i| seg(l.dst(i, r), l.len(i, r), l.src(i, r), (i, i + 1)))
                .collect(),
            (None, Counts::PerRank(c)) => {
                let p = prefix(c);
                vec![seg(0, c[r as usize], p[r as usize], (0, k))]
            }
            (None, Counts::Matrix(_)) => vec![],
        };
        v.retain(|s| s.len > 0);
        v
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Collective::P2p { src, dst } => write!(f, "p2p {src}→{dst}"),
            Collective::Broadcast { root }
            | Collective::Scatter { root }
            | Collective::Gather { root }
            | Collective::Reduce { root }
            | Collective::Gatherv { root }
            | Collective::Scatterv { root } => {
                write!(f, "{} (root {root})", self.kind())
            }
            _ => write!(f, "{}", self.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rank (x, y) of a Q × Q grid gets the input of (y, x); the diagonal keeps its
    /// own; a non-square rank count is refused with the reason.
    #[test]
    fn the_transposition_mirrors_the_grid() {
        for q in 1..=6u32 {
            let k = q * q;
            let c = Collective::new(OpKind::Transpose, k, None, None, None).unwrap();
            for r in 0..k {
                let (x, y) = (r / q, r % q);
                let seg = &c.expected(k, 3, r)[0];
                assert_eq!(
                    seg.ranks,
                    vec![(y * q + x, y * q + x + 1)],
                    "q = {q}, r = {r}"
                );
                assert_eq!(transposed(k, transposed(k, r)), r);
            }
        }
        let e = Collective::new(OpKind::Transpose, 6, None, None, None).unwrap_err();
        assert!(e.to_string().contains("square"), "{e}");
    }
}

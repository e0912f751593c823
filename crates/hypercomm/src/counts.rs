//! Per-rank element counts of the variable-count collectives (MPI's `*v` forms):
//! `gatherv`, `scatterv`, `allgatherv`, `reduce-scatterv` take one count per rank,
//! `alltoallv` a k × k matrix. Displacements are implied contiguous: rank r's block
//! starts where rank r − 1's ends (MPI's `displs` as the prefix sums of `counts`), so a
//! count vector alone says where every block lies. Counts of zero are allowed: a block
//! of zero elements is no message.
//!
//! The same value is the `--counts FILE` format of the CLI: a JSON list of k counts,
//! or a list of k lists of k counts for `alltoallv` (`C[i][j]` elements from rank i to
//! rank j).

use serde::{Deserialize, Serialize};

use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::Rank;

/// Largest total of a count vector or matrix (elements): 2^48, so offsets and sums
/// never overflow `u64` and stay exact in the simulator's `f64`.
pub const MAX_TOTAL: u64 = 1 << 48;

/// The counts of a variable-count collective.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Counts {
    /// c_r elements for each rank r (`gatherv`, `scatterv`, `allgatherv`,
    /// `reduce-scatterv`).
    PerRank(Vec<u64>),
    /// `C[i][j]` elements from rank i to rank j (`alltoallv`).
    Matrix(Vec<Vec<u64>>),
}

impl Counts {
    /// Check the counts for `op` on `k` ranks: a list of k counts for the 1-D
    /// collectives, a k × k matrix for `alltoallv`, totals at most [`MAX_TOTAL`].
    pub fn check(&self, op: OpKind, k: u32) -> Result<(), Error> {
        let bad = |reason: String| Err(Error::BadCounts(reason));
        fn total<'c>(mut it: impl Iterator<Item = &'c u64>) -> Option<u64> {
            it.try_fold(0u64, |a, &c| a.checked_add(c).filter(|&t| t <= MAX_TOTAL))
        }
        match (self, op) {
            (Counts::Matrix(rows), OpKind::Alltoallv) => {
                if rows.len() != k as usize {
                    return bad(format!(
                        "alltoallv needs a {k} × {k} matrix (one row per rank), got {} rows",
                        rows.len()
                    ));
                }
                if let Some((i, row)) = rows.iter().enumerate().find(|(_, r)| r.len() != k as usize)
                {
                    return bad(format!(
                        "alltoallv needs a {k} × {k} matrix, but row {i} has {} counts",
                        row.len()
                    ));
                }
                if total(rows.iter().flatten()).is_none() {
                    return bad(format!("the counts sum to more than 2^48 = {MAX_TOTAL}"));
                }
                Ok(())
            }
            (Counts::PerRank(c), op) if op.is_varcount() && op != OpKind::Alltoallv => {
                if c.len() != k as usize {
                    return bad(format!(
                        "{op} needs one count per rank, {k}, got {}",
                        c.len()
                    ));
                }
                if total(c.iter()).is_none() {
                    return bad(format!("the counts sum to more than 2^48 = {MAX_TOTAL}"));
                }
                Ok(())
            }
            // A download's unequal portions (Gichev 1992, §3.2, RP): one count per
            // PE and 0 for the host, the last rank.
            (Counts::PerRank(c), OpKind::Download) => {
                if c.len() != k as usize {
                    return bad(format!(
                        "download needs one count per rank, {k} (the PEs', then the \
                         host's, 0), got {}",
                        c.len()
                    ));
                }
                if c.last().is_some_and(|&h| h != 0) {
                    return bad(format!(
                        "the host (rank {}) receives nothing in a download: its count \
                         must be 0",
                        k - 1
                    ));
                }
                if total(c.iter()).is_none() {
                    return bad(format!("the counts sum to more than 2^48 = {MAX_TOTAL}"));
                }
                Ok(())
            }
            (Counts::PerRank(_), OpKind::Alltoallv) => bad(format!(
                "alltoallv needs a {k} × {k} matrix (a list of lists), not a list"
            )),
            (Counts::Matrix(_), op) if op.is_varcount() => {
                bad(format!("{op} needs a list of {k} counts, not a matrix"))
            }
            (_, op) => bad(format!(
                "{op} takes no counts; the variable-count collectives are gatherv, \
                 scatterv, allgatherv, alltoallv and reduce-scatterv (and download's \
                 unequal portions, a list)"
            )),
        }
    }

    /// The uniform counts of `len` elements per block for `op` on `k` ranks.
    pub fn uniform(op: OpKind, k: u32, len: u64) -> Self {
        if op == OpKind::Alltoallv {
            Counts::Matrix(vec![vec![len; k as usize]; k as usize])
        } else {
            Counts::PerRank(vec![len; k as usize])
        }
    }

    /// The mean count (the `len` the CLI reports for these counts), rounded down.
    pub fn mean(&self) -> u64 {
        let (sum, n) = match self {
            Counts::PerRank(c) => (c.iter().sum::<u64>(), c.len()),
            Counts::Matrix(m) => (m.iter().flatten().sum::<u64>(), m.iter().flatten().count()),
        };
        sum.checked_div(n as u64).unwrap_or(0)
    }

    /// The largest count.
    pub fn max(&self) -> u64 {
        match self {
            Counts::PerRank(c) => c.iter().copied().max(),
            Counts::Matrix(m) => m.iter().flatten().copied().max(),
        }
        .unwrap_or(0)
    }
}

/// Where every block of a data-moving variable-count collective lies: for each
/// ordered pair (i, j) the block i sends j, its length and its offsets in i's `in` and
/// j's `out`. Gatherv, scatterv, allgatherv and alltoallv are all this table (with most
/// lengths zero for the rooted ones), so one schedule per algorithm serves them all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    k: u32,
    len: Vec<u64>,
    src: Vec<u64>,
    dst: Vec<u64>,
}

/// Prefix sums: `out[r]` = Σ_{i<r} c_i, `out[k]` the total.
pub fn prefix(c: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(c.len() + 1);
    let mut a = 0u64;
    out.push(0);
    for &x in c {
        a += x;
        out.push(a);
    }
    out
}

impl Layout {
    /// The layout of the data-moving collective `op` (rooted at `root`) on `k` ranks
    /// with `counts` (checked), or `None` for a reduction or a fixed-count collective.
    pub fn new(op: OpKind, root: Rank, k: u32, counts: &Counts) -> Option<Self> {
        let n = k as usize;
        let (mut len, mut src, mut dst) = (vec![0; n * n], vec![0; n * n], vec![0; n * n]);
        match (op, counts) {
            (OpKind::Alltoallv, Counts::Matrix(c)) => {
                let cols: Vec<Vec<u64>> =
                    (0..n).map(|j| (0..n).map(|i| c[i][j]).collect()).collect();
                let col_prefix: Vec<Vec<u64>> = cols.iter().map(|c| prefix(c)).collect();
                for (i, row) in c.iter().enumerate() {
                    let p = prefix(row);
                    for j in 0..n {
                        len[i * n + j] = row[j];
                        src[i * n + j] = p[j];
                        dst[i * n + j] = col_prefix[j][i];
                    }
                }
            }
            (OpKind::Allgatherv | OpKind::Gatherv | OpKind::Scatterv, Counts::PerRank(c)) => {
                let p = prefix(c);
                let root = root as usize;
                for i in 0..n {
                    for j in 0..n {
                        let (l, s, d) = match op {
                            OpKind::Allgatherv => (c[i], 0, p[i]),
                            OpKind::Gatherv if j == root => (c[i], 0, p[i]),
                            OpKind::Scatterv if i == root => (c[j], p[j], 0),
                            _ => (0, 0, 0),
                        };
                        len[i * n + j] = l;
                        src[i * n + j] = s;
                        dst[i * n + j] = d;
                    }
                }
            }
            _ => return None,
        }
        Some(Layout { k, len, src, dst })
    }

    /// The number of ranks.
    pub fn nodes(&self) -> u32 {
        self.k
    }

    /// Elements rank `i` sends rank `j` (its own block when i = j).
    pub fn len(&self, i: Rank, j: Rank) -> u64 {
        self.len[self.at(i, j)]
    }

    /// Whether no block has an element.
    pub fn is_empty(&self) -> bool {
        self.len.iter().all(|&l| l == 0)
    }

    /// Offset in i's `in` of the block for j.
    pub fn src(&self, i: Rank, j: Rank) -> u64 {
        self.src[self.at(i, j)]
    }

    /// Offset in j's `out` of the block from i.
    pub fn dst(&self, i: Rank, j: Rank) -> u64 {
        self.dst[self.at(i, j)]
    }

    fn at(&self, i: Rank, j: Rank) -> usize {
        i as usize * self.k as usize + j as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wrong lengths, a ragged matrix, the wrong shape for the op and an overflowing
    /// total are each refused with the problem named.
    #[test]
    fn bad_counts_are_refused_with_the_problem_named() {
        let cases: [(Counts, OpKind, &str); 6] = [
            (
                Counts::PerRank(vec![1, 2]),
                OpKind::Gatherv,
                "one count per rank, 3, got 2",
            ),
            (
                Counts::Matrix(vec![vec![1; 3]; 2]),
                OpKind::Alltoallv,
                "got 2 rows",
            ),
            (
                Counts::Matrix(vec![vec![1; 3], vec![1; 2], vec![1; 3]]),
                OpKind::Alltoallv,
                "row 1 has 2 counts",
            ),
            (Counts::PerRank(vec![1; 3]), OpKind::Alltoallv, "not a list"),
            (
                Counts::PerRank(vec![u64::MAX, 1, 0]),
                OpKind::Allgatherv,
                "2^48",
            ),
            (
                Counts::PerRank(vec![1; 3]),
                OpKind::Alltoall,
                "takes no counts",
            ),
        ];
        for (c, op, want) in cases {
            let e = c.check(op, 3).unwrap_err().to_string();
            assert!(e.contains(want), "{op} {c:?}: {e}");
        }
        assert!(Counts::uniform(OpKind::Alltoallv, 3, 2)
            .check(OpKind::Alltoallv, 3)
            .is_ok());
        assert!(Counts::PerRank(vec![0, 0, 5])
            .check(OpKind::ReduceScatterv, 3)
            .is_ok());
    }

    /// The alltoallv layout: row prefix sums in the sender's `in`, column prefix sums in
    /// the receiver's `out`.
    #[test]
    fn the_alltoallv_layout_is_the_prefix_sums() {
        let c = Counts::Matrix(vec![vec![1, 2, 0], vec![3, 0, 4], vec![5, 6, 7]]);
        let l = Layout::new(OpKind::Alltoallv, 0, 3, &c).unwrap();
        assert_eq!((l.len(1, 2), l.src(1, 2), l.dst(1, 2)), (4, 3, 0));
        assert_eq!((l.len(2, 1), l.src(2, 1), l.dst(2, 1)), (6, 5, 2));
        assert_eq!((l.len(2, 0), l.src(2, 0), l.dst(2, 0)), (5, 0, 4));
        let g = Layout::new(OpKind::Gatherv, 1, 3, &Counts::PerRank(vec![2, 0, 3])).unwrap();
        assert_eq!((g.len(2, 1), g.dst(2, 1), g.len(2, 0)), (3, 2, 0));
    }
}

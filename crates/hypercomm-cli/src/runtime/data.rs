//! Random inputs and the serial reference of `hypercomm run`.
//!
//! Element `i` of rank `j`'s input is a hash of (seed, j, i), so every rank can
//! recompute any rank's input without communicating; [`expected`] computes, serially and
//! from the collectives' definitions alone, what rank `r`'s output must hold.

use hypercomm::collective::Collective;
use hypercomm::counts::Counts;
use hypercomm::schedule::Rank;

use super::ReduceOp;

/// SplitMix64's finaliser: a bijective, well-mixing hash.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Element `i` of rank `rank`'s input.
pub fn element(seed: u64, rank: Rank, i: usize) -> u64 {
    mix(mix(seed ^ u64::from(rank).wrapping_mul(0xD6E8_FEB8_6659_FD93)) ^ i as u64)
}

/// Rank `rank`'s input of `len` elements.
pub fn input(seed: u64, rank: Rank, len: usize) -> Vec<u64> {
    (0..len).map(|i| element(seed, rank, i)).collect()
}

/// What rank `r`'s `out` buffer must hold after `c` on `k` ranks with length `m`, or
/// `None` where the result is unspecified (rank 0 of an exclusive scan).
pub fn expected(
    c: Collective,
    k: u32,
    m: usize,
    counts: Option<&Counts>,
    r: Rank,
    seed: u64,
    op: ReduceOp,
) -> Option<Vec<u64>> {
    let el = |j: Rank, i: usize| element(seed, j, i);
    if c.kind().is_varcount() {
        return Some(expected_varcount(c, k, m, counts, r, seed, op));
    }
    // The combination in rank order over ranks `0..upto` of element `off + i`.
    let fold = |upto: Rank, off: usize| -> Vec<u64> {
        (0..m)
            .map(|i| (1..upto).fold(el(0, off + i), |acc, j| op.apply(acc, el(j, off + i))))
            .collect()
    };
    let block = |j: Rank, off: usize| (0..m).map(move |i| el(j, off + i));
    let r_us = r as usize;
    Some(match c {
        Collective::P2p { src, dst } => {
            if r == dst {
                block(src, 0).collect()
            } else {
                vec![]
            }
        }
        Collective::Broadcast { root } => block(root, 0).collect(),
        Collective::Scatter { root } => block(root, r_us * m).collect(),
        Collective::Gather { root } => {
            if r == root {
                (0..k).flat_map(|j| block(j, 0)).collect()
            } else {
                vec![]
            }
        }
        Collective::Allgather => (0..k).flat_map(|j| block(j, 0)).collect(),
        Collective::Alltoall => (0..k).flat_map(|j| block(j, r_us * m)).collect(),
        Collective::Reduce { root } => {
            if r == root {
                fold(k, 0)
            } else {
                vec![]
            }
        }
        Collective::Allreduce => fold(k, 0),
        Collective::Scan => fold(r + 1, 0),
        Collective::ExclusiveScan => {
            if r == 0 {
                return None;
            }
            fold(r, 0)
        }
        Collective::ReduceScatter => fold(k, r_us * m),
        Collective::Gatherv { .. }
        | Collective::Scatterv { .. }
        | Collective::Allgatherv
        | Collective::Alltoallv
        | Collective::ReduceScatterv => unreachable!("handled above"),
        // Rank (x, y) gets the input of (y, x).
        Collective::Transpose => block(hypercomm::collective::transposed(k, r), 0).collect(),
        // PE r gets block r of the host's (the last rank's) input.
        Collective::Download => {
            if r + 1 == k {
                vec![]
            } else {
                block(k - 1, r_us * m).collect()
            }
        }
    })
}

/// [`expected`] of a variable-count collective: what its post-condition names
/// ([`Collective::expected_with`]), element by element.
fn expected_varcount(
    c: Collective,
    k: u32,
    m: usize,
    counts: Option<&Counts>,
    r: Rank,
    seed: u64,
    op: ReduceOp,
) -> Vec<u64> {
    let out = c.out_len_with(k, m as u64, counts, r) as usize;
    let mut v = vec![0u64; out];
    for seg in c.expected_with(k, m as u64, counts, r) {
        let (from, upto) = seg.ranks[0];
        for e in 0..seg.len as usize {
            let at = seg.off as usize + e;
            let x = (from + 1..upto).fold(element(seed, from, at), |acc, j| {
                op.apply(acc, element(seed, j, at))
            });
            v[seg.start as usize + e] = x;
        }
    }
    v
}

/// The first element where `got` differs from `want`: (index, expected, got); a length
/// difference counts at the first missing index (expected or got `u64::MAX`).
pub fn first_mismatch(want: &[u64], got: &[u64]) -> Option<(usize, u64, u64)> {
    if let Some(i) = want.iter().zip(got).position(|(a, b)| a != b) {
        return Some((i, want[i], got[i]));
    }
    let n = want.len().min(got.len());
    (want.len() != got.len()).then(|| {
        (
            n,
            want.get(n).copied().unwrap_or(u64::MAX),
            got.get(n).copied().unwrap_or(u64::MAX),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_differ_between_ranks_and_seeds() {
        assert_ne!(input(1, 0, 4), input(1, 1, 4));
        assert_ne!(input(1, 0, 4), input(2, 0, 4));
        assert_eq!(input(1, 3, 4), input(1, 3, 4));
    }

    #[test]
    fn reference_of_small_cases() {
        let (k, m, s) = (3, 2, 7);
        let sum = |i: usize| (0..k).fold(0u64, |a, j| a.wrapping_add(element(s, j, i)));
        let ar = expected(Collective::Allreduce, k, m, None, 1, s, ReduceOp::Sum).unwrap();
        assert_eq!(ar, vec![sum(0), sum(1)]);
        let a2a = expected(Collective::Alltoall, k, m, None, 2, s, ReduceOp::Sum).unwrap();
        assert_eq!(a2a[2..4], [element(s, 1, 4), element(s, 1, 5)]);
        let rs = expected(Collective::ReduceScatter, k, m, None, 1, s, ReduceOp::Max).unwrap();
        let max = |i: usize| (0..k).map(|j| element(s, j, i)).max().unwrap();
        assert_eq!(rs, vec![max(2), max(3)]);
        assert_eq!(
            expected(Collective::ExclusiveScan, k, m, None, 0, s, ReduceOp::Sum),
            None
        );
        let ex = expected(Collective::ExclusiveScan, k, m, None, 1, s, ReduceOp::Sum).unwrap();
        assert_eq!(ex, input(s, 0, 2));
    }

    #[test]
    fn mismatches() {
        assert_eq!(first_mismatch(&[1, 2], &[1, 2]), None);
        assert_eq!(first_mismatch(&[1, 2], &[1, 3]), Some((1, 2, 3)));
        assert_eq!(first_mismatch(&[1, 2], &[1]), Some((1, 2, u64::MAX)));
    }
}

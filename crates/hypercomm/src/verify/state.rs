//! Symbolic buffer contents: run-length encoded, so a buffer holding one contiguous
//! copy of some rank's input costs one entry, whatever its length.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::schedule::Rank;

/// The ranks whose inputs are combined into a value, as half-open ranges in the order
/// of combination. A plain copy of rank r's input is `[(r, r + 1)]`.
pub type Contrib = Arc<[(Rank, Rank)]>;

/// A maximal run of a buffer: element `start + i` holds the combination over `src` of
/// element `off + i` of the inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub len: u64,
    pub off: u64,
    pub src: Contrib,
}

/// Why a combine failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CombineError {
    /// An element of the destination was never written.
    Unset(u64),
    /// The two operands are different elements of the vector.
    Misaligned { at: u64, dst_off: u64, src_off: u64 },
    /// A rank's contribution would be combined twice.
    Twice { at: u64, rank: Rank },
}

/// One buffer's contents: runs keyed by their start.
#[derive(Clone, Debug, Default)]
pub struct BufState {
    runs: BTreeMap<u64, Piece>,
}

impl BufState {
    /// A buffer whose `len` elements are rank `r`'s input `off..off+len`.
    pub fn input(r: Rank, len: u64) -> Self {
        let mut s = BufState::default();
        if len > 0 {
            s.runs.insert(
                0,
                Piece {
                    len,
                    off: 0,
                    src: Arc::from(vec![(r, r + 1)]),
                },
            );
        }
        s
    }

    /// Make `pos` a run boundary.
    fn split_at(&mut self, pos: u64) {
        let Some((&start, p)) = self.runs.range(..pos).next_back() else {
            return;
        };
        if start + p.len <= pos {
            return;
        }
        let cut = pos - start;
        let tail = Piece {
            len: p.len - cut,
            off: p.off + cut,
            src: p.src.clone(),
        };
        self.runs.get_mut(&start).expect("run exists").len = cut;
        self.runs.insert(pos, tail);
    }

    /// The pieces covering `start..start+len`, or the first unset element.
    pub fn read(&self, start: u64, len: u64) -> Result<Vec<Piece>, u64> {
        let end = start + len;
        let mut out = Vec::new();
        let mut pos = start;
        let first = self
            .runs
            .range(..=start)
            .next_back()
            .map(|(&s, _)| s)
            .unwrap_or(start);
        for (&s, p) in self.runs.range(first..end) {
            let e = s + p.len;
            if e <= pos {
                continue;
            }
            if s > pos {
                return Err(pos);
            }
            let skip = pos - s;
            let take = e.min(end) - pos;
            push_merged(
                &mut out,
                Piece {
                    len: take,
                    off: p.off + skip,
                    src: p.src.clone(),
                },
            );
            pos += take;
            if pos >= end {
                break;
            }
        }
        if pos < end {
            return Err(pos);
        }
        Ok(out)
    }

    /// Overwrite `start..` with `pieces`.
    pub fn place(&mut self, start: u64, pieces: &[Piece]) {
        let len: u64 = pieces.iter().map(|p| p.len).sum();
        if len == 0 {
            return;
        }
        let end = start + len;
        self.split_at(start);
        self.split_at(end);
        let doomed: Vec<u64> = self.runs.range(start..end).map(|(&s, _)| s).collect();
        for s in doomed {
            self.runs.remove(&s);
        }
        let mut pos = start;
        for p in pieces.iter().filter(|p| p.len > 0) {
            self.runs.insert(pos, p.clone());
            pos += p.len;
        }
        self.merge_around(start, end);
    }

    /// Combine `pieces` into `start..`: the received data is the left operand when
    /// `left` (dst ← recv ⊕ dst), the right one otherwise. With a commutative operator
    /// the order of contributions is not recorded.
    pub fn combine(
        &mut self,
        start: u64,
        pieces: &[Piece],
        left: bool,
        commutative: bool,
    ) -> Result<(), CombineError> {
        let len: u64 = pieces.iter().map(|p| p.len).sum();
        if len == 0 {
            return Ok(());
        }
        let existing = self.read(start, len).map_err(CombineError::Unset)?;
        let mut result: Vec<Piece> = Vec::new();
        let (mut i, mut j) = (0usize, 0usize);
        let (mut di, mut dj) = (0u64, 0u64); // consumed within existing[i], pieces[j]
        let mut at = start;
        let pieces: Vec<&Piece> = pieces.iter().filter(|p| p.len > 0).collect();
        while i < existing.len() && j < pieces.len() {
            let (a, b) = (&existing[i], pieces[j]);
            let take = (a.len - di).min(b.len - dj);
            let (ao, bo) = (a.off + di, b.off + dj);
            if ao != bo {
                return Err(CombineError::Misaligned {
                    at,
                    dst_off: ao,
                    src_off: bo,
                });
            }
            let src = if left {
                join(&b.src, &a.src, commutative)
            } else {
                join(&a.src, &b.src, commutative)
            };
            let src = src.map_err(|rank| CombineError::Twice { at, rank })?;
            push_merged(
                &mut result,
                Piece {
                    len: take,
                    off: ao,
                    src,
                },
            );
            at += take;
            di += take;
            dj += take;
            if di == a.len {
                i += 1;
                di = 0;
            }
            if dj == b.len {
                j += 1;
                dj = 0;
            }
        }
        self.place(start, &result);
        Ok(())
    }

    fn merge_around(&mut self, start: u64, end: u64) {
        let from = self
            .runs
            .range(..start)
            .next_back()
            .map(|(&s, _)| s)
            .unwrap_or(start);
        let keys: Vec<u64> = self.runs.range(from..=end).map(|(&s, _)| s).collect();
        let mut prev: Option<u64> = None;
        for k in keys {
            if let Some(pk) = prev {
                let (pl, poff, same) = {
                    let p = &self.runs[&pk];
                    let q = &self.runs[&k];
                    (
                        p.len,
                        p.off,
                        pk + p.len == k && p.off + p.len == q.off && p.src == q.src,
                    )
                };
                if same {
                    let q = self.runs.remove(&k).expect("run exists");
                    let p = self.runs.get_mut(&pk).expect("run exists");
                    debug_assert_eq!(p.off, poff);
                    p.len = pl + q.len;
                    continue;
                }
            }
            prev = Some(k);
        }
    }

    /// All runs, in order: (start, piece).
    pub fn runs(&self) -> impl Iterator<Item = (u64, &Piece)> {
        self.runs.iter().map(|(&s, p)| (s, p))
    }
}

fn push_merged(out: &mut Vec<Piece>, p: Piece) {
    if p.len == 0 {
        return;
    }
    if let Some(last) = out.last_mut() {
        if last.off + last.len == p.off && last.src == p.src {
            last.len += p.len;
            return;
        }
    }
    out.push(p);
}

/// Combine contribution lists `a ⊕ b`, or the first rank present in both.
fn join(a: &Contrib, b: &Contrib, commutative: bool) -> Result<Contrib, Rank> {
    let mut seq: Vec<(Rank, Rank)> = a.iter().chain(b.iter()).copied().collect();
    if commutative {
        seq.sort_unstable();
    }
    // Overlap check on a sorted copy (cheap: lists stay short).
    let mut sorted = seq.clone();
    sorted.sort_unstable();
    for w in sorted.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(w[1].0);
        }
    }
    let mut merged: Vec<(Rank, Rank)> = Vec::with_capacity(seq.len());
    for (lo, hi) in seq {
        match merged.last_mut() {
            Some(last) if last.1 == lo => last.1 = hi,
            _ => merged.push((lo, hi)),
        }
    }
    Ok(Arc::from(merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(r: Rank, off: u64, len: u64) -> Piece {
        Piece {
            len,
            off,
            src: Arc::from(vec![(r, r + 1)]),
        }
    }

    #[test]
    fn read_reports_first_unset_element() {
        let mut b = BufState::default();
        b.place(0, &[one(1, 0, 4)]);
        b.place(6, &[one(1, 6, 2)]);
        assert_eq!(b.read(0, 4).unwrap(), vec![one(1, 0, 4)]);
        assert_eq!(b.read(2, 5), Err(4));
        assert_eq!(b.read(8, 1), Err(8));
    }

    #[test]
    fn adjacent_pieces_merge_into_one_run() {
        let mut b = BufState::default();
        b.place(4, &[one(2, 4, 4)]);
        b.place(0, &[one(2, 0, 4)]);
        assert_eq!(b.runs().count(), 1);
        assert_eq!(b.read(0, 8).unwrap(), vec![one(2, 0, 8)]);
        b.place(2, &[one(3, 2, 2)]);
        assert_eq!(b.runs().count(), 3);
        assert_eq!(
            b.read(1, 4).unwrap(),
            vec![one(2, 1, 1), one(3, 2, 2), one(2, 4, 1)]
        );
    }

    #[test]
    fn combine_orders_and_detects_double_contribution() {
        let mut b = BufState::input(1, 3);
        b.combine(0, &[one(0, 0, 3)], true, false).unwrap();
        assert_eq!(&*b.read(0, 3).unwrap()[0].src, &[(0, 2)]);
        b.combine(0, &[one(2, 0, 3)], true, false).unwrap();
        // 2 ⊕ (0 ⊕ 1): out of rank order, kept as two ranges.
        assert_eq!(&*b.read(0, 3).unwrap()[0].src, &[(2, 3), (0, 2)]);
        assert_eq!(
            b.combine(0, &[one(1, 0, 3)], false, false),
            Err(CombineError::Twice { at: 0, rank: 1 })
        );
        assert!(matches!(
            b.combine(0, &[one(5, 1, 3)], false, true),
            Err(CombineError::Misaligned { .. })
        ));
        let mut c = BufState::default();
        assert_eq!(
            c.combine(0, &[one(0, 0, 1)], true, true),
            Err(CombineError::Unset(0))
        );
    }

    #[test]
    fn commutative_combine_sorts_contributions() {
        let mut b = BufState::input(3, 2);
        b.combine(0, &[one(1, 0, 2)], false, true).unwrap();
        b.combine(0, &[one(2, 0, 2)], false, true).unwrap();
        assert_eq!(&*b.read(0, 2).unwrap()[0].src, &[(1, 4)]);
    }
}

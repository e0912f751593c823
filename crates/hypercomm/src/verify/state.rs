//! Symbolic buffer contents, run-length encoded.
//!
//! A [`Piece`] describes `len` consecutive elements by a rule, not element by element:
//! - [`Pattern::Seq`]: element i is the combination over `src` of input element
//!   `off + i` (a plain copy of rank r's input has `src = [r, r+1)`);
//! - [`Pattern::Blocks`]: element i is input element `off + (phase + i) mod block` of
//!   rank `rank + ⌊(phase + i) / block⌋`: consecutive ranks' blocks side by side, the
//!   shape of an all-gather's or a gather's result.
//!
//! So a buffer holding one contiguous copy costs one entry whatever its length, and a
//! buffer holding the blocks of a range of ranks in rank order (a subcube's, in the
//! hypercube algorithms) costs one entry whatever the number of ranks: memory grows
//! with the number of irregularities, not with nodes × blocks.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::schedule::Rank;

/// The ranks whose inputs are combined into a value, as half-open ranges in the order
/// of combination. A plain copy of rank r's input is `[(r, r + 1)]`.
pub type Contrib = Arc<[(Rank, Rank)]>;

/// How the elements of a [`Piece`] are derived from the inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Element i: combination over `src` of input element `off + i`.
    Seq { src: Contrib },
    /// Element i: input element `off + (phase + i) % block` of rank
    /// `rank + (phase + i) / block`; `phase < block`.
    Blocks { rank: Rank, block: u64, phase: u64 },
}

/// A maximal run of a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub len: u64,
    pub off: u64,
    pub pat: Pattern,
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

impl Piece {
    /// `len` elements that are rank `r`'s input from `off`.
    pub fn copy(r: Rank, off: u64, len: u64) -> Piece {
        Piece {
            len,
            off,
            pat: Pattern::Seq {
                src: Arc::from(vec![(r, r + 1)]),
            },
        }
    }

    /// Ranks `rank..` side by side, `block` elements each from input offset `off`.
    pub fn blocks(rank: Rank, block: u64, off: u64, len: u64) -> Piece {
        Piece {
            len,
            off,
            pat: Pattern::Blocks {
                rank,
                block,
                phase: 0,
            },
        }
    }

    /// Elements `d .. d + len` of this piece.
    pub fn slice(&self, d: u64, len: u64) -> Piece {
        match &self.pat {
            Pattern::Seq { src } => Piece {
                len,
                off: self.off + d,
                pat: Pattern::Seq { src: src.clone() },
            },
            &Pattern::Blocks { rank, block, phase } => {
                let p = phase + d;
                Piece {
                    len,
                    off: self.off,
                    pat: Pattern::Blocks {
                        rank: rank + (p / block) as Rank,
                        block,
                        phase: p % block,
                    },
                }
            }
        }
    }

    /// How many elements from `i` on follow one `Seq` rule (one rank's consecutive inputs).
    fn run_len(&self, i: u64) -> u64 {
        match self.pat {
            Pattern::Seq { .. } => self.len - i,
            Pattern::Blocks { block, phase, .. } => (self.len - i).min(block - (phase + i) % block),
        }
    }

    /// The value of element i: (contributions, input offset).
    pub fn at(&self, i: u64) -> (Contrib, u64) {
        match &self.pat {
            Pattern::Seq { src } => (src.clone(), self.off + i),
            &Pattern::Blocks { rank, block, phase } => {
                let r = rank + ((phase + i) / block) as Rank;
                (Arc::from(vec![(r, r + 1)]), self.off + (phase + i) % block)
            }
        }
    }

    /// The single rank this piece copies, if it is a plain copy.
    fn single_rank(&self) -> Option<Rank> {
        match &self.pat {
            Pattern::Seq { src } if src.len() == 1 && src[0].1 == src[0].0 + 1 => Some(src[0].0),
            _ => None,
        }
    }

    /// This piece as `Blocks` of size `block` with base offset `base`, if it is one.
    /// Returns (rank, phase) with phase < block.
    fn as_blocks(&self, block: u64, base: u64) -> Option<(Rank, u64)> {
        match self.pat {
            Pattern::Blocks {
                rank,
                block: b,
                phase,
            } if b == block && self.off == base => Some((rank, phase)),
            Pattern::Blocks { .. } => None,
            Pattern::Seq { .. } => {
                let r = self.single_rank()?;
                let ph = self.off.checked_sub(base)?;
                (ph + self.len <= block).then_some((r, ph))
            }
        }
    }

    /// Extend this piece by `next` if `next` continues its rule exactly.
    pub fn try_append(&mut self, next: &Piece) -> bool {
        if let (Pattern::Seq { src: a }, Pattern::Seq { src: b }) = (&self.pat, &next.pat) {
            if a == b && next.off == self.off + self.len {
                self.len += next.len;
                return true;
            }
        }
        // Otherwise look for a common Blocks rule.
        let (block, base) = match (&self.pat, &next.pat) {
            (&Pattern::Blocks { block, .. }, _) => (block, self.off),
            (_, &Pattern::Blocks { block, .. }) => (block, next.off),
            _ => match (self.single_rank(), next.single_rank()) {
                (Some(r), Some(q)) if q == r + 1 && next.off <= self.off => {
                    (self.off - next.off + self.len, next.off)
                }
                _ => return false,
            },
        };
        let (Some((ra, pa)), Some((rb, pb))) =
            (self.as_blocks(block, base), next.as_blocks(block, base))
        else {
            return false;
        };
        let start_a = ra as u128 * block as u128 + pa as u128;
        let start_b = rb as u128 * block as u128 + pb as u128;
        if start_b != start_a + self.len as u128 {
            return false;
        }
        *self = Piece {
            len: self.len + next.len,
            off: base,
            pat: Pattern::Blocks {
                rank: ra,
                block,
                phase: pa,
            },
        };
        true
    }

    /// How many leading elements `self` and `other` agree on (both non-empty), or `None`
    /// if their first elements differ.
    pub fn common_prefix(&self, other: &Piece) -> Option<u64> {
        let n = self.len.min(other.len);
        if let Pattern::Blocks { block, .. } = self.pat {
            if let (Some(a), Some(b)) = (
                self.as_blocks(block, self.off),
                other.as_blocks(block, self.off),
            ) {
                return (a == b).then_some(n);
            }
        }
        let k = self.run_len(0).min(other.run_len(0));
        (self.at(0) == other.at(0)).then_some(k)
    }
}

/// One buffer's contents: runs keyed by their start.
#[derive(Clone, Debug, Default)]
pub struct BufState {
    runs: BTreeMap<u64, Piece>,
}

impl BufState {
    /// A buffer whose `len` elements are rank `r`'s input.
    pub fn input(r: Rank, len: u64) -> Self {
        let mut s = BufState::default();
        if len > 0 {
            s.runs.insert(0, Piece::copy(r, 0, len));
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
        let tail = p.slice(cut, p.len - cut);
        let head = p.slice(0, cut);
        self.runs.insert(start, head);
        self.runs.insert(pos, tail);
    }

    /// The pieces covering `start..start+len`, or the first unset element.
    pub fn read(&self, start: u64, len: u64) -> Result<Vec<Piece>, u64> {
        let end = start + len;
        let mut out: Vec<Piece> = Vec::new();
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
            let take = e.min(end) - pos;
            push_merged(&mut out, p.slice(pos - s, take));
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
        // Fast path: nothing there yet (a first delivery), no run to split or remove.
        let free = self
            .runs
            .range(..end)
            .next_back()
            .is_none_or(|(&k, p)| k + p.len <= start);
        if !free {
            self.split_at(start);
            self.split_at(end);
            while let Some((&k, _)) = self.runs.range(start..end).next() {
                self.runs.remove(&k);
            }
        }
        let mut pos = start;
        for p in pieces.iter().filter(|p| p.len > 0) {
            self.merge_into_previous(pos, p.clone());
            pos += p.len;
        }
        if let Some(next) = self.runs.remove(&end) {
            self.merge_into_previous(end, next);
        }
    }

    /// Insert `piece` at `pos`, appending it to the run that ends at `pos` if it
    /// continues that run's rule.
    fn merge_into_previous(&mut self, pos: u64, piece: Piece) {
        if let Some((&k, prev)) = self.runs.range_mut(..pos).next_back() {
            if k + prev.len == pos && prev.try_append(&piece) {
                return;
            }
        }
        self.runs.insert(pos, piece);
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
        let pieces: Vec<&Piece> = pieces.iter().filter(|p| p.len > 0).collect();
        let (mut i, mut j, mut di, mut dj) = (0usize, 0usize, 0u64, 0u64);
        let mut at = start;
        while i < existing.len() && j < pieces.len() {
            let (a, b) = (&existing[i], pieces[j]);
            let take = a.run_len(di).min(b.run_len(dj));
            let ((asrc, ao), (bsrc, bo)) = (a.at(di), b.at(dj));
            if ao != bo {
                return Err(CombineError::Misaligned {
                    at,
                    dst_off: ao,
                    src_off: bo,
                });
            }
            let src = if left {
                join(&bsrc, &asrc, commutative)
            } else {
                join(&asrc, &bsrc, commutative)
            };
            let src = src.map_err(|rank| CombineError::Twice { at, rank })?;
            push_merged(
                &mut result,
                Piece {
                    len: take,
                    off: ao,
                    pat: Pattern::Seq { src },
                },
            );
            at += take;
            di += take;
            dj += take;
            if di == a.len {
                (i, di) = (i + 1, 0);
            }
            if dj == b.len {
                (j, dj) = (j + 1, 0);
            }
        }
        self.place(start, &result);
        Ok(())
    }

    /// All runs, in order: (start, piece).
    pub fn runs(&self) -> impl Iterator<Item = (u64, &Piece)> {
        self.runs.iter().map(|(&s, p)| (s, p))
    }
}

/// Append `p` to `out`, merging it into the last piece when it continues its rule.
pub fn push_merged(out: &mut Vec<Piece>, p: Piece) {
    if p.len == 0 {
        return;
    }
    if let Some(last) = out.last_mut() {
        if last.try_append(&p) {
            return;
        }
    }
    out.push(p);
}

/// Combine contribution lists `a ⊕ b`, or the first rank present in both.
fn join(a: &Contrib, b: &Contrib, commutative: bool) -> Result<Contrib, Rank> {
    let mut seq: Vec<(Rank, Rank)> = a.iter().chain(b.iter()).copied().collect();
    let mut sorted = seq.clone();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(w[1].0);
    }
    if commutative {
        seq = sorted;
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
        Piece::copy(r, off, len)
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
    fn blocks_of_consecutive_ranks_are_one_run_in_any_order_of_arrival() {
        // An all-gather's result, 5 elements per rank, written in a scrambled order.
        let mut b = BufState::default();
        for r in [3u32, 0, 2, 7, 1, 5, 4, 6] {
            b.place(r as u64 * 5, &[one(r, 0, 5)]);
        }
        assert_eq!(b.runs().count(), 1);
        let whole = b.read(0, 40).unwrap();
        assert_eq!(whole, vec![Piece::blocks(0, 5, 0, 40)]);
        // Reading across a block boundary gives a sliced Blocks piece with the right values.
        let mid = b.read(7, 10).unwrap();
        assert_eq!(mid.len(), 1);
        assert_eq!(mid[0].at(0), (Arc::from(vec![(1, 2)]), 2));
        assert_eq!(mid[0].at(3), (Arc::from(vec![(2, 3)]), 0));
        assert_eq!(mid[0].at(9), (Arc::from(vec![(3, 4)]), 1));
        // A wrong block breaks the run and is visible.
        b.place(10, &[one(9, 0, 5)]);
        assert_eq!(b.read(10, 5).unwrap(), vec![one(9, 0, 5)]);
        assert!(b.runs().count() >= 3);
    }

    #[test]
    fn blocks_with_an_offset_base_model_all_to_all_columns() {
        // Rank j's all-to-all result: block i is rank i's input at offset j·m (j = 2, m = 3).
        let mut b = BufState::default();
        for i in [1u32, 0, 3, 2] {
            b.place(i as u64 * 3, &[one(i, 6, 3)]);
        }
        assert_eq!(b.read(0, 12).unwrap(), vec![Piece::blocks(0, 3, 6, 12)]);
        assert_eq!(
            Piece::blocks(0, 3, 6, 12).common_prefix(&Piece::blocks(0, 3, 6, 12)),
            Some(12)
        );
        assert_eq!(
            Piece::blocks(0, 3, 6, 12).common_prefix(&Piece::blocks(0, 3, 0, 12)),
            None
        );
        assert_eq!(
            Piece::blocks(0, 3, 6, 12).common_prefix(&one(0, 6, 3)),
            Some(3)
        );
    }

    #[test]
    fn combine_orders_and_detects_double_contribution() {
        let mut b = BufState::input(1, 3);
        b.combine(0, &[one(0, 0, 3)], true, false).unwrap();
        assert_eq!(b.read(0, 3).unwrap()[0].at(0).0[..], [(0, 2)]);
        b.combine(0, &[one(2, 0, 3)], true, false).unwrap();
        // 2 ⊕ (0 ⊕ 1): out of rank order, kept as two ranges.
        assert_eq!(b.read(0, 3).unwrap()[0].at(0).0[..], [(2, 3), (0, 2)]);
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
        assert_eq!(b.read(0, 2).unwrap()[0].at(1).0[..], [(1, 4)]);
    }

    #[test]
    fn combining_blocks_goes_block_by_block() {
        // A reduce-scatter-like combine: incoming Blocks of ranks 4,5 into copies of rank 0.
        let mut b = BufState::default();
        b.place(0, &[one(0, 0, 2), one(0, 0, 2)]);
        assert!(matches!(
            b.combine(0, &[Piece::blocks(4, 2, 0, 4)], false, true),
            Ok(())
        ));
        assert_eq!(b.read(0, 2).unwrap()[0].at(0).0[..], [(0, 1), (4, 5)]);
        assert_eq!(b.read(2, 2).unwrap()[0].at(0).0[..], [(0, 1), (5, 6)]);
    }
}

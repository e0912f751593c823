//! Symbolic buffer contents, run-length encoded.
//!
//! A [`Piece`] describes `len` consecutive elements by a rule, not element by element:
//! - [`Pattern::Seq`]: element i is the combination over `src` of input element
//!   `off + i` (a plain copy of rank r's input has `src = [r, r+1)`);
//! - [`Pattern::Blocks`]: element i is input element `off + (phase + i) mod block` of
//!   rank `rank + ⌊(phase + i) / block⌋ · step`: the blocks of ranks `rank`,
//!   `rank + step`, `rank + 2·step`, … side by side, the shape of an all-gather's or a
//!   gather's result (`step = 1`) and of the messages of an exchange that gathers a
//!   subcube across its high dimensions (`step` a power of two).
//!
//! A buffer is a map of disjoint runs. A run is either flat (a piece at consecutive
//! positions) or strided: a piece of `count · seg` elements cut into `count` segments of
//! `seg` elements, segment j at `start + j·stride` (`stride > seg`). The holes between
//! the segments belong to the run's span and are unset; writing into a hole splits the
//! run. Two strided runs of the same segment length and stride, one in the middle of the
//! other's holes, merge into one run of half the stride (the data a node holds in ADEA,
//! Saad & Schultz's exchange that crosses the leading dimension first: after each step
//! the blocks of a subcube spread over `out` at a constant stride, and the next step
//! fills the middle of every hole), so such a node costs one entry, not one per block.
//!
//! So a buffer holding one contiguous copy costs one entry whatever its length, and a
//! buffer holding the blocks of a subcube in rank order costs one entry whatever the
//! number of ranks: memory grows with the number of irregularities, not with
//! nodes × blocks.
//!
//! Some schedules fill a buffer in scattered order (TEA1's tokens, the all-to-all
//! dimension exchange's columns, a reduce-scatter's partial sums): thousands of runs, a
//! tree search per block moved. A buffer made with a block size
//! ([`BufState::blocked`], the verifier uses the problem's length m) then switches to
//! a *cell form*, one 8-byte cell per block of m elements, as soon as it holds
//! [`PROMOTE_AT`] runs or more, all of whole blocks, and the cells are at most
//! 16 per run (so the switch never costs memory that the runs did not). A write that is
//! not whole blocks switches it back for good. Both forms give the same reads and
//! errors; a test drives them side by side.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::schedule::Rank;

/// The ranks whose inputs are combined into a value, as half-open ranges in the order
/// of combination. A plain copy of rank r's input is `[(r, r + 1)]`.
pub type Contrib = Arc<[(Rank, Rank)]>;

/// The pieces of a read or of a message: most are one piece, held inline.
pub type Pieces = smallvec::SmallVec<[Piece; 1]>;

/// How the elements of a [`Piece`] are derived from the inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Element i: combination over `src` of input element `off + i`.
    Seq { src: Contrib },
    /// Element i: input element `off + (phase + i) % block` of rank
    /// `rank + ⌊(phase + i) / block⌋ · step`; `phase < block`, `step ≥ 1`.
    Blocks {
        rank: Rank,
        block: u64,
        phase: u64,
        step: Rank,
    },
}

/// A maximal run of a buffer (or of a message).
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

/// The rank of block `i` of a `Blocks` pattern (computed wide: a slice may end one
/// block past the last rank).
fn nth_rank(rank: Rank, i: u64, step: Rank) -> Rank {
    (rank as u64 + i * step as u64) as Rank
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
        Piece::blocks_step(rank, step_one(), block, off, len)
    }

    /// Ranks `rank`, `rank + step`, … side by side, `block` elements each from input
    /// offset `off`.
    pub fn blocks_step(rank: Rank, step: Rank, block: u64, off: u64, len: u64) -> Piece {
        assert!(
            step >= 1 && block >= 1,
            "a Blocks pattern needs step, block ≥ 1"
        );
        Piece {
            len,
            off,
            pat: Pattern::Blocks {
                rank,
                block,
                phase: 0,
                step,
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
            &Pattern::Blocks {
                rank,
                block,
                phase,
                step,
            } => {
                let p = phase + d;
                Piece {
                    len,
                    off: self.off,
                    pat: Pattern::Blocks {
                        rank: nth_rank(rank, p / block, step),
                        block,
                        phase: p % block,
                        step,
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
            &Pattern::Blocks {
                rank,
                block,
                phase,
                step,
            } => {
                let r = nth_rank(rank, (phase + i) / block, step);
                (Arc::from(vec![(r, r + 1)]), self.off + (phase + i) % block)
            }
        }
    }

    /// The single rank this piece copies and its first input offset, if it is a plain
    /// copy; with `loose`, also when it is a slice of `Blocks` lying within one block.
    fn single_rank(&self, loose: bool) -> Option<(Rank, u64)> {
        match self.pat {
            Pattern::Seq { ref src } if src.len() == 1 && src[0].1 == src[0].0 + 1 => {
                Some((src[0].0, self.off))
            }
            Pattern::Blocks {
                rank, block, phase, ..
            } if loose && phase + self.len <= block => Some((rank, self.off + phase)),
            _ => None,
        }
    }

    /// The block size of this piece's `Blocks` pattern, if it has one (with `loose`, not
    /// for a slice lying within one block, which any block size describes).
    fn own_block(&self, loose: bool) -> Option<u64> {
        match self.pat {
            Pattern::Blocks { block, phase, .. } if !loose || phase + self.len > block => {
                Some(block)
            }
            _ => None,
        }
    }

    /// This piece as `Blocks` of size `block` with base offset `base`, if it is one.
    /// Returns (rank, phase, step) with phase < block; the step is `None` when the piece
    /// lies inside one block (any step describes it).
    /// With `loose`, a slice of `Blocks` within one block counts as a plain copy.
    fn as_blocks(&self, block: u64, base: u64, loose: bool) -> Option<(Rank, u64, Option<Rank>)> {
        match self.pat {
            Pattern::Blocks {
                rank,
                block: b,
                phase,
                step,
            } if b == block && self.off == base => {
                Some((rank, phase, (phase + self.len > block).then_some(step)))
            }
            _ => {
                let (r, o) = self.single_rank(loose)?;
                let ph = o.checked_sub(base)?;
                (ph + self.len <= block).then_some((r, ph, None))
            }
        }
    }

    /// Extend this piece by `next` if `next` continues its rule exactly.
    pub fn try_append(&mut self, next: &Piece) -> bool {
        let in_one_block = |p: &Piece| matches!(p.pat, Pattern::Blocks { block, phase, .. } if phase + p.len <= block);
        self.try_append_with(next, false)
            || ((in_one_block(self) || in_one_block(next)) && self.try_append_with(next, true))
    }

    /// [`Piece::try_append`] with the patterns as they are or, with `loose`, with a
    /// slice of `Blocks` lying within one block taken as a plain copy of its rank (the
    /// pattern's block size, cut down to one block, constrains nothing, and in that form
    /// the slice may continue, or be continued by, a pattern of another block size).
    fn try_append_with(&mut self, next: &Piece, loose: bool) -> bool {
        if let (Pattern::Seq { src: a }, Pattern::Seq { src: b }) = (&self.pat, &next.pat) {
            if a == b && next.off == self.off + self.len {
                self.len += next.len;
                return true;
            }
        }
        if loose {
            if let (Some((r, ro)), Some((q, qo))) = (self.single_rank(true), next.single_rank(true))
            {
                if r == q && qo == ro + self.len {
                    *self = Piece::copy(r, ro, self.len + next.len);
                    return true;
                }
            }
        }
        // Otherwise look for a common Blocks rule.
        let (block, base) = match (self.own_block(loose), next.own_block(loose)) {
            (Some(block), _) => (block, self.off),
            (_, Some(block)) => (block, next.off),
            _ => match (self.single_rank(loose), next.single_rank(loose)) {
                (Some((r, ro)), Some((q, qo))) if q > r && qo <= ro => (ro - qo + self.len, qo),
                _ => return false,
            },
        };
        let (Some((ra, pa, sa)), Some((rb, pb, sb))) = (
            self.as_blocks(block, base, loose),
            next.as_blocks(block, base, loose),
        ) else {
            return false;
        };
        // `self` ends `blocks` whole blocks after its first one, at phase `phase`.
        let end = pa + self.len;
        let (blocks, phase) = (end / block, end % block);
        if pb != phase {
            return false;
        }
        let step = if blocks == 0 {
            // `next` continues the same block.
            if rb != ra {
                return false;
            }
            match (sa, sb) {
                (Some(a), Some(b)) if a != b => return false,
                (Some(s), _) | (None, Some(s)) => s,
                (None, None) => step_one(),
            }
        } else {
            let Some(diff) = (rb as u64).checked_sub(ra as u64) else {
                return false;
            };
            if diff == 0 || diff % blocks != 0 {
                return false;
            }
            let s = diff / blocks;
            if [sa, sb].iter().flatten().any(|&x| x as u64 != s) {
                return false;
            }
            s as Rank
        };
        *self = Piece {
            len: self.len + next.len,
            off: base,
            pat: Pattern::Blocks {
                rank: ra,
                block,
                phase: pa,
                step,
            },
        };
        true
    }

    /// How many leading elements `self` and `other` agree on (both non-empty), or `None`
    /// if their first elements differ.
    pub fn common_prefix(&self, other: &Piece) -> Option<u64> {
        let n = self.len.min(other.len);
        if let Pattern::Blocks { block, .. } = self.pat {
            if let (Some((ra, pa, sa)), Some((rb, pb, sb))) = (
                self.as_blocks(block, self.off, false),
                other.as_blocks(block, self.off, false),
            ) {
                if (ra, pa) != (rb, pb) {
                    return None;
                }
                return Some(match (sa, sb) {
                    (Some(a), Some(b)) if a != b => n.min(block - pa),
                    _ => n,
                });
            }
        }
        let k = self.run_len(0).min(other.run_len(0));
        (self.at(0) == other.at(0)).then_some(k)
    }
}

/// The step of ranks side by side.
const fn step_one() -> Rank {
    1
}

/// A piece laid out in `piece.len / seg` segments of `seg` elements, segment j at
/// `start + j·stride` (`stride > seg`, at least two segments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strided {
    pub piece: Piece,
    pub seg: u64,
    pub stride: u64,
}

impl Strided {
    fn count(&self) -> u64 {
        self.piece.len / self.seg
    }
    fn span(&self) -> u64 {
        (self.count() - 1) * self.stride + self.seg
    }
}

/// One entry of a buffer: a flat piece, or a strided one whose holes are unset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Run {
    Flat(Piece),
    Strided(Box<Strided>),
}

impl Run {
    /// `piece` in segments of `seg` at `stride`: flat when that leaves no hole.
    fn new(piece: Piece, seg: u64, stride: u64) -> Run {
        if stride == seg || piece.len <= seg {
            Run::Flat(piece)
        } else {
            debug_assert!(stride > seg && piece.len.checked_rem(seg) == Some(0));
            Run::Strided(Box::new(Strided { piece, seg, stride }))
        }
    }

    /// Positions from the start to one past the last element held.
    fn span(&self) -> u64 {
        match self {
            Run::Flat(p) => p.len,
            Run::Strided(s) => s.span(),
        }
    }
}

impl Strided {
    /// Segments `a..b` as a run (starting `a·stride` after this one).
    fn segments(&self, a: u64, b: u64) -> Run {
        Run::new(
            self.piece.slice(a * self.seg, (b - a) * self.seg),
            self.seg,
            self.stride,
        )
    }
}

/// One buffer's contents: disjoint runs keyed by their start or, once the runs are many
/// and all whole blocks, one cell per block ([`BufState::blocked`]).
#[derive(Clone, Debug, Default)]
pub struct BufState {
    runs: BTreeMap<u64, Run>,
    /// The contents block by block, when in cell form (then `runs` is empty).
    cells: Option<Box<Cells>>,
    /// The block size of the cell form (0: never).
    block: u64,
    /// Try the cell form when the runs reach this many.
    promote_at: usize,
}

/// A buffer block by block: cell i describes elements `i·block..(i + 1)·block`.
///
/// A cell is [`UNSET`] or `src << 32 | col`: the block is input elements
/// `col·block..(col + 1)·block` combined over `src`, which is a rank (a plain copy) or,
/// with bit 31 set, an index into `contribs`. The state of a buffer that an exchange
/// fills block by block in scattered order (TEA1's tokens, the all-to-all's columns, a
/// reduce-scatter's partial sums) then costs an array access per block moved, not a
/// search of a tree of thousands of runs.
#[derive(Clone, Debug, Default)]
struct Cells {
    v: Vec<u64>,
    contribs: Vec<Contrib>,
    index: FxHashMap<Contrib, u32>,
}

/// A cell never written.
const UNSET: u64 = u64::MAX;
/// Bit of a cell's `src` that makes it an index into [`Cells::contribs`].
const INTERNED: u64 = 1 << 31;
/// Runs at which a buffer with a block size first tries the cell form.
pub const PROMOTE_AT: usize = 64;
/// The cell form may take at most this many cells per run it replaces.
pub const CELLS_PER_RUN: u64 = 16;

impl Cells {
    /// Whether `p`, placed at a multiple of `block`, is whole blocks a cell describes.
    fn fits(p: &Piece, block: u64) -> bool {
        if p.len % block != 0 || p.off % block != 0 {
            return false;
        }
        let last_col_ok = |col: u64| col < u32::MAX as u64;
        match p.pat {
            Pattern::Seq { .. } => last_col_ok((p.off + p.len) / block),
            Pattern::Blocks {
                rank,
                block: b,
                phase,
                step,
            } => {
                b == block
                    && phase == 0
                    && last_col_ok(p.off / block)
                    && (p.len / block)
                        .checked_sub(1)
                        .is_none_or(|i| (rank as u64 + i * step as u64) < INTERNED)
            }
        }
    }

    /// The cell of block `e / block` of `p` (which [`Cells::fits`]).
    fn cell(&mut self, p: &Piece, e: u64, block: u64) -> u64 {
        match &p.pat {
            Pattern::Seq { src } => {
                let col = (p.off + e) / block;
                let code = match **src {
                    [(r, q)] if q == r + 1 && (r as u64) < INTERNED => r as u64,
                    _ => {
                        let i = match self.index.get(src) {
                            Some(&i) => i,
                            None => {
                                let i = self.contribs.len() as u32;
                                self.contribs.push(src.clone());
                                self.index.insert(src.clone(), i);
                                i
                            }
                        };
                        INTERNED | i as u64
                    }
                };
                code << 32 | col
            }
            &Pattern::Blocks { rank, step, .. } => {
                let r = nth_rank(rank, e / block, step) as u64;
                r << 32 | p.off / block
            }
        }
    }

    /// The piece cell `c` (set) describes.
    fn piece(&self, c: u64, block: u64) -> Piece {
        let (src, col) = (c >> 32, c & u32::MAX as u64);
        if src & INTERNED == 0 {
            Piece::blocks(src as Rank, block, col * block, block)
        } else {
            Piece {
                len: block,
                off: col * block,
                pat: Pattern::Seq {
                    src: self.contribs[(src & !INTERNED) as usize].clone(),
                },
            }
        }
    }

    /// Append the whole block of cell `c` to `out`, extending its last piece without a
    /// search for a rule where the block plainly continues it.
    fn push(&self, out: &mut Pieces, c: u64, block: u64) {
        let (src, col) = (c >> 32, c & u32::MAX as u64);
        if let Some(last) = out.last_mut() {
            let grows = match &last.pat {
                // The next rank of a run of blocks at one input offset.
                &Pattern::Blocks {
                    rank,
                    block: b,
                    phase: 0,
                    step,
                } if src & INTERNED == 0
                    && b == block
                    && last.off == col * block
                    && last.len % block == 0
                    && last.len >= 2 * block =>
                {
                    rank as u64 + (last.len / block) * step as u64 == src
                }
                // The next input block of the same combination.
                Pattern::Seq { src: have } if last.off + last.len == col * block => {
                    if src & INTERNED == 0 {
                        matches!(**have, [(r, q)] if r as u64 == src && q as u64 == src + 1)
                    } else {
                        let want = &self.contribs[(src & !INTERNED) as usize];
                        Arc::ptr_eq(have, want) || have == want
                    }
                }
                _ => false,
            };
            if grows {
                last.len += block;
                return;
            }
        }
        push_merged(out, self.piece(c, block));
    }
}

impl BufState {
    /// A buffer whose `len` elements are rank `r`'s input.
    pub fn input(r: Rank, len: u64) -> Self {
        let mut s = BufState::default();
        if len > 0 {
            s.runs.insert(0, Run::Flat(Piece::copy(r, 0, len)));
        }
        s
    }

    /// An empty buffer that switches to one cell per `block` elements once it holds
    /// `promote_at` runs or more, if they are all whole blocks and the cells take at
    /// most [`CELLS_PER_RUN`] per run; it switches back for good at the first write
    /// that is not whole blocks. Reads and writes give the same results either way.
    pub fn blocked(block: u64, promote_at: usize) -> Self {
        BufState {
            block,
            promote_at: promote_at.max(1),
            ..BufState::default()
        }
    }

    /// Whether the buffer is in cell form.
    pub fn is_cells(&self) -> bool {
        self.cells.is_some()
    }

    /// Switch to the cell form if the runs are many, all whole blocks, and not much
    /// smaller than the cells; else wait until they are twice as many.
    fn maybe_promote(&mut self) {
        if self.block == 0 || self.cells.is_some() || self.runs.len() < self.promote_at {
            return;
        }
        let b = self.block;
        self.promote_at = self.promote_at.saturating_mul(2);
        let end = self
            .runs
            .iter()
            .next_back()
            .map_or(0, |(&k, r)| k + r.span());
        let fits = end.div_ceil(b) <= CELLS_PER_RUN * self.runs.len() as u64
            && self.runs.iter().all(|(&k, r)| {
                k % b == 0
                    && match r {
                        Run::Flat(p) => Cells::fits(p, b),
                        Run::Strided(st) => {
                            st.seg % b == 0 && st.stride % b == 0 && Cells::fits(&st.piece, b)
                        }
                    }
            });
        if !fits {
            return;
        }
        let mut cells = Box::new(Cells {
            v: vec![UNSET; (end / b) as usize],
            ..Cells::default()
        });
        for (k, run) in std::mem::take(&mut self.runs) {
            let (p, seg, stride) = match run {
                Run::Flat(p) => (p, b, b),
                Run::Strided(st) => (st.piece, st.seg, st.stride),
            };
            for e in (0..p.len).step_by(b as usize) {
                let at = k + (e / seg) * stride + e % seg;
                cells.v[(at / b) as usize] = cells.cell(&p, e, b);
            }
        }
        self.cells = Some(cells);
    }

    /// Leave the cell form for good: the runs of the same contents.
    fn demote(&mut self) {
        let Some(cells) = self.cells.take() else {
            return;
        };
        let b = self.block;
        self.block = 0;
        for (i, &c) in cells.v.iter().enumerate() {
            if c != UNSET {
                self.merge_into_previous(i as u64 * b, cells.piece(c, b));
            }
        }
    }

    /// Write `pieces` at `start` in cell form, if they are whole blocks; else leave
    /// the cell form. Returns whether it wrote.
    fn place_cells(&mut self, start: u64, pieces: &[Piece]) -> bool {
        let b = self.block;
        let Some(cells) = self.cells.as_mut() else {
            return false;
        };
        if start % b != 0 || !pieces.iter().all(|p| Cells::fits(p, b)) {
            self.demote();
            return false;
        }
        let len: u64 = pieces.iter().map(|p| p.len).sum();
        let end = ((start + len) / b) as usize;
        if cells.v.len() < end {
            cells.v.resize(end, UNSET);
        }
        let mut i = (start / b) as usize;
        for p in pieces {
            for e in (0..p.len).step_by(b as usize) {
                cells.v[i] = cells.cell(p, e, b);
                i += 1;
            }
        }
        true
    }

    /// [`BufState::read_into`] in cell form.
    fn read_cells(
        cells: &Cells,
        b: u64,
        start: u64,
        len: u64,
        out: &mut Pieces,
    ) -> Result<(), u64> {
        let end = start + len;
        let mut pos = start;
        while pos < end {
            let i = pos / b;
            let c = cells.v.get(i as usize).copied().unwrap_or(UNSET);
            if c == UNSET {
                return Err(pos);
            }
            let (d, take) = (pos % b, (b - pos % b).min(end - pos));
            if take == b {
                cells.push(out, c, b);
            } else {
                push_merged(out, cells.piece(c, b).slice(d, take));
            }
            pos += take;
        }
        Ok(())
    }

    /// Whether no run holds a position of `a..b` in its span.
    fn is_free(&self, a: u64, b: u64) -> bool {
        self.runs
            .range(..b)
            .next_back()
            .is_none_or(|(&k, r)| k + r.span() <= a)
    }

    /// Make `pos` a run boundary: no run's span contains both `pos - 1` and `pos`. With
    /// `merge_head`, a flat run cut at `pos` has its head, cut down, appended to the run
    /// before it when it continues that run's rule (only for a `pos` before which
    /// nothing is overwritten next: the merged run may start before the cut run).
    fn split_at(&mut self, pos: u64, merge_head: bool) {
        let Some((&start, run)) = self.runs.range(..pos).next_back() else {
            return;
        };
        if start + run.span() <= pos {
            return;
        }
        let cut = pos - start;
        match run {
            Run::Flat(p) => {
                let tail = p.slice(cut, p.len - cut);
                let head = p.slice(0, cut);
                if merge_head {
                    self.runs.remove(&start);
                    self.merge_into_previous(start, head);
                } else {
                    self.runs.insert(start, Run::Flat(head));
                }
                self.runs.insert(pos, Run::Flat(tail));
            }
            Run::Strided(s) => {
                let s = (**s).clone();
                self.runs.remove(&start);
                let (j, d) = (cut / s.stride, cut % s.stride);
                let at = |i: u64| start + i * s.stride;
                if d >= s.seg {
                    // In the hole after segment j.
                    self.runs.insert(start, s.segments(0, j + 1));
                    self.runs.insert(at(j + 1), s.segments(j + 1, s.count()));
                } else if d == 0 {
                    // At the start of segment j ≥ 1.
                    self.runs.insert(start, s.segments(0, j));
                    self.runs.insert(pos, s.segments(j, s.count()));
                } else {
                    // Inside segment j.
                    if j > 0 {
                        self.runs.insert(start, s.segments(0, j));
                    }
                    let seg = s.piece.slice(j * s.seg, s.seg);
                    self.runs.insert(at(j), Run::Flat(seg.slice(0, d)));
                    self.runs.insert(pos, Run::Flat(seg.slice(d, s.seg - d)));
                    if j + 1 < s.count() {
                        self.runs.insert(at(j + 1), s.segments(j + 1, s.count()));
                    }
                }
            }
        }
    }

    /// The pieces covering `start..start+len`, or the first unset element.
    pub fn read(&self, start: u64, len: u64) -> Result<Pieces, u64> {
        let mut out = Pieces::new();
        self.read_into(start, len, &mut out).map(|()| out)
    }

    /// [`BufState::read`], appending the pieces to `out` (merged with its last piece
    /// where they continue it, as [`push_merged`] does); on `Err`, `out` may hold part
    /// of the range.
    pub fn read_into(&self, start: u64, len: u64, out: &mut Pieces) -> Result<(), u64> {
        if len == 0 {
            return Ok(());
        }
        if let Some(cells) = &self.cells {
            return Self::read_cells(cells, self.block, start, len, out);
        }
        let end = start + len;
        // Fast path, one tree search: the last run starting before `end` is flat and
        // starts at or before `start` (no other run can then meet the range).
        match self.runs.range(..end).next_back() {
            None => return Err(start),
            Some((&s, Run::Flat(p))) if s <= start => {
                let e = s + p.len;
                if e >= end {
                    push_merged(out, p.slice(start - s, len));
                    return Ok(());
                }
                return Err(e.max(start));
            }
            Some(_) => {}
        }
        let mut pos = start;
        let first = self
            .runs
            .range(..=start)
            .next_back()
            .map(|(&s, _)| s)
            .unwrap_or(start);
        for (&s, run) in self.runs.range(first..end) {
            let e = s + run.span();
            if e <= pos {
                continue;
            }
            if s > pos {
                return Err(pos);
            }
            match run {
                Run::Flat(p) => {
                    let take = e.min(end) - pos;
                    push_merged(out, p.slice(pos - s, take));
                    pos += take;
                }
                Run::Strided(st) => {
                    let stop = e.min(end);
                    while pos < stop {
                        let (j, d) = ((pos - s) / st.stride, (pos - s) % st.stride);
                        if d >= st.seg {
                            return Err(pos);
                        }
                        let take = (st.seg - d).min(stop - pos);
                        push_merged(out, st.piece.slice(j * st.seg + d, take));
                        pos += take;
                    }
                }
            }
            if pos >= end {
                break;
            }
        }
        if pos < end {
            return Err(pos);
        }
        Ok(())
    }

    /// The pieces of `count` segments of `seg` elements, segment j at `start + j·stride`,
    /// concatenated, or the first unset element: the same as reading the segments one by
    /// one, in one step when they are consecutive segments of one strided run.
    pub fn read_strided(
        &self,
        start: u64,
        seg: u64,
        stride: u64,
        count: u64,
    ) -> Result<Pieces, u64> {
        if let Some((&s, Run::Strided(st))) = self.runs.range(..=start).next_back() {
            let j = (start - s) / stride;
            if st.seg == seg
                && st.stride == stride
                && (start - s).checked_rem(stride) == Some(0)
                && j + count <= st.count()
            {
                return Ok(smallvec::smallvec![st.piece.slice(j * seg, count * seg)]);
            }
        }
        let mut out = Pieces::new();
        for j in 0..count {
            self.read_into(start + j * stride, seg, &mut out)?;
        }
        Ok(out)
    }

    /// Overwrite `start..` with `pieces`.
    pub fn place(&mut self, start: u64, pieces: &[Piece]) {
        let len: u64 = pieces.iter().map(|p| p.len).sum();
        if len == 0 || self.place_cells(start, pieces) {
            return;
        }
        self.place_runs(start, pieces, len);
        self.maybe_promote();
    }

    /// [`BufState::place`] in run form.
    fn place_runs(&mut self, start: u64, pieces: &[Piece], len: u64) {
        let end = start + len;
        if let [p] = pieces {
            if self.overwrite_head(start, p) {
                return;
            }
        }
        // Fast path: nothing there yet (a first delivery), no run to split or remove.
        if !self.is_free(start, end) {
            self.split_at(start, true);
            self.split_at(end, false);
            while let Some((&k, _)) = self.runs.range(start..end).next() {
                self.runs.remove(&k);
            }
        }
        let mut pos = start;
        for p in pieces.iter().filter(|p| p.len > 0) {
            self.merge_into_previous(pos, p.clone());
            pos += p.len;
        }
        self.merge_next(end);
    }

    /// Overwrite the head of the flat run that starts at `start` with `p` (`p` no
    /// longer than it), in place: a buffer reused from one round to the next (SMG's
    /// `tmp`, a gather per destination) is rewritten in the runs it already has, not
    /// cut, emptied and refilled. Returns false, changing nothing, when there is no
    /// such run. Runs stay maximal: `p` joins the run before it or the rest of the old
    /// run (or the run after it) where it continues their rule.
    fn overwrite_head(&mut self, start: u64, p: &Piece) -> bool {
        let Some(Run::Flat(old)) = self.runs.get_mut(&start) else {
            return false;
        };
        if old.len < p.len || p.len == 0 {
            return false;
        }
        let old_end = start + old.len;
        let mut new = p.clone();
        let rest = (old.len > p.len).then(|| old.slice(p.len, old.len - p.len));
        let rest = match rest {
            Some(t) if !new.try_append(&t) => Some(t),
            _ => None,
        };
        let new_end = start + new.len;
        *old = new;
        if let Some(t) = rest {
            self.runs.insert(new_end, Run::Flat(t));
        } else {
            self.merge_next(old_end);
        }
        // Join the run before, if `p` continues it.
        if let Some((&k, Run::Flat(prev))) = self.runs.range(..start).next_back() {
            if k + prev.len == start {
                if let Some(Run::Flat(cur)) = self.runs.get(&start) {
                    let mut joined = prev.clone();
                    if joined.try_append(cur) {
                        self.runs.remove(&start);
                        self.runs.insert(k, Run::Flat(joined));
                    }
                }
            }
        }
        true
    }

    /// Append the flat run starting at `end`, if any, to the one ending there.
    fn merge_next(&mut self, end: u64) {
        match self.runs.remove(&end) {
            Some(Run::Flat(next)) => self.merge_into_previous(end, next),
            Some(run) => {
                self.runs.insert(end, run);
            }
            None => {}
        }
    }

    /// Insert `piece` at `pos`, appending it to the flat run that ends at `pos` if it
    /// continues that run's rule.
    fn merge_into_previous(&mut self, pos: u64, piece: Piece) {
        if let Some((&k, Run::Flat(prev))) = self.runs.range_mut(..pos).next_back() {
            if k + prev.len == pos && prev.try_append(&piece) {
                return;
            }
        }
        self.runs.insert(pos, Run::Flat(piece));
    }

    /// Overwrite `count = piece.len / seg` segments of `seg` elements, segment j at
    /// `start + j·stride` (`stride ≥ seg`), with the consecutive parts of `piece`: the
    /// same as placing each segment, in one entry when they land in free space or in the
    /// middle of the holes of a strided run of the same shape.
    pub fn place_strided(&mut self, start: u64, seg: u64, stride: u64, piece: &Piece) {
        assert!(
            seg > 0 && stride >= seg && piece.len.checked_rem(seg) == Some(0),
            "place_strided: {} elements in segments of {seg} at stride {stride}",
            piece.len
        );
        let count = piece.len / seg;
        if count <= 1 || stride == seg {
            return self.place(start, std::slice::from_ref(piece));
        }
        if let Some(cells) = self.cells.as_mut() {
            let b = self.block;
            if start % b == 0 && seg % b == 0 && stride % b == 0 && Cells::fits(piece, b) {
                let end = ((start + (count - 1) * stride + seg) / b) as usize;
                if cells.v.len() < end {
                    cells.v.resize(end, UNSET);
                }
                for e in (0..piece.len).step_by(b as usize) {
                    let at = start + (e / seg) * stride + e % seg;
                    cells.v[(at / b) as usize] = cells.cell(piece, e, b);
                }
                return;
            }
            self.demote();
        }
        let end = start + (count - 1) * stride + seg;
        if self.is_free(start, end) {
            self.runs
                .insert(start, Run::new(piece.clone(), seg, stride));
        } else if !self.try_interleave(start, seg, stride, piece) {
            for j in 0..count {
                let p = piece.slice(j * seg, seg);
                self.place_runs(start + j * stride, std::slice::from_ref(&p), seg);
            }
        }
        self.maybe_promote();
    }

    /// The `count` segments of `seg` elements at `at + j·stride`, if they are exactly the
    /// strided run at `at` or `count` flat runs: (their keys, their pieces: one piece
    /// holding them all, or one per segment).
    fn held_segments(
        &self,
        at: u64,
        seg: u64,
        stride: u64,
        count: u64,
    ) -> Option<(Vec<u64>, Vec<Piece>)> {
        match self.runs.get(&at)? {
            Run::Strided(s) => (s.seg == seg && s.stride == stride && s.count() == count)
                .then(|| (vec![at], vec![s.piece.clone()])),
            Run::Flat(_) => {
                let mut keys = Vec::with_capacity(count as usize);
                let mut pieces = Vec::with_capacity(count as usize);
                for j in 0..count {
                    let k = at + j * stride;
                    match self.runs.get(&k)? {
                        Run::Flat(p) if p.len == seg => {
                            keys.push(k);
                            pieces.push(p.clone());
                        }
                        _ => return None,
                    }
                }
                Some((keys, pieces))
            }
        }
    }

    /// Place `piece` at `start` in segments of `seg` at `stride` when the buffer holds,
    /// and holds only, the same number of segments half a stride before or after: the
    /// union is one run of stride `stride / 2`. Returns whether it did.
    fn try_interleave(&mut self, start: u64, seg: u64, stride: u64, piece: &Piece) -> bool {
        let half = stride / 2;
        if stride & 1 == 1 || half < seg {
            return false;
        }
        let count = piece.len / seg;
        let body = (count - 1) * stride + seg;
        for held in [start.checked_sub(half), start.checked_add(half)] {
            let Some(held) = held else { continue };
            let Some((keys, old)) = self.held_segments(held, seg, stride, count) else {
                continue;
            };
            // Nothing else in the window of the union.
            let (lo, hi) = (held.min(start), held.max(start) + body);
            let before_free = self
                .runs
                .range(..lo)
                .next_back()
                .is_none_or(|(&k, r)| k + r.span() <= lo);
            if !before_free || self.runs.range(lo..hi).take(keys.len() + 1).count() != keys.len() {
                return false;
            }
            let old_seg = |j: u64| match old.len() {
                1 => old[0].slice(j * seg, seg),
                _ => old[j as usize].clone(),
            };
            let new_seg = |j: u64| piece.slice(j * seg, seg);
            let (first, second) = if held < start {
                (&old[0], piece)
            } else {
                (piece, &old[0])
            };
            // Blocks of ranks a, a + 2s, … and a + s, a + 3s, …: ranks a, a + s, … at once.
            let fast = match (old.len(), &first.pat, &second.pat) {
                (
                    1,
                    &Pattern::Blocks {
                        rank: a,
                        block: ba,
                        phase: 0,
                        step: sa,
                    },
                    &Pattern::Blocks {
                        rank: b,
                        block: bb,
                        phase: 0,
                        step: sb,
                    },
                ) if ba == seg
                    && bb == seg
                    && sa == sb
                    && sa % 2 == 0
                    && first.off == second.off
                    && b as u64 == a as u64 + sa as u64 / 2 =>
                {
                    Some(Piece::blocks_step(a, sa / 2, seg, first.off, 2 * piece.len))
                }
                _ => None,
            };
            let all = match fast {
                Some(p) => p,
                None => {
                    // Segment by segment, alternating: it must stay one piece.
                    let mut all = first.slice(0, seg);
                    for j in 0..count {
                        let (a, b) = if held < start {
                            (old_seg(j), new_seg(j))
                        } else {
                            (new_seg(j), old_seg(j))
                        };
                        if (j > 0 && !all.try_append(&a)) || !all.try_append(&b) {
                            return false;
                        }
                    }
                    all
                }
            };
            for k in keys {
                self.runs.remove(&k);
            }
            match Run::new(all, seg, half) {
                Run::Flat(p) => {
                    self.merge_into_previous(lo, p);
                    self.merge_next(hi);
                }
                run => {
                    self.runs.insert(lo, run);
                }
            }
            return true;
        }
        false
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
        let mut result = Pieces::new();
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

    /// All runs, in order: (start, run); none in cell form.
    pub fn runs(&self) -> impl Iterator<Item = (u64, &Run)> {
        self.runs.iter().map(|(&s, r)| (s, r))
    }
}

/// Append `p` to `out`, merging it into the last piece when it continues its rule.
pub fn push_merged(out: &mut Pieces, p: Piece) {
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
        assert_eq!(b.read(0, 4).unwrap().to_vec(), vec![one(1, 0, 4)]);
        assert_eq!(b.read(2, 5), Err(4));
        assert_eq!(b.read(8, 1), Err(8));
    }

    #[test]
    fn adjacent_pieces_merge_into_one_run() {
        let mut b = BufState::default();
        b.place(4, &[one(2, 4, 4)]);
        b.place(0, &[one(2, 0, 4)]);
        assert_eq!(b.runs().count(), 1);
        assert_eq!(b.read(0, 8).unwrap().to_vec(), vec![one(2, 0, 8)]);
        b.place(2, &[one(3, 2, 2)]);
        assert_eq!(b.runs().count(), 3);
        assert_eq!(
            b.read(1, 4).unwrap().to_vec(),
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
        assert_eq!(whole.to_vec(), vec![Piece::blocks(0, 5, 0, 40)]);
        // Reading across a block boundary gives a sliced Blocks piece with the right values.
        let mid = b.read(7, 10).unwrap();
        assert_eq!(mid.len(), 1);
        assert_eq!(mid[0].at(0), (Arc::from(vec![(1, 2)]), 2));
        assert_eq!(mid[0].at(3), (Arc::from(vec![(2, 3)]), 0));
        assert_eq!(mid[0].at(9), (Arc::from(vec![(3, 4)]), 1));
        // A wrong block breaks the run and is visible.
        b.place(10, &[one(9, 0, 5)]);
        assert_eq!(b.read(10, 5).unwrap().to_vec(), vec![one(9, 0, 5)]);
        assert!(b.runs().count() >= 3);
    }

    #[test]
    fn blocks_with_an_offset_base_model_all_to_all_columns() {
        // Rank j's all-to-all result: block i is rank i's input at offset j·m (j = 2, m = 3).
        let mut b = BufState::default();
        for i in [1u32, 0, 3, 2] {
            b.place(i as u64 * 3, &[one(i, 6, 3)]);
        }
        assert_eq!(
            b.read(0, 12).unwrap().to_vec(),
            vec![Piece::blocks(0, 3, 6, 12)]
        );
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

    // --- Strided runs and Blocks with a step -------------------------------------------

    /// An element's value, for comparing with a plain element-by-element model.
    type Val = (Vec<(Rank, Rank)>, u64);

    fn expand(ps: &[Piece]) -> Vec<Val> {
        ps.iter()
            .flat_map(|p| (0..p.len).map(move |i| p.at(i)))
            .map(|(c, o)| (c.to_vec(), o))
            .collect()
    }

    /// The reference: one optional value per element.
    #[derive(Clone)]
    struct Model(Vec<Option<Val>>);

    impl Model {
        fn place(&mut self, start: u64, ps: &[Piece]) {
            for (i, v) in expand(ps).into_iter().enumerate() {
                self.0[start as usize + i] = Some(v);
            }
        }
        fn place_strided(&mut self, start: u64, seg: u64, stride: u64, p: &Piece) {
            for j in 0..p.len / seg {
                self.place(start + j * stride, &[p.slice(j * seg, seg)]);
            }
        }
        fn read(&self, start: u64, len: u64) -> Result<Vec<Val>, u64> {
            (start..start + len)
                .map(|i| self.0[i as usize].clone().ok_or(i))
                .collect()
        }
    }

    /// Every window of `b` reads as the model says, and the runs are well formed.
    fn check(b: &BufState, m: &Model) {
        let n = m.0.len() as u64;
        let mut end = 0;
        for (s, r) in b.runs() {
            assert!(s >= end, "runs overlap at {s}: {:?}", b.runs);
            match r {
                Run::Flat(p) => assert!(p.len > 0),
                Run::Strided(st) => {
                    assert!(
                        st.stride > st.seg && st.seg > 0 && st.count() >= 2,
                        "{st:?}"
                    );
                    assert_eq!(st.piece.len % st.seg, 0);
                }
            }
            end = s + r.span();
        }
        for a in 0..n {
            for len in 1..=(n - a).min(9) {
                let got = b.read(a, len).map(|ps| expand(&ps));
                assert_eq!(got, m.read(a, len), "read({a}, {len}) of {:?}", b.runs);
            }
        }
        assert_eq!(b.read(0, n).map(|ps| expand(&ps)), m.read(0, n));
    }

    /// Deterministic pseudo-random numbers (xorshift).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// A strided run: ranks 1, 3, 5, 7 (step 2), 3 elements each from input offset 4,
    /// at positions 2, 9, 16, 23 (stride 7).
    fn strided_fixture() -> (BufState, Model) {
        let mut b = BufState::default();
        let mut m = Model(vec![None; 30]);
        let p = Piece::blocks_step(1, 2, 3, 4, 12);
        b.place_strided(2, 3, 7, &p);
        m.place_strided(2, 3, 7, &p);
        assert_eq!(b.runs().count(), 1);
        (b, m)
    }

    #[test]
    fn strided_run_reads_segments_and_reports_holes_as_unset() {
        let (b, m) = strided_fixture();
        check(&b, &m);
        assert_eq!(expand(&b.read(9, 3).unwrap()), expand(&[one(3, 4, 3)]));
        assert_eq!(expand(&b.read(10, 2).unwrap()), expand(&[one(3, 5, 2)]));
        // The holes, inside the run's span, are unset.
        assert_eq!(b.read(5, 1), Err(5));
        assert_eq!(b.read(9, 4), Err(12));
        assert_eq!(b.read(2, 22), Err(5));
        assert_eq!(b.read(0, 3), Err(0));
        assert_eq!(b.read(26, 1), Err(26));
    }

    #[test]
    fn strided_reads_equal_reads_segment_by_segment() {
        let (b, m) = strided_fixture();
        let by_segments = |start: u64, seg: u64, stride: u64, count: u64| {
            (0..count)
                .map(|j| m.read(start + j * stride, seg))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.concat())
        };
        for start in 0..12 {
            for seg in 1..=4 {
                for stride in seg..=9 {
                    for count in 1..=4 {
                        if start + (count - 1) * stride + seg > 30 {
                            continue;
                        }
                        let got = b.read_strided(start, seg, stride, count);
                        assert_eq!(
                            got.clone().map(|ps| expand(&ps)),
                            by_segments(start, seg, stride, count),
                            "{start} {seg} {stride} {count}"
                        );
                    }
                }
            }
        }
        // The whole run, or consecutive segments of it: one piece.
        assert_eq!(
            b.read_strided(2, 3, 7, 4).unwrap().to_vec(),
            vec![Piece::blocks_step(1, 2, 3, 4, 12)]
        );
        assert_eq!(
            b.read_strided(9, 3, 7, 2).unwrap().to_vec(),
            vec![Piece::blocks_step(3, 2, 3, 4, 6)]
        );
        assert_eq!(b.read_strided(9, 3, 7, 3).unwrap().len(), 1);
        assert_eq!(b.read_strided(3, 3, 7, 2), Err(5));
    }

    #[test]
    fn splitting_a_strided_run_at_every_position_keeps_every_element() {
        let (b0, m) = strided_fixture();
        for pos in 0..30 {
            let mut b = b0.clone();
            b.split_at(pos, pos % 2 == 0);
            check(&b, &m);
            // Every run boundary is respected: nothing spans `pos`.
            for (s, r) in b.runs() {
                assert!(!(s < pos && pos < s + r.span()), "{pos}: {:?}", b.runs);
            }
        }
    }

    #[test]
    fn writes_at_every_position_and_length_into_a_strided_run() {
        let (b0, m0) = strided_fixture();
        for start in 0..29 {
            for len in 1..=(30 - start).min(10) {
                let (mut b, mut m) = (b0.clone(), m0.clone());
                let w = [one(99, start, len)];
                b.place(start, &w);
                m.place(start, &w);
                check(&b, &m);
            }
        }
    }

    #[test]
    fn combining_into_a_strided_run_hits_segments_and_stops_at_holes() {
        let (mut b, mut m) = strided_fixture();
        b.combine(9, &[one(0, 4, 3)], false, true).unwrap();
        m.0[9..12]
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = Some((vec![(0, 1), (3, 4)], 4 + i as u64)));
        check(&b, &m);
        assert_eq!(b.read(9, 3).unwrap()[0].at(0).0[..], [(0, 1), (3, 4)]);
        // Across a hole: the first unset element.
        assert_eq!(
            b.combine(16, &[one(0, 4, 4)], false, true),
            Err(CombineError::Unset(19))
        );
        assert_eq!(
            b.combine(17, &[one(5, 5, 1)], false, true),
            Err(CombineError::Twice { at: 17, rank: 5 })
        );
        assert!(matches!(
            b.combine(23, &[one(0, 0, 1)], false, true),
            Err(CombineError::Misaligned { .. })
        ));
    }

    #[test]
    fn blocks_with_a_step_merge_slice_and_compare() {
        let mut v = Pieces::new();
        for r in [4u32, 6, 8, 10] {
            push_merged(&mut v, one(r, 2, 3));
        }
        assert_eq!(v.to_vec(), vec![Piece::blocks_step(4, 2, 3, 2, 12)]);
        // A rank off the step, or a different block offset, starts a new piece.
        push_merged(&mut v, one(13, 2, 3));
        push_merged(&mut v, one(16, 3, 2));
        assert_eq!(v.len(), 3);
        let p = &v[0];
        assert_eq!(p.at(7), (Arc::from(vec![(8, 9)]), 3));
        assert_eq!(p.slice(5, 4).at(0), (Arc::from(vec![(6, 7)]), 4));
        assert_eq!(p.slice(5, 4).at(1), (Arc::from(vec![(8, 9)]), 2));
        // Same first block, different steps: equal up to the end of that block only.
        let q = Piece::blocks_step(4, 1, 3, 2, 12);
        assert_eq!(p.common_prefix(&q), Some(3));
        assert_eq!(p.slice(1, 5).common_prefix(&q.slice(1, 5)), Some(2));
        assert_eq!(p.common_prefix(p), Some(12));
        assert_eq!(p.common_prefix(&Piece::blocks_step(6, 2, 3, 2, 12)), None);
        // A step-2 piece does not continue a step-1 piece.
        let mut a = Piece::blocks(0, 3, 2, 6);
        assert!(!a.try_append(&Piece::blocks_step(2, 2, 3, 2, 6)));
        assert!(a.try_append(&Piece::blocks(2, 3, 2, 6)));
        assert_eq!(a, Piece::blocks(0, 3, 2, 12));
    }

    /// One node's `out` under ADEA (blocks of m elements, the dimensions crossed from the
    /// leading one down): after each step it is a single run, and at the end the
    /// all-gather's single `Blocks` piece.
    #[test]
    fn interleaving_halves_the_stride_down_to_one_flat_run() {
        for n in 1..=6u32 {
            for m in 1..=3u64 {
                for x in [0u32, 1, (1 << n) - 1, (1 << n) / 3] {
                    let k = 1u64 << n;
                    let mut b = BufState::default();
                    let mut md = Model(vec![None; (k * m) as usize]);
                    // The blocks held: those agreeing with x on the low bits.
                    let held = |x: u32, t: u32| -> Vec<u32> {
                        let mask = ((1u64 << n) - (1u64 << (n - t))) as u32;
                        (0..k as u32).filter(|&r| r & !mask == x & !mask).collect()
                    };
                    let own = [one(x, 0, m)];
                    b.place(x as u64 * m, &own);
                    md.place(x as u64 * m, &own);
                    for t in 0..n {
                        let peer = x ^ (1 << (n - 1 - t));
                        let blocks = held(peer, t);
                        let mut msg = Pieces::new();
                        for &r in &blocks {
                            push_merged(&mut msg, one(r, 0, m));
                        }
                        assert_eq!(msg.len(), 1);
                        let stride = if blocks.len() > 1 {
                            (blocks[1] - blocks[0]) as u64 * m
                        } else {
                            m
                        };
                        let at = blocks[0] as u64 * m;
                        b.place_strided(at, m, stride, &msg[0]);
                        md.place_strided(at, m, stride, &msg[0]);
                        assert!(
                            b.runs().count() <= 2,
                            "n {n} m {m} x {x} t {t}: {:?}",
                            b.runs
                        );
                        if t > 0 {
                            assert_eq!(b.runs().count(), 1, "n {n} m {m} x {x} t {t}");
                        }
                        if n <= 4 {
                            check(&b, &md);
                        }
                    }
                    assert_eq!(
                        b.read(0, k * m).unwrap().to_vec(),
                        vec![Piece::blocks(0, m, 0, k * m)]
                    );
                }
            }
        }
    }

    /// MTADEA's last step on node x ∈ {0, 1}: `out` holds the ranks' blocks in pairs
    /// (column C: block (C & 1) of rank (C & !1) | x, i.e. `Blocks` of 2m at step 2), and
    /// the received columns (those whose bit 0 differs from x: block x of rank C),
    /// placed one by one, turn it into the all-to-all's single `Blocks` piece. The state
    /// stays a few runs throughout, not one per column.
    #[test]
    fn overwriting_every_other_column_stays_one_run() {
        for m in 1..=3u64 {
            for x in [0u32, 1] {
                let k = 16u64;
                let mut b = BufState::default();
                let mut md = Model(vec![None; (k * m) as usize]);
                let before = [Piece::blocks_step(x, 2, 2 * m, 0, k * m)];
                b.place(0, &before);
                md.place(0, &before);
                for c in (0..k).filter(|c| c & 1 != x as u64) {
                    let col = [one(c as Rank, x as u64 * m, m)];
                    b.place(c * m, &col);
                    md.place(c * m, &col);
                    assert!(b.runs().count() <= 3, "m {m} x {x} c {c}: {:?}", b.runs);
                    check(&b, &md);
                }
                assert_eq!(
                    b.read(0, k * m).unwrap().to_vec(),
                    vec![Piece::blocks(0, m, x as u64 * m, k * m)]
                );
                assert_eq!(b.runs().count(), 1);
            }
        }
    }

    #[test]
    fn interleaving_refuses_what_is_not_exactly_the_middle_of_the_holes() {
        // Held: ranks 0, 4 at stride 8 (blocks of 2). Writes of other shapes fall back
        // to segment-by-segment placement, with the same result as the model.
        let cases: Vec<(u64, u64, u64, Piece)> = vec![
            (4, 2, 8, Piece::blocks_step(2, 4, 2, 0, 4)), // the middle: merges
            (2, 2, 8, Piece::blocks_step(1, 4, 2, 0, 4)), // a quarter off
            (4, 2, 8, Piece::blocks_step(3, 4, 2, 0, 4)), // wrong ranks
            (4, 2, 8, Piece::blocks_step(2, 4, 2, 1, 4)), // wrong input offset
            (4, 2, 8, one(2, 0, 4)),                      // not blocks
            (12, 2, 8, Piece::blocks_step(6, 4, 2, 0, 4)), // past the end
            (4, 1, 8, Piece::blocks_step(2, 4, 1, 0, 2)), // shorter segments
            (4, 2, 4, Piece::blocks_step(2, 4, 2, 0, 8)), // more segments, other stride
        ];
        for (i, (at, seg, stride, p)) in cases.into_iter().enumerate() {
            let mut b = BufState::default();
            let mut m = Model(vec![None; 40]);
            let held = Piece::blocks_step(0, 4, 2, 0, 4);
            b.place_strided(0, 2, 8, &held);
            m.place_strided(0, 2, 8, &held);
            b.place_strided(at, seg, stride, &p);
            m.place_strided(at, seg, stride, &p);
            check(&b, &m);
            if i == 0 {
                assert_eq!(b.runs().count(), 1);
                assert_eq!(expand(&b.read(0, 2).unwrap()), expand(&[one(0, 0, 2)]));
                assert_eq!(expand(&b.read(4, 2).unwrap()), expand(&[one(2, 0, 2)]));
            }
        }
        // A run sticking into the window blocks the merge.
        let mut b = BufState::default();
        let mut m = Model(vec![None; 40]);
        for (at, seg, stride, p) in [
            (4u64, 2u64, 8u64, Piece::blocks_step(0, 4, 2, 0, 4)),
            (0, 2, 2, one(9, 0, 2)),
            (1, 2, 8, one(7, 0, 4)),
            (8, 2, 8, Piece::blocks_step(2, 4, 2, 0, 4)),
        ] {
            b.place_strided(at, seg, stride, &p);
            m.place_strided(at, seg, stride, &p);
            check(&b, &m);
        }
    }

    #[test]
    fn random_writes_match_the_element_model() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        const N: u64 = 48;
        let piece = |rng: &mut Rng, len: u64| -> Piece {
            let r = rng.next(6) as Rank;
            match rng.next(3) {
                0 => one(r, rng.next(4), len),
                1 => {
                    let block = 1 + rng.next(3);
                    Piece::blocks_step(r, 1 + rng.next(3) as Rank, block, rng.next(3), len + block)
                        .slice(rng.next(block), len)
                }
                _ => Piece {
                    len,
                    off: rng.next(4),
                    pat: Pattern::Seq {
                        src: Arc::from(vec![(r, r + 2)]),
                    },
                },
            }
        };
        for _ in 0..2000 {
            let mut b = BufState::default();
            let mut m = Model(vec![None; N as usize]);
            for _ in 0..12 {
                match rng.next(3) {
                    0 => {
                        let start = rng.next(N);
                        let mut ps = Vec::new();
                        let mut room = N - start;
                        for _ in 0..1 + rng.next(3) {
                            if room == 0 {
                                break;
                            }
                            let len = 1 + rng.next(room.min(6));
                            ps.push(piece(&mut rng, len));
                            room -= len;
                        }
                        b.place(start, &ps);
                        m.place(start, &ps);
                    }
                    1 => {
                        let seg = 1 + rng.next(3);
                        let stride = seg * (1 + rng.next(4)) + rng.next(2);
                        let count = 2 + rng.next(4);
                        let span = (count - 1) * stride + seg;
                        if span > N {
                            continue;
                        }
                        let start = rng.next(N - span + 1);
                        let p = if rng.next(2) == 0 {
                            piece(&mut rng, count * seg)
                        } else {
                            Piece::blocks_step(
                                rng.next(4) as Rank,
                                1 + rng.next(4) as Rank,
                                seg,
                                0,
                                count * seg,
                            )
                        };
                        b.place_strided(start, seg, stride, &p);
                        m.place_strided(start, seg, stride, &p);
                    }
                    _ => {
                        // The middle of the holes of the last strided run, when there is one.
                        let Some((s, st)) = b.runs().find_map(|(s, r)| match r {
                            Run::Strided(st) => Some((s, (**st).clone())),
                            Run::Flat(_) => None,
                        }) else {
                            continue;
                        };
                        let at = if rng.next(2) == 0 {
                            s + st.stride / 2
                        } else {
                            s.saturating_sub(st.stride / 2)
                        };
                        let before = at < s;
                        // Often exactly the interleaving blocks, else anything.
                        let p = match st.piece.pat {
                            Pattern::Blocks {
                                rank,
                                block,
                                phase: 0,
                                step,
                            } if block == st.seg
                                && step % 2 == 0
                                && (!before || rank >= step / 2)
                                && rng.next(4) != 0 =>
                            {
                                let r = if before {
                                    rank - step / 2
                                } else {
                                    rank + step / 2
                                };
                                Piece::blocks_step(r, step, block, st.piece.off, st.piece.len)
                            }
                            _ => piece(&mut rng, st.piece.len),
                        };
                        if at + st.span() <= N {
                            b.place_strided(at, st.seg, st.stride, &p);
                            m.place_strided(at, st.seg, st.stride, &p);
                        }
                    }
                }
                check(&b, &m);
            }
        }
    }

    /// The cell form against the run form (itself checked against the element model
    /// above): the same random writes, strided writes and combines, mostly of whole
    /// blocks (which keep or put a buffer in cell form), sometimes not (which takes it
    /// out), read back the same through every window, with the same errors.
    #[test]
    fn the_cell_form_reads_writes_and_combines_like_the_run_form() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut in_cells, mut demoted) = (0, 0);
        let piece = |rng: &mut Rng, b: u64, len: u64| -> Piece {
            let r = rng.next(6) as Rank;
            if rng.next(10) == 0 {
                // Not whole blocks: an arbitrary offset.
                return one(r, rng.next(5), len);
            }
            match rng.next(3) {
                0 => one(r, b * rng.next(4), len),
                1 => Piece::blocks_step(r, 1 + rng.next(3) as Rank, b, b * rng.next(3), len),
                _ => Piece {
                    len,
                    off: b * rng.next(4),
                    pat: Pattern::Seq {
                        src: Arc::from(vec![(r, r + 2)]),
                    },
                },
            }
        };
        for _ in 0..1500 {
            let b = 1 + rng.next(3);
            let n = 16 * b;
            let mut cells = BufState::blocked(b, 1 + rng.next(4) as usize);
            let mut runs = BufState::default();
            for _ in 0..14 {
                let aligned = rng.next(8) != 0;
                let at = |rng: &mut Rng, room: u64| {
                    if aligned {
                        b * rng.next(room / b + 1)
                    } else {
                        rng.next(room + 1)
                    }
                };
                match rng.next(3) {
                    0 => {
                        let start = at(&mut rng, n - b);
                        let mut ps = Vec::new();
                        let mut room = n - start;
                        for _ in 0..1 + rng.next(3) {
                            let len = b * (1 + rng.next(3));
                            if len > room {
                                break;
                            }
                            ps.push(piece(&mut rng, b, len));
                            room -= len;
                        }
                        cells.place(start, &ps);
                        runs.place(start, &ps);
                    }
                    1 => {
                        let seg = b * (1 + rng.next(2));
                        let stride = seg + b * rng.next(3);
                        let count = 2 + rng.next(3);
                        let span = (count - 1) * stride + seg;
                        if span > n {
                            continue;
                        }
                        let start = at(&mut rng, n - span);
                        let p = piece(&mut rng, b, count * seg);
                        cells.place_strided(start, seg, stride, &p);
                        runs.place_strided(start, seg, stride, &p);
                    }
                    _ => {
                        // Combine another rank's values at the same input offsets.
                        let start = at(&mut rng, n - b);
                        let len = (b * (1 + rng.next(3))).min(n - start);
                        let q = 10 + rng.next(4) as Rank;
                        let mut ps = Pieces::new();
                        if let Ok(held) = runs.read(start, len) {
                            for (_, o) in expand(&held) {
                                push_merged(&mut ps, one(q, o, 1));
                            }
                        } else {
                            ps.push(one(q, start, len));
                        }
                        let (left, comm) = (rng.next(2) == 0, rng.next(2) == 0);
                        assert_eq!(
                            cells.combine(start, &ps, left, comm),
                            runs.combine(start, &ps, left, comm),
                            "combine at {start}"
                        );
                    }
                }
                if cells.is_cells() {
                    in_cells += 1;
                } else if cells.block == 0 {
                    demoted += 1;
                }
                for a in 0..n {
                    for len in 1..=(n - a).min(2 * b + 2) {
                        let got = cells.read(a, len).map(|ps| expand(&ps));
                        assert_eq!(
                            got,
                            runs.read(a, len).map(|ps| expand(&ps)),
                            "read({a}, {len})"
                        );
                    }
                }
                assert_eq!(
                    cells.read(0, n).map(|ps| expand(&ps)),
                    runs.read(0, n).map(|ps| expand(&ps))
                );
            }
        }
        assert!(
            in_cells > 5000 && demoted > 1000,
            "{in_cells} in cell form, {demoted} demoted"
        );
    }

    /// A buffer rewritten round after round (SMG's `tmp`: the blocks of consecutive
    /// ranks at column c in round c, own block first, then subtrees of 1, 2, 4 blocks)
    /// is rewritten in place and stays one run per round.
    #[test]
    fn a_buffer_rewritten_round_after_round_stays_one_run() {
        let m = 3;
        let mut b = BufState::default();
        for c in 0..6u64 {
            let col = |r: Rank, blocks: u64| Piece::blocks(r, m, c * m, blocks * m);
            b.place(0, &[col(0, 1)]);
            let mut at = 1;
            while at < 8 {
                b.place(at * m, &[col(at as Rank, at)]);
                at *= 2;
            }
            assert_eq!(b.runs().count(), 1, "round {c}: {:?}", b.runs);
            assert_eq!(b.read(0, 8 * m).unwrap().to_vec(), vec![col(0, 8)]);
            // A shorter rewrite keeps the rest of the old round after it.
            b.place(0, &[one(9, 0, m)]);
            assert_eq!(
                b.read(0, 8 * m).unwrap().to_vec(),
                vec![one(9, 0, m), col(1, 7).slice(0, 7 * m)]
            );
        }
    }
}

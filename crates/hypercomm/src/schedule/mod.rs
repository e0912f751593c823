//! The schedule IR: what every algorithm produces and what the verifier, the cost
//! simulator and the runtime consume.
//!
//! A [`Program`] is one rank's part of a collective: a sequence of [`Step`]s, each a list
//! of [`Op`]s. Step `s` of every program is the same lock-step round `s` of the papers'
//! models (Saad & Schultz 1985, §1: "moving a vector of length m from one node to a
//! neighbour takes β + mτ"; several transfers of one node in one step overlap when the
//! port model allows). A send in step `s` of rank `a` to rank `b` is matched with a
//! receive from `a` in step `s` of rank `b`, in order when there are several.
//!
//! Semantics of one step at one node (this order is what the verifier checks and what a
//! runtime must preserve):
//! 1. every [`Op::Send`] reads its regions as they were at the start of the step;
//! 2. every [`Op::Recv`] writes (places or combines) what it received;
//! 3. every [`Op::Local`] runs, in order (local rearrangement, e.g. MTADEA's transpose).
//!
//! Buffers are named ([`Buf`]): `in` holds the rank's input, `out` its result, `tmp`
//! scratch space whose length the program declares. Lengths of `in` and `out` follow
//! from the collective (see [`crate::collective::Collective::in_len`]).
//!
//! What the IR can express beyond the algorithms of the first issue: pipelining (a
//! message split into ν packets = ν sends in successive steps), multi-path splitting
//! (one region per path), tree forwarding, irregular token sets (a send lists any
//! number of regions: a gather list), local rearrangement ([`Op::Local`]), reductions in
//! a fixed order ([`Action::CombineLeft`] / [`Action::CombineRight`]), multicast (one
//! send to several peers costs one start-up where the machine allows it: seed 000's
//! assumption 2, seed 004's broadcast bus) and links of several classes (seed 003's host
//! links, priced by the topology's link class).

pub mod compose;
pub mod json;
pub mod work;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::fmt;

/// A node of the topology, numbered from 0.
pub type Rank = u32;

/// One of the three buffers every rank has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Buf {
    /// The rank's input (send buffer).
    In,
    /// The rank's result (receive buffer).
    Out,
    /// Scratch space, `Program::tmp_len` elements.
    Tmp,
}

impl Buf {
    /// All buffers, in index order.
    pub const ALL: [Buf; 3] = [Buf::In, Buf::Out, Buf::Tmp];
    /// Index 0, 1, 2 of the buffer.
    pub fn index(self) -> usize {
        self as usize
    }
    /// The name used in JSON and messages.
    pub fn name(self) -> &'static str {
        match self {
            Buf::In => "in",
            Buf::Out => "out",
            Buf::Tmp => "tmp",
        }
    }
}

/// The most segments a strided region may hold (2^20; [`Region::check`] refuses more):
/// ADEA's largest region on hypercube:20 (2^20 nodes, the most the CLI verifies) has
/// 2^19. The verifier may walk a region segment by segment, and a region of 2^32
/// segments took it 51 s; 2^20 take a few milliseconds.
pub const MAX_SEGMENTS: u64 = 1 << 20;

/// A range of elements of one buffer: contiguous, or `count` equal segments at a
/// constant stride (a strided region, as MPI's vector datatype: `MPI_Type_vector`).
///
/// `len` is always the total number of elements, so the size of a message is the sum
/// of its regions' `len` whatever their shape. A strided region holds `count ≥ 2`
/// segments of `len / count` elements, segment j starting at `off + j·stride`, with
/// `stride ≥ len / count` (segments do not overlap); `count` is 1 (and `stride` unused,
/// 0) for a contiguous region. The strided form lets a schedule name in O(1) what would
/// otherwise be a gather list of `count` regions: ADEA's step i sends 2^{i−1} blocks at
/// a stride of 2^{n−i} blocks (Saad & Schultz 1985, §4.2), 4.3 G regions in the last
/// step on hypercube:16 as a list, 2^17 as strided regions.
///
/// A strided region holds at most [`MAX_SEGMENTS`] segments ([`Region::check`]): the
/// verifier walks some strided regions segment by segment (a read of data that is not
/// one strided run, a write that splits runs), so a region's segments bound its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RegionRepr")]
pub struct Region {
    pub buf: Buf,
    pub off: u64,
    /// Total elements (of all segments).
    pub len: u64,
    /// Distance between the starts of consecutive segments (0 when `count` is 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stride: u64,
    /// Number of segments (1: contiguous).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}
fn is_one(x: &u64) -> bool {
    *x == 1
}
fn one() -> u64 {
    1
}

/// A region as written in JSON, checked into a [`Region`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegionRepr {
    buf: Buf,
    off: u64,
    len: u64,
    #[serde(default)]
    stride: u64,
    #[serde(default = "one")]
    count: u64,
}

impl TryFrom<RegionRepr> for Region {
    type Error = String;
    fn try_from(r: RegionRepr) -> Result<Region, String> {
        let reg = Region {
            buf: r.buf,
            off: r.off,
            len: r.len,
            stride: r.stride,
            count: r.count,
        };
        reg.check().map(|()| reg)
    }
}

impl Region {
    /// `len` elements of `buf` from `off`.
    pub fn new(buf: Buf, off: u64, len: u64) -> Self {
        Region {
            buf,
            off,
            len,
            stride: 0,
            count: 1,
        }
    }
    /// `count` segments of `seg` elements of `buf`, segment j at `off + j·stride`
    /// (`stride ≥ seg`); contiguous when `count ≤ 1` or `stride == seg`.
    pub fn strided(buf: Buf, off: u64, seg: u64, stride: u64, count: u64) -> Self {
        if count <= 1 || stride == seg || seg == 0 {
            return Region::new(buf, off, seg * count);
        }
        Region {
            buf,
            off,
            len: seg * count,
            stride,
            count,
        }
    }
    /// Whether the region has several segments.
    pub fn is_strided(&self) -> bool {
        self.count > 1
    }
    /// Elements per segment (`len` for a contiguous region).
    pub fn seg(&self) -> u64 {
        self.len / self.count.max(1)
    }
    /// `Err` naming the problem when the fields do not describe a region: `count` is
    /// 0 or above [`MAX_SEGMENTS`], `len` is not `count` segments, or segments overlap
    /// (`stride < len / count`).
    pub fn check(&self) -> Result<(), String> {
        if self.count == 0 {
            return Err("`count` must be at least 1".into());
        }
        if self.count > MAX_SEGMENTS {
            return Err(format!(
                "`count` {} exceeds {MAX_SEGMENTS} (2^20), the most segments a strided \
                 region may hold",
                self.count
            ));
        }
        if self.count > 1 {
            if self.len == 0 {
                return Err("a strided region (`count` ≥ 2) must hold elements".into());
            }
            if self.len % self.count != 0 {
                return Err(format!(
                    "`len` {} is not a multiple of `count` {}",
                    self.len, self.count
                ));
            }
            if self.stride < self.seg() {
                return Err(format!(
                    "`stride` {} is shorter than a segment ({} elements): segments would overlap",
                    self.stride,
                    self.seg()
                ));
            }
        }
        Ok(())
    }
    /// One past the last element (saturating: a region past `u64::MAX` is out of any
    /// buffer's bounds anyway).
    pub fn end(&self) -> u64 {
        if self.count <= 1 {
            return self.off.saturating_add(self.len);
        }
        (self.count - 1)
            .checked_mul(self.stride)
            .and_then(|x| x.checked_add(self.off))
            .and_then(|x| x.checked_add(self.seg()))
            .unwrap_or(u64::MAX)
    }
    /// The contiguous segments, in order (the region itself when contiguous).
    pub fn segments(&self) -> impl Iterator<Item = Region> + '_ {
        let (n, seg) = (self.count.max(1), self.seg());
        (0..n).map(move |j| {
            if n == 1 {
                *self
            } else {
                Region::new(self.buf, self.off + j * self.stride, seg)
            }
        })
    }
    /// Whether the two regions share an element (exact for strided regions).
    pub fn overlaps(&self, other: &Region) -> bool {
        self.overlaps_below(other, u64::MAX)
    }
    /// Whether the two regions share an element, certainly if one is below `limit`
    /// (beyond it they may or may not be found to). O(1), except for two strided
    /// regions of different strides: O(segments of either below `limit`).
    pub fn overlaps_below(&self, other: &Region, limit: u64) -> bool {
        if self.buf != other.buf
            || self.len == 0
            || other.len == 0
            || self.off >= other.end()
            || other.off >= self.end()
        {
            return false;
        }
        if self.check().is_err() || other.check().is_err() {
            return true; // no segments to speak of: the hulls meet
        }
        match (self.is_strided(), other.is_strided()) {
            (false, false) => true,
            (true, false) => self.hits_range(other.off, other.end()),
            (false, true) => other.hits_range(self.off, self.end()),
            (true, true) if self.stride == other.stride => {
                // Segment i of self (at a + i·s) and segment j of other (at b + j·s)
                // overlap when −seg_a < (a − b) + t·s < seg_b, t = i − j ranging over
                // [−(count_b − 1), count_a − 1]: test the smallest t above the bound.
                let (s, d) = (self.stride as i128, self.off as i128 - other.off as i128);
                let (sa, sb) = (self.seg() as i128, other.seg() as i128);
                let lo = (-sa - d).div_euclid(s) + 1; // smallest t with d + t·s > −seg_a
                let lo = lo.max(-(other.count as i128 - 1));
                lo < self.count as i128 && d + lo * s < sb
            }
            (true, true) => {
                let (few, many) = if self.count <= other.count {
                    (self, other)
                } else {
                    (other, self)
                };
                // Only `few`'s segments that start below `limit` and end after
                // `many` starts (computed without overflow).
                let (s, seg, off) = (few.stride as i128, few.seg() as i128, few.off as i128);
                let first = ((many.off as i128 - off - seg).div_euclid(s) + 1).max(0);
                let hi = limit.min(many.end()) as i128;
                let last = if hi <= off {
                    0
                } else {
                    (few.count as i128).min((hi - 1 - off) / s + 1)
                };
                (first..last).any(|j| {
                    let at = (off + j * s) as u64;
                    many.overlaps(&Region::new(few.buf, at, few.seg()))
                })
            }
        }
    }
    /// Whether a segment of this strided region meets `a..b`.
    fn hits_range(&self, a: u64, b: u64) -> bool {
        let (s, seg, off) = (self.stride as i128, self.seg() as i128, self.off as i128);
        // The first segment that ends after a: off + i·s + seg > a.
        let i = ((a as i128 - off - seg).div_euclid(s) + 1).max(0);
        i < self.count as i128 && off + i * s < b as i128
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_strided() {
            let seg = self.seg();
            write!(
                f,
                "{}[{}..{} by {}, {} segments]",
                self.buf.name(),
                self.off,
                self.off.saturating_add(seg),
                self.stride,
                self.count
            )
        } else {
            write!(f, "{}[{}..{}]", self.buf.name(), self.off, self.end())
        }
    }
}

/// What a receive (or a local op) does with the data it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Overwrite the destination.
    #[default]
    Place,
    /// `dst ← received ⊕ dst`: the received data is the left operand.
    CombineLeft,
    /// `dst ← dst ⊕ received`: the received data is the right operand.
    CombineRight,
}

/// The regions of one message, concatenated in order (a gather/scatter list).
pub type Regions = SmallVec<[Region; 1]>;
/// The peers of one send (more than one is a multicast).
pub type Peers = SmallVec<[Rank; 2]>;

/// One operation of a step.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Send the concatenation of `from` to every rank of `to` (one message per peer,
    /// one start-up in all when the machine multicasts).
    Send { to: Peers, from: Regions },
    /// Receive one message from `from` into the concatenation of `into`.
    Recv {
        from: Rank,
        into: Regions,
        #[serde(default, skip_serializing_if = "is_place")]
        action: Action,
    },
    /// Copy or combine `from` into `into` inside this rank (no communication cost).
    Local {
        from: Region,
        into: Region,
        #[serde(default, skip_serializing_if = "is_place")]
        action: Action,
    },
}

fn is_place(a: &Action) -> bool {
    *a == Action::Place
}

impl Op {
    /// A send of one region to one peer.
    pub fn send(to: Rank, from: Region) -> Op {
        Op::Send {
            to: smallvec::smallvec![to],
            from: smallvec::smallvec![from],
        }
    }
    /// A send of one region to several peers (multicast).
    pub fn multicast(to: impl IntoIterator<Item = Rank>, from: Region) -> Op {
        Op::Send {
            to: to.into_iter().collect(),
            from: smallvec::smallvec![from],
        }
    }
    /// A receive of one region, placed.
    pub fn recv(from: Rank, into: Region) -> Op {
        Op::Recv {
            from,
            into: smallvec::smallvec![into],
            action: Action::Place,
        }
    }
    /// A local copy.
    pub fn copy(from: Region, into: Region) -> Op {
        Op::Local {
            from,
            into,
            action: Action::Place,
        }
    }
    /// Elements moved by one message of this op (0 for local ops).
    pub fn message_len(&self) -> u64 {
        match self {
            Op::Send { from, .. } => from.iter().map(|r| r.len).sum(),
            Op::Recv { into, .. } => into.iter().map(|r| r.len).sum(),
            Op::Local { .. } => 0,
        }
    }
}

/// The operations of one rank in one lock-step round.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Step {
    pub ops: Vec<Op>,
}

impl Step {
    /// [`Program::expand_strided`] for one step.
    pub fn expand_strided(&mut self) {
        let strided = |rs: &[Region]| rs.iter().any(Region::is_strided);
        let any = self.ops.iter().any(|o| match o {
            Op::Send { from, .. } => strided(from),
            Op::Recv { into, .. } => strided(into),
            Op::Local { from, into, .. } => from.is_strided() || into.is_strided(),
        });
        if !any {
            return;
        }
        let flat = |rs: &Regions| rs.iter().flat_map(|r| r.segments()).collect::<Regions>();
        let mut ops = Vec::with_capacity(self.ops.len());
        for op in self.ops.drain(..) {
            match op {
                Op::Send { to, from } => ops.push(Op::Send {
                    from: flat(&from),
                    to,
                }),
                Op::Recv { from, into, action } => ops.push(Op::Recv {
                    from,
                    into: flat(&into),
                    action,
                }),
                Op::Local { from, into, action }
                    if (from.is_strided() || into.is_strided()) && from.len == into.len =>
                {
                    // Walk both lists of segments, cutting at every boundary of either.
                    let (mut a, mut b) = (from.segments(), into.segments());
                    let (mut x, mut y) = (a.next(), b.next());
                    while let (Some(f), Some(t)) = (x, y) {
                        let n = f.len.min(t.len);
                        if n > 0 {
                            ops.push(Op::Local {
                                from: Region::new(f.buf, f.off, n),
                                into: Region::new(t.buf, t.off, n),
                                action,
                            });
                        }
                        x = (f.len > n)
                            .then(|| Region::new(f.buf, f.off + n, f.len - n))
                            .or_else(|| a.next());
                        y = (t.len > n)
                            .then(|| Region::new(t.buf, t.off + n, t.len - n))
                            .or_else(|| b.next());
                    }
                }
                op => ops.push(op),
            }
        }
        self.ops = ops;
    }

    /// Whether the step has no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// One rank's whole part of a collective.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Program {
    pub rank: Rank,
    /// Length of the `tmp` buffer this program uses.
    #[serde(default)]
    pub tmp_len: u64,
    pub steps: Vec<Step>,
}

impl Program {
    /// An empty program of `steps` steps for `rank`.
    pub fn new(rank: Rank, steps: usize) -> Self {
        Program {
            rank,
            tmp_len: 0,
            steps: vec![Step::default(); steps],
        }
    }
    /// Append `op` to step `s`.
    pub fn push(&mut self, s: usize, op: Op) {
        self.steps[s].ops.push(op);
    }
    /// Rewrite every strided region as its contiguous segments: a strided region of a
    /// send or receive becomes its segments in the gather list (the same message), a
    /// local op touching one becomes one local op per piece where segments of `from`
    /// and `into` meet. For consumers that handle only contiguous regions (the
    /// runtime); the meaning of the program is unchanged.
    pub fn expand_strided(&mut self) {
        for step in &mut self.steps {
            step.expand_strided();
        }
    }
    /// Make this the empty program of `steps` steps for `rank` (what
    /// [`Program::new`] returns), keeping the allocated steps for reuse.
    pub fn reset(&mut self, rank: Rank, steps: usize) {
        self.rank = rank;
        self.tmp_len = 0;
        self.steps.truncate(steps);
        for step in &mut self.steps {
            step.ops.clear();
        }
        self.steps.resize_with(steps, Step::default);
    }
}

/// One rank's program produced step by step: the header (`rank`, `tmp_len`) at once,
/// the steps as they are asked for (an [`Iterator`] of [`Step`]s).
///
/// A consumer that walks all ranks in lock-step (the verifier) holds one step of every
/// rank instead of every rank's whole program.
pub struct StepStream<'a> {
    /// The rank whose program this is.
    pub rank: Rank,
    /// Length of the `tmp` buffer the program uses ([`Program::tmp_len`]).
    pub tmp_len: u64,
    steps: Steps<'a>,
}

/// Where a [`StepStream`]'s steps come from.
enum Steps<'a> {
    /// Every step, idle ones included; `pos` of them yielded so far.
    Dense {
        it: Box<dyn Iterator<Item = Step> + Send + 'a>,
        pos: usize,
    },
    /// The busy steps with their indices, of a program of `len` steps; `pos` steps
    /// (busy or idle) yielded so far, `next` the busy step read ahead.
    Sparse {
        it: Box<dyn Iterator<Item = (usize, Step)> + Send + 'a>,
        len: usize,
        pos: usize,
        next: Option<(usize, Step)>,
    },
}

impl<'a> StepStream<'a> {
    /// The program of `rank` whose steps `steps` yields, in order.
    pub fn new(rank: Rank, tmp_len: u64, steps: impl Iterator<Item = Step> + Send + 'a) -> Self {
        StepStream {
            rank,
            tmp_len,
            steps: Steps::Dense {
                it: Box::new(steps),
                pos: 0,
            },
        }
    }
    /// The program of `rank` of `len` steps of which `busy` yields those with
    /// operations, as `(index, step)` in increasing order of index; the others are idle
    /// (empty). For a rank idle in most steps (a sequence of broadcasts or gathers from
    /// each node in turn), so that the verifier visits a rank only when it acts.
    ///
    /// An index not above the previous one stands for the step right after it (so the
    /// stream stays a sequence of steps); an index at or past `len` lengthens the
    /// program, which the verifier reports as malformed.
    pub fn sparse(
        rank: Rank,
        tmp_len: u64,
        len: usize,
        busy: impl Iterator<Item = (usize, Step)> + Send + 'a,
    ) -> Self {
        StepStream {
            rank,
            tmp_len,
            steps: Steps::Sparse {
                it: Box::new(busy),
                len,
                pos: 0,
                next: None,
            },
        }
    }
    /// The program of `rank` made of `phases` phases of `per` steps each (a broadcast
    /// or a gather from each node in turn), phase p in steps p·per..(p + 1)·per, of
    /// which only the busy steps are streamed ([`StepStream::sparse`]).
    /// `fill(p, prog)` writes phase p into `prog`, an empty program of `per` steps for
    /// `rank` ([`Program::reset`]) reused from phase to phase.
    pub fn phases(
        rank: Rank,
        tmp_len: u64,
        phases: usize,
        per: usize,
        mut fill: impl FnMut(usize, &mut Program) + Send + 'a,
    ) -> Self {
        let mut prog = Program::new(rank, 0);
        let (mut p, mut i) = (0, per);
        let busy = std::iter::from_fn(move || loop {
            if i == per {
                if p == phases || per == 0 {
                    return None;
                }
                prog.reset(rank, per);
                fill(p, &mut prog);
                (p, i) = (p + 1, 0);
            }
            let step = &mut prog.steps[i];
            i += 1;
            if !step.ops.is_empty() {
                return Some(((p - 1) * per + i - 1, std::mem::take(step)));
            }
        });
        StepStream::sparse(rank, tmp_len, phases * per, busy)
    }
    /// Collect the whole program.
    pub fn into_program(self) -> Program {
        Program {
            rank: self.rank,
            tmp_len: self.tmp_len,
            steps: self.collect(),
        }
    }
    /// The next step with operations and its index, skipping idle steps (`None` when
    /// no busy step is left). The index counts every step, as [`Iterator::next`] would.
    pub fn next_busy(&mut self) -> Option<(usize, Step)> {
        match &mut self.steps {
            Steps::Dense { it, pos } => loop {
                let step = it.next()?;
                *pos += 1;
                if !step.ops.is_empty() {
                    return Some((*pos - 1, step));
                }
            },
            Steps::Sparse { it, pos, next, .. } => {
                let (i, step) = next.take().or_else(|| it.next())?;
                let i = i.max(*pos);
                *pos = i + 1;
                Some((i, step))
            }
        }
    }
    /// The number of steps of the whole program: those yielded so far and the rest,
    /// which this consumes.
    pub fn finish(&mut self) -> usize {
        while self.next_busy().is_some() {}
        match &mut self.steps {
            Steps::Dense { it, pos } => *pos + it.count(),
            Steps::Sparse { len, pos, .. } => (*len).max(*pos),
        }
    }
}

impl From<Program> for StepStream<'_> {
    /// Stream a program already built. A program idle in most of its steps keeps only
    /// its busy ones ([`StepStream::sparse`]): a consumer that holds every rank's
    /// stream at once (the verifier) then holds what the ranks do, not nodes × steps
    /// empty steps (the nesbt scatter on hypercube:14, 16,383 steps on each of 16,384
    /// nodes, took 6.4 GB that way).
    fn from(p: Program) -> Self {
        let len = p.steps.len();
        let busy = p.steps.iter().filter(|s| !s.ops.is_empty()).count();
        if busy.saturating_mul(2) >= len {
            return StepStream::new(p.rank, p.tmp_len, p.steps.into_iter());
        }
        let steps: Vec<(usize, Step)> = p
            .steps
            .into_iter()
            .enumerate()
            .filter(|(_, s)| !s.ops.is_empty())
            .collect();
        StepStream::sparse(p.rank, p.tmp_len, len, steps.into_iter())
    }
}

impl Iterator for StepStream<'_> {
    type Item = Step;
    fn next(&mut self) -> Option<Step> {
        match &mut self.steps {
            Steps::Dense { it, pos } => {
                let step = it.next()?;
                *pos += 1;
                Some(step)
            }
            Steps::Sparse { it, len, pos, next } => {
                if next.is_none() {
                    *next = it.next();
                }
                let step = match next {
                    Some((i, _)) if *i <= *pos => next.take().map(|(_, s)| s),
                    _ if *pos < *len || next.is_some() => Some(Step::default()),
                    _ => None,
                }?;
                *pos += 1;
                Some(step)
            }
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.steps {
            Steps::Dense { it, .. } => it.size_hint(),
            Steps::Sparse {
                it, len, pos, next, ..
            } => {
                // Exact when the busy steps are known to end within `len`.
                let rest = len.saturating_sub(*pos);
                match (next, it.size_hint()) {
                    (None, (_, Some(0))) => (rest, Some(rest)),
                    _ => (rest, None),
                }
            }
        }
    }
}

impl fmt::Debug for StepStream<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepStream")
            .field("rank", &self.rank)
            .field("tmp_len", &self.tmp_len)
            .finish_non_exhaustive()
    }
}

/// A schedule: one program per rank, each computable on its own.
///
/// Implementations must be pure (no I/O, no clocks, no threads) and `program(r)` must
/// not build the other ranks' programs, so a runtime on one rank and a streaming
/// simulator over a million ranks pay only for what they use.
///
/// [`stream`](Schedule::stream) is the same program step by step; the default builds
/// `program(rank)` and streams it. A schedule with many steps or many messages
/// overrides it (and usually defines `program` as `self.stream(rank).into_program()`),
/// so that the verifier, which runs all ranks in lock-step, holds one step of every
/// rank rather than every whole program.
pub trait Schedule: Send + Sync {
    /// Number of ranks.
    fn nodes(&self) -> u32;
    /// Number of lock-step rounds; every program has exactly this many steps.
    fn steps(&self) -> usize;
    /// The program of `rank` (`rank < nodes()`).
    fn program(&self, rank: Rank) -> Program;
    /// The program of `rank`, step by step (`rank < nodes()`).
    ///
    /// Contract: `stream(rank).into_program() == program(rank)`: the header (`rank`,
    /// `tmp_len`) is known before any step is generated, and the stream yields exactly
    /// [`steps()`](Schedule::steps) steps, equal to `program(rank).steps`, in order.
    /// Generating step s must cost about what step s holds, not the whole program (so a
    /// lazy stream keeps only its own small state between steps).
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        self.program(rank).into()
    }
    /// The program of `rank` written into `out` (`rank < nodes()`), whatever `out` held
    /// before: afterwards `*out == program(rank)`.
    ///
    /// The default assigns `program(rank)`. A schedule overrides it to refill `out`'s
    /// steps in place (see [`Program::reset`]), so a consumer that takes the ranks one at
    /// a time (the rounds simulation) allocates per rank only what the program holds
    /// beyond the buffers it already has.
    fn program_into(&self, rank: Rank, out: &mut Program) {
        *out = self.program(rank);
    }
    /// Packets per message, for pipelined schedules (the resolved ν of `--packets opt`).
    fn packets(&self) -> Option<u64> {
        None
    }
}

/// A schedule held in memory, e.g. read from a JSON file.
#[derive(Clone, Debug, PartialEq)]
pub struct Materialized {
    pub nodes: u32,
    pub steps: usize,
    pub programs: Vec<Program>,
}

impl Schedule for Materialized {
    fn nodes(&self) -> u32 {
        self.nodes
    }
    fn steps(&self) -> usize {
        self.steps
    }
    fn program(&self, rank: Rank) -> Program {
        self.programs[rank as usize].clone()
    }
}

/// Build every program of a schedule.
pub fn materialize(s: &dyn Schedule) -> Materialized {
    Materialized {
        nodes: s.nodes(),
        steps: s.steps(),
        programs: (0..s.nodes()).map(|r| s.program(r)).collect(),
    }
}

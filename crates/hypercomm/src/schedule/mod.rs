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

pub mod json;

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

/// A contiguous range of elements of one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Region {
    pub buf: Buf,
    pub off: u64,
    pub len: u64,
}

impl Region {
    /// `len` elements of `buf` from `off`.
    pub fn new(buf: Buf, off: u64, len: u64) -> Self {
        Region { buf, off, len }
    }
    /// One past the last element (saturating: a region past `u64::MAX` is out of any
    /// buffer's bounds anyway).
    pub fn end(&self) -> u64 {
        self.off.saturating_add(self.len)
    }
    /// Whether the two regions share an element.
    pub fn overlaps(&self, other: &Region) -> bool {
        self.buf == other.buf
            && self.off < other.end()
            && other.off < self.end()
            && self.len > 0
            && other.len > 0
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}..{}]", self.buf.name(), self.off, self.end())
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Step {
    pub ops: Vec<Op>,
}

impl Step {
    /// Whether the step has no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// One rank's whole part of a collective.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
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
    steps: Box<dyn Iterator<Item = Step> + 'a>,
}

impl<'a> StepStream<'a> {
    /// The program of `rank` whose steps `steps` yields, in order.
    pub fn new(rank: Rank, tmp_len: u64, steps: impl Iterator<Item = Step> + 'a) -> Self {
        StepStream {
            rank,
            tmp_len,
            steps: Box::new(steps),
        }
    }
    /// Collect the whole program.
    pub fn into_program(self) -> Program {
        Program {
            rank: self.rank,
            tmp_len: self.tmp_len,
            steps: self.steps.collect(),
        }
    }
}

impl From<Program> for StepStream<'_> {
    /// Stream a program already built.
    fn from(p: Program) -> Self {
        StepStream::new(p.rank, p.tmp_len, p.steps.into_iter())
    }
}

impl Iterator for StepStream<'_> {
    type Item = Step;
    fn next(&mut self) -> Option<Step> {
        self.steps.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.steps.size_hint()
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

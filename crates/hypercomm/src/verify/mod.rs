//! The verifier: symbolic execution of a schedule over all nodes, reporting the first
//! rule it breaks.
//!
//! Every element of every buffer carries a symbolic value: which ranks' inputs, at which
//! offset, were combined into it (see [`state`]). Executing the steps in lock-step (the
//! semantics documented in [`crate::schedule`]) checks, in this order for each step and
//! each rank: peers exist and are linked; regions lie inside their buffers; `in` is never
//! written; the data sent is held; every send has its receive of the same size and vice
//! versa; no receive overwrites what the same step sends or another receive writes;
//! combines are aligned and use each contribution once; optionally the port and duplex
//! rules of a model ([`Strictness`]); and at the end the collective's post-condition
//! ([`Collective::expected`]).
//!
//! Memory holds one step of every rank (the programs are streamed step by step, see
//! [`verify`]), the symbolic state (one entry per maximal run of a buffer, not one per
//! element) and the messages of one step.

pub mod state;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::fmt;

use serde::Serialize;

use crate::collective::Collective;
use crate::cost::model::{Duplex, Ports};
use crate::counts::Counts;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::topology::{Medium, Topology};
use state::{BufState, CombineError, Pattern, Piece, Pieces};
use std::collections::BTreeSet;

/// What kind of rule a schedule broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ViolationKind {
    /// A program is for the wrong rank or has the wrong number of steps.
    MalformedProgram,
    /// A peer is not a rank of the topology.
    PeerOutOfRange,
    /// A transfer between two nodes the topology does not link.
    NoLink,
    /// A region extends past the end of its buffer.
    OutOfBounds,
    /// A receive or local op writes the `in` buffer.
    WritesInput,
    /// A send (or local op) reads data the node does not hold yet.
    NotHeld,
    /// A send with no matching receive.
    UnmatchedSend,
    /// A receive with no matching send.
    UnmatchedRecv,
    /// A send and its receive differ in size.
    SizeMismatch,
    /// A receive overwrites data the same step sends, or another receive's destination.
    Race,
    /// A combine of misaligned elements, into unset data, or using a contribution twice.
    BadCombine,
    /// More concurrent transfers than the port rule allows.
    PortRule,
    /// Sending and receiving in one step under half duplex (or both ways on one link
    /// under half-link duplex).
    DuplexRule,
    /// More transfers or accesses in one round than a shared medium serves: two
    /// transfers on a bus, more than S = k* accesses to a shared memory, or a
    /// processor's second access to it (with `--strict`).
    Capacity,
    /// After the last step, a node's `out` does not hold what the collective requires.
    PostCondition,
}

/// The first rule a schedule breaks, located precisely.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    pub kind: ViolationKind,
    /// Step (0-based); `None` for the post-condition and for a malformed program (a
    /// fault of the program as a whole: `rank` is then the index of the program).
    pub step: Option<usize>,
    pub rank: Rank,
    pub peer: Option<Rank>,
    pub region: Option<Region>,
    /// What was wrong, in words.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.step, self.kind) {
            (Some(s), _) => write!(f, "step {s}, node {}", self.rank)?,
            // Found in the programs' headers before any step runs (or, for a stream,
            // wherever its length is found out): a fault of the whole program.
            (None, ViolationKind::MalformedProgram) => write!(f, "program {}", self.rank)?,
            (None, _) => write!(f, "after the last step, node {}", self.rank)?,
        }
        if let Some(p) = self.peer {
            write!(f, ", peer {p}")?;
        }
        if let Some(r) = self.region {
            write!(f, ", region {r}")?;
        }
        write!(f, ": {:?}: {}", self.kind, self.detail)
    }
}

/// Which port and duplex rules to enforce as violations (by default the cost model
/// prices concurrent transfers by serialising them instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Strictness {
    /// With `Some(Ports::One)`, at most one message sent and one received per node per
    /// step; with `Some(Ports::All)`, at most one message per directed link per step.
    pub ports: Option<Ports>,
    /// With `Some(Duplex::Half)`, no node both sends and receives in one step.
    pub duplex: Option<Duplex>,
    /// The host's own port rule (`--host-ports`, seed 003's one-port host by default),
    /// checked when `ports` is: `None` holds the host to `ports` like any node.
    pub host_ports: Option<Ports>,
}

impl Strictness {
    /// Every rule of `model`: its ports (the host's own ones for the host) and duplex.
    pub fn of(model: &crate::cost::model::Model) -> Self {
        Strictness {
            ports: Some(model.ports),
            duplex: Some(model.duplex),
            host_ports: Some(model.host_ports),
        }
    }
}

/// What the verifier needs besides the schedule.
#[derive(Clone, Copy, Debug)]
pub struct Problem<'a> {
    pub topology: &'a Topology,
    pub collective: Collective,
    /// Elements per message / block / vector (see [`crate::collective`]).
    pub len: u64,
    /// Whether the reduction operator may be applied in any order.
    pub commutative: bool,
    /// The per-rank counts of a variable-count collective (`None`: every count is
    /// `len`); checked by [`Problem::check_counts`], which the registry's `build` calls.
    pub counts: Option<&'a Counts>,
}

impl Problem<'_> {
    /// Length of rank `r`'s `in` buffer.
    pub fn in_len(&self, r: Rank) -> u64 {
        let k = self.topology.nodes();
        self.collective.in_len_with(k, self.len, self.counts, r)
    }
    /// Length of rank `r`'s `out` buffer.
    pub fn out_len(&self, r: Rank) -> u64 {
        let k = self.topology.nodes();
        self.collective.out_len_with(k, self.len, self.counts, r)
    }
    /// What rank `r`'s `out` must hold after the collective.
    pub fn expected(&self, r: Rank) -> Vec<crate::collective::Segment> {
        let k = self.topology.nodes();
        self.collective.expected_with(k, self.len, self.counts, r)
    }
    /// Whether the counts, if any, fit the collective and the number of ranks.
    pub fn check_counts(&self) -> Result<(), crate::error::Error> {
        match self.counts {
            Some(c) => c.check(self.collective.kind(), self.topology.nodes()),
            None => Ok(()),
        }
    }
}

#[derive(Default)]
struct Msg {
    from_step_op: (usize, usize),
    pieces: Pieces,
    len: u64,
}

/// The messages of one step to the ranks of one [`Part`] by (sender, receiver), in the
/// order sent, with the index of the next one to receive. Kept from step to step
/// (cleared) to reuse its table.
type Mail = FxHashMap<(Rank, Rank), (usize, SmallVec<[Msg; 1]>)>;

/// Messages sent in a step as (sender, receiver, message), in the order sent.
type Outbox = Vec<(Rank, Rank, Msg)>;

/// What the rules read and no rank writes: the problem, the rules, the buffers' lengths.
struct Ctx<'a> {
    p: Problem<'a>,
    strict: Strictness,
    k: u32,
    lens: Vec<[u64; 3]>,
}

/// The ranks `lo..lo + bufs.len()` that one thread verifies in a step: their symbolic
/// buffers, those of them that act in the step (`busy`, in increasing order of rank),
/// the messages they send by receiving part (`out`) and those they receive (`inbox`,
/// filed into `mail`).
struct Part<'b, 's> {
    lo: Rank,
    bufs: &'b mut [[BufState; 3]],
    busy: &'b [(Rank, &'s Step)],
    out: Vec<Outbox>,
    inbox: Vec<Outbox>,
    mail: Mail,
    scratch: Scratch,
}

/// The race check's buffers, reused from rank to rank: a step's regions (with whether
/// each is received, and from whom) and their sort keys.
#[derive(Default)]
struct Scratch {
    all: Vec<(Region, bool, Rank)>,
    order: Vec<u128>,
}

struct Verifier<'a> {
    ctx: Ctx<'a>,
    bufs: Vec<[BufState; 3]>,
    /// One mail table and race scratch per part, reused from step to step.
    mails: Vec<(Mail, Scratch)>,
    /// Outboxes, reused from step to step.
    boxes: Vec<Outbox>,
    opts: Options,
    /// The threads of a parallel verification ([`Options::threads`] > 1).
    pool: Option<std::sync::Arc<rayon::ThreadPool>>,
}

type Check<T = ()> = Result<T, Violation>;

/// `f` on every item, on the pool's threads when there is a pool and more than one
/// item, else in order on this thread; the results in the order of the items.
fn each<P: Send, R: Send>(
    pool: Option<&rayon::ThreadPool>,
    items: &mut [P],
    f: impl Fn(&mut P) -> R + Sync + Send,
) -> Vec<R> {
    use rayon::prelude::*;
    match pool {
        Some(pool) if items.len() > 1 => pool.install(|| items.par_iter_mut().map(f).collect()),
        _ => items.iter_mut().map(f).collect(),
    }
}

impl Ctx<'_> {
    fn v(
        &self,
        kind: ViolationKind,
        step: usize,
        rank: Rank,
        peer: Option<Rank>,
        region: Option<Region>,
        detail: String,
    ) -> Violation {
        Violation {
            kind,
            step: Some(step),
            rank,
            peer,
            region,
            detail,
        }
    }

    fn bounds(&self, s: usize, r: Rank, peer: Option<Rank>, reg: &Region) -> Check {
        if let Err(e) = reg.check() {
            return Err(self.v(ViolationKind::MalformedProgram, s, r, peer, Some(*reg), e));
        }
        let cap = self.lens[r as usize][reg.buf.index()];
        if reg.end() > cap {
            return Err(self.v(
                ViolationKind::OutOfBounds,
                s,
                r,
                peer,
                Some(*reg),
                format!("`{}` has {cap} elements", reg.buf.name()),
            ));
        }
        Ok(())
    }

    fn writable(&self, s: usize, r: Rank, peer: Option<Rank>, reg: &Region) -> Check {
        self.bounds(s, r, peer, reg)?;
        if reg.buf == Buf::In && reg.len > 0 {
            return Err(self.v(
                ViolationKind::WritesInput,
                s,
                r,
                peer,
                Some(*reg),
                "the input buffer must stay unchanged".into(),
            ));
        }
        Ok(())
    }

    /// Read `regs` of rank `r`, whose buffers are `bufs`.
    fn read(
        &self,
        bufs: &[BufState; 3],
        s: usize,
        r: Rank,
        peer: Option<Rank>,
        regs: &[Region],
    ) -> Check<Pieces> {
        // One strided region, or equal regions at a constant stride (a gather list, as
        // ADEA's were), all in bounds (the last ends furthest): one strided read.
        if let Some((reg, seg)) = as_strided(regs) {
            if reg.check().is_ok() && reg.end() <= self.lens[r as usize][reg.buf.index()] {
                let (buf, start, stride) = (reg.buf, reg.off, reg.stride);
                return bufs[buf.index()]
                    .read_strided(start, seg, stride, reg.count)
                    .map_err(|at| {
                        let j = (at - start) / stride;
                        let reg = match regs {
                            [_] => Region::new(buf, start + j * stride, seg),
                            _ => regs[j as usize],
                        };
                        self.v(
                            ViolationKind::NotHeld,
                            s,
                            r,
                            peer,
                            Some(reg),
                            format!("element {}[{at}] is not held yet", buf.name()),
                        )
                    });
            }
        }
        for reg in regs {
            self.bounds(s, r, peer, reg)?;
        }
        let mut out = Pieces::new();
        for reg in regs.iter().flat_map(Region::segments) {
            match bufs[reg.buf.index()].read_into(reg.off, reg.len, &mut out) {
                Ok(()) => {}
                Err(at) => {
                    return Err(self.v(
                        ViolationKind::NotHeld,
                        s,
                        r,
                        peer,
                        Some(reg),
                        format!("element {}[{at}] is not held yet", reg.buf.name()),
                    ));
                }
            }
        }
        Ok(out)
    }

    fn peer(&self, s: usize, r: Rank, q: Rank) -> Check {
        if q >= self.k {
            return Err(self.v(
                ViolationKind::PeerOutOfRange,
                s,
                r,
                Some(q),
                None,
                format!("valid ranks are 0..={}", self.k - 1),
            ));
        }
        if !self.p.topology.are_linked(r, q) {
            return Err(self.v(
                ViolationKind::NoLink,
                s,
                r,
                Some(q),
                None,
                format!("{} has no link between {r} and {q}", self.p.topology),
            ));
        }
        Ok(())
    }

    /// Write `pieces` into the regions `into` of rank `r`, whose buffers are `bufs`.
    #[allow(clippy::too_many_arguments)]
    fn write(
        &self,
        bufs: &mut [BufState; 3],
        s: usize,
        r: Rank,
        peer: Option<Rank>,
        into: &[Region],
        pieces: &[Piece],
        action: Action,
    ) -> Check {
        // A message that is one piece, placed into equal regions at a constant stride
        // (ADEA's gather lists): one strided write.
        if let (Action::Place, [p], Some((reg, seg))) = (action, pieces, as_strided(into)) {
            let buf = &mut bufs[reg.buf.index()];
            buf.place_strided(reg.off, seg, reg.stride, p);
            return Ok(());
        }
        let mut rest: &[Piece] = pieces;
        let mut carry: Option<Piece> = None;
        for reg in into.iter().flat_map(Region::segments) {
            // Cut exactly reg.len elements off the front of the received pieces.
            let mut chunk = Pieces::new();
            let mut need = reg.len;
            while need > 0 {
                let p = match carry.take() {
                    Some(p) => p,
                    None => {
                        let (p, tail) = rest.split_first().expect("sizes were checked");
                        rest = tail;
                        p.clone()
                    }
                };
                if p.len <= need {
                    need -= p.len;
                    chunk.push(p);
                } else {
                    chunk.push(p.slice(0, need));
                    carry = Some(p.slice(need, p.len - need));
                    need = 0;
                }
            }
            let commutative = self.p.commutative;
            let buf = &mut bufs[reg.buf.index()];
            let res = match action {
                Action::Place => {
                    buf.place(reg.off, &chunk);
                    Ok(())
                }
                Action::CombineLeft | Action::CombineRight => {
                    if !self.p.collective.kind().is_reduction() {
                        return Err(self.v(
                            ViolationKind::BadCombine,
                            s,
                            r,
                            peer,
                            Some(reg),
                            format!("{} does not combine data", self.p.collective.kind()),
                        ));
                    }
                    buf.combine(reg.off, &chunk, action == Action::CombineLeft, commutative)
                }
            };
            res.map_err(|e| {
                let detail = match e {
                    CombineError::Unset(at) => format!(
                        "combines into {}[{at}], which holds nothing",
                        reg.buf.name()
                    ),
                    CombineError::Misaligned {
                        at,
                        dst_off,
                        src_off,
                    } => {
                        format!(
                            "at {}[{at}] combines vector element {src_off} into element {dst_off}",
                            reg.buf.name()
                        )
                    }
                    CombineError::Twice { at, rank } => format!(
                        "at {}[{at}] rank {rank}'s contribution would be combined twice",
                        reg.buf.name()
                    ),
                };
                self.v(ViolationKind::BadCombine, s, r, peer, Some(reg), detail)
            })?;
        }
        Ok(())
    }

    /// No receive may overlap a region the same step sends or another receive writes.
    /// Sort-and-sweep, O(R log R) in the regions R of the step.
    fn races(&self, s: usize, r: Rank, step: &Step, scratch: &mut Scratch) -> Check {
        // A race needs a receive and a second region: most steps of most ranks (one
        // send and one receive of one region each, or nothing) are decided at once.
        let (mut regions, mut recv) = (0usize, false);
        for o in &step.ops {
            match o {
                Op::Send { from, .. } => regions += from.len(),
                Op::Recv { into, .. } => {
                    regions += into.len();
                    recv = true;
                }
                Op::Local { .. } => {}
            }
        }
        if !recv || regions < 2 {
            return Ok(());
        }
        // (region, is_recv, peer) sorted by (buf, off): an overlap involving a receive
        // shows against the furthest-reaching send or receive seen before it. The
        // violation names the receive's region and source, whichever of the two
        // sorts first.
        let Scratch { all, order } = scratch;
        all.clear();
        all.reserve(regions);
        for o in &step.ops {
            match o {
                Op::Send { from, .. } => {
                    all.extend(from.iter().filter(|r| r.len > 0).map(|r| (*r, false, 0)))
                }
                Op::Recv { from, into, .. } => {
                    all.extend(into.iter().filter(|r| r.len > 0).map(|r| (*r, true, *from)))
                }
                Op::Local { .. } => {}
            }
        }
        // A strided region is tested exactly against every other region (strided
        // regions are few: a step's strided region replaces a whole gather list); the
        // sweep below sees only contiguous ones.
        // Caught here, before any overlap test, since the sweep needs segments.
        for o in &step.ops {
            let (regs, peer) = match o {
                Op::Send { to, from } => (from, to.first().copied()),
                Op::Recv { from, into, .. } => (into, Some(*from)),
                Op::Local { .. } => continue,
            };
            if let Some(bad) = regs.iter().find(|g| g.check().is_err()) {
                return self.bounds(s, r, peer, bad);
            }
        }
        if all.iter().any(|(r, _, _)| r.is_strided()) {
            for (i, &(a, a_recv, a_peer)) in all.iter().enumerate() {
                if !a.is_strided() {
                    continue;
                }
                for (j, &(b, b_recv, b_peer)) in all.iter().enumerate() {
                    // Overlaps past the end of the buffer may be missed (the region
                    // is out of bounds then): they could take O(count) to find.
                    let cap = self.lens[r as usize][a.buf.index()];
                    if i == j || !(a_recv || b_recv) || !a.overlaps_below(&b, cap) {
                        continue;
                    }
                    let (region, other, peer) = if a_recv {
                        (a, b, a_peer)
                    } else {
                        (b, a, b_peer)
                    };
                    return Err(self.v(
                        ViolationKind::Race,
                        s,
                        r,
                        Some(peer),
                        Some(region),
                        format!("overlaps {other}, which this step also sends or receives"),
                    ));
                }
            }
            all.retain(|(r, _, _)| !r.is_strided());
        }
        // Sorted through compact keys (buffer, offset, index; ties in list order). Each
        // op's gather list is usually in increasing order already (TEA1's tokens), and
        // the stable sort merges such runs instead of sorting from scratch.
        // Taken buffer by buffer, so that a list alternating between `out` and `tmp`
        // (TEA1's receives) still gives two runs, not one per region.
        order.clear();
        for buf in [Buf::In, Buf::Out, Buf::Tmp] {
            order.extend(
                (0u32..)
                    .zip(all.iter())
                    .filter(|(_, (r, _, _))| r.buf == buf)
                    .map(|(i, (r, _, _))| {
                        (r.buf as u128) << 96 | (r.off as u128) << 32 | i as u128
                    }),
            );
        }
        // The keys are distinct (the index is in them): no need for a stable sort,
        // which would allocate.
        order.sort_unstable();
        // The furthest-reaching send and receive so far, each with its peer (the
        // send's is unused).
        let mut send_reach: Option<(Region, Rank)> = None;
        let mut recv_reach: Option<(Region, Rank)> = None;
        for &(reg, is_recv, peer) in order.iter().map(|&key| &all[key as u32 as usize]) {
            let hit = |x: &Option<(Region, Rank)>| {
                x.filter(|(x, _)| x.buf == reg.buf && x.end() > reg.off)
            };
            let clash = if is_recv {
                hit(&send_reach).or(hit(&recv_reach))
            } else {
                hit(&recv_reach)
            };
            if let Some((x, x_peer)) = clash {
                let (region, other, peer) = if is_recv {
                    (reg, x, peer)
                } else {
                    (x, reg, x_peer)
                };
                return Err(self.v(
                    ViolationKind::Race,
                    s,
                    r,
                    Some(peer),
                    Some(region),
                    format!("overlaps {other}, which this step also sends or receives"),
                ));
            }
            let slot = if is_recv {
                &mut recv_reach
            } else {
                &mut send_reach
            };
            if !matches!(slot, Some((x, _)) if x.buf == reg.buf && x.end() >= reg.end()) {
                *slot = Some((reg, peer));
            }
        }
        Ok(())
    }

    fn strict_rules(&self, s: usize, r: Rank, step: &Step) -> Check {
        if self.strict == Strictness::default() || step.ops.is_empty() {
            return Ok(());
        }
        let ops = &step.ops;
        let mut sends: Vec<Rank> = Vec::new();
        let mut recvs: Vec<Rank> = Vec::new();
        for op in ops {
            match op {
                Op::Send { to, .. } => sends.extend(to.iter().copied()),
                Op::Recv { from, .. } => recvs.push(*from),
                Op::Local { .. } => {}
            }
        }
        if let Some(model_ports) = self.strict.ports {
            // A switch connects each node to one other at a time, whatever --ports says;
            // the host keeps its own rule (--host-ports).
            let is_host = Some(r) == self.p.topology.host();
            let (ports, rule) = match self.strict.host_ports {
                Some(h) if is_host => (h, format!("--host-ports {h}")),
                _ if !is_host && self.p.topology.medium_kind() == Some(Medium::Switch) => (
                    Ports::One,
                    "a switch's one message each way per node".to_string(),
                ),
                _ => (model_ports, format!("--ports {model_ports}")),
            };
            for (list, limit, verb) in [
                (&sends, ports.send(), "sends"),
                (&recvs, ports.recv(), "receives"),
            ] {
                if let Some(limit) = limit {
                    if list.len() > limit as usize {
                        return Err(self.v(
                            ViolationKind::PortRule,
                            s,
                            r,
                            Some(list[limit as usize]),
                            None,
                            format!("{verb} {} messages in one step under {rule}", list.len()),
                        ));
                    }
                }
                let mut l = list.clone();
                l.sort_unstable();
                if let Some(w) = l.windows(2).find(|w| w[0] == w[1]) {
                    return Err(self.v(
                        ViolationKind::PortRule,
                        s,
                        r,
                        Some(w[0]),
                        None,
                        "two messages on one link in one step".into(),
                    ));
                }
            }
        }
        if self.strict.duplex == Some(Duplex::HalfLink) {
            if let Some(&q) = sends.iter().find(|q| recvs.contains(q)) {
                return Err(self.v(
                    ViolationKind::DuplexRule,
                    s,
                    r,
                    Some(q),
                    None,
                    format!("sends to and receives from {q} in one step: the link carries one direction at a time under --duplex half-link"),
                ));
            }
        }
        if self.strict.duplex == Some(Duplex::Half) && !sends.is_empty() && !recvs.is_empty() {
            return Err(self.v(
                ViolationKind::DuplexRule,
                s,
                r,
                Some(recvs[0]),
                None,
                "sends and receives in one step under --duplex half".into(),
            ));
        }
        Ok(())
    }

    /// Step 1 for the ranks of `part`: their races, port rules and sends, which read
    /// the state at the start of the step. A message goes into `part.out[d]`, d the part
    /// of its receiver (`starts`: each part's first rank).
    fn sends(&self, s: usize, part: &mut Part<'_, '_>, starts: &[Rank]) -> Check {
        for &(r, step) in part.busy {
            self.races(s, r, step, &mut part.scratch)?;
            self.strict_rules(s, r, step)?;
            let bufs = &part.bufs[(r - part.lo) as usize];
            for (i, op) in step.ops.iter().enumerate() {
                if let Op::Send { to, from } = op {
                    for &q in to {
                        self.peer(s, r, q)?;
                    }
                    let mut pieces = self.read(bufs, s, r, to.first().copied(), from)?;
                    let len = op.message_len();
                    for (j, &q) in to.iter().enumerate() {
                        // The last peer takes the pieces, the others a copy.
                        let pieces = if j + 1 == to.len() {
                            std::mem::take(&mut pieces)
                        } else {
                            pieces.clone()
                        };
                        let d = starts.partition_point(|&lo| lo <= q) - 1;
                        part.out[d].push((
                            r,
                            q,
                            Msg {
                                from_step_op: (s, i),
                                pieces,
                                len,
                            },
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Step 2 for the ranks of `part`: its receives take their messages (`part.inbox`,
    /// filed into `part.mail` first) in order.
    fn receives(&self, s: usize, part: &mut Part<'_, '_>) -> Check {
        let mail = &mut part.mail;
        mail.clear();
        for (a, b, msg) in part.inbox.iter_mut().flat_map(|ob| ob.drain(..)) {
            mail.entry((a, b)).or_default().1.push(msg);
        }
        for &(r, step) in part.busy {
            let bufs = &mut part.bufs[(r - part.lo) as usize];
            for op in &step.ops {
                if let Op::Recv { from, into, action } = op {
                    self.peer(s, r, *from)?;
                    for reg in into {
                        self.writable(s, r, Some(*from), reg)?;
                    }
                    let want = op.message_len();
                    let taken = mail.get_mut(&(*from, r)).and_then(|(next, q)| {
                        let msg = q.get_mut(*next)?;
                        *next += 1;
                        Some(std::mem::take(msg))
                    });
                    let Some(msg) = taken else {
                        return Err(self.v(
                            ViolationKind::UnmatchedRecv,
                            s,
                            r,
                            Some(*from),
                            into.first().copied(),
                            format!("no message from {from} to {r} in this step"),
                        ));
                    };
                    if msg.len != want {
                        return Err(self.v(
                            ViolationKind::SizeMismatch,
                            s,
                            r,
                            Some(*from),
                            into.first().copied(),
                            format!("receives {want} elements but {from} sends {} (its op {} of step {})", msg.len, msg.from_step_op.1, msg.from_step_op.0),
                        ));
                    }
                    self.write(bufs, s, r, Some(*from), into, &msg.pieces, *action)?;
                }
            }
        }
        Ok(())
    }

    /// Step 3 for the ranks of `part`: their local operations.
    fn locals(&self, s: usize, part: &mut Part<'_, '_>) -> Check {
        for &(r, step) in part.busy {
            let bufs = &mut part.bufs[(r - part.lo) as usize];
            for op in &step.ops {
                if let Op::Local { from, into, action } = op {
                    self.writable(s, r, None, into)?;
                    if from.len != into.len {
                        return Err(self.v(
                            ViolationKind::SizeMismatch,
                            s,
                            r,
                            None,
                            Some(*into),
                            format!("local op copies {} elements into {}", from.len, into.len),
                        ));
                    }
                    let pieces = self.read(bufs, s, r, None, std::slice::from_ref(from))?;
                    let into = std::slice::from_ref(into);
                    self.write(bufs, s, r, None, into, &pieces, *action)?;
                }
            }
        }
        Ok(())
    }
}

/// The segments a rank's step names (a strided region counts its segments, a region 1):
/// the weight by which a step's ranks are split between threads.
fn weight(step: &Step) -> usize {
    let segs = |regs: &[Region]| regs.iter().map(|r| r.count.max(1) as usize).sum::<usize>();
    step.ops
        .iter()
        .map(|o| match o {
            Op::Send { from, .. } => segs(from),
            Op::Recv { into, .. } => segs(into),
            Op::Local { from, .. } => segs(std::slice::from_ref(from)),
        })
        .fold(1usize, usize::saturating_add)
}

impl<'a> Verifier<'a> {
    /// Execute step `s`; `busy` holds the step s of every rank with operations in it,
    /// in increasing order of rank (the others are idle: most ranks in most steps of
    /// SBA or SMG, which the callers never visit).
    ///
    /// The ranks are cut into parts of consecutive ranks, one per thread when the step
    /// names at least [`Options::parallel_from`] segments, else one part. Each of the
    /// three stages (sends, receives, local operations) runs on every part before the
    /// next begins, and the violation reported is that of the lowest part: the first
    /// that walking the ranks in order, stage by stage, meets, whatever the parts.
    ///
    /// `Ok(true)` when the step was split between threads.
    fn step(&mut self, s: usize, busy: &[(Rank, &Step)]) -> Check<bool> {
        let threads = self.pool.as_deref().map_or(1, |p| p.current_num_threads());
        let weights: Vec<usize> = if threads > 1 {
            busy.iter().map(|(_, st)| weight(st)).collect()
        } else {
            Vec::new()
        };
        let total: usize = weights.iter().sum();
        let n = if threads > 1 && total >= self.opts.parallel_from {
            threads.min(busy.len()).max(1)
        } else {
            1
        };
        // Cut `busy` where the running weight passes each n-th of the total.
        let mut cuts = vec![0usize];
        let mut acc = 0usize;
        for (i, w) in weights.iter().enumerate() {
            if cuts.len() < n && i > *cuts.last().unwrap() && acc * n >= total * cuts.len() {
                cuts.push(i);
            }
            acc += w;
        }
        cuts.push(busy.len());
        let starts: Vec<Rank> = (0..cuts.len() - 1)
            .map(|c| if c == 0 { 0 } else { busy[cuts[c]].0 })
            .collect();
        let ctx = &self.ctx;
        let mut rest: &mut [[BufState; 3]] = &mut self.bufs;
        let mut parts: Vec<Part<'_, '_>> = Vec::with_capacity(starts.len());
        for c in 0..starts.len() {
            let hi = starts.get(c + 1).copied().unwrap_or(ctx.k);
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut((hi - starts[c]) as usize);
            rest = tail;
            parts.push(Part {
                lo: starts[c],
                bufs: mine,
                busy: &busy[cuts[c]..cuts[c + 1]],
                out: (0..starts.len())
                    .map(|_| self.boxes.pop().unwrap_or_default())
                    .collect(),
                inbox: Vec::new(),
                mail: Mail::default(),
                scratch: Scratch::default(),
            });
            (parts[c].mail, parts[c].scratch) = self.mails.pop().unwrap_or_default();
        }
        let pool = self.pool.as_deref();
        let res = (|| {
            // 1. Sends read the state at the start of the step.
            each(pool, &mut parts, |p| ctx.sends(s, p, &starts))
                .into_iter()
                .collect::<Check<Vec<()>>>()?;
            for d in 0..parts.len() {
                let inbox = (0..parts.len())
                    .map(|c| std::mem::take(&mut parts[c].out[d]))
                    .collect();
                parts[d].inbox = inbox;
            }
            // 2. Receives take their messages in order.
            each(pool, &mut parts, |p| ctx.receives(s, p))
                .into_iter()
                .collect::<Check<Vec<()>>>()?;
            if let Some((a, b)) = parts
                .iter()
                .flat_map(|p| p.mail.iter())
                .filter(|(_, (next, q))| *next < q.len())
                .map(|(k, _)| *k)
                .min()
            {
                return Err(ctx.v(
                    ViolationKind::UnmatchedSend,
                    s,
                    a,
                    Some(b),
                    None,
                    format!("{b} posts no receive from {a} for this message"),
                ));
            }
            // 3. Local operations.
            each(pool, &mut parts, |p| ctx.locals(s, p))
                .into_iter()
                .collect::<Check<Vec<()>>>()?;
            Ok(parts.len() > 1)
        })();
        for p in parts {
            self.mails.push((p.mail, p.scratch));
            // Emptied by the receives (or left as they were by an error).
            self.boxes
                .extend(p.out.into_iter().chain(p.inbox).map(|mut b| {
                    b.clear();
                    b
                }));
        }
        res
    }

    /// The ranks some of whose required `out` was never written, listed (a download
    /// that never reaches some PEs names them all; Gichev 1992, §4).
    fn unwritten(&self) -> String {
        let missing: Vec<String> = (0..self.ctx.k)
            .filter(|&r| {
                let out = &self.bufs[r as usize][Buf::Out.index()];
                self.ctx
                    .p
                    .expected(r)
                    .iter()
                    .any(|seg| out.read(seg.start, seg.len).is_err())
            })
            .map(|r| r.to_string())
            .collect();
        missing.join(", ")
    }

    fn post(&self) -> Check {
        for r in 0..self.ctx.k {
            let out = &self.bufs[r as usize][Buf::Out.index()];
            for seg in self.ctx.p.expected(r) {
                let region = Region::new(Buf::Out, seg.start, seg.len);
                let fail = |detail: String| Violation {
                    kind: ViolationKind::PostCondition,
                    step: None,
                    rank: r,
                    peer: None,
                    region: Some(region),
                    detail,
                };
                let got = out.read(seg.start, seg.len).map_err(|at| {
                    fail(format!(
                        "out[{at}] was never written; nodes left without their data: {}",
                        self.unwritten()
                    ))
                })?;
                let want = match seg.block {
                    Some(b) => Piece::blocks(seg.ranks[0].0, b, seg.off, seg.len),
                    None => Piece {
                        len: seg.len,
                        off: seg.off,
                        pat: Pattern::Seq {
                            src: seg.ranks.clone().into(),
                        },
                    },
                };
                let mut done = 0u64;
                for p in got {
                    let mut i = 0u64;
                    while i < p.len {
                        let (have, need) =
                            (p.slice(i, p.len - i), want.slice(done, seg.len - done));
                        let Some(n) = have.common_prefix(&need) else {
                            let ((hs, ho), (ns, no)) = (have.at(0), need.at(0));
                            let pos = seg.start + done;
                            return Err(fail(format!(
                                "out[{pos}] holds element {ho} of ranks {} but must hold element {no} of ranks {}",
                                ranges(&hs),
                                ranges(&ns)
                            )));
                        };
                        i += n;
                        done += n;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The strided region `regs` amount to, with its segment length: `regs` is one strided
/// region, or at least two contiguous regions of one buffer, all of the same non-zero
/// length, at a constant stride of at least that length (a gather list).
fn as_strided(regs: &[Region]) -> Option<(Region, u64)> {
    if let [one] = regs {
        return (one.is_strided() && one.len > 0).then(|| (*one, one.seg()));
    }
    let [a, b, ..] = regs else { return None };
    let (seg, stride) = (a.len, b.off.checked_sub(a.off)?);
    (seg > 0
        && stride >= seg
        && !a.is_strided()
        && regs.windows(2).all(|w| {
            w[1].buf == a.buf
                && !w[1].is_strided()
                && w[1].len == seg
                && w[1].off == w[0].off + stride
        }))
    .then(|| {
        let count = regs.len() as u64;
        // Built directly: `Region::strided` would fold stride == seg into one run.
        let reg = Region {
            buf: a.buf,
            off: a.off,
            len: seg * count,
            stride,
            count,
        };
        (reg, seg)
    })
}

fn ranges(r: &[(Rank, Rank)]) -> String {
    r.iter()
        .map(|&(a, b)| {
            if b == a + 1 {
                format!("{a}")
            } else {
                format!("{a}..{}", b - 1)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn malformed(rank: Rank, detail: String) -> Violation {
    Violation {
        kind: ViolationKind::MalformedProgram,
        step: None,
        rank,
        peer: None,
        region: None,
        detail,
    }
}

fn step_count(rank: Rank, got: usize, steps: usize) -> Violation {
    malformed(rank, format!("{got} steps, the schedule has {steps}"))
}

/// The checks of the programs' headers, before any step runs: one program per node,
/// each labelled with its rank. `known_steps(i)` is program i's step count where it is
/// known without generating the steps.
fn check_headers(
    k: u32,
    ranks: &[Rank],
    steps: usize,
    known_steps: impl Fn(usize) -> Option<usize>,
) -> Check {
    if ranks.len() != k as usize {
        return Err(malformed(
            ranks.len().min(k as usize) as Rank,
            format!("{} programs for {} nodes", ranks.len(), k),
        ));
    }
    for (i, &rank) in ranks.iter().enumerate() {
        if rank as usize != i {
            return Err(malformed(
                i as Rank,
                format!("program {i} is labelled rank {rank}"),
            ));
        }
        match known_steps(i) {
            Some(n) if n != steps => return Err(step_count(rank, n, steps)),
            _ => {}
        }
    }
    Ok(())
}

/// How a verification runs (not what it checks: that is [`Strictness`]). The result is
/// the same whatever the options: the same `Ok`, or the same first [`Violation`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Threads that verify the ranks of a step side by side (1, the default: the
    /// caller's thread only, none spawned). More than 1 starts a pool of that many
    /// threads for the call, joined before it returns.
    pub threads: usize,
    /// A step is split between threads when its ranks name at least this many segments
    /// of regions (a smaller step costs less than handing it to the threads and back).
    pub parallel_from: usize,
    /// Runs at which a symbolic buffer turns into cells ([`BufState::blocked`]).
    #[doc(hidden)]
    pub promote_at: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: 1,
            parallel_from: PARALLEL_FROM,
            promote_at: state::PROMOTE_AT,
        }
    }
}

/// The default [`Options::parallel_from`]: a step of fewer segments runs on one thread
/// (about 3 ms of work; waking the threads and joining them, three times a step, costs
/// tens of µs).
pub const PARALLEL_FROM: usize = 32768;

impl Options {
    /// Verify on `threads` threads (0 counts as 1).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }
    /// Split a step between threads from `segments` segments on
    /// ([`Options::parallel_from`]).
    pub fn parallel_from(mut self, segments: usize) -> Self {
        self.parallel_from = segments;
        self
    }
    /// Turn symbolic buffers into cells at `runs` runs (tests: 1, cells from the first
    /// write; the result must not change).
    #[doc(hidden)]
    pub fn promote_at(mut self, runs: usize) -> Self {
        self.promote_at = runs;
        self
    }
    /// As many threads as this machine runs at once
    /// ([`std::thread::available_parallelism`]; 1 if unknown).
    pub fn all_cores() -> Self {
        Options::default().threads(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

impl<'a> Verifier<'a> {
    /// Every rank's input in `in`, nothing else held; `tmp_lens[r]` is rank r's `tmp`.
    fn new(
        p: Problem<'a>,
        strict: Strictness,
        tmp_lens: impl Iterator<Item = u64>,
        opts: Options,
    ) -> Self {
        let (k, m) = (p.topology.nodes(), p.len);
        // Blocks of m elements let a buffer switch to cells; a variable-count one's
        // blocks differ, so it never does.
        let block = if p.counts.is_some() { 0 } else { m };
        let promote_at = opts.promote_at;
        // A pool that cannot start (no threads to be had) leaves the caller's thread.
        let pool = (opts.threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(opts.threads)
                    .thread_name(|i| format!("hypercomm-verify-{i}"))
                    .build()
                    .ok()
            })
            .flatten()
            .map(std::sync::Arc::new);
        Verifier {
            ctx: Ctx {
                p,
                strict,
                k,
                lens: (0..k)
                    .zip(tmp_lens)
                    .map(|(r, t)| [p.in_len(r), p.out_len(r), t])
                    .collect(),
            },
            bufs: (0..k)
                .map(|r| {
                    [
                        BufState::input(r, p.in_len(r)),
                        BufState::blocked(block, promote_at),
                        BufState::blocked(block, promote_at),
                    ]
                })
                .collect(),
            mails: Vec::new(),
            boxes: Vec::new(),
            opts,
            pool,
        }
    }
}

/// Verify `schedule` for `problem`: `Ok(())` when every rule holds and the post-condition
/// is met, else the first [`Violation`].
///
/// The ranks' programs are generated step by step ([`Schedule::stream`]) and run in
/// lock-step: memory holds the current step of every rank, the messages of that step
/// and the symbolic state, never whole programs (for schedules that stream lazily).
/// A stream that yields more or fewer than `schedule.steps()` steps is a
/// `MalformedProgram`, reported before the first step when its length is known
/// upfront (an exact `size_hint`), else where it is found out.
///
/// On the caller's thread only; [`verify_with`] verifies on several.
pub fn verify(
    problem: Problem<'_>,
    schedule: &dyn Schedule,
    strict: Strictness,
) -> Result<(), Violation> {
    verify_with(problem, schedule, strict, Options::default())
}

/// With `--strict`, the capacity of a shared medium in every step (seed 004, §2): a
/// bus carries one transfer per step (a multicast is one); a shared memory `shm:K,S`
/// takes each step as a write round and then a read round, each of at most S accesses
/// and one access per processor (a send operation is one write, a receive one read).
/// The first step, and in it the first rank, past a capacity is reported, naming the
/// resource. Transfers with a host do not use the medium.
fn check_media(
    topo: &Topology,
    steps: usize,
    ranks: u32,
    mut program: impl FnMut(Rank) -> Option<Program>,
) -> Result<(), Violation> {
    let Some(kind @ (Medium::Bus | Medium::Shm { .. })) = topo.medium_kind() else {
        return Ok(());
    };
    let host = topo.host();
    let on_medium = |r: Rank, q: Rank| Some(r) != host && Some(q) != host;
    // Per step: (transfers or writes, reads) so far, and the first rank past a limit.
    let mut used = vec![(0u64, 0u64); steps];
    let mut first: Option<Violation> = None;
    for r in 0..ranks {
        let Some(prog) = program(r) else { continue };
        for (s, step) in prog.steps.iter().enumerate().take(steps) {
            let writes = step
                .ops
                .iter()
                .filter(
                    |op| matches!(op, Op::Send { to, .. } if to.iter().any(|&q| on_medium(r, q))),
                )
                .count() as u64;
            let reads = step
                .ops
                .iter()
                .filter(|op| matches!(op, Op::Recv { from, .. } if on_medium(r, *from)))
                .count() as u64;
            used[s].0 += writes;
            used[s].1 += reads;
            let broken = match kind {
                Medium::Bus if used[s].0 > 1 && writes > 0 => Some(format!(
                    "{} transfers on the bus in one step; a bus carries one at a time",
                    used[s].0
                )),
                Medium::Shm { accesses } => {
                    if writes > 1 || reads > 1 {
                        Some(format!(
                            "{writes} writes and {reads} reads of one processor in one step; a processor makes one access to the shared memory per round"
                        ))
                    } else if (writes > 0 && used[s].0 > accesses as u64)
                        || (reads > 0 && used[s].1 > accesses as u64)
                    {
                        Some(format!(
                            "{} writes and {} reads of the shared memory in one step; it serves S = k* = {accesses} accesses per round",
                            used[s].0, used[s].1
                        ))
                    } else {
                        None
                    }
                }
                _ => None,
            };
            if let Some(detail) = broken {
                if first
                    .as_ref()
                    .map_or(true, |v| v.step.is_some_and(|t| s < t))
                {
                    first = Some(Violation {
                        kind: ViolationKind::Capacity,
                        step: Some(s),
                        rank: r,
                        peer: None,
                        region: None,
                        detail,
                    });
                }
                break;
            }
        }
    }
    first.map_or(Ok(()), Err)
}

/// The next busy step of a stream, or its length if it ended.
enum Next {
    Due(usize, Step),
    Ended(usize),
}

/// The ranks due at each step: the steps in order, each once (`order`), their ranks
/// (`due`), emptied rank lists to reuse (`spare`), and the streams that ended with the
/// wrong length as (step where it shows, stream, length).
#[derive(Default)]
struct Calendar {
    order: BTreeSet<usize>,
    due: FxHashMap<usize, Vec<usize>>,
    spare: Vec<Vec<usize>>,
    ended: Vec<(usize, usize, usize)>,
}

impl Calendar {
    /// File stream i under its next busy step (`held` takes that step), or note that
    /// it ended (wrongly unless after `steps` steps).
    fn file(&mut self, i: usize, held: &mut Step, n: Next, steps: usize) {
        match n {
            Next::Due(t, step) => {
                *held = step;
                let Calendar {
                    order, due, spare, ..
                } = self;
                due.entry(t)
                    .or_insert_with(|| {
                        order.insert(t);
                        spare.pop().unwrap_or_default()
                    })
                    .push(i)
            }
            Next::Ended(len) => {
                *held = Step::default();
                if len != steps {
                    self.ended.push((len.min(steps), i, len));
                }
            }
        }
    }
}

/// A rank's stream and its next busy step, read ahead.
struct Slot<'s> {
    stream: StepStream<'s>,
    held: Step,
}

/// [`verify`] run as `opts` say: with [`Options::threads`] > 1, the ranks of each large
/// step are verified, and their next steps generated, on that many threads. The result
/// is the same as [`verify`]'s.
pub fn verify_with(
    problem: Problem<'_>,
    schedule: &dyn Schedule,
    strict: Strictness,
    opts: Options,
) -> Result<(), Violation> {
    let k = problem.topology.nodes();
    let steps = schedule.steps();
    if strict.ports.is_some() {
        check_media(problem.topology, steps, schedule.nodes().min(k), |r| {
            Some(schedule.program(r))
        })?;
    }
    let streams: Vec<_> = (0..schedule.nodes().min(k))
        .map(|r| schedule.stream(r))
        .collect();
    let ranks: Vec<Rank> = streams.iter().map(|st| st.rank).collect();
    check_headers(k, &ranks, steps, |i| match streams[i].size_hint() {
        (lo, Some(hi)) if lo == hi => Some(lo),
        _ => None,
    })?;
    let mut v = Verifier::new(problem, strict, streams.iter().map(|st| st.tmp_len), opts);
    // With a pool, the whole walk runs on one of its threads, so that the steps' serial
    // parts and the other threads' work share the pool's threads and no more.
    let pool = v.pool.clone();
    on_pool(pool.as_deref(), move || {
        // Every rank's next busy step, filed under its index: a rank is visited only in
        // the steps where it acts ([`StepStream::next_busy`]), so a schedule that keeps
        // most ranks idle most of the time (SBA, SMG) costs its operations, not ranks ×
        // steps. A stream of the wrong length is reported at the step where it ends (or
        // after the last step, if it runs long), as a lock-step walk would find it.
        // The steps due are kept once each in order (`order`), their ranks in a table.
        let mut cal = Calendar::default();
        let next = |st: &mut StepStream<'_>| match st.next_busy() {
            Some((t, step)) if t < steps => Next::Due(t, step),
            _ => Next::Ended(st.finish()),
        };
        let pool = v.pool.clone();
        let mut slots: Vec<Slot<'_>> = streams
            .into_iter()
            .map(|stream| Slot {
                stream,
                held: Step::default(),
            })
            .collect();
        // Every rank's first busy step, on the pool's threads if there is a pool.
        let nexts = each(pool.as_deref(), &mut slots, |sl| next(&mut sl.stream));
        for (i, (sl, n)) in slots.iter_mut().zip(nexts).enumerate() {
            cal.file(i, &mut sl.held, n, steps);
        }
        loop {
            let Some(s) = cal.order.pop_first() else {
                break;
            };
            let mut idx = cal
                .due
                .remove(&s)
                .expect("every step in order has its ranks");
            if let Some(&(_, i, len)) = cal.ended.iter().filter(|e| e.0 <= s).min() {
                return Err(step_count(ranks[i], len, steps));
            }
            idx.sort_unstable();
            let busy: Vec<(Rank, &Step)> =
                idx.iter().map(|&i| (ranks[i], &slots[i].held)).collect();
            let split = v.step(s, &busy)?;
            drop(busy);
            if let (true, Some(pool)) = (split, pool.as_deref()) {
                // A step split between threads: its ranks' next steps are generated on
                // them too (one pass over the slots picks them out, in order).
                let mut want = idx.iter().copied().peekable();
                let mut mine: Vec<(usize, &mut Slot<'_>)> = slots
                    .iter_mut()
                    .enumerate()
                    .filter(|(j, _)| want.next_if_eq(j).is_some())
                    .collect();
                let nexts = each(Some(pool), &mut mine, |(_, sl)| next(&mut sl.stream));
                for ((i, sl), n) in mine.into_iter().zip(nexts) {
                    cal.file(i, &mut sl.held, n, steps);
                }
            } else {
                // Generating beside the verification, or for a step too small to split,
                // costs more in hand-overs and cross-thread frees than it saves.
                for &i in &idx {
                    let n = next(&mut slots[i].stream);
                    cal.file(i, &mut slots[i].held, n, steps);
                }
            }
            idx.clear();
            cal.spare.push(idx);
        }
        if let Some(&(_, i, len)) = cal.ended.iter().min() {
            return Err(step_count(ranks[i], len, steps));
        }
        drop(slots);
        v.post()
    })
}

/// `f` on one of `pool`'s threads, or here when there is no pool.
fn on_pool<R: Send>(pool: Option<&rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// [`verify`] for programs already in memory (e.g. read from a file).
pub fn verify_programs(
    problem: Problem<'_>,
    progs: &[Program],
    steps: usize,
    strict: Strictness,
) -> Result<(), Violation> {
    verify_programs_with(problem, progs, steps, strict, Options::default())
}

/// [`verify_programs`] run as `opts` say (see [`verify_with`]).
pub fn verify_programs_with(
    problem: Problem<'_>,
    progs: &[Program],
    steps: usize,
    strict: Strictness,
    opts: Options,
) -> Result<(), Violation> {
    let k = problem.topology.nodes();
    let ranks: Vec<Rank> = progs.iter().map(|p| p.rank).collect();
    check_headers(k, &ranks, steps, |i| Some(progs[i].steps.len()))?;
    if strict.ports.is_some() {
        check_media(problem.topology, steps, progs.len() as u32, |i| {
            progs.get(i as usize).cloned()
        })?;
    }
    let mut v = Verifier::new(problem, strict, progs.iter().map(|p| p.tmp_len), opts);
    let pool = v.pool.clone();
    on_pool(pool.as_deref(), move || {
        let mut busy: Vec<(Rank, &Step)> = Vec::with_capacity(progs.len());
        for s in 0..steps {
            busy.clear();
            busy.extend(
                progs
                    .iter()
                    .map(|p| (p.rank, &p.steps[s]))
                    .filter(|(_, st)| !st.ops.is_empty()),
            );
            v.step(s, &busy)?;
        }
        v.post()
    })
}

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
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::topology::Topology;
use state::{BufState, CombineError, Pattern, Piece, Pieces};
use std::collections::BTreeMap;

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
    /// Sending and receiving in one step under half duplex.
    DuplexRule,
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
}

#[derive(Default)]
struct Msg {
    from_step_op: (usize, usize),
    pieces: Pieces,
    len: u64,
}

/// The messages of one step by (sender, receiver), in the order sent, with the index of
/// the next one to receive. Kept from step to step (cleared) to reuse its table.
type Mail = FxHashMap<(Rank, Rank), (usize, SmallVec<[Msg; 1]>)>;

struct Verifier<'a> {
    p: Problem<'a>,
    strict: Strictness,
    k: u32,
    bufs: Vec<[BufState; 3]>,
    lens: Vec<[u64; 3]>,
    mail: Mail,
}

type Check<T = ()> = Result<T, Violation>;

impl<'a> Verifier<'a> {
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

    fn read(&self, s: usize, r: Rank, peer: Option<Rank>, regs: &[Region]) -> Check<Pieces> {
        // One strided region, or equal regions at a constant stride (a gather list, as
        // ADEA's were), all in bounds (the last ends furthest): one strided read.
        if let Some((reg, seg)) = as_strided(regs) {
            if reg.check().is_ok() && reg.end() <= self.lens[r as usize][reg.buf.index()] {
                let (buf, start, stride) = (reg.buf, reg.off, reg.stride);
                return self.bufs[r as usize][buf.index()]
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
            match self.bufs[r as usize][reg.buf.index()].read_into(reg.off, reg.len, &mut out) {
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

    /// Write `pieces` into the regions `into` of rank `r`.
    fn write(
        &mut self,
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
            let buf = &mut self.bufs[r as usize][reg.buf.index()];
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
            let buf = &mut self.bufs[r as usize][reg.buf.index()];
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
    fn races(&self, s: usize, r: Rank, step: &Step) -> Check {
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
        let mut all: Vec<(Region, bool, Rank)> = Vec::with_capacity(regions);
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
        let mut order: Vec<(u8, u64, u32)> = Vec::with_capacity(all.len());
        for buf in [Buf::In, Buf::Out, Buf::Tmp] {
            order.extend(
                (0..)
                    .zip(&all)
                    .filter(|(_, (r, _, _))| r.buf == buf)
                    .map(|(i, (r, _, _))| (r.buf as u8, r.off, i)),
            );
        }
        order.sort();
        // The furthest-reaching send and receive so far, each with its peer (the
        // send's is unused).
        let mut send_reach: Option<(Region, Rank)> = None;
        let mut recv_reach: Option<(Region, Rank)> = None;
        for &(reg, is_recv, peer) in order.iter().map(|&(_, _, i)| &all[i as usize]) {
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
        match self.strict.ports {
            Some(Ports::One) => {
                if sends.len() > 1 {
                    return Err(self.v(
                        ViolationKind::PortRule,
                        s,
                        r,
                        Some(sends[1]),
                        None,
                        format!(
                            "sends {} messages in one step under --ports one",
                            sends.len()
                        ),
                    ));
                }
                if recvs.len() > 1 {
                    return Err(self.v(
                        ViolationKind::PortRule,
                        s,
                        r,
                        Some(recvs[1]),
                        None,
                        format!(
                            "receives {} messages in one step under --ports one",
                            recvs.len()
                        ),
                    ));
                }
            }
            Some(Ports::All) => {
                for list in [&sends, &recvs] {
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
            None => {}
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

    /// Execute step `s`; `busy` holds the step s of every rank with operations in it,
    /// in increasing order of rank (the others are idle: most ranks in most steps of
    /// SBA or SMG, which the callers never visit).
    fn step(&mut self, s: usize, busy: &[(Rank, &Step)]) -> Check {
        // 1. Sends read the state at the start of the step.
        let mut mail = std::mem::take(&mut self.mail);
        mail.clear();
        let res = self.step_with(s, busy, &mut mail);
        self.mail = mail;
        res
    }

    fn step_with(&mut self, s: usize, busy: &[(Rank, &Step)], mail: &mut Mail) -> Check {
        for &(r, step) in busy {
            self.races(s, r, step)?;
            self.strict_rules(s, r, step)?;
            for (i, op) in step.ops.iter().enumerate() {
                if let Op::Send { to, from } = op {
                    for &q in to {
                        self.peer(s, r, q)?;
                    }
                    let mut pieces = self.read(s, r, to.first().copied(), from)?;
                    let len = op.message_len();
                    for (j, &q) in to.iter().enumerate() {
                        // The last peer takes the pieces, the others a copy.
                        let pieces = if j + 1 == to.len() {
                            std::mem::take(&mut pieces)
                        } else {
                            pieces.clone()
                        };
                        mail.entry((r, q)).or_default().1.push(Msg {
                            from_step_op: (s, i),
                            pieces,
                            len,
                        });
                    }
                }
            }
        }
        // 2. Receives take their messages in order.
        for &(r, step) in busy {
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
                    self.write(s, r, Some(*from), into, &msg.pieces, *action)?;
                }
            }
        }
        if let Some(((a, b), _)) = mail
            .iter()
            .filter(|(_, (next, q))| *next < q.len())
            .min_by_key(|(k, _)| **k)
        {
            return Err(self.v(
                ViolationKind::UnmatchedSend,
                s,
                *a,
                Some(*b),
                None,
                format!("{b} posts no receive from {a} for this message"),
            ));
        }
        // 3. Local operations.
        for &(r, step) in busy {
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
                    let pieces = self.read(s, r, None, std::slice::from_ref(from))?;
                    self.write(s, r, None, std::slice::from_ref(into), &pieces, *action)?;
                }
            }
        }
        Ok(())
    }

    fn post(&self) -> Check {
        let m = self.p.len;
        for r in 0..self.k {
            let out = &self.bufs[r as usize][Buf::Out.index()];
            for seg in self.p.collective.expected(self.k, m, r) {
                let region = Region::new(Buf::Out, seg.start, seg.len);
                let fail = |detail: String| Violation {
                    kind: ViolationKind::PostCondition,
                    step: None,
                    rank: r,
                    peer: None,
                    region: Some(region),
                    detail,
                };
                let got = out
                    .read(seg.start, seg.len)
                    .map_err(|at| fail(format!("out[{at}] was never written")))?;
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

impl<'a> Verifier<'a> {
    /// Every rank's input in `in`, nothing else held; `tmp_lens[r]` is rank r's `tmp`.
    fn new(
        p: Problem<'a>,
        strict: Strictness,
        tmp_lens: impl Iterator<Item = u64>,
        promote_at: usize,
    ) -> Self {
        let (k, m, c) = (p.topology.nodes(), p.len, p.collective);
        Verifier {
            p,
            strict,
            k,
            bufs: (0..k)
                .map(|r| {
                    [
                        BufState::input(r, c.in_len(k, m, r)),
                        BufState::blocked(m, promote_at),
                        BufState::blocked(m, promote_at),
                    ]
                })
                .collect(),
            lens: (0..k)
                .zip(tmp_lens)
                .map(|(r, t)| [c.in_len(k, m, r), c.out_len(k, m, r), t])
                .collect(),
            mail: Mail::default(),
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
pub fn verify(
    problem: Problem<'_>,
    schedule: &dyn Schedule,
    strict: Strictness,
) -> Result<(), Violation> {
    verify_promoting_at(problem, schedule, strict, state::PROMOTE_AT)
}

/// [`verify`] with the symbolic buffers switching to cell form at `promote_at` runs
/// ([`BufState::blocked`]) instead of [`state::PROMOTE_AT`]: the result must be the
/// same whatever the threshold, which tests check with a threshold of 1.
#[doc(hidden)]
pub fn verify_promoting_at(
    problem: Problem<'_>,
    schedule: &dyn Schedule,
    strict: Strictness,
    promote_at: usize,
) -> Result<(), Violation> {
    let k = problem.topology.nodes();
    let steps = schedule.steps();
    let mut streams: Vec<_> = (0..schedule.nodes().min(k))
        .map(|r| schedule.stream(r))
        .collect();
    let ranks: Vec<Rank> = streams.iter().map(|st| st.rank).collect();
    check_headers(k, &ranks, steps, |i| match streams[i].size_hint() {
        (lo, Some(hi)) if lo == hi => Some(lo),
        _ => None,
    })?;
    let mut v = Verifier::new(
        problem,
        strict,
        streams.iter().map(|st| st.tmp_len),
        promote_at,
    );
    // Every rank's next busy step, filed under its index: a rank is visited only in
    // the steps where it acts ([`StepStream::next_busy`]), so a schedule that keeps
    // most ranks idle most of the time (SBA, SMG) costs its operations, not ranks ×
    // steps. A stream of the wrong length is reported at the step where it ends (or
    // after the last step, if it runs long), as a lock-step walk would find it.
    type Due = BTreeMap<usize, Vec<usize>>;
    /// File stream i's next busy step, or note its length if it ended wrong.
    fn advance(
        i: usize,
        st: &mut StepStream<'_>,
        steps: usize,
        held: &mut [Step],
        due: &mut Due,
        ended: &mut Vec<(usize, usize, usize)>,
    ) {
        match st.next_busy() {
            Some((t, step)) if t < steps => {
                held[i] = step;
                due.entry(t).or_default().push(i);
            }
            _ => {
                let len = st.finish();
                if len != steps {
                    ended.push((len.min(steps), i, len));
                }
            }
        }
    }
    let mut held: Vec<Step> = vec![Step::default(); streams.len()];
    let mut due = Due::new();
    let mut ended: Vec<(usize, usize, usize)> = Vec::new();
    for (i, st) in streams.iter_mut().enumerate() {
        advance(i, st, steps, &mut held, &mut due, &mut ended);
    }
    while let Some((s, mut idx)) = due.pop_first() {
        if let Some(&(_, i, len)) = ended.iter().filter(|e| e.0 <= s).min() {
            return Err(step_count(ranks[i], len, steps));
        }
        idx.sort_unstable();
        let busy: Vec<(Rank, &Step)> = idx.iter().map(|&i| (ranks[i], &held[i])).collect();
        v.step(s, &busy)?;
        drop(busy);
        for &i in &idx {
            advance(i, &mut streams[i], steps, &mut held, &mut due, &mut ended);
        }
    }
    if let Some(&(_, i, len)) = ended.iter().min() {
        return Err(step_count(ranks[i], len, steps));
    }
    drop(held);
    drop(streams);
    v.post()
}

/// [`verify`] for programs already in memory (e.g. read from a file).
pub fn verify_programs(
    problem: Problem<'_>,
    progs: &[Program],
    steps: usize,
    strict: Strictness,
) -> Result<(), Violation> {
    let k = problem.topology.nodes();
    let ranks: Vec<Rank> = progs.iter().map(|p| p.rank).collect();
    check_headers(k, &ranks, steps, |i| Some(progs[i].steps.len()))?;
    let mut v = Verifier::new(
        problem,
        strict,
        progs.iter().map(|p| p.tmp_len),
        state::PROMOTE_AT,
    );
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
}

//! Schedules written as moves of named items (seed 004's algorithms): a *plan* lists,
//! per step, which node sends which items to which nodes; a *layout* says where an
//! item lives at each node (its `in` block at the source, its `out` block at the
//! destination, a `tmp` slot in between). [`Plan::build`] turns the two into programs
//! (one send per move, one receive per receiver, the items' regions concatenated), so
//! an algorithm is only its routing: the ring's farthest-first scatter, the ring's
//! rotate-and-drop, the daisy chain, pipelining down a tree.
//!
//! Schedules built this way are pure and held in memory ([`Materialized`]): seed 004's
//! machines are small (a bus, a memory, a ring, a torus of tens of nodes). A plan holds
//! every item of every move and builds every program with all its steps, so it refuses
//! to grow past [`MAX_PLAN_BYTES`] ([`Plan::bytes`]): the row-column all-to-all on
//! torus:64x64 moves 537 M items and took 4 GB before it aborted; [`Plan::build`] then
//! returns [`Error::TooLarge`].

use std::collections::BTreeMap;

use crate::algorithms::pipeline;
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::{Buf, Materialized, Op, Program, Rank, Region};

/// An item: a packet of a message, or a block of a personalised collective.
pub type Item = u64;

/// One move: `from` sends `items` (concatenated) to every rank of `to` in `step`.
#[derive(Clone, Debug)]
struct Move {
    step: usize,
    from: Rank,
    to: Vec<Rank>,
    items: Vec<Item>,
}

/// The most memory one plan may take to build, 1 GiB, estimated by [`Plan::bytes`]
/// from what built schedules measured (`/usr/bin/time`, rounds timing, torus:32x32):
/// the row-column all-to-all, 32.6 M items in 63 K moves, 2.95 GB (90 B an item, its
/// regions at the sender and the receiver); the grid daisy chain, 2.1 M items in 1 M
/// moves, 470 MB; the sequential-broadcast all-gather, 1,024 programs of 32,768 steps
/// (24 B a step, idle ones included), about 1 GB; the bus all-to-all on bus:2048, whose
/// 2,048 moves each carry 2,048 items to 2,047 receivers, 2.3 GB and 24 s. Seed 004's
/// algorithms on the machines it studies stay far below (the row-column all-to-all on
/// torus:16x16 moves 0.5 M items).
pub const MAX_PLAN_BYTES: u64 = 1 << 30;

/// The most placements of items (an item at its sender or at one receiver of its move)
/// one plan may ask [`Plan::build`] to make, 2^29, a second or two: the bus all-to-all on
/// bus:2048 asks 8.6 G (2,048 moves of 2,048 items to 2,047 receivers) and took 15 s
/// before its regions, merged at the receivers, reached [`MAX_PLAN_BYTES`]; on bus:512,
/// 134 M in 0.5 s.
pub const MAX_PLAN_PLACEMENTS: u64 = 1 << 29;

/// Bytes a region of a built program takes ([`Plan::build`]'s count).
const REGION_BYTES: u64 = 48;

/// Bytes an operation of a built program takes besides its regions.
const OP_BYTES: u64 = 96;

/// A list of moves and local copies.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    k: u32,
    moves: Vec<Move>,
    locals: Vec<(usize, Rank, Region, Region)>,
    steps: usize,
    /// Items and receivers of every move so far ([`Plan::bytes`]).
    items: u64,
    /// Moves so far, dropped or not.
    moves_made: u64,
    /// Items times their endpoints (sender and receivers) so far
    /// ([`MAX_PLAN_PLACEMENTS`]).
    placements: u64,
    /// Whether the plan passed [`MAX_PLAN_BYTES`] (its moves are then dropped).
    over: bool,
}

impl Plan {
    /// An empty plan on `k` ranks.
    pub fn new(k: u32) -> Self {
        Plan {
            k,
            ..Plan::default()
        }
    }
    /// `from` sends `items` to each of `to` in `step` (nothing if either is empty).
    pub fn send(&mut self, step: usize, from: Rank, to: Vec<Rank>, items: Vec<Item>) {
        if to.is_empty() || items.is_empty() {
            return;
        }
        self.steps = self.steps.max(step + 1);
        // Building places every item at its sender and at each receiver.
        let placements = (items.len() as u64).saturating_mul(1 + to.len() as u64);
        self.count(items.len() as u64 + to.len() as u64, 1, placements);
        if self.over {
            return;
        }
        self.moves.push(Move {
            step,
            from,
            to,
            items,
        });
    }
    /// A local copy at `rank` in `step`.
    pub fn local(&mut self, step: usize, rank: Rank, from: Region, into: Region) {
        self.steps = self.steps.max(step + 1);
        self.count(0, 0, 0);
        self.locals.push((step, rank, from, into));
    }
    /// The memory this plan holds and that its programs' steps take, estimated from
    /// above: 16 B per item or receiver of a move, 256 B per move, 24 B per step of
    /// every program ([`MAX_PLAN_BYTES`]); [`Plan::build`] adds its operations' regions
    /// as it makes them (48 B a region, 96 B an operation).
    pub fn bytes(&self) -> u64 {
        self.items
            .saturating_mul(16)
            .saturating_add(self.moves_made.saturating_mul(256))
            .saturating_add(
                u64::from(self.k)
                    .saturating_mul(self.steps as u64)
                    .saturating_mul(24),
            )
    }
    /// Count `items` more items and receivers in `moves` more moves placing items
    /// `placements` times; past [`MAX_PLAN_BYTES`] or [`MAX_PLAN_PLACEMENTS`], drop every
    /// move.
    fn count(&mut self, items: u64, moves: u64, placements: u64) {
        self.items = self.items.saturating_add(items);
        self.moves_made = self.moves_made.saturating_add(moves);
        self.placements = self.placements.saturating_add(placements);
        if !self.over && (self.bytes() > MAX_PLAN_BYTES || self.placements > MAX_PLAN_PLACEMENTS) {
            self.over = true;
            self.moves = Vec::new();
        }
    }
    /// Add `other`'s moves and local copies `t0` steps later.
    pub fn append(&mut self, other: Plan, t0: usize) {
        if other.steps > 0 {
            self.steps = self.steps.max(other.steps + t0);
        }
        self.count(other.items, other.moves_made, other.placements);
        self.over |= other.over;
        if self.over {
            self.moves = Vec::new();
        } else {
            self.moves.extend(other.moves.into_iter().map(|mut mv| {
                mv.step += t0;
                mv
            }));
        }
        for (s, r, from, into) in other.locals {
            self.locals.push((s + t0, r, from, into));
        }
    }
    /// Whether the plan passed [`MAX_PLAN_BYTES`]: [`Plan::build`] will refuse it, so a
    /// builder may stop adding moves.
    pub fn is_over(&self) -> bool {
        self.over
    }
    /// Steps used so far.
    pub fn steps(&self) -> usize {
        self.steps
    }
    /// The same moves backwards in time, senders and receivers swapped (a gather from
    /// a scatter); every move must have one receiver. Local copies are dropped.
    pub fn reversed(self) -> Plan {
        let s = self.steps;
        let mut out = Plan::new(self.k);
        out.over = self.over;
        for mv in self.moves {
            debug_assert_eq!(mv.to.len(), 1, "only unicast plans reverse");
            out.send(s - 1 - mv.step, mv.to[0], vec![mv.from], mv.items);
        }
        out.steps = s;
        out
    }
    /// The programs, each item at `layout(item, rank)`, or [`Error::TooLarge`] if the
    /// plan or the programs pass [`MAX_PLAN_BYTES`], or the plan [`MAX_PLAN_PLACEMENTS`] (the programs' regions are counted
    /// as they are made: an item is a region at its sender and at each receiver, merged
    /// where adjacent).
    pub fn build(self, layout: impl Fn(Item, Rank) -> Region) -> Result<Materialized, Error> {
        let too_large = || {
            Error::TooLarge(format!(
                "the schedule on {} nodes moves {} items (blocks or packets, counted per \
                 move and receiver) in {} moves over {} steps, more than a schedule planned \
                 item by item (seed 004's algorithms) may take to build, {} MiB; use fewer \
                 nodes, an explicit --packets, or another algorithm",
                self.k,
                self.items,
                self.moves_made,
                self.steps,
                MAX_PLAN_BYTES >> 20
            ))
        };
        if self.over {
            return Err(too_large());
        }
        let mut bytes = self.bytes();
        let steps = self.steps;
        let mut progs: Vec<Program> = (0..self.k).map(|r| Program::new(r, steps)).collect();
        let regions = |items: &[Item], r: Rank| {
            let mut v: Vec<Region> = Vec::with_capacity(items.len());
            for &i in items {
                let g = layout(i, r);
                match v.last_mut() {
                    Some(l) if l.count == 1 && l.buf == g.buf && l.off + l.len == g.off => {
                        l.len += g.len
                    }
                    _ => v.push(g),
                }
            }
            v
        };
        for (s, r, from, into) in &self.locals {
            progs[*r as usize].push(*s, Op::copy(*from, *into));
        }
        for mv in &self.moves {
            let from = regions(&mv.items, mv.from);
            bytes = bytes.saturating_add(OP_BYTES + REGION_BYTES * from.len() as u64);
            progs[mv.from as usize].push(
                mv.step,
                Op::Send {
                    to: mv.to.iter().copied().collect(),
                    from: from.into_iter().collect(),
                },
            );
            for &t in &mv.to {
                let into = regions(&mv.items, t);
                bytes = bytes.saturating_add(OP_BYTES + REGION_BYTES * into.len() as u64);
                progs[t as usize].push(
                    mv.step,
                    Op::Recv {
                        from: mv.from,
                        into: into.into_iter().collect(),
                        action: Default::default(),
                    },
                );
            }
            if bytes > MAX_PLAN_BYTES {
                return Err(too_large());
            }
        }
        for p in &mut progs {
            p.tmp_len = p
                .steps
                .iter()
                .flat_map(|s| &s.ops)
                .flat_map(|op| match op {
                    Op::Send { from, .. } => from.to_vec(),
                    Op::Recv { into, .. } => into.to_vec(),
                    Op::Local { from, into, .. } => vec![*from, *into],
                })
                .filter(|g| g.buf == Buf::Tmp)
                .map(|g| g.end())
                .max()
                .unwrap_or(0);
        }
        Ok(Materialized {
            nodes: self.k,
            steps,
            programs: progs,
        })
    }
}

/// Where block items live for the personalised and all-to-all collectives with `k`
/// ranks and blocks of `m`: scatter and gather item b is rank b's block; all-gather
/// and transposition item b is rank b's input; all-to-all item i·k + j goes from i to
/// j. At the owner
/// an item is in `in`, at the destination in `out`, elsewhere in a `tmp` slot of its
/// own.
pub fn block_layout(c: Collective, k: u32, m: u64) -> impl Fn(Item, Rank) -> Region {
    let k64 = k as u64;
    move |i: Item, r: Rank| {
        let r64 = r as u64;
        match c {
            Collective::Scatter { root } => {
                if r == root {
                    Region::new(Buf::In, i * m, m)
                } else if r64 == i {
                    Region::new(Buf::Out, 0, m)
                } else {
                    Region::new(Buf::Tmp, i * m, m)
                }
            }
            Collective::Gather { root } => {
                if r64 == i {
                    Region::new(Buf::In, 0, m)
                } else if r == root {
                    Region::new(Buf::Out, i * m, m)
                } else {
                    Region::new(Buf::Tmp, i * m, m)
                }
            }
            Collective::Allgather => {
                if r64 == i {
                    Region::new(Buf::In, 0, m)
                } else {
                    Region::new(Buf::Out, i * m, m)
                }
            }
            Collective::Transpose => {
                let to = crate::collective::transposed(k, i as Rank) as u64;
                if r64 == i {
                    Region::new(Buf::In, 0, m)
                } else if r64 == to {
                    Region::new(Buf::Out, 0, m)
                } else {
                    Region::new(Buf::Tmp, i * m, m)
                }
            }
            _ => {
                let (src, dst) = (i / k64, i % k64);
                if r64 == src {
                    Region::new(Buf::In, dst * m, m)
                } else if r64 == dst {
                    Region::new(Buf::Out, src * m, m)
                } else {
                    Region::new(Buf::Tmp, i * m, m)
                }
            }
        }
    }
}

/// Where packet p of `nu` of a message of `m` lives: at `src` in `in`, at `dst` (every
/// rank but `src` when `None`: a broadcast) in `out`, elsewhere in `tmp`.
pub fn packet_layout(
    src: Rank,
    dst: Option<Rank>,
    m: u64,
    nu: u64,
) -> impl Fn(Item, Rank) -> Region {
    move |p: Item, r: Rank| {
        let (off, len) = pipeline::packet(m, nu, p);
        if r == src {
            Region::new(Buf::In, off, len)
        } else if dst.is_none_or(|d| d == r) {
            Region::new(Buf::Out, off, len)
        } else {
            Region::new(Buf::Tmp, off, len)
        }
    }
}

/// The local copies every collective of data movement needs (the root's own block,
/// every rank's own block of an all-gather or all-to-all, src = dst), in step 0.
pub fn own_copies(plan: &mut Plan, c: Collective, k: u32, m: u64) {
    let blk = |b: Rank| Region::new(Buf::Out, b as u64 * m, m);
    match c {
        Collective::P2p { src, dst } if src == dst => plan.local(
            0,
            src,
            Region::new(Buf::In, 0, m),
            Region::new(Buf::Out, 0, m),
        ),
        Collective::Broadcast { root } => plan.local(
            0,
            root,
            Region::new(Buf::In, 0, m),
            Region::new(Buf::Out, 0, m),
        ),
        Collective::Scatter { root } => plan.local(
            0,
            root,
            Region::new(Buf::In, root as u64 * m, m),
            Region::new(Buf::Out, 0, m),
        ),
        Collective::Gather { root } => plan.local(0, root, Region::new(Buf::In, 0, m), blk(root)),
        Collective::Allgather => {
            for r in 0..k {
                plan.local(0, r, Region::new(Buf::In, 0, m), blk(r));
            }
        }
        Collective::Alltoall => {
            for r in 0..k {
                plan.local(0, r, Region::new(Buf::In, r as u64 * m, m), blk(r));
            }
        }
        Collective::Transpose => {
            for r in (0..k).filter(|&r| crate::collective::transposed(k, r) == r) {
                plan.local(
                    0,
                    r,
                    Region::new(Buf::In, 0, m),
                    Region::new(Buf::Out, 0, m),
                );
            }
        }
        _ => {}
    }
}

/// The empty schedule of `k` ranks (nothing to move: m = 0).
pub fn empty(k: u32) -> Materialized {
    Materialized {
        nodes: k,
        steps: 0,
        programs: (0..k).map(|r| Program::new(r, 0)).collect(),
    }
}

/// Scatter around a ring, both ways, farthest first (seed 004, §3.4 (C)): `ring[0]` is
/// the root, `ring[d]` the node d steps clockwise. The ⌊L/2⌋ clockwise nodes get their
/// `bundle(position)` first the farthest one's, then the next, one bundle a step, each
/// forwarded one hop a step, so that all arrive in step ⌊L/2⌋ − 1; the ⌊(L − 1)/2⌋
/// counter-clockwise nodes likewise, at the same time. Returns the steps used, ⌊L/2⌋,
/// from `t0`.
pub fn ring_scatter(
    plan: &mut Plan,
    t0: usize,
    ring: &[Rank],
    bundle: impl Fn(usize) -> Vec<Item>,
) -> usize {
    let l = ring.len();
    let (cw, ccw) = (l / 2, (l.saturating_sub(1)) / 2);
    for j in 1..=cw {
        if plan.is_over() {
            return cw;
        }
        for h in 0..j {
            plan.send(t0 + cw - j + h, ring[h], vec![ring[h + 1]], bundle(j));
        }
    }
    let pos = |d: usize| (l - d) % l;
    for j in 1..=ccw {
        if plan.is_over() {
            return cw;
        }
        for h in 0..j {
            plan.send(
                t0 + cw - j + h,
                ring[pos(h)],
                vec![ring[pos(h + 1)]],
                bundle(pos(j)),
            );
        }
    }
    cw
}

/// Rotate and drop around a ring (seed 004, §3.5 (C)): in step s = 1..L − 1 every node
/// passes clockwise what it holds from the node s − 1 behind it, less the bundle it
/// keeps: the node at ring position i sends `bundle(o, t)` for every target t at least
/// s ahead of the origin o = i − s + 1. Returns L − 1, the steps used from `t0`.
pub fn ring_rotate(
    plan: &mut Plan,
    t0: usize,
    ring: &[Rank],
    bundle: impl Fn(usize, usize) -> Vec<Item>,
) -> usize {
    let l = ring.len();
    for s in 1..l {
        if plan.is_over() {
            break;
        }
        for i in 0..l {
            let o = (i + l - (s - 1)) % l;
            let items: Vec<Item> = (s..l).flat_map(|d| bundle(o, (o + d) % l)).collect();
            plan.send(t0 + s - 1, ring[i], vec![ring[(i + 1) % l]], items);
        }
    }
    l.saturating_sub(1)
}

/// The daisy chain (seed 004, §3.3 (C)): in step s = 0..L − 2 the node at position i
/// passes `bundle(i − s)` clockwise. Returns L − 1, the steps used from `t0`.
pub fn ring_daisy(
    plan: &mut Plan,
    t0: usize,
    ring: &[Rank],
    bundle: impl Fn(usize) -> Vec<Item>,
) -> usize {
    let l = ring.len();
    for s in 0..l.saturating_sub(1) {
        if plan.is_over() {
            break;
        }
        for i in 0..l {
            plan.send(
                t0 + s,
                ring[i],
                vec![ring[(i + 1) % l]],
                bundle((i + l - s) % l),
            );
        }
    }
    l.saturating_sub(1)
}

/// Pipelined broadcast down a tree: packet p (of `nu`) reaches a node of depth d in
/// step d − 1 + p, from its parent, which multicasts it to all its children at once.
/// `parent[r]` is `None` for the root. Returns depth + ν − 1 steps (0 for one node).
pub fn tree_pipeline(plan: &mut Plan, parent: &[Option<Rank>], nu: u64) -> usize {
    let items: Vec<Item> = (0..nu).collect();
    let depth = tree_pipeline_at(plan, 0, parent, &items);
    if depth == 0 {
        0
    } else {
        depth + nu as usize - 1
    }
}

/// [`tree_pipeline`] of `items` (the j-th reaches depth d in step t0 + d − 1 + j) from
/// step `t0`; nodes outside the tree have no parent and no children. Returns the
/// tree's depth.
pub fn tree_pipeline_at(
    plan: &mut Plan,
    t0: usize,
    parent: &[Option<Rank>],
    items: &[Item],
) -> usize {
    let depth = node_depths(parent);
    let mut kids: BTreeMap<Rank, Vec<Rank>> = BTreeMap::new();
    for (r, p) in parent.iter().enumerate() {
        if let Some(p) = *p {
            kids.entry(p).or_default().push(r as Rank);
        }
    }
    for (&u, ch) in &kids {
        if plan.is_over() {
            break;
        }
        let du = depth[u as usize] as usize;
        for (j, &item) in items.iter().enumerate() {
            plan.send(t0 + du + j, u, ch.clone(), vec![item]);
        }
    }
    depth.iter().copied().max().unwrap_or(0) as usize
}

/// Each node's hops from the root of the forest `parent`.
fn node_depths(parent: &[Option<Rank>]) -> Vec<u32> {
    let mut depth = vec![u32::MAX; parent.len()];
    fn d(r: usize, parent: &[Option<Rank>], depth: &mut [u32]) -> u32 {
        if depth[r] != u32::MAX {
            return depth[r];
        }
        let v = match parent[r] {
            None => 0,
            Some(p) => d(p as usize, parent, depth) + 1,
        };
        depth[r] = v;
        v
    }
    for r in 0..parent.len() {
        d(r, parent, &mut depth);
    }
    depth
}

/// The depth of the forest `parent`: the steps [`tree_pipeline_at`] takes for one item,
/// without building anything.
pub fn tree_depth(parent: &[Option<Rank>]) -> usize {
    node_depths(parent).into_iter().max().unwrap_or(0) as usize
}

/// The parent of `x` on a ring of `l` rooted at `x0`, two ways (up to ⌊l/2⌋ hops
/// forward, the rest backward), `None` at the root.
pub fn toward(x: u32, x0: u32, l: u32) -> Option<u32> {
    let d = (x + l - x0) % l;
    if d == 0 {
        None
    } else if d <= l / 2 {
        Some((x + l - 1) % l)
    } else {
        Some((x + 1) % l)
    }
}

/// Parents of a two-way tree on a ring of `l` nodes rooted at position 0: clockwise
/// up to ⌊l/2⌋ hops, counter-clockwise the rest; `at(i)` is the rank at position i.
pub fn two_way_parents(l: u32, at: impl Fn(u32) -> Rank, parent: &mut [Option<Rank>]) {
    for i in 1..l {
        let p = if i <= l / 2 { i - 1 } else { (i + 1) % l };
        parent[at(i) as usize] = Some(at(p));
    }
}

use crate::cost::model::{Duplex, Model, Ports};
use crate::schedule::Schedule;
use crate::topology::{Medium, Topology};

/// K of `ring:K` (no host).
pub fn ring_len(t: &Topology) -> Option<u32> {
    crate::algorithms::fit::ring(t).ok()
}

/// (A, B) of `torus:AxB` (no host).
pub fn torus_dims(t: &Topology) -> Option<(u32, u32)> {
    crate::algorithms::fit::torus(t).ok()
}

/// The medium and its processors, without a host.
pub fn medium(t: &Topology) -> Option<(Medium, u32)> {
    match (t.medium_kind(), t.host()) {
        (Some(m), None) => Some((m, t.pes())),
        _ => None,
    }
}

/// The error of a build on a topology the algorithm does not fit.
pub fn unfit(algo: &str, needs: &str) -> Error {
    Error::InvalidParameter {
        what: "--topology",
        reason: format!("{algo} needs {needs}"),
    }
}

/// Box a materialised schedule.
pub fn boxed(m: Materialized) -> Box<dyn Schedule> {
    Box::new(m)
}

/// Whether a step in which each node sends to peers other than those it receives
/// from costs its longest transfer: full duplex, or half-link duplex when the peers
/// are `distinct`.
pub fn overlaps(model: &Model, distinct: bool) -> bool {
    model.duplex == Duplex::Full || (model.duplex == Duplex::HalfLink && distinct)
}

/// Whether a node may send two messages at once (all ports, or S ≥ 2 send ports:
/// seed 004's ring rule `--ports 2,1`).
pub fn two_sends(model: &Model) -> bool {
    match model.ports {
        Ports::All => true,
        p => p.send().is_some_and(|s| s >= 2),
    }
}

/// β + mτ.
pub fn bt(model: &Model, m: u64) -> f64 {
    model.beta() + m as f64 * model.tau()
}

//! Total exchange inside one factor of a product network, single-port: the building
//! block of Algorithm A2 ([`super::a2`]) and of the combining decomposition
//! ([`super::product`]).
//!
//! Reference: Dimakopoulos & Dimopoulos, "Decomposition of Total Exchange for
//! Multidimensional Interconnects" (seed 002), §3 eq. (1) (the bound T ≥ AS(G)) and §5
//! ("there exist algorithms that need time equal to (1) for any Cayley network",
//! their ref. 6); the model of §1: full-duplex links, one message per step, a node
//! sends at most one message and receives at most one per step.
//!
//! - **Cayley factors** (the edge K2, the cycle C_k of either parity, the complete
//!   graph K_k): the nodes are the group Z_k; for each element d = 1, …, k − 1 in
//!   turn every node u moves its block for u + d along one shortest word of
//!   generators, all nodes in lockstep (so each node sends one block and receives one
//!   per step). K_k: the word is the one generator +d, 1 step per element, k − 1 in
//!   all. C_k: +1 repeated d times when d ≤ k − d, else −1 repeated k − d times (the
//!   tie d = k/2 of an even ring goes +1): Σ_d min(d, k − d) = ⌊k²/4⌋ steps. Both
//!   equal the factor's average status AS, so they meet the bound (1). A block in
//!   flight waits at an intermediate node in one of two relay slots, by the parity
//!   of its hop (a receive never writes the slot the same step sends).
//! - **Paths** P_k (not Cayley graphs): a greedy schedule, computed once per build
//!   (k ≤ [`MAX_PATH`]): each step, nodes in decreasing order of their busier
//!   neighbour's remaining receives each send the block whose next node has the most
//!   receives left (farthest first on a tie), unless that node already receives this
//!   step. Node i of P_k must receive every block that enters it: f(i) = i(k − i) +
//!   (k − 1 − i)(i + 1), at most ⌊k²/2⌋ − [k even], more than ⌈AS(P_k)⌉ =
//!   ⌈(k² − 1)/3⌉ for k ≥ 3; the greedy meets max f(i) for every k tested (the unit
//!   tests check k ≤ 24), so it is optimal, and the gap to (1) is the path's own.
//!   Blocks in flight wait in relay slots allocated per node (a slot freed by a send
//!   is reused from the next step on).

use std::sync::Arc;

use crate::topology::Factor;

/// Largest path factor the greedy schedule is computed for.
pub const MAX_PATH: u32 = 64;

/// Where a block is read from (send) or written to (receive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The holding buffer of the phase: a send's first hop reads the block for `dest`,
    /// a receive's last hop writes the block from `origin`.
    Holding,
    /// Relay slot `r` of the node (a block in flight).
    Relay(u32),
}

/// One transfer of a factor's total exchange, seen from one end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// The other end (a node of the factor).
    pub peer: u32,
    /// The block's source node in the factor.
    pub origin: u32,
    /// The block's destination node in the factor.
    pub dest: u32,
    /// Where it is read (send) or written (receive).
    pub slot: Slot,
}

/// One node's part of one step of a path's schedule.
type PathStep = Vec<(Option<Move>, Option<Move>)>;

/// The greedy schedule of a path (see the module doc).
#[derive(Debug)]
pub struct PathTable {
    steps: Vec<PathStep>,
    slots: u32,
    double: u64,
}

#[derive(Clone, Debug)]
enum Kind {
    /// K_k (k ≥ 2): element d in step d − 1, one hop u → u + d.
    Complete,
    /// C_k (k ≥ 3).
    Ring,
    Path(Arc<PathTable>),
}

/// A single-port total exchange of one factor of k ≥ 2 nodes.
#[derive(Clone, Debug)]
pub struct FactorExchange {
    k: u32,
    kind: Kind,
}

impl FactorExchange {
    /// The exchanges of `f`'s dimensions: one for a cycle, path or complete graph of
    /// k ≥ 2 nodes (two nodes are the edge K2 whatever the family), one K2 per
    /// dimension of a cube (highest bit first, so that row-major coordinates are its
    /// labels' bits), none for a single node. `Err` for a path longer than
    /// [`MAX_PATH`].
    pub fn of(f: &Factor) -> Result<Vec<FactorExchange>, String> {
        let k = f.nodes();
        let one = |kind| {
            Ok(vec![FactorExchange {
                k,
                kind: if k == 2 { Kind::Complete } else { kind },
            }])
        };
        match *f {
            _ if k <= 1 => Ok(vec![]),
            Factor::Cube(h) => Ok((0..h.dim())
                .map(|_| FactorExchange {
                    k: 2,
                    kind: Kind::Complete,
                })
                .collect()),
            Factor::Complete(_) => one(Kind::Complete),
            Factor::Cycle(_) => one(Kind::Ring),
            Factor::Path(_) if k > MAX_PATH => Err(format!(
                "its schedule for a path is computed greedily, for paths of at most {MAX_PATH} nodes (path:{k} given)"
            )),
            Factor::Path(_) => one(Kind::Path(Arc::new(PathTable::new(k)))),
        }
    }

    /// K_k, for a virtual dimension of a complete graph (k ≥ 2).
    pub fn complete(k: u32) -> FactorExchange {
        FactorExchange {
            k,
            kind: Kind::Complete,
        }
    }

    /// Nodes.
    pub fn nodes(&self) -> u32 {
        self.k
    }

    /// T: steps of the exchange (each node sends at most one block a step).
    pub fn steps(&self) -> u64 {
        let k = self.k as u64;
        match &self.kind {
            Kind::Complete => k - 1,
            Kind::Ring => k * k / 4,
            Kind::Path(t) => t.steps.len() as u64,
        }
    }

    /// Steps in which some node both sends and receives (each costs two transfers
    /// under half duplex): all of them but in a path's table.
    pub fn double_steps(&self) -> u64 {
        match &self.kind {
            Kind::Path(t) => t.double,
            _ => self.steps(),
        }
    }

    /// Relay slots a node needs.
    pub fn relay_slots(&self) -> u32 {
        match &self.kind {
            Kind::Complete => 0,
            Kind::Ring => 2,
            Kind::Path(t) => t.slots,
        }
    }

    /// Whether the exchange meets its factor's bound ⌈AS⌉ (Cayley factors do).
    pub fn is_cayley(&self) -> bool {
        !matches!(self.kind, Kind::Path(_))
    }

    /// Ring step `t` as (element d, hop j, direction +1 or k − 1, hops of d).
    fn ring_step(&self, t: u64) -> (u64, u64, u64, u64) {
        let k = self.k as u64;
        let h = k / 2;
        // P(d) = Σ_{e ≤ d} min(e, k − e): steps before element d + 1.
        let p = |d: u64| {
            if d <= h {
                d * (d + 1) / 2
            } else {
                h * (h + 1) / 2 + (d - h) * k - (d * (d + 1) / 2 - h * (h + 1) / 2)
            }
        };
        // The element d with P(d − 1) ≤ t < P(d).
        let (mut lo, mut hi) = (1, k - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if p(mid) > t {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let d = lo;
        let len = d.min(k - d);
        let dir = if d <= k - d { 1 } else { k - 1 };
        (d, t - p(d - 1), dir, len)
    }

    /// What node `c` sends in step `t`.
    pub fn send(&self, t: u64, c: u32) -> Option<Move> {
        let k = self.k as u64;
        match &self.kind {
            Kind::Complete => {
                let d = t + 1;
                let to = ((c as u64 + d) % k) as u32;
                Some(Move {
                    peer: to,
                    origin: c,
                    dest: to,
                    slot: Slot::Holding,
                })
            }
            Kind::Ring => {
                let (d, j, dir, _) = self.ring_step(t);
                let c = c as u64;
                let origin = (c + k * k - j * dir % k) % k;
                Some(Move {
                    peer: ((c + dir) % k) as u32,
                    origin: origin as u32,
                    dest: ((origin + d) % k) as u32,
                    slot: if j == 0 {
                        Slot::Holding
                    } else {
                        Slot::Relay(((j - 1) % 2) as u32)
                    },
                })
            }
            Kind::Path(tab) => tab.steps[t as usize][c as usize].0,
        }
    }

    /// What node `c` receives in step `t`.
    pub fn recv(&self, t: u64, c: u32) -> Option<Move> {
        let k = self.k as u64;
        match &self.kind {
            Kind::Complete => {
                let d = t + 1;
                let from = ((c as u64 + k - d % k) % k) as u32;
                Some(Move {
                    peer: from,
                    origin: from,
                    dest: c,
                    slot: Slot::Holding,
                })
            }
            Kind::Ring => {
                let (d, j, dir, len) = self.ring_step(t);
                let c = c as u64;
                let from = (c + k - dir) % k;
                let origin = (c + k * k - (j + 1) * dir % k) % k;
                Some(Move {
                    peer: from as u32,
                    origin: origin as u32,
                    dest: ((origin + d) % k) as u32,
                    slot: if j + 1 == len {
                        Slot::Holding
                    } else {
                        Slot::Relay((j % 2) as u32)
                    },
                })
            }
            Kind::Path(tab) => tab.steps[t as usize][c as usize].1,
        }
    }
}

impl PathTable {
    /// The greedy schedule of P_k (k ≥ 2).
    fn new(k: u32) -> PathTable {
        let n = k as usize;
        // Blocks at each node: (origin, dest, relay slot or none at the origin).
        let mut at: Vec<Vec<(u32, u32, Option<u32>)>> = (0..k)
            .map(|s| (0..k).filter(|&d| d != s).map(|d| (s, d, None)).collect())
            .collect();
        // Receives left at each node: f(i) = i(k − i) + (k − 1 − i)(i + 1).
        let mut left: Vec<u64> = (0..k as u64)
            .map(|i| i * (k as u64 - i) + (k as u64 - 1 - i) * (i + 1))
            .collect();
        let mut in_flight = n * (n - 1);
        // Relay slots per node: free from step `free[v][r]` on (u64::MAX: taken).
        let mut free: Vec<Vec<u64>> = vec![Vec::new(); n];
        let mut steps = Vec::new();
        let mut double = 0;
        while in_flight > 0 {
            let t = steps.len() as u64;
            let key = |u: usize| {
                let l = if u > 0 { left[u - 1] } else { 0 };
                let r = if u + 1 < n { left[u + 1] } else { 0 };
                l.max(r)
            };
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by_key(|&u| std::cmp::Reverse(key(u)));
            let mut receiving = vec![false; n];
            let mut chosen: Vec<(usize, usize, usize)> = Vec::new();
            for &u in &order {
                let mut best: Option<((u64, u32), usize, usize)> = None;
                for (i, &(_, d, _)) in at[u].iter().enumerate() {
                    let v = if d as usize > u { u + 1 } else { u - 1 };
                    if receiving[v] {
                        continue;
                    }
                    let key = (left[v], (d as i64 - u as i64).unsigned_abs() as u32);
                    if best.is_none_or(|(b, _, _)| key > b) {
                        best = Some((key, i, v));
                    }
                }
                if let Some((_, i, v)) = best {
                    receiving[v] = true;
                    chosen.push((u, i, v));
                }
            }
            let mut step: PathStep = vec![(None, None); n];
            let mut sends = vec![false; n];
            let mut arrivals = Vec::new();
            for &(u, i, v) in &chosen {
                let (o, d, slot) = at[u].remove(i);
                if let Some(r) = slot {
                    free[u][r as usize] = t + 1;
                }
                sends[u] = true;
                step[u].0 = Some(Move {
                    peer: v as u32,
                    origin: o,
                    dest: d,
                    slot: slot.map_or(Slot::Holding, Slot::Relay),
                });
                left[v] -= 1;
                arrivals.push((u, v, o, d));
            }
            for (u, v, o, d) in arrivals {
                let slot = if d as usize == v {
                    in_flight -= 1;
                    None
                } else {
                    let r = match free[v].iter().position(|&f| f <= t) {
                        Some(r) => r,
                        None => {
                            free[v].push(0);
                            free[v].len() - 1
                        }
                    };
                    free[v][r] = u64::MAX;
                    at[v].push((o, d, Some(r as u32)));
                    Some(r as u32)
                };
                step[v].1 = Some(Move {
                    peer: u as u32,
                    origin: o,
                    dest: d,
                    slot: slot.map_or(Slot::Holding, Slot::Relay),
                });
            }
            double += u64::from((0..n).any(|u| sends[u] && step[u].1.is_some()));
            steps.push(step);
        }
        let slots = free.iter().map(Vec::len).max().unwrap_or(0) as u32;
        PathTable {
            steps,
            slots,
            double,
        }
    }
}

/// The most blocks a node of P_k must receive, max_i i(k − i) + (k − 1 − i)(i + 1): a
/// lower bound on any single-port total exchange of P_k, above ⌈AS(P_k)⌉ for k ≥ 3.
pub fn path_receive_bound(k: u32) -> u64 {
    let k = k as u64;
    (0..k)
        .map(|i| i * (k - i) + (k - 1 - i) * (i + 1))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run the exchange on the factor alone, block by block: every send matches the
    /// receive of its peer, moves between linked nodes, each node sends and receives
    /// at most one block a step, relay slots are never overwritten while full, and
    /// every block ends at its destination.
    fn run(f: Factor) -> u64 {
        let ex = &FactorExchange::of(&f).unwrap()[0];
        let k = ex.nodes();
        let mut delivered = vec![vec![false; k as usize]; k as usize];
        // relay[c][r] = the block it holds
        let mut relay: Vec<Vec<Option<(u32, u32)>>> =
            vec![vec![None; ex.relay_slots() as usize]; k as usize];
        for t in 0..ex.steps() {
            let mut moved = Vec::new();
            for c in 0..k {
                if let Some(s) = ex.send(t, c) {
                    assert!(f.are_linked(c, s.peer), "{f}: {c} → {}", s.peer);
                    let r = ex.recv(t, s.peer).expect("a matching receive");
                    assert_eq!(
                        (r.peer, r.origin, r.dest),
                        (c, s.origin, s.dest),
                        "{f} t {t}"
                    );
                    match s.slot {
                        Slot::Holding => assert_eq!(s.origin, c),
                        Slot::Relay(x) => {
                            assert_eq!(
                                relay[c as usize][x as usize].take(),
                                Some((s.origin, s.dest))
                            )
                        }
                    }
                    moved.push((s.peer, r));
                }
                if let Some(r) = ex.recv(t, c) {
                    let s = ex.send(t, r.peer).expect("a matching send");
                    assert_eq!(s.peer, c);
                }
            }
            for (v, r) in moved {
                match r.slot {
                    Slot::Holding => {
                        assert_eq!(r.dest, v);
                        assert!(!delivered[r.origin as usize][v as usize]);
                        delivered[r.origin as usize][v as usize] = true;
                    }
                    Slot::Relay(x) => {
                        let cell = &mut relay[v as usize][x as usize];
                        assert!(cell.is_none(), "{f}: slot {x} of {v} full at step {t}");
                        *cell = Some((r.origin, r.dest));
                    }
                }
            }
        }
        for a in 0..k {
            for b in 0..k {
                assert_eq!(delivered[a as usize][b as usize], a != b, "{f}: {a} → {b}");
            }
        }
        ex.steps()
    }

    #[test]
    fn cayley_factors_meet_their_average_status() {
        for k in 2..=12 {
            for f in [Factor::Cycle(k), Factor::Complete(k)] {
                let t = run(f);
                // AS = s(v) on a vertex-transitive graph, an integer here.
                assert_eq!(t, f.status(0), "{f}");
            }
        }
    }

    #[test]
    fn the_path_greedy_meets_the_receive_bound() {
        for k in 2..=24 {
            let t = run(Factor::Path(k));
            assert_eq!(t, path_receive_bound(k), "path:{k}");
            let as_ceil = Factor::Path(k).total_status().div_ceil(k as u64);
            assert!(t >= as_ceil);
            if k >= 3 {
                assert!(t > as_ceil, "path:{k}");
            }
        }
    }

    #[test]
    fn long_paths_are_refused() {
        assert!(FactorExchange::of(&Factor::Path(MAX_PATH + 1)).is_err());
        assert!(FactorExchange::of(&Factor::Path(1)).unwrap().is_empty());
    }
}

//! The factors of product networks: the edge K2, the cycle C_k, the path P_k, the
//! complete graph K_k and (for speed, one factor standing for K2^n) the binary n-cube.
//!
//! Every graph topology of the project is a Cartesian product G1 × G2 × … × Gd of
//! these (Dimakopoulos & Dimopoulos, seed 002, §2: "the product of graphs … its
//! distance is the sum of the factors' distances"). A factor knows its own nodes
//! `0..k`, neighbours, distances, one shortest path, and its *status*
//! s(v) = Σ_u dist(v, u) (seed 002, §3, Definition 1), from which the product's
//! average status follows by seed 002's Theorem 1 without visiting all pairs.
//!
//! Node numbering inside a factor: the cycle and the path run 0, 1, …, k − 1 in order
//! (the cycle closes k − 1 → 0); the complete graph's nodes are all linked; the cube's
//! nodes are n-bit labels (bit i = dimension i, as in [`super::Hypercube`]).

use super::hypercube::Hypercube;
use std::fmt;

/// One factor of a product network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Factor {
    /// The cycle C_k, k ≥ 3 (`ring:K`, a torus dimension). `ring:2` is the edge K2 and
    /// `ring:1` the single node.
    Cycle(u32),
    /// The path P_k, k ≥ 1 (a mesh dimension).
    Path(u32),
    /// The complete graph K_k, k ≥ 1 (`complete:K`, a generalized-hypercube dimension).
    Complete(u32),
    /// The binary n-cube K2^n (`hypercube:N`), one factor for its n dimensions.
    Cube(Hypercube),
}

impl Factor {
    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        match *self {
            Factor::Cycle(k) | Factor::Path(k) | Factor::Complete(k) => k,
            Factor::Cube(h) => h.nodes(),
        }
    }

    /// Whether `a` and `b` are linked (distinct nodes at distance 1).
    pub fn are_linked(&self, a: u32, b: u32) -> bool {
        a != b && a < self.nodes() && b < self.nodes() && self.distance(a, b) == 1
    }

    /// Shortest-path distance.
    pub fn distance(&self, a: u32, b: u32) -> u32 {
        match *self {
            Factor::Cycle(k) => {
                let d = a.abs_diff(b);
                d.min(k - d)
            }
            Factor::Path(_) => a.abs_diff(b),
            Factor::Complete(_) => u32::from(a != b),
            Factor::Cube(_) => Hypercube::hamming(a, b),
        }
    }

    /// Longest shortest path.
    pub fn diameter(&self) -> u32 {
        match *self {
            Factor::Cycle(k) => k / 2,
            Factor::Path(k) => k.saturating_sub(1),
            Factor::Complete(k) => u32::from(k > 1),
            Factor::Cube(h) => h.dim(),
        }
    }

    /// Distance from `a` to the farthest node.
    pub fn eccentricity(&self, a: u32) -> u32 {
        match *self {
            Factor::Path(k) => a.max(k.saturating_sub(1) - a),
            _ => self.diameter(),
        }
    }

    /// Most links at a node.
    pub fn degree(&self) -> u32 {
        match *self {
            Factor::Cycle(k) => k.saturating_sub(1).min(2),
            Factor::Path(k) => k.saturating_sub(1).min(2),
            Factor::Complete(k) => k.saturating_sub(1),
            Factor::Cube(h) => h.dim(),
        }
    }

    /// The neighbours of `a`, ascending and without repeats.
    pub fn neighbors(&self, a: u32) -> Vec<u32> {
        let k = self.nodes();
        let mut v: Vec<u32> = match *self {
            Factor::Cycle(_) => {
                if k <= 1 {
                    vec![]
                } else {
                    vec![(a + k - 1) % k, (a + 1) % k]
                }
            }
            Factor::Path(_) => {
                let mut v = Vec::new();
                if a > 0 {
                    v.push(a - 1);
                }
                if a + 1 < k {
                    v.push(a + 1);
                }
                v
            }
            Factor::Complete(_) => (0..k).filter(|&b| b != a).collect(),
            Factor::Cube(h) => h.neighbors(a).collect(),
        };
        v.sort_unstable();
        v.dedup();
        v
    }

    /// One shortest path from `a` to `b`, both included. Cycle: the shorter way round
    /// (ascending on a tie); path: straight; complete: the link; cube: e-cube.
    pub fn shortest_path(&self, a: u32, b: u32) -> Vec<u32> {
        if a == b {
            return vec![a];
        }
        match *self {
            Factor::Cycle(k) => {
                let up = (b + k - a) % k; // steps going +1
                let (n, step) = if up <= k - up {
                    (up, 1)
                } else {
                    (k - up, k - 1)
                };
                (0..=n).map(|i| (a + i * step) % k).collect()
            }
            Factor::Path(_) => {
                if a < b {
                    (a..=b).collect()
                } else {
                    (b..=a).rev().collect()
                }
            }
            Factor::Complete(_) => vec![a, b],
            Factor::Cube(h) => h.ecube_path(a, b),
        }
    }

    /// Node-disjoint paths from `a` to `b` (a ≠ b), both ends included, as many as the
    /// factor's connectivity: the two ways round a cycle (one on the edge C_2), the
    /// path's one, the complete graph's link and its k − 2 two-hop detours, the cube's
    /// n paths (Saad & Schultz 1985, Prop. 3.1). `[[a]]` when a = b.
    pub fn disjoint_paths(&self, a: u32, b: u32) -> Vec<Vec<u32>> {
        if a == b {
            return vec![vec![a]];
        }
        match *self {
            Factor::Cycle(k) if k >= 3 => {
                let way = |step: u32| {
                    let mut p = vec![a];
                    while *p.last().unwrap() != b {
                        p.push((p.last().unwrap() + step) % k);
                    }
                    p
                };
                vec![way(1), way(k - 1)]
            }
            Factor::Cycle(_) | Factor::Path(_) => vec![self.shortest_path(a, b)],
            Factor::Complete(k) => std::iter::once(vec![a, b])
                .chain((0..k).filter(|&c| c != a && c != b).map(|c| vec![a, c, b]))
                .collect(),
            Factor::Cube(h) => h.disjoint_paths(a, b),
        }
    }

    /// Connectivity κ: the fewest nodes whose removal disconnects the factor, and so
    /// (Menger) the number of node-disjoint paths between any two of its nodes, as
    /// many as [`Factor::disjoint_paths`] gives: 2 for a cycle C_k (k ≥ 3), 1 for an
    /// edge or a path of 2 or more nodes, k − 1 for K_k, n for the n-cube (0 for one
    /// node).
    pub fn connectivity(&self) -> u32 {
        match *self {
            Factor::Cycle(k) if k >= 3 => 2,
            Factor::Cycle(k) | Factor::Path(k) => u32::from(k >= 2),
            Factor::Complete(k) => k.saturating_sub(1),
            Factor::Cube(h) => h.dim(),
        }
    }

    /// Status s(a) = Σ_u dist(a, u) (seed 002, Definition 1), in closed form:
    /// - C_k: ⌊k²/4⌋ (Σ_{i<k} min(i, k − i));
    /// - P_k: a(a + 1)/2 + (k − 1 − a)(k − a)/2;
    /// - K_k: k − 1;
    /// - Q_n: n·2^(n−1).
    pub fn status(&self, a: u32) -> u64 {
        match *self {
            Factor::Cycle(k) => (k as u64 * k as u64) / 4,
            Factor::Path(k) => {
                let (a, k) = (a as u64, k as u64);
                a * (a + 1) / 2 + (k - 1 - a) * (k - a) / 2
            }
            Factor::Complete(k) => k.saturating_sub(1) as u64,
            Factor::Cube(h) if h.dim() == 0 => 0,
            Factor::Cube(h) => h.dim() as u64 * (1u64 << (h.dim() - 1)),
        }
    }

    /// Σ_v s(v), the total distance over ordered pairs.
    pub fn total_status(&self) -> u64 {
        match *self {
            // (k − 1)k(k + 1)/3: Σ_a [a(a+1)/2 + (k−1−a)(k−a)/2] = 2·C(k+1, 3).
            Factor::Path(k) => {
                let k = k as u64;
                (k.saturating_sub(1)) * k * (k + 1) / 3
            }
            _ => self.nodes() as u64 * self.status(0),
        }
    }

    /// Whether the factor is vertex-transitive (every node has the same status):
    /// all but paths of 3 or more nodes.
    pub fn is_vertex_transitive(&self) -> bool {
        !matches!(*self, Factor::Path(k) if k >= 3)
    }

    /// Whether the factor is, as a graph, a binary cube of some dimension (K1, K2 in
    /// any spelling, or a cube), and which.
    pub fn cube_dim(&self) -> Option<u32> {
        match *self {
            Factor::Cube(h) => Some(h.dim()),
            Factor::Cycle(1) | Factor::Path(1) | Factor::Complete(1) => Some(0),
            Factor::Cycle(2) | Factor::Path(2) | Factor::Complete(2) => Some(1),
            _ => None,
        }
    }

    /// The family's name as written in topology strings.
    pub fn family(&self) -> &'static str {
        match self {
            Factor::Cycle(_) => "ring",
            Factor::Path(_) => "path",
            Factor::Complete(_) => "complete",
            Factor::Cube(_) => "hypercube",
        }
    }
}

impl fmt::Display for Factor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Factor::Cube(h) => write!(f, "hypercube:{}", h.dim()),
            _ => write!(f, "{}:{}", self.family(), self.nodes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factors() -> Vec<Factor> {
        let mut v = Vec::new();
        for k in 1..=9 {
            v.push(Factor::Cycle(k));
            v.push(Factor::Path(k));
            v.push(Factor::Complete(k));
        }
        for n in 0..=4 {
            v.push(Factor::Cube(Hypercube::new(n).unwrap()));
        }
        v
    }

    /// Distances, eccentricity, diameter, status and shortest paths against a BFS over
    /// the neighbour lists.
    #[test]
    fn closed_forms_match_bfs() {
        for f in factors() {
            let k = f.nodes();
            let mut diam = 0;
            let mut total = 0;
            for a in 0..k {
                let mut dist = vec![u32::MAX; k as usize];
                dist[a as usize] = 0;
                let mut queue = std::collections::VecDeque::from([a]);
                while let Some(x) = queue.pop_front() {
                    for y in f.neighbors(x) {
                        assert!(f.are_linked(x, y), "{f}: {x}-{y}");
                        if dist[y as usize] == u32::MAX {
                            dist[y as usize] = dist[x as usize] + 1;
                            queue.push_back(y);
                        }
                    }
                }
                for b in 0..k {
                    assert_eq!(f.distance(a, b), dist[b as usize], "{f}: d({a},{b})");
                    let p = f.shortest_path(a, b);
                    assert_eq!(p.len() as u32, dist[b as usize] + 1, "{f}: path {a}->{b}");
                    assert_eq!((p[0], *p.last().unwrap()), (a, b));
                    for w in p.windows(2) {
                        assert!(f.are_linked(w[0], w[1]), "{f}: path {p:?}");
                    }
                }
                let ecc = *dist.iter().max().unwrap();
                assert_eq!(f.eccentricity(a), ecc, "{f}: ecc({a})");
                diam = diam.max(ecc);
                let s: u64 = dist.iter().map(|&d| d as u64).sum();
                assert_eq!(f.status(a), s, "{f}: status({a})");
                total += s;
                assert!(f.neighbors(a).len() as u32 <= f.degree());
            }
            assert_eq!(f.diameter(), diam, "{f}");
            assert_eq!(f.total_status(), total, "{f}");
        }
    }
}

//! The binary n-cube: node labels, neighbours, routes and the spanning structures
//! used by the hypercube collectives.
//!
//! Nodes are labelled `0..2^n`; bit `i` (value `1 << i`) of a label is *dimension i*,
//! and two nodes are neighbours iff their labels differ in exactly one bit.
//!
//! Sources:
//! - Y. Saad and M. H. Schultz, *Data Communication in Hypercubes*, Yale University,
//!   YALEU/DCS/RR-428, 1985 (seed 000):
//!   - §2 and Fig. 3: the spanning binomial tree (SBT) of the "Hypercube Broadcast"
//!     algorithm, re-rooted at any node by XOR relabelling
//!     ([`Hypercube::sbt_parent`], [`Hypercube::sbt_children`]);
//!   - §3, Prop. 3.1: `n` parallel (internally node-disjoint) paths between two nodes,
//!     `H` of length `H` and `n - H` of length `H + 2` ([`Hypercube::disjoint_paths`]);
//!     the e-cube route is the path that corrects differing bits in order
//!     ([`Hypercube::ecube_path`]);
//!   - §4.1: the ring embedded by the binary reflected Gray code, used by the
//!     daisy-chaining algorithm ([`Hypercube::gray`], [`Hypercube::ring_next`]).
//! - S. L. Johnsson and C.-T. Ho, *Optimum broadcasting and personalized communication
//!   in hypercubes*, IEEE Trans. Computers 38(9), 1989, pp. 1249–1268, and the
//!   "ESBT-broadcast" section of the Wikipedia page *Hypercube (communication pattern)*
//!   (seed 001): `n` edge-disjoint spanning binomial trees ([`Hypercube::esbt_parent`]).
//!
//! ## Why the ESBT trees are edge-disjoint
//! With relative labels `c = node ^ source`, tree `j` has three kinds of directed edges:
//! `0 -> e_j`; `c|e_j -> c` for `c != 0` with bit `j` clear (removes bit `j`); and
//! `p -> p|e_k` inside the subcube `{bit j = 1}` (adds a bit `k != j`). Edges that remove
//! a bit are told apart by the bit removed (= `j`). For an edge `p -> c = p|e_k` inside
//! tree `j`, `k` is the cyclically last set bit of `c` counted from `j + 1`, so `j` is
//! the first set bit of `c` after `k` in the cyclic order `k+1, k+2, ...`: the edge
//! determines its tree. Edges `0 -> e_j` differ by their head. Hence no directed edge
//! lies in two trees (the tests check this exhaustively for `n <= 8`).

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A node label of a hypercube; bit `i` is the coordinate in dimension `i`.
pub type Node = u32;

/// Which dimension a spanning binomial tree uses first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DimOrder {
    /// Dimension 0 first, then 1, ..., `n - 1` (Saad & Schultz's Hypercube Broadcast).
    Ascending,
    /// Dimension `n - 1` first, then `n - 2`, ..., 0; every subtree is an aligned,
    /// contiguous range of relative labels.
    Descending,
}

/// A binary n-cube with `2^dim` nodes, `0 <= dim <= MAX_DIM`.
///
/// Serialises as `{"dim": n}`; deserialisation rejects `dim > MAX_DIM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawHypercube")]
pub struct Hypercube {
    dim: u32,
}

/// Unvalidated wire form of [`Hypercube`].
#[derive(Deserialize)]
struct RawHypercube {
    dim: u32,
}

impl TryFrom<RawHypercube> for Hypercube {
    type Error = Error;
    fn try_from(raw: RawHypercube) -> Result<Self, Error> {
        Hypercube::new(raw.dim)
    }
}

/// Index of the highest set bit of a non-zero value.
fn highest_bit(x: u32) -> u32 {
    debug_assert!(x != 0);
    x.ilog2()
}

/// Index of the lowest set bit of a non-zero value.
fn lowest_bit(x: u32) -> u32 {
    debug_assert!(x != 0);
    x.trailing_zeros()
}

impl Hypercube {
    /// Largest supported dimension (2^24 nodes).
    pub const MAX_DIM: u32 = 24;

    /// The `dim`-cube.
    ///
    /// # Errors
    /// [`Error::TopologyOutOfRange`] if `dim > MAX_DIM`; the message names the valid
    /// range `0..=24`.
    pub fn new(dim: u32) -> Result<Self, Error> {
        if dim > Self::MAX_DIM {
            return Err(Error::TopologyOutOfRange {
                given: format!("hypercube:{dim}"),
                reason: format!(
                    "dimension {dim} is too large; valid dimensions: 0..={}",
                    Self::MAX_DIM
                ),
            });
        }
        Ok(Self { dim })
    }

    /// The dimension `n`.
    pub fn dim(&self) -> u32 {
        self.dim
    }

    /// Number of nodes, `2^n`.
    pub fn nodes(&self) -> u32 {
        1 << self.dim
    }

    /// Whether `a` is a node of this cube (`a < 2^n`).
    pub fn contains(&self, a: Node) -> bool {
        a < self.nodes()
    }

    /// Whether `a` and `b` are both nodes and differ in exactly one bit.
    pub fn are_neighbors(&self, a: Node, b: Node) -> bool {
        self.contains(a) && self.contains(b) && Self::hamming(a, b) == 1
    }

    /// The neighbour of `a` across dimension `d` (`a ^ (1 << d)`). Requires `d < dim`.
    pub fn neighbor(&self, a: Node, d: u32) -> Node {
        debug_assert!(d < self.dim, "dimension {d} out of range");
        a ^ (1 << d)
    }

    /// The `n` neighbours of `a`, in ascending dimension order.
    pub fn neighbors(&self, a: Node) -> impl Iterator<Item = Node> {
        (0..self.dim).map(move |d| a ^ (1 << d))
    }

    /// Hamming distance between two labels (= hop distance in the cube).
    pub fn hamming(a: Node, b: Node) -> u32 {
        (a ^ b).count_ones()
    }

    /// Diameter of the cube, `n`.
    pub fn diameter(&self) -> u32 {
        self.dim
    }

    /// Differing dimensions of `a` and `b`, ascending.
    fn differing_dims(a: Node, b: Node) -> Vec<u32> {
        let x = a ^ b;
        (0..32).filter(|&d| x & (1 << d) != 0).collect()
    }

    /// Appends to `path` the nodes reached by flipping `dims` in turn from its last node.
    fn walk(path: &mut Vec<Node>, dims: impl IntoIterator<Item = u32>) {
        for d in dims {
            let last = *path.last().expect("walk starts from a non-empty path");
            path.push(last ^ (1 << d));
        }
    }

    /// The e-cube route: `a`, then the nodes obtained by correcting the differing bits in
    /// ascending dimension order, ending at `b`. It has `H(a, b) + 1` nodes (`[a]` if
    /// `a == b`).
    pub fn ecube_path(&self, a: Node, b: Node) -> Vec<Node> {
        debug_assert!(self.contains(a) && self.contains(b));
        let mut path = vec![a];
        Self::walk(&mut path, Self::differing_dims(a, b));
        path
    }

    /// Saad & Schultz Prop. 3.1: `n` paths from `a` to `b` (`a != b`) that share no node
    /// except `a` and `b`.
    ///
    /// Let `d_1 < ... < d_H` be the differing dimensions. Path `j` (`j = 1..=H`) corrects
    /// `d_j, ..., d_H, d_1, ..., d_{j-1}` (length `H`). For each dimension `e` where `a`
    /// and `b` agree (ascending) a path of length `H + 2` flips `e`, corrects
    /// `d_1..d_H` in ascending order, and flips `e` back. The `H` short paths come
    /// first, then the long ones by ascending `e`. Each path lists its nodes from `a` to
    /// `b` inclusive. Returns an empty `Vec` if `a == b`.
    pub fn disjoint_paths(&self, a: Node, b: Node) -> Vec<Vec<Node>> {
        debug_assert!(self.contains(a) && self.contains(b));
        if a == b {
            return Vec::new();
        }
        let diff = Self::differing_dims(a, b);
        let h = diff.len();
        let short = (0..h).map(|j| {
            let mut path = Vec::with_capacity(h + 1);
            path.push(a);
            Self::walk(&mut path, diff[j..].iter().chain(&diff[..j]).copied());
            path
        });
        let long = (0..self.dim).filter(|e| (a ^ b) & (1 << e) == 0).map(|e| {
            let mut path = Vec::with_capacity(h + 3);
            path.push(a);
            Self::walk(
                &mut path,
                std::iter::once(e).chain(diff.iter().copied()).chain([e]),
            );
            path
        });
        short.chain(long).collect()
    }

    /// Binary reflected Gray code, `i ^ (i >> 1)`. The ring `gray(0), ..., gray(2^n - 1)`
    /// is a Hamiltonian cycle of the n-cube for `n >= 2` (for `n = 1` it is the edge
    /// 0–1 used both ways; for `n = 0` the single node).
    pub fn gray(i: u32) -> Node {
        i ^ (i >> 1)
    }

    /// Inverse of [`gray`](Self::gray): the position of `node` on the Gray-code ring.
    pub fn gray_rank(node: Node) -> u32 {
        let mut r = node;
        for shift in [1, 2, 4, 8, 16] {
            r ^= r >> shift;
        }
        r
    }

    /// Successor of `node` on the Gray-code ring, `gray((gray_rank(node) + 1) mod 2^n)`.
    pub fn ring_next(&self, node: Node) -> Node {
        debug_assert!(self.contains(node));
        Self::gray(Self::gray_rank(node).wrapping_add(1) & (self.nodes() - 1))
    }

    /// Predecessor of `node` on the Gray-code ring (inverse of [`ring_next`](Self::ring_next)).
    pub fn ring_prev(&self, node: Node) -> Node {
        debug_assert!(self.contains(node));
        Self::gray(Self::gray_rank(node).wrapping_sub(1) & (self.nodes() - 1))
    }

    /// Parent of `node` in the spanning binomial tree rooted at `root` (Saad & Schultz
    /// §2, Fig. 3), `None` for the root.
    ///
    /// With relative label `r = node ^ root`: for [`DimOrder::Ascending`] the parent
    /// clears the highest set bit of `r`; for [`DimOrder::Descending`] the lowest.
    pub fn sbt_parent(&self, node: Node, root: Node, order: DimOrder) -> Option<Node> {
        debug_assert!(self.contains(node) && self.contains(root));
        let r = node ^ root;
        if r == 0 {
            return None;
        }
        let d = match order {
            DimOrder::Ascending => highest_bit(r),
            DimOrder::Descending => lowest_bit(r),
        };
        Some(node ^ (1 << d))
    }

    /// Children of `node` in the spanning binomial tree rooted at `root`.
    ///
    /// With `r = node ^ root`: for [`DimOrder::Ascending`], `r | 1 << d` for every `d`
    /// above the highest set bit of `r` (every `d` if `r = 0`), ascending `d`; for
    /// [`DimOrder::Descending`], every `d` below the lowest set bit of `r` (every
    /// `d < n` if `r = 0`), descending `d`. Labels are returned as absolute nodes.
    pub fn sbt_children(&self, node: Node, root: Node, order: DimOrder) -> Vec<Node> {
        self.sbt_children_iter(node, root, order).collect()
    }

    /// [`sbt_children`](Self::sbt_children), in the same order, without allocating.
    pub fn sbt_children_iter(
        &self,
        node: Node,
        root: Node,
        order: DimOrder,
    ) -> impl ExactSizeIterator<Item = Node> + Clone {
        debug_assert!(self.contains(node) && self.contains(root));
        let r = node ^ root;
        let n = self.dim;
        // Dimensions lo..hi, ascending or descending.
        let (lo, hi) = match order {
            DimOrder::Ascending => (if r == 0 { 0 } else { highest_bit(r) + 1 }, n),
            DimOrder::Descending => (0, if r == 0 { n } else { lowest_bit(r) }),
        };
        let descending = order == DimOrder::Descending;
        (0..hi.saturating_sub(lo))
            .map(move |i| node ^ (1 << if descending { hi - 1 - i } else { lo + i }))
    }

    /// Step (1-based) at which `node` receives in the unpipelined SBT broadcast from
    /// `root` that uses one dimension per step (0 for the root): `highest_bit(r) + 1`
    /// for [`DimOrder::Ascending`], `n - lowest_bit(r)` for [`DimOrder::Descending`].
    pub fn sbt_step(&self, node: Node, root: Node, order: DimOrder) -> u32 {
        debug_assert!(self.contains(node) && self.contains(root));
        let r = node ^ root;
        if r == 0 {
            return 0;
        }
        match order {
            DimOrder::Ascending => highest_bit(r) + 1,
            DimOrder::Descending => self.dim - lowest_bit(r),
        }
    }

    /// Number of nodes in the SBT subtree of `node` (including it); `2^n` for the root.
    pub fn sbt_subtree_size(&self, node: Node, root: Node, order: DimOrder) -> u32 {
        debug_assert!(self.contains(node) && self.contains(root));
        let r = node ^ root;
        if r == 0 {
            return self.nodes();
        }
        match order {
            DimOrder::Ascending => 1 << (self.dim - 1 - highest_bit(r)),
            DimOrder::Descending => 1 << lowest_bit(r),
        }
    }

    /// Rotates the low `n` bits of `c` right by `j` (so bit `j` lands at bit 0).
    fn rotr(&self, c: u32, j: u32) -> u32 {
        let n = self.dim;
        debug_assert!(j < n);
        let mask = self.nodes() - 1;
        ((c >> j) | (c << (n - j))) & mask
    }

    /// Whether `tree` indexes one of the `n` ESBT trees.
    fn valid_tree(&self, tree: u32) -> bool {
        tree < self.dim
    }

    /// Parent of `node` in ESBT tree `tree` (Johnsson & Ho) of a broadcast from `source`;
    /// `None` for the source, or if `tree >= n`.
    ///
    /// With `c = node ^ source` and `e_j = 1 << tree`: `e_j`'s parent is the source; if
    /// bit `j` of `c` is set, the parent clears the last set bit other than `j` in the
    /// cyclic order `j+1, ..., j+n-1` (tree `j` is an SBT of the subcube `{bit j = 1}`
    /// rooted at `e_j`); otherwise the parent is `node ^ e_j` (such nodes are leaves).
    /// The `n` trees span all nodes and are pairwise disjoint as directed edges.
    pub fn esbt_parent(&self, tree: u32, node: Node, source: Node) -> Option<Node> {
        debug_assert!(self.contains(node) && self.contains(source));
        let c = node ^ source;
        if c == 0 || !self.valid_tree(tree) {
            return None;
        }
        let e = 1 << tree;
        if c & e == 0 || c == e {
            return Some(node ^ e);
        }
        let k = (highest_bit(self.rotr(c, tree)) + tree) % self.dim;
        Some(node ^ (1 << k))
    }

    /// Children of `node` in ESBT tree `tree` of a broadcast from `source`, ascending by
    /// label (empty if `tree >= n`). Computed in `O(n)` without enumerating nodes.
    pub fn esbt_children(&self, tree: u32, node: Node, source: Node) -> Vec<Node> {
        let mut kids = smallvec::SmallVec::new();
        self.esbt_children_in(tree, node, source, &mut kids);
        kids.into_vec()
    }

    /// [`esbt_children`](Self::esbt_children) written into `kids` (cleared first),
    /// without allocating for n ≤ 32.
    pub fn esbt_children_in(
        &self,
        tree: u32,
        node: Node,
        source: Node,
        kids: &mut smallvec::SmallVec<[Node; 32]>,
    ) {
        debug_assert!(self.contains(node) && self.contains(source));
        kids.clear();
        let c = node ^ source;
        if !self.valid_tree(tree) {
            return;
        }
        let e = 1 << tree;
        if c == 0 {
            kids.push(node ^ e);
            return;
        }
        if c & e == 0 {
            return;
        }
        let n = self.dim;
        let last = highest_bit(self.rotr(c, tree));
        kids.extend((last + 1..n).map(|p| node ^ (1 << ((p + tree) % n))));
        if c != e {
            kids.push(node ^ e);
        }
        kids.sort_unstable();
    }

    /// Hops from `source` to `node` in ESBT tree `tree`: 0 for the source, `popcount(c)`
    /// if bit `tree` of `c = node ^ source` is set, `popcount(c) + 2` otherwise (at most
    /// `n + 1` for `n >= 2`). Returns 0 if `tree >= n`.
    pub fn esbt_depth(&self, tree: u32, node: Node, source: Node) -> u32 {
        debug_assert!(self.contains(node) && self.contains(source));
        let c = node ^ source;
        if c == 0 || !self.valid_tree(tree) {
            return 0;
        }
        let extra = if c & (1 << tree) != 0 { 0 } else { 2 };
        c.count_ones() + extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashSet, VecDeque};

    const ORDERS: [DimOrder; 2] = [DimOrder::Ascending, DimOrder::Descending];

    fn cubes() -> impl Iterator<Item = Hypercube> {
        (0..=8).map(|n| Hypercube::new(n).unwrap())
    }

    fn assert_walk(q: &Hypercube, path: &[Node], a: Node, b: Node) {
        assert_eq!(path.first(), Some(&a));
        assert_eq!(path.last(), Some(&b));
        for w in path.windows(2) {
            assert!(
                q.are_neighbors(w[0], w[1]),
                "{:?} not neighbours in {path:?}",
                w
            );
        }
        let distinct: HashSet<_> = path.iter().collect();
        assert_eq!(distinct.len(), path.len(), "repeated node in {path:?}");
    }

    fn check_disjoint_paths(q: &Hypercube, a: Node, b: Node) {
        let paths = q.disjoint_paths(a, b);
        if a == b {
            assert!(paths.is_empty());
            return;
        }
        let h = Hypercube::hamming(a, b) as usize;
        assert_eq!(paths.len(), q.dim() as usize);
        let mut inner = HashSet::new();
        for (i, p) in paths.iter().enumerate() {
            assert_walk(q, p, a, b);
            let expect_len = if i < h { h } else { h + 2 };
            assert_eq!(p.len() - 1, expect_len, "path {i} of {a}->{b}: {p:?}");
            for &v in &p[1..p.len() - 1] {
                assert!(inner.insert(v), "node {v} shared between paths {a}->{b}");
            }
        }
    }

    /// BFS from `root` following `children`; checks spanning, uniqueness, edges and
    /// parent consistency. Returns the depth of every node.
    fn check_tree(
        q: &Hypercube,
        root: Node,
        parent: impl Fn(Node) -> Option<Node>,
        children: impl Fn(Node) -> Vec<Node>,
    ) -> Vec<u32> {
        let mut depth = vec![u32::MAX; q.nodes() as usize];
        depth[root as usize] = 0;
        assert_eq!(parent(root), None);
        let mut queue = VecDeque::from([root]);
        while let Some(p) = queue.pop_front() {
            for c in children(p) {
                assert!(q.are_neighbors(p, c), "edge {p}->{c} not in the cube");
                assert_eq!(depth[c as usize], u32::MAX, "node {c} reached twice");
                assert_eq!(parent(c), Some(p), "parent of {c}");
                depth[c as usize] = depth[p as usize] + 1;
                queue.push_back(c);
            }
        }
        assert!(
            depth.iter().all(|&d| d != u32::MAX),
            "tree from {root} does not span"
        );
        depth
    }

    #[test]
    fn new_rejects_too_large() {
        assert!(Hypercube::new(24).is_ok());
        let err = Hypercube::new(25).unwrap_err();
        assert!(matches!(err, Error::TopologyOutOfRange { .. }));
        assert!(err.to_string().contains("24"), "{err}");
    }

    #[test]
    fn serde_round_trip_and_validation() {
        let q = Hypercube::new(5).unwrap();
        let json = serde_json::to_string(&q).unwrap();
        assert_eq!(json, r#"{"dim":5}"#);
        assert_eq!(serde_json::from_str::<Hypercube>(&json).unwrap(), q);
        assert!(serde_json::from_str::<Hypercube>(r#"{"dim":25}"#).is_err());
        let o: DimOrder = serde_json::from_str(r#""Descending""#).unwrap();
        assert_eq!(o, DimOrder::Descending);
    }

    #[test]
    fn basic_queries() {
        for q in cubes() {
            let n = q.dim();
            assert_eq!(q.nodes(), 1 << n);
            assert_eq!(q.diameter(), n);
            assert!(q.contains(q.nodes() - 1) && !q.contains(q.nodes()));
            for a in 0..q.nodes() {
                let ns: Vec<_> = q.neighbors(a).collect();
                let expect: Vec<_> = (0..n).map(|d| q.neighbor(a, d)).collect();
                assert_eq!(ns, expect);
                assert!(ns.iter().all(|&b| q.are_neighbors(a, b)));
                assert!(!q.are_neighbors(a, a));
                assert!(!q.are_neighbors(a, a ^ q.nodes()));
            }
        }
        assert_eq!(Hypercube::hamming(0b1011, 0b0110), 3);
    }

    #[test]
    fn ecube_and_disjoint_paths_exhaustive() {
        for q in cubes() {
            for a in 0..q.nodes() {
                for b in 0..q.nodes() {
                    let p = q.ecube_path(a, b);
                    assert_walk(&q, &p, a, b);
                    assert_eq!(p.len() as u32, Hypercube::hamming(a, b) + 1);
                    check_disjoint_paths(&q, a, b);
                }
            }
        }
    }

    #[test]
    fn disjoint_paths_order_matches_spec() {
        let q = Hypercube::new(4).unwrap();
        let paths = q.disjoint_paths(0b0000, 0b0101);
        let expect = vec![
            vec![0b0000, 0b0001, 0b0101],
            vec![0b0000, 0b0100, 0b0101],
            vec![0b0000, 0b0010, 0b0011, 0b0111, 0b0101],
            vec![0b0000, 0b1000, 0b1001, 0b1101, 0b0101],
        ];
        assert_eq!(paths, expect);
    }

    #[test]
    fn gray_ring() {
        for q in cubes() {
            let n = q.dim();
            let ring: Vec<Node> = (0..q.nodes()).map(Hypercube::gray).collect();
            let distinct: HashSet<_> = ring.iter().collect();
            assert_eq!(distinct.len() as u32, q.nodes());
            assert!(ring.iter().all(|&v| q.contains(v)));
            for (i, &v) in ring.iter().enumerate() {
                let next = ring[(i + 1) % ring.len()];
                assert_eq!(Hypercube::gray_rank(v), i as u32);
                assert_eq!(q.ring_next(v), next);
                assert_eq!(q.ring_prev(next), v);
                if n >= 1 {
                    assert!(q.are_neighbors(v, next), "n={n}: {v} -> {next}");
                }
            }
        }
        for i in [0, 1, 12345, 1 << 23, u32::MAX] {
            assert_eq!(Hypercube::gray_rank(Hypercube::gray(i)), i);
        }
    }

    fn check_sbt(q: &Hypercube, root: Node, order: DimOrder) {
        let n = q.dim();
        let depth = check_tree(
            q,
            root,
            |v| q.sbt_parent(v, root, order),
            |v| q.sbt_children(v, root, order),
        );
        assert_eq!(q.sbt_subtree_size(root, root, order), q.nodes());
        assert_eq!(q.sbt_step(root, root, order), 0);
        for v in 0..q.nodes() {
            let kids = q.sbt_children(v, root, order);
            let sum: u32 = kids
                .iter()
                .map(|&c| q.sbt_subtree_size(c, root, order))
                .sum();
            assert_eq!(q.sbt_subtree_size(v, root, order), 1 + sum);
            assert!(depth[v as usize] <= n);
            for &c in &kids {
                let d = highest_bit(c ^ v);
                let step = q.sbt_step(c, root, order);
                assert!(step > q.sbt_step(v, root, order));
                let expect = match order {
                    DimOrder::Ascending => d + 1,
                    DimOrder::Descending => n - d,
                };
                assert_eq!(step, expect, "one dimension per step");
            }
            if order == DimOrder::Descending {
                check_aligned_range(q, v, root);
            }
        }
    }

    fn check_aligned_range(q: &Hypercube, v: Node, root: Node) {
        let order = DimOrder::Descending;
        let mut rel = Vec::new();
        let mut stack = vec![v];
        while let Some(u) = stack.pop() {
            rel.push(u ^ root);
            stack.extend(q.sbt_children(u, root, order));
        }
        rel.sort_unstable();
        let r = v ^ root;
        let size = q.sbt_subtree_size(v, root, order);
        assert_eq!(rel, (r..r + size).collect::<Vec<_>>());
        assert_eq!(r % size, 0, "range not aligned");
    }

    #[test]
    fn sbt_every_root() {
        for q in cubes() {
            for root in 0..q.nodes() {
                for order in ORDERS {
                    check_sbt(&q, root, order);
                }
            }
        }
    }

    fn check_esbt(q: &Hypercube, source: Node) {
        let n = q.dim();
        let mut edges = HashSet::new();
        for j in 0..n {
            let depth = check_tree(
                q,
                source,
                |v| q.esbt_parent(j, v, source),
                |v| q.esbt_children(j, v, source),
            );
            for v in 0..q.nodes() {
                assert_eq!(q.esbt_depth(j, v, source), depth[v as usize]);
                assert!(depth[v as usize] <= n + 1);
                let kids = q.esbt_children(j, v, source);
                assert!(kids.windows(2).all(|w| w[0] < w[1]), "children not sorted");
                for c in kids {
                    assert!(edges.insert((v, c)), "n={n}: edge {v}->{c} in two trees");
                }
            }
            let max = depth.iter().copied().max().unwrap();
            assert_eq!(max, if n >= 2 { n + 1 } else { n });
        }
        assert_eq!(edges.len() as u32, n * (q.nodes() - 1));
    }

    #[test]
    fn esbt_spanning_and_edge_disjoint() {
        for q in cubes() {
            let sources: Vec<Node> = if q.dim() <= 6 {
                (0..q.nodes()).collect()
            } else {
                vec![0, 1, q.nodes() / 3, q.nodes() - 1]
            };
            for s in sources {
                check_esbt(&q, s);
            }
        }
    }

    #[test]
    fn esbt_degenerate_cases() {
        let q0 = Hypercube::new(0).unwrap();
        assert_eq!(q0.esbt_parent(0, 0, 0), None);
        assert!(q0.esbt_children(0, 0, 0).is_empty());
        assert_eq!(q0.esbt_depth(0, 0, 0), 0);
        let q1 = Hypercube::new(1).unwrap();
        assert_eq!(q1.esbt_children(0, 0, 0), vec![1]);
        assert_eq!(q1.esbt_parent(0, 1, 0), Some(0));
        let q3 = Hypercube::new(3).unwrap();
        assert_eq!(q3.esbt_parent(3, 5, 0), None);
        assert!(q3.esbt_children(3, 0, 0).is_empty());
    }

    proptest! {
        #[test]
        fn disjoint_paths_random(n in 1u32..=16, a in any::<u32>(), b in any::<u32>()) {
            let q = Hypercube::new(n).unwrap();
            let mask = q.nodes() - 1;
            check_disjoint_paths(&q, a & mask, b & mask);
        }
    }
}

//! Interconnection networks as data: which ranks are linked, by what class of link,
//! and which shared resources (a bus, a memory, a switch) their transfers use.
//!
//! Every topology is parsed from a string and is one of:
//! - a **product** G1 × G2 × … × Gd of [`Factor`]s (the edge, the cycle C_k, the path
//!   P_k, the complete graph K_k, the binary n-cube): `ring:K`, `path:K`,
//!   `complete:K`, `hypercube:N`, `torus:AxB[xC…]` (cycles), `mesh:AxB[xC…]` (paths),
//!   `ghc:AxB[xC…]` (complete graphs: the generalized hypercube), and any product of
//!   these with `*` (`ring:5*complete:3`, `torus:4x4*hypercube:2`). A node is the tuple
//!   of its factors' nodes, numbered row-major (the last factor varies fastest, as
//!   `MPI_Cart_create` numbers a grid); two nodes are linked when they differ in one
//!   factor and are linked there, and the distance is the sum of the factors'
//!   distances (Dimakopoulos & Dimopoulos, seed 002, §2). Distances, diameters,
//!   eccentricities, shortest paths, neighbours and statuses all come from the
//!   factors.
//! - a **shared medium** of K processors (Saad & Schultz, *Data Communication in
//!   Parallel Architectures*, seed 004, §2): `bus:K` (model A: one transfer at a time,
//!   heard by any number of receivers), `shm:K,S` (model B: a shared memory serving
//!   S = k* accesses at once; a move is a write and then a read) and `switch:K`
//!   (model F: a crossbar; each node sends one message and receives one at a time,
//!   any permutation at once). Any two processors talk directly; the medium is a
//!   resource the cost model prices and `--strict` checks ([`Medium`]).
//! - either of these plus a **host** (Gichev, seed 003, §2.1), the rank after the
//!   processing elements: `+host` links it to every processing element, `+host@A,B,…`
//!   to the listed ones only; its links are [`LinkClass::Host`] links with their own
//!   β_h and τ_h.
//!
//! The verifier asks [`Topology::are_linked`]; the cost model asks
//! [`Topology::link_class`] and [`Topology::medium`].

pub mod factor;
pub mod hypercube;

pub use factor::Factor;
pub use hypercube::{DimOrder, Hypercube, Node};

use crate::error::Error;
use crate::schedule::Rank;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// The class of a link; the cost model keeps one (β, τ) pair per class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkClass {
    /// An ordinary link between two processing elements (β, τ).
    Net,
    /// A link between the host and a processing element (β_h, τ_h; Gichev, eq. 2.1).
    Host,
}

/// A medium that all processors of a machine share (seed 004, §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Medium {
    /// The broadcast bus (model A): one transfer per round, received by any number of
    /// processors (a multicast costs one transfer).
    Bus,
    /// The shared memory (model B) with `accesses` = k* simultaneous accesses; a move
    /// from one processor to another is a write and a later read, each an access, and
    /// a processor makes at most one access per round.
    Shm {
        /// k*, 1 ≤ k* ≤ K.
        accesses: u32,
    },
    /// The crossbar switch (model F): in a round each node sends at most one message
    /// and receives at most one; any partial permutation at once.
    Switch,
}

/// Which processing elements a host is linked to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostLinks {
    /// Every processing element (`+host`).
    All,
    /// These, ascending, without repeats (`+host@A,B,…`).
    Nodes(Vec<Rank>),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Base {
    Product(Vec<Factor>),
    Medium(Medium, u32),
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Inner {
    base: Base,
    host: Option<HostLinks>,
    /// Processing elements.
    pes: u32,
    /// Row-major strides of the product's factors (empty for a medium).
    strides: Vec<u32>,
    /// The canonical string (what `Display` prints).
    name: String,
}

/// An interconnection network. Cheap to clone (shared).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Topology(Arc<Inner>);

/// Most processing elements in any topology (2^24).
pub const MAX_NODES: u32 = 1 << 24;
/// Largest `complete:K` (the same limit).
pub const MAX_COMPLETE: u32 = MAX_NODES;
/// Most factors in a product.
pub const MAX_FACTORS: usize = 24;
/// Largest topology with a partial host (`+host@…`) whose diameter is computed
/// exactly (by visiting every pair); larger ones use a lower estimate, min(D, 2).
const EXACT_HOST_DIAMETER: u32 = 4096;

/// The forms `Topology::from_str` accepts, for error messages.
pub const VALID_TOPOLOGIES: &str = "hypercube:N (N = 0..=24), ring:K, path:K, complete:K, \
torus:AxB[xC…], mesh:AxB[xC…], ghc:AxB[xC…], products of these joined by `*` \
(e.g. ring:5*complete:3), bus:K, shm:K,S (1 ≤ S ≤ K), switch:K; any of them followed by \
+host (a host linked to every node) or +host@A,B,… (linked to the nodes listed); at most \
16777216 nodes";

impl Topology {
    fn build(base: Base, host: Option<HostLinks>) -> Topology {
        let (pes, strides) = match &base {
            Base::Product(fs) => {
                let mut strides = vec![1u32; fs.len()];
                for i in (0..fs.len().saturating_sub(1)).rev() {
                    strides[i] = strides[i + 1] * fs[i + 1].nodes();
                }
                (fs.iter().map(Factor::nodes).product(), strides)
            }
            Base::Medium(_, k) => (*k, Vec::new()),
        };
        let mut name = match &base {
            Base::Product(fs) => product_name(fs),
            Base::Medium(Medium::Bus, k) => format!("bus:{k}"),
            Base::Medium(Medium::Shm { accesses }, k) => format!("shm:{k},{accesses}"),
            Base::Medium(Medium::Switch, k) => format!("switch:{k}"),
        };
        match &host {
            None => {}
            Some(HostLinks::All) => name.push_str("+host"),
            Some(HostLinks::Nodes(v)) => {
                name.push_str("+host@");
                name.push_str(
                    &v.iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                );
            }
        }
        Topology(Arc::new(Inner {
            base,
            host,
            pes,
            strides,
            name,
        }))
    }

    /// The binary n-cube `hypercube:N`.
    pub fn hypercube(h: Hypercube) -> Topology {
        Topology::build(Base::Product(vec![Factor::Cube(h)]), None)
    }
    /// `complete:K` (1 ≤ K ≤ [`MAX_COMPLETE`]; larger K is clamped in release builds, a
    /// programming error).
    pub fn complete(k: u32) -> Topology {
        debug_assert!((1..=MAX_COMPLETE).contains(&k), "complete:{k}");
        Topology::build(
            Base::Product(vec![Factor::Complete(k.clamp(1, MAX_COMPLETE))]),
            None,
        )
    }
    /// The product of `factors` (checked: at least one, each of at least one node, at
    /// most [`MAX_NODES`] nodes in all).
    pub fn product(factors: Vec<Factor>) -> Result<Topology, Error> {
        let name = product_name(&factors);
        check_product(&name, &factors)?;
        Ok(Topology::build(Base::Product(factors), None))
    }
    /// A shared medium of `k` processors (checked).
    pub fn medium(medium: Medium, k: u32) -> Result<Topology, Error> {
        let t = Topology::build(Base::Medium(medium, k.max(1)), None);
        check_medium(&t.0.name, medium, k)?;
        Ok(t)
    }
    /// This topology with a host linked to `links` (checked against the nodes).
    pub fn with_host(&self, links: HostLinks) -> Result<Topology, Error> {
        if let HostLinks::Nodes(v) = &links {
            check_host_nodes(&self.0.name, v, self.pes())?;
        }
        Ok(Topology::build(self.0.base.clone(), Some(links)))
    }

    /// Number of nodes (processing elements and the host).
    pub fn nodes(&self) -> u32 {
        self.0.pes + u32::from(self.0.host.is_some())
    }
    /// Number of processing elements (the nodes but the host).
    pub fn pes(&self) -> u32 {
        self.0.pes
    }
    /// The host's rank, if the topology has a host.
    pub fn host(&self) -> Option<Rank> {
        self.0.host.as_ref().map(|_| self.0.pes)
    }
    /// Which processing elements the host is linked to.
    pub fn host_links(&self) -> Option<&HostLinks> {
        self.0.host.as_ref()
    }
    /// The factors, for a product network.
    pub fn factors(&self) -> Option<&[Factor]> {
        match &self.0.base {
            Base::Product(fs) => Some(fs),
            Base::Medium(..) => None,
        }
    }
    /// The shared medium, for a bus, shared-memory or switch machine.
    pub fn medium_kind(&self) -> Option<Medium> {
        match self.0.base {
            Base::Medium(m, _) => Some(m),
            Base::Product(_) => None,
        }
    }
    /// The same machine without its host.
    pub fn without_host(&self) -> Topology {
        if self.0.host.is_none() {
            return self.clone();
        }
        Topology::build(self.0.base.clone(), None)
    }
    /// `Some(K)` for `complete:K` (no host).
    pub fn as_complete(&self) -> Option<u32> {
        match (&self.0.base, &self.0.host) {
            (Base::Product(fs), None) => match fs.as_slice() {
                [Factor::Complete(k)] => Some(*k),
                _ => None,
            },
            _ => None,
        }
    }
    /// Whether every two processing elements talk directly and no host is attached:
    /// `complete:K`, a bus, a shared memory, a switch, or a product of one- and
    /// two-node factors of at most two nodes. The algorithms written for any number of
    /// ranks (MPICH's and Open MPI's) fit exactly these.
    pub fn is_single_hop(&self) -> bool {
        self.0.host.is_none()
            && match &self.0.base {
                Base::Medium(..) => true,
                Base::Product(fs) => {
                    fs.iter().filter(|f| f.nodes() > 1).count() <= 1
                        && fs.iter().all(|f| f.diameter() <= 1)
                }
            }
    }
    /// The hypercube whose links join this topology's processing elements, if any: a
    /// product whose factors are all cubes, edges or single nodes, or complete graphs
    /// of 2^a nodes, with the labels' bits as the coordinates (e.g. `torus:2x2x2`,
    /// `ghc:4x2`); or a medium of 2^n processors (any two of which talk). Hypercube
    /// algorithms fit exactly the topologies that have one and no host.
    pub fn cube(&self) -> Option<Hypercube> {
        if self.0.host.is_some() || !self.0.pes.is_power_of_two() {
            return None;
        }
        let ok = match &self.0.base {
            Base::Medium(..) => true,
            Base::Product(fs) => fs.iter().all(|f| {
                f.cube_dim().is_some() || matches!(f, Factor::Complete(k) if k.is_power_of_two())
            }),
        };
        if ok {
            Hypercube::new(self.0.pes.trailing_zeros()).ok()
        } else {
            None
        }
    }
    /// The cube of `hypercube:N+host` with the host linked to every node (seed 003's
    /// machine); `None` for any other topology (`+host@…` included).
    pub fn hosted_cube(&self) -> Option<Hypercube> {
        match (&self.0.base, &self.0.host) {
            (Base::Product(fs), Some(HostLinks::All)) => match fs.as_slice() {
                [Factor::Cube(h)] => Some(*h),
                _ => None,
            },
            _ => None,
        }
    }
    /// The hypercube of `hypercube:N` or `hypercube:N+host`.
    pub fn as_hypercube(&self) -> Option<&Hypercube> {
        match &self.0.base {
            Base::Product(fs) => match fs.as_slice() {
                [Factor::Cube(h)] => Some(h),
                _ => None,
            },
            Base::Medium(..) => None,
        }
    }

    /// The coordinates of processing element `r` in a product (row-major).
    pub fn coords(&self, r: Rank) -> Vec<u32> {
        match &self.0.base {
            Base::Product(fs) => fs
                .iter()
                .zip(&self.0.strides)
                .map(|(f, s)| (r / s) % f.nodes())
                .collect(),
            Base::Medium(..) => vec![r],
        }
    }
    /// The processing element at `coords` in a product (row-major).
    pub fn rank_of(&self, coords: &[u32]) -> Rank {
        coords.iter().zip(&self.0.strides).map(|(c, s)| c * s).sum()
    }
    fn coord(&self, r: Rank, i: usize) -> u32 {
        match &self.0.base {
            Base::Product(fs) => (r / self.0.strides[i]) % fs[i].nodes(),
            Base::Medium(..) => r,
        }
    }
    /// The stride of factor `i`: moving one step in factor `i` adds this to a rank.
    pub fn stride(&self, i: usize) -> u32 {
        self.0.strides[i]
    }

    fn host_linked(&self, pe: Rank) -> bool {
        match &self.0.host {
            None => false,
            Some(HostLinks::All) => pe < self.0.pes,
            Some(HostLinks::Nodes(v)) => v.binary_search(&pe).is_ok(),
        }
    }
    fn is_pe(&self, r: Rank) -> bool {
        r < self.0.pes
    }
    /// Links between processing elements only (the host left out).
    fn base_linked(&self, a: Rank, b: Rank) -> bool {
        if a == b || !self.is_pe(a) || !self.is_pe(b) {
            return false;
        }
        match &self.0.base {
            Base::Medium(..) => true,
            Base::Product(fs) => {
                let mut differ = None;
                for i in 0..fs.len() {
                    let (x, y) = (self.coord(a, i), self.coord(b, i));
                    if x != y {
                        if differ.is_some() {
                            return false;
                        }
                        differ = Some((i, x, y));
                    }
                }
                differ.is_some_and(|(i, x, y)| fs[i].are_linked(x, y))
            }
        }
    }
    fn base_distance(&self, a: Rank, b: Rank) -> u32 {
        match &self.0.base {
            Base::Medium(..) => u32::from(a != b),
            Base::Product(fs) => fs
                .iter()
                .enumerate()
                .map(|(i, f)| f.distance(self.coord(a, i), self.coord(b, i)))
                .sum(),
        }
    }
    fn base_path(&self, a: Rank, b: Rank) -> Vec<Rank> {
        match &self.0.base {
            Base::Medium(..) if a == b => vec![a],
            Base::Medium(..) => vec![a, b],
            Base::Product(fs) => {
                let mut path = vec![a];
                let mut cur = a;
                for (i, f) in fs.iter().enumerate() {
                    let (x, y) = (self.coord(cur, i), self.coord(b, i));
                    let s = self.0.strides[i];
                    for c in f.shortest_path(x, y).into_iter().skip(1) {
                        cur = cur - self.coord(cur, i) * s + c * s;
                        path.push(cur);
                    }
                }
                path
            }
        }
    }
    /// Distance from the host to processing element `pe`, and the host's neighbour on
    /// one shortest way there.
    fn from_host(&self, pe: Rank) -> (u32, Rank) {
        match &self.0.host {
            Some(HostLinks::All) | None => (1, pe),
            Some(HostLinks::Nodes(v)) => v
                .iter()
                .map(|&h| (1 + self.base_distance(h, pe), h))
                .min()
                .expect("a host is linked to at least one node"),
        }
    }

    /// Whether a direct link joins `a` and `b`.
    pub fn are_linked(&self, a: Rank, b: Rank) -> bool {
        match self.host() {
            Some(h) if a == h || b == h => a != b && self.host_linked(if a == h { b } else { a }),
            _ => self.base_linked(a, b),
        }
    }
    /// The class of the link between `a` and `b` (which must be linked).
    pub fn link_class(&self, a: Rank, b: Rank) -> LinkClass {
        match self.host() {
            Some(host) if a == host || b == host => LinkClass::Host,
            _ => LinkClass::Net,
        }
    }
    /// The links at each node, the most at any node.
    pub fn degree(&self) -> u32 {
        let base = match &self.0.base {
            Base::Medium(_, k) => k.saturating_sub(1),
            Base::Product(fs) => fs.iter().map(Factor::degree).sum(),
        };
        match &self.0.host {
            None => base,
            Some(HostLinks::All) => (base + 1).max(self.0.pes),
            Some(HostLinks::Nodes(v)) => (base + 1).max(v.len() as u32),
        }
    }
    /// The neighbours of `a`, ascending.
    pub fn neighbors(&self, a: Rank) -> Vec<Rank> {
        if Some(a) == self.host() {
            return (0..self.0.pes).filter(|&p| self.host_linked(p)).collect();
        }
        let mut v: Vec<Rank> = match &self.0.base {
            Base::Medium(_, k) => (0..*k).filter(|&b| b != a).collect(),
            Base::Product(fs) => {
                let mut v = Vec::new();
                for (i, f) in fs.iter().enumerate() {
                    let x = self.coord(a, i);
                    let s = self.0.strides[i];
                    for y in f.neighbors(x) {
                        v.push(a - x * s + y * s);
                    }
                }
                v
            }
        };
        if self.host_linked(a) {
            v.push(self.0.pes);
        }
        v.sort_unstable();
        v
    }
    /// Shortest-path distance between two nodes.
    pub fn distance(&self, a: Rank, b: Rank) -> u32 {
        if a == b {
            return 0;
        }
        match self.host() {
            None => self.base_distance(a, b),
            Some(h) if a == h => self.from_host(b).0,
            Some(h) if b == h => self.from_host(a).0,
            Some(_) => self
                .base_distance(a, b)
                .min(self.from_host(a).0 + self.from_host(b).0),
        }
    }
    /// One shortest path from `a` to `b`, both included (`[a]` when `a == b`): its
    /// length is [`distance`](Topology::distance)`(a, b)` hops and each hop is a link.
    /// - products: the factors corrected in turn, first factor first, each along its
    ///   own shortest path (so `hypercube:N` gets the e-cube route);
    /// - media: the direct transfer;
    /// - with a host: to or from the host, through its nearest linked node; between
    ///   two processing elements, the processing elements' own path unless the way
    ///   through the host is strictly shorter (with `+host` on a cube: the e-cube
    ///   route up to distance 2, through the host beyond).
    pub fn shortest_path(&self, a: Rank, b: Rank) -> Vec<Rank> {
        debug_assert!(a < self.nodes() && b < self.nodes());
        if a == b {
            return vec![a];
        }
        let Some(host) = self.host() else {
            return self.base_path(a, b);
        };
        if b == host {
            let mut p = self.shortest_path(b, a);
            p.reverse();
            return p;
        }
        if a == host {
            let (_, h) = self.from_host(b);
            let mut p = vec![host];
            p.extend(self.base_path(h, b));
            return p;
        }
        let (da, ha) = self.from_host(a);
        let (db, hb) = self.from_host(b);
        if self.base_distance(a, b) <= da + db {
            return self.base_path(a, b);
        }
        let mut p = self.base_path(a, ha);
        p.push(host);
        p.extend(self.base_path(hb, b));
        p
    }
    /// Eccentricity of `a`: the distance to the farthest node.
    pub fn eccentricity(&self, a: Rank) -> u32 {
        let base = |a: Rank| match &self.0.base {
            Base::Medium(_, k) => u32::from(*k > 1),
            Base::Product(fs) => fs
                .iter()
                .enumerate()
                .map(|(i, f)| f.eccentricity(self.coord(a, i)))
                .sum(),
        };
        match &self.0.host {
            None => base(a),
            Some(HostLinks::All) if Some(a) == self.host() => u32::from(self.0.pes > 0),
            Some(HostLinks::All) => base(a).min(2).max(u32::from(self.0.pes > 0)),
            Some(HostLinks::Nodes(_)) => (0..self.nodes())
                .map(|b| self.distance(a, b))
                .max()
                .unwrap_or(0),
        }
    }
    /// Longest shortest path. With a host linked to some nodes only, on more than 4096
    /// nodes: the lower estimate min(D, 2), D the processing elements' own diameter.
    pub fn diameter(&self) -> u32 {
        let base = match &self.0.base {
            Base::Medium(_, k) => u32::from(*k > 1),
            Base::Product(fs) => fs.iter().map(Factor::diameter).sum(),
        };
        match &self.0.host {
            None => base,
            Some(HostLinks::All) => base.min(2).max(u32::from(self.0.pes > 0)),
            Some(HostLinks::Nodes(_)) if self.0.pes <= EXACT_HOST_DIAMETER => (0..self.nodes())
                .map(|a| self.eccentricity(a))
                .max()
                .unwrap_or(0),
            Some(HostLinks::Nodes(_)) => base.min(2).max(1),
        }
    }
    /// Status s(v) = Σ_u dist(v, u) of a processing element of a product without host,
    /// from the factors by seed 002's Theorem 1: s_{G×H}(g, h) = |H|·s_G(g) + |G|·s_H(h).
    pub fn status(&self, v: Rank) -> Option<u64> {
        let (Base::Product(fs), None) = (&self.0.base, &self.0.host) else {
            return None;
        };
        let k = self.0.pes as u64;
        Some(
            fs.iter()
                .enumerate()
                .map(|(i, f)| k / f.nodes() as u64 * f.status(self.coord(v, i)))
                .sum(),
        )
    }
    /// Σ_v s(v): the distance summed over ordered pairs of nodes. Products without a
    /// host from the factors (seed 002, Theorem 1: each factor's total, times the
    /// square of the other factors' node count); media, (K − 1)K; with a host, by
    /// visiting every pair (`None` past 4096 nodes).
    pub fn total_distance(&self) -> Option<u64> {
        match (&self.0.base, &self.0.host) {
            (Base::Product(fs), None) => {
                let k = self.0.pes as u64;
                Some(
                    fs.iter()
                        .map(|f| {
                            let rest = k / f.nodes() as u64;
                            f.total_status() * rest * rest
                        })
                        .sum(),
                )
            }
            (Base::Medium(_, k), None) => Some((*k as u64).saturating_sub(1) * *k as u64),
            _ if self.nodes() <= EXACT_HOST_DIAMETER => Some(
                (0..self.nodes())
                    .flat_map(|a| (0..self.nodes()).map(move |b| (a, b)))
                    .map(|(a, b)| self.distance(a, b) as u64)
                    .sum(),
            ),
            _ => None,
        }
    }
    /// Node-disjoint paths between two nodes of a product without host, both ends
    /// included, from the factors' own ([`Factor::disjoint_paths`]: a cycle's two, a
    /// path's one, a complete graph K_k's k − 1, the n of the cube of Saad & Schultz
    /// 1985, Prop. 3.1). With D the coordinates in which `a` and `b` differ:
    /// - inside the copy of Π_{i∈D} G_i through `a`, Σ_{i∈D} κ_i paths
    ///   (`cross_paths`, one factor added at a time);
    /// - for every other factor j and every neighbour y of a_j in G_j, a detour: step
    ///   to y, follow a shortest path in the copy whose coordinate j is y, step back.
    ///   Each keeps coordinate j at its own y, so the detours miss each other and the
    ///   paths inside the copy through `a`.
    ///
    /// So there are Σ_{i∈D} κ_i + Σ_{j∉D} deg_j(a_j) of them: the degree of the node
    /// when every factor is a cycle, a complete graph or a cube (vertex-transitive
    /// factors whose connectivity is their degree), which by Menger's theorem is the
    /// most there can be. This is the constructive side of the standard bound that a
    /// Cartesian product's connectivity is at least the sum of its factors',
    /// κ(G □ H) ≥ κ(G) + κ(H), which is Sabidussi's (as cited, e.g., by H. Li, X. Li
    /// and Y. Sun, "The generalized 3-connectivity of Cartesian product graphs",
    /// arXiv:1103.6095; we have not checked Sabidussi's own paper, so we give no title
    /// or year for it). K. Day and A.-E. Al-Ayyoub, "The cross product of
    /// interconnection networks", IEEE TPDS 8(2) (1997) 109–118, study node-disjoint
    /// paths in product networks (checked: title, volume, issue and pages, and that the
    /// abstract names node-disjoint paths; not their construction, so ours is not
    /// claimed to be theirs). `None` for media and topologies with a host.
    pub fn disjoint_paths(&self, a: Rank, b: Rank) -> Option<Vec<Vec<Rank>>> {
        let (Base::Product(fs), None) = (&self.0.base, &self.0.host) else {
            return None;
        };
        if a == b {
            return Some(vec![vec![a]]);
        }
        let (ca, cb) = (self.coords(a), self.coords(b));
        let differ: Vec<usize> = (0..fs.len()).filter(|&i| ca[i] != cb[i]).collect();
        let mut paths: Vec<Vec<Rank>> = cross_paths(fs, &differ, &ca, &cb)
            .iter()
            .map(|p| p.iter().map(|c| self.rank_of(c)).collect())
            .collect();
        for (j, f) in fs.iter().enumerate().filter(|(j, _)| !differ.contains(j)) {
            for y in f.neighbors(ca[j]) {
                let (mut la, mut lb) = (ca.clone(), cb.clone());
                (la[j], lb[j]) = (y, y);
                let mut p = vec![a];
                p.extend(self.base_path(self.rank_of(&la), self.rank_of(&lb)));
                p.push(b);
                paths.push(p);
            }
        }
        Some(paths)
    }
    /// An id for the undirected link between `a` and `b` (which must be linked),
    /// unique within the topology: lower end × nodes + higher end.
    pub fn link_id(&self, a: Rank, b: Rank) -> u64 {
        let (lo, hi) = (a.min(b) as u64, a.max(b) as u64);
        lo * self.nodes() as u64 + hi
    }
    /// Check that `rank` names a node; `what` names the parameter in the error.
    pub fn check_rank(&self, what: &'static str, rank: u64) -> Result<Rank, Error> {
        if rank < self.nodes() as u64 {
            Ok(rank as Rank)
        } else {
            Err(Error::RankOutOfRange {
                what,
                rank,
                nodes: self.nodes(),
            })
        }
    }
}

/// Σ_{i∈D} κ_i internally node-disjoint paths from `ca` to `cb` (as coordinates)
/// inside the copy of Π_{i∈D} G_i through `ca`, where D = `differ` lists every
/// coordinate in which they differ (the others stay at `ca`'s). One factor G = G_{D_0}
/// at a time against H, the product of the rest (its paths by recursion), from G's
/// paths P_1..P_p (g1 → g2) and H's Q_1..Q_q (h1 → h2), with P_0 and Q_0 the direct
/// links if the ends are adjacent (at most one path of each is):
/// - two paths in turn orders: P_0 at layer h1 then Q_0 at layer g2; Q_0 at layer g1
///   then P_0 at layer h2;
/// - for each other P_i, with x_i its first step: to (x_i, h1), along Q_0 in the copy
///   of H at x_i, then the rest of P_i at layer h2;
/// - for each other Q_j, with y_j its first step: to (g1, y_j), along P_0 in the copy
///   of G at y_j, then the rest of Q_j at layer g2.
///
/// Inner nodes differ: the P_i-paths change H only at their own x_i (inner to P_i, so
/// off P_0), then keep H at h2 on P_i's own inner nodes; the Q_j-paths likewise with
/// G; a P_i-path and a Q_j-path could only meet at (x_i, y_j), where x_i would have
/// to lie on P_0. Checked exhaustively on small products
/// (tests/disjoint_paths.rs).
fn cross_paths(fs: &[Factor], differ: &[usize], ca: &[u32], cb: &[u32]) -> Vec<Vec<Vec<u32>>> {
    let Some((&g, rest)) = differ.split_first() else {
        return vec![vec![ca.to_vec()]];
    };
    let at = |base: &[u32], x: u32| {
        let mut c = base.to_vec();
        c[g] = x;
        c
    };
    let ps = fs[g].disjoint_paths(ca[g], cb[g]);
    if rest.is_empty() {
        return ps
            .iter()
            .map(|p| p.iter().map(|&x| at(ca, x)).collect())
            .collect();
    }
    let qs = cross_paths(fs, rest, ca, cb);
    let direct = |n: usize| n == 2;
    let i0 = ps.iter().position(|p| direct(p.len())).unwrap_or(0);
    let s = qs.iter().position(|q| direct(q.len())).unwrap_or(0);
    let (p0, q0) = (&ps[i0], &qs[s]);
    let (g1, g2) = (ca[g], cb[g]);
    let h2 = qs[s].last().expect("a path has its ends");
    let mut out = Vec::with_capacity(ps.len() + qs.len());
    // P_0 at layer h1, then Q_0 at layer g2.
    let mut first: Vec<Vec<u32>> = p0.iter().map(|&x| at(ca, x)).collect();
    first.extend(q0[1..].iter().map(|h| at(h, g2)));
    out.push(first);
    // Q_0 at layer g1, then P_0 at layer h2.
    let mut second: Vec<Vec<u32>> = q0.iter().map(|h| at(h, g1)).collect();
    second.extend(p0[1..].iter().map(|&x| at(h2, x)));
    out.push(second);
    for (_, p) in ps.iter().enumerate().filter(|&(i, _)| i != i0) {
        let mut path = vec![ca.to_vec()];
        path.extend(q0.iter().map(|h| at(h, p[1])));
        path.extend(p[2..].iter().map(|&x| at(h2, x)));
        out.push(path);
    }
    for (_, q) in qs.iter().enumerate().filter(|&(j, _)| j != s) {
        let mut path = vec![ca.to_vec()];
        path.extend(p0.iter().map(|&x| at(&q[1], x)));
        path.extend(q[2..].iter().map(|h| at(h, g2)));
        out.push(path);
    }
    out
}

/// The canonical string of a product: runs of equal families with two or more
/// factors grouped as `torus:AxB`, `mesh:AxB`, `ghc:AxB`.
fn product_name(fs: &[Factor]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < fs.len() {
        let grouped = match fs[i] {
            Factor::Cycle(_) => Some("torus"),
            Factor::Path(_) => Some("mesh"),
            Factor::Complete(_) => Some("ghc"),
            Factor::Cube(_) => None,
        };
        let mut j = i + 1;
        while grouped.is_some() && j < fs.len() && fs[j].family() == fs[i].family() {
            j += 1;
        }
        match grouped {
            Some(g) if j - i >= 2 => parts.push(format!(
                "{g}:{}",
                fs[i..j]
                    .iter()
                    .map(|f| f.nodes().to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            )),
            _ => {
                j = i + 1;
                parts.push(fs[i].to_string());
            }
        }
        i = j;
    }
    parts.join("*")
}

fn out_of_range(given: &str, reason: impl Into<String>) -> Error {
    Error::TopologyOutOfRange {
        given: given.to_string(),
        reason: reason.into(),
    }
}

fn check_product(given: &str, fs: &[Factor]) -> Result<(), Error> {
    if fs.is_empty() {
        return Err(out_of_range(given, "a product needs at least one factor"));
    }
    if fs.len() > MAX_FACTORS {
        return Err(out_of_range(
            given,
            format!("{} factors; at most {MAX_FACTORS}", fs.len()),
        ));
    }
    let mut nodes: u64 = 1;
    for f in fs {
        if f.nodes() == 0 {
            return Err(out_of_range(
                given,
                format!("`{f}` has no node; valid: 1 or more"),
            ));
        }
        if fs.len() > 1 && f.nodes() == 1 {
            return Err(out_of_range(
                given,
                format!("`{f}` has one node, which adds nothing to a product; valid: 2 or more"),
            ));
        }
        nodes = nodes.saturating_mul(f.nodes() as u64);
    }
    if nodes > MAX_NODES as u64 {
        return Err(out_of_range(
            given,
            format!("{nodes} nodes; at most {MAX_NODES}"),
        ));
    }
    Ok(())
}

fn check_medium(given: &str, m: Medium, k: u32) -> Result<(), Error> {
    if !(1..=MAX_NODES).contains(&k) {
        return Err(out_of_range(
            given,
            format!("{k} processors; valid: 1..={MAX_NODES}"),
        ));
    }
    if let Medium::Shm { accesses } = m {
        if !(1..=k).contains(&accesses) {
            return Err(out_of_range(
                given,
                format!("k* = {accesses} simultaneous accesses; valid: 1..={k} (1 ≤ k* ≤ K)"),
            ));
        }
    }
    Ok(())
}

fn check_host_nodes(given: &str, v: &[Rank], pes: u32) -> Result<(), Error> {
    if v.is_empty() {
        return Err(out_of_range(
            given,
            "+host@ names no node; list one or more, e.g. +host@0,3",
        ));
    }
    for w in v.windows(2) {
        if w[0] >= w[1] {
            return Err(out_of_range(
                given,
                format!(
                    "+host@ lists node {} twice or out of order; list them ascending, once each",
                    w[1]
                ),
            ));
        }
    }
    if let Some(&bad) = v.iter().find(|&&r| r >= pes) {
        return Err(out_of_range(
            given,
            format!(
                "the host is linked to node {bad}, which does not exist (valid: 0..={})",
                pes.saturating_sub(1)
            ),
        ));
    }
    Ok(())
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.name)
    }
}

/// A count in a topology string.
fn count(given: &str, what: &str, s: &str) -> Result<u32, Error> {
    s.trim().parse::<u32>().map_err(|_| {
        out_of_range(
            given,
            format!(
                "`{}` is not {what}; valid: a whole number, at most {MAX_NODES} nodes in all",
                s.trim()
            ),
        )
    })
}

/// One `family:params` term of a product.
fn parse_term(given: &str, term: &str) -> Result<Vec<Factor>, Error> {
    let unknown = || Error::UnknownTopology {
        given: given.to_string(),
        valid: VALID_TOPOLOGIES.to_string(),
    };
    let (family, params) = term.split_once(':').ok_or_else(unknown)?;
    let family = family.trim().to_ascii_lowercase();
    let dims = |make: fn(u32) -> Factor| -> Result<Vec<Factor>, Error> {
        let v = params
            .split(['x', 'X'])
            .map(|p| count(given, "a node count", p).map(make))
            .collect::<Result<Vec<_>, _>>()?;
        if v.len() < 2 {
            return Err(out_of_range(
                given,
                format!(
                    "`{family}:{}` needs two or more dimensions, e.g. {family}:4x4",
                    params.trim()
                ),
            ));
        }
        Ok(v)
    };
    match family.as_str() {
        "hypercube" | "cube" => {
            let n = count(given, "a dimension", params).map_err(|_| {
                out_of_range(
                    given,
                    format!(
                        "`{}` is not a dimension; valid: 0..={}",
                        params.trim(),
                        Hypercube::MAX_DIM
                    ),
                )
            })?;
            let h = Hypercube::new(n).map_err(|_| {
                out_of_range(
                    given,
                    format!(
                        "dimension {n} is too large; valid: 0..={}",
                        Hypercube::MAX_DIM
                    ),
                )
            })?;
            Ok(vec![Factor::Cube(h)])
        }
        "ring" => Ok(vec![Factor::Cycle(count(given, "a node count", params)?)]),
        "path" => Ok(vec![Factor::Path(count(given, "a node count", params)?)]),
        "complete" => Ok(vec![Factor::Complete(count(
            given,
            "a node count",
            params,
        )?)]),
        "torus" => dims(Factor::Cycle),
        "mesh" => dims(Factor::Path),
        "ghc" => dims(Factor::Complete),
        _ => Err(unknown()),
    }
}

impl FromStr for Topology {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let unknown = || Error::UnknownTopology {
            given: s.to_string(),
            valid: VALID_TOPOLOGIES.to_string(),
        };
        let (base, host) = match s.split_once('+') {
            Some((b, h)) => (b, Some(h.trim())),
            None => (s, None),
        };
        let host = match host {
            None => None,
            Some(h) if h.eq_ignore_ascii_case("host") => Some(HostLinks::All),
            Some(h) => match h.split_once('@') {
                Some((word, list)) if word.trim().eq_ignore_ascii_case("host") => {
                    let v = list
                        .split(',')
                        .map(|p| count(s, "a node", p))
                        .collect::<Result<Vec<_>, _>>()?;
                    Some(HostLinks::Nodes(v))
                }
                _ => return Err(unknown()),
            },
        };
        let base = base.trim();
        let (family, params) = base.split_once(':').ok_or_else(unknown)?;
        let family = family.trim().to_ascii_lowercase();
        // A medium and its processor count's text.
        let medium = match family.as_str() {
            "bus" => Some((Medium::Bus, params)),
            "switch" => Some((Medium::Switch, params)),
            "shm" => {
                let (k, a) = params.split_once(',').ok_or_else(|| {
                    out_of_range(s, "shm needs K,S: K processors and S = k* simultaneous accesses, e.g. shm:8,2")
                })?;
                let accesses = count(s, "an access count", a)?;
                Some((Medium::Shm { accesses }, k))
            }
            _ => None,
        };
        let topo = match medium {
            Some((m, k_str)) => {
                let k = count(s, "a processor count", k_str)?;
                check_medium(s, m, k)?;
                Topology::build(Base::Medium(m, k), None)
            }
            None => {
                let mut fs = Vec::new();
                for term in base.split('*') {
                    fs.extend(parse_term(s, term)?);
                }
                check_product(s, &fs)?;
                Topology::build(Base::Product(fs), None)
            }
        };
        match host {
            None => Ok(topo),
            Some(links) => {
                if let HostLinks::Nodes(v) = &links {
                    check_host_nodes(s, v, topo.pes())?;
                }
                Ok(Topology::build(topo.0.base.clone(), Some(links)))
            }
        }
    }
}

impl Serialize for Topology {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Topology {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

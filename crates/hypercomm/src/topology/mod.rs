//! Interconnection topologies: which ranks are linked, and by what class of link.
//!
//! Every family is parsed from a string `family:params` (e.g. `hypercube:4`). The
//! verifier asks [`Topology::are_linked`]; the cost model asks [`Topology::link_class`]
//! so that links of different speeds (seed 003's host links) are priced apart.

pub mod hypercube;

pub use hypercube::{DimOrder, Hypercube, Node};

use crate::error::Error;
use crate::schedule::Rank;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The class of a link; the cost model keeps one (β, τ) pair per class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkClass {
    /// An ordinary link between two processing elements (β, τ).
    Net,
    /// A link between the host and a processing element (β_h, τ_h; Gichev, eq. 2.1).
    Host,
}

/// An interconnection network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Topology {
    /// The binary n-cube (Saad & Schultz 1985, §1).
    Hypercube(Hypercube),
    /// The n-cube plus a host processor, rank 2^n, linked to every node by a host-class
    /// link (Gichev, §2.1: "a host processor, directly linked with any of PEs").
    HypercubeHost(Hypercube),
    /// K nodes, every pair linked: a crossbar switch (Saad & Schultz 1986, model F) or
    /// ranks in one shared-memory process. Contains the hypercube when K = 2^n.
    Complete(u32),
}

/// Largest `complete:K`.
pub const MAX_COMPLETE: u32 = 1 << 24;

/// The families `Topology::from_str` accepts, for error messages.
pub const VALID_TOPOLOGIES: &str =
    "hypercube:N, hypercube:N+host (N = 0..=24), complete:K (K = 1..=16777216)";

impl Topology {
    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        match self {
            Topology::Hypercube(h) => h.nodes(),
            Topology::HypercubeHost(h) => h.nodes() + 1,
            Topology::Complete(k) => *k,
        }
    }
    /// The host's rank, if the topology has a host.
    pub fn host(&self) -> Option<Rank> {
        match self {
            Topology::HypercubeHost(h) => Some(h.nodes()),
            Topology::Hypercube(_) | Topology::Complete(_) => None,
        }
    }
    /// The hypercube whose links join this topology's processing elements, if any: the
    /// hypercube itself, or a complete graph of 2^n nodes (which contains it). Hypercube
    /// algorithms fit exactly the topologies that have one.
    pub fn cube(&self) -> Option<Hypercube> {
        match *self {
            Topology::Hypercube(h) => Some(h),
            Topology::Complete(k) if k.is_power_of_two() => Hypercube::new(k.trailing_zeros()).ok(),
            Topology::Complete(_) | Topology::HypercubeHost(_) => None,
        }
    }
    /// Whether a direct link joins `a` and `b`.
    pub fn are_linked(&self, a: Rank, b: Rank) -> bool {
        match self {
            Topology::Hypercube(h) => h.are_neighbors(a, b),
            Topology::HypercubeHost(h) => {
                let host = h.nodes();
                h.are_neighbors(a, b) || (a == host && b < host) || (b == host && a < host)
            }
            Topology::Complete(k) => a != b && a < *k && b < *k,
        }
    }
    /// The class of the link between `a` and `b` (which must be linked).
    pub fn link_class(&self, a: Rank, b: Rank) -> LinkClass {
        match self.host() {
            Some(host) if a == host || b == host => LinkClass::Host,
            _ => LinkClass::Net,
        }
    }
    /// Longest shortest path.
    pub fn diameter(&self) -> u32 {
        match self {
            Topology::Hypercube(h) => h.diameter(),
            // Two PEs can always meet through the host.
            Topology::HypercubeHost(h) => h.diameter().min(2),
            Topology::Complete(k) => u32::from(*k > 1),
        }
    }
    /// Number of links at each node (the most at any node).
    pub fn degree(&self) -> u32 {
        match self {
            Topology::Hypercube(h) => h.dim(),
            Topology::HypercubeHost(h) => h.nodes(),
            Topology::Complete(k) => k.saturating_sub(1),
        }
    }
    /// Shortest-path distance between two nodes.
    pub fn distance(&self, a: Rank, b: Rank) -> u32 {
        match self {
            Topology::Hypercube(_) => Hypercube::hamming(a, b),
            Topology::HypercubeHost(h) => match (a == h.nodes(), b == h.nodes()) {
                (true, true) => 0,
                (true, false) | (false, true) => 1,
                (false, false) => Hypercube::hamming(a, b).min(2),
            },
            Topology::Complete(_) => u32::from(a != b),
        }
    }
    /// One shortest path from `a` to `b`, both included (`[a]` when `a == b`): its
    /// length is [`distance`](Topology::distance)`(a, b)` hops and each hop is a link.
    /// - `complete:K`: the link `a`–`b`;
    /// - `hypercube:N`: the e-cube route (differing bits corrected in ascending order);
    /// - `hypercube:N+host`: the host link when either end is the host; the e-cube
    ///   route when the Hamming distance is at most 2 (processing-element links only,
    ///   even where the two host links would be as short); through the host otherwise.
    ///   A path's links are therefore all of one class.
    pub fn shortest_path(&self, a: Rank, b: Rank) -> Vec<Rank> {
        debug_assert!(a < self.nodes() && b < self.nodes());
        if a == b {
            return vec![a];
        }
        match self {
            Topology::Complete(_) => vec![a, b],
            Topology::Hypercube(h) => h.ecube_path(a, b),
            Topology::HypercubeHost(h) => {
                let host = h.nodes();
                if a == host || b == host {
                    vec![a, b]
                } else if Hypercube::hamming(a, b) <= 2 {
                    h.ecube_path(a, b)
                } else {
                    vec![a, host, b]
                }
            }
        }
    }
    /// Eccentricity of `a`: the distance to the farthest node.
    pub fn eccentricity(&self, a: Rank) -> u32 {
        match self {
            Topology::Hypercube(h) => h.dim(),
            Topology::HypercubeHost(h) if a == h.nodes() => u32::from(h.nodes() > 0),
            Topology::HypercubeHost(h) => h.dim().min(2),
            Topology::Complete(k) => u32::from(*k > 1),
        }
    }
    /// The hypercube, if this is one.
    pub fn as_hypercube(&self) -> Option<&Hypercube> {
        match self {
            Topology::Hypercube(h) | Topology::HypercubeHost(h) => Some(h),
            Topology::Complete(_) => None,
        }
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

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::Hypercube(h) => write!(f, "hypercube:{}", h.dim()),
            Topology::HypercubeHost(h) => write!(f, "hypercube:{}+host", h.dim()),
            Topology::Complete(k) => write!(f, "complete:{k}"),
        }
    }
}

impl FromStr for Topology {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let unknown = || Error::UnknownTopology {
            given: s.to_string(),
            valid: VALID_TOPOLOGIES.to_string(),
        };
        let (family, params) = s.split_once(':').ok_or_else(unknown)?;
        match family.trim().to_ascii_lowercase().as_str() {
            "hypercube" | "cube" => {
                let (params, host) = match params.trim().strip_suffix("+host") {
                    Some(p) => (p, true),
                    None => (params, false),
                };
                let n: u32 = params
                    .trim()
                    .parse()
                    .map_err(|_| Error::TopologyOutOfRange {
                        given: s.to_string(),
                        reason: format!(
                            "`{params}` is not a dimension; valid: 0..={}",
                            Hypercube::MAX_DIM
                        ),
                    })?;
                let cube = Hypercube::new(n).map_err(|_| Error::TopologyOutOfRange {
                    given: s.to_string(),
                    reason: format!(
                        "dimension {n} is too large; valid: 0..={}",
                        Hypercube::MAX_DIM
                    ),
                })?;
                Ok(if host {
                    Topology::HypercubeHost(cube)
                } else {
                    Topology::Hypercube(cube)
                })
            }
            "complete" | "switch" => {
                let k: u32 = params
                    .trim()
                    .parse()
                    .ok()
                    .filter(|k| (1..=MAX_COMPLETE).contains(k))
                    .ok_or_else(|| Error::TopologyOutOfRange {
                        given: s.to_string(),
                        reason: format!(
                            "`{params}` is not a node count; valid: 1..={MAX_COMPLETE}"
                        ),
                    })?;
                Ok(Topology::Complete(k))
            }
            _ => Err(unknown()),
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

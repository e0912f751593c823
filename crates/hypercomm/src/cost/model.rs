//! Machine models: β (start-up), τ (time per element), the port and duplex rules, and
//! how rounds are timed.
//!
//! - Saad & Schultz 1985, §1, eq. (1.1): a transfer of m elements to a neighbour costs
//!   β + mτ, and with the *communication overlapping assumption* a node uses all its
//!   links at once (`ports = all`).
//! - Dimakopoulos & Dimopoulos, §1: the *single-port* model, a node sends at most one
//!   message and receives at most one at a time (`ports = one`), links full duplex.
//! - Saad & Schultz 1986 (seed 004), model (E): all channels of a node can either read
//!   or write, but not both at once (`duplex = half`): an exchange costs two transfers.
//! - Gichev (seed 003), eqs. (2.1)–(2.2): host links have their own β_h, τ_h.
//!
//! Seed 004 writes τ_X for the start-up and b_X for the bandwidth: its τ_X is our β and
//! its 1/b_X our τ.

use crate::error::Error;
use crate::topology::LinkClass;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How many links a node drives at once: a send and a receive port count. `all` and
/// `one` are the pairs (all, all) and (1, 1); `S,R` any other, e.g. seed 004's ring
/// rule "write to both neighbours, or read from one and write to the other" is `2,1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Ports {
    /// All links at once (Saad & Schultz's communication overlapping assumption).
    #[default]
    All,
    /// One send and one receive at a time (single-port; Dimakopoulos & Dimopoulos).
    One,
    /// `send` messages sent and `recv` received at once, each on its own link
    /// (`--ports S,R`, S, R ≥ 1; seed 004's ring rule is `2,1`).
    Split {
        /// Send ports.
        send: u32,
        /// Receive ports.
        recv: u32,
    },
}

impl Ports {
    /// Send ports, `None` for all.
    pub fn send(&self) -> Option<u32> {
        match *self {
            Ports::All => None,
            Ports::One => Some(1),
            Ports::Split { send, .. } => Some(send),
        }
    }
    /// Receive ports, `None` for all.
    pub fn recv(&self) -> Option<u32> {
        match *self {
            Ports::All => None,
            Ports::One => Some(1),
            Ports::Split { recv, .. } => Some(recv),
        }
    }
}

impl Serialize for Ports {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Ports {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl FromStr for Ports {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            Error::InvalidParameter {
            what: "--ports",
            reason: format!(
                "`{s}`; valid: all, one, or S,R (send and receive ports, each ≥ 1, e.g. 2,1 for seed 004's ring rule)"
            ),
        }
        };
        match s.trim().to_ascii_lowercase().as_str() {
            "all" => Ok(Ports::All),
            "one" => Ok(Ports::One),
            t => {
                let (a, b) = t.split_once(',').ok_or_else(bad)?;
                // A count past u32 read as no count at all ("each ≥ 1"): name its range.
                let count = |p: &str| {
                    let p = p.trim();
                    p.parse::<u32>().map_err(|_| {
                        if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
                            Error::InvalidParameter {
                                what: "--ports",
                                reason: format!(
                                    "`{s}`: {p} ports is out of range; valid: S,R with S and R \
                                     each in 1..={}, or all, one",
                                    u32::MAX
                                ),
                            }
                        } else {
                            bad()
                        }
                    })
                };
                let (send, recv) = (count(a)?, count(b)?);
                if send == 0 || recv == 0 {
                    return Err(bad());
                }
                Ok(if (send, recv) == (1, 1) {
                    Ports::One
                } else {
                    Ports::Split { send, recv }
                })
            }
        }
    }
}

impl fmt::Display for Ports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ports::All => f.write_str("all"),
            Ports::One => f.write_str("one"),
            Ports::Split { send, recv } => write!(f, "{send},{recv}"),
        }
    }
}

/// Whether a node can send and receive at the same time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Duplex {
    /// Sending and receiving overlap.
    #[default]
    Full,
    /// A node either sends or receives at a given time (seed 004, model E).
    Half,
    /// Each link carries one direction at a time, but a node may send on one link
    /// while it receives on another (seed 000, §4.3; seed 004's hypercube): an
    /// exchange across one link costs two transfers, a pipeline through a node none
    /// extra (`--duplex half-link`).
    #[serde(rename = "half-link")]
    HalfLink,
}

impl Duplex {
    /// The node-level rule that a step obeys under `self` when each node's sends and
    /// receives go to distinct peers (`distinct`: under half-link duplex they overlap,
    /// as under full duplex) or all to one peer (they take turns, as under half
    /// duplex). Closed forms of algorithms with one of these two patterns in every
    /// step use it.
    pub fn with_peers(self, distinct: bool) -> Duplex {
        match self {
            Duplex::HalfLink if distinct => Duplex::Full,
            Duplex::HalfLink => Duplex::Half,
            d => d,
        }
    }
}

impl Model {
    /// The node-level model that a schedule obeys when every link it uses in a step
    /// carries the same load both ways (TEA1, TEA2, the rotated exchanges): under all
    /// ports, half-link duplex is half duplex; `None` when a node has fewer ports than
    /// links in use (split ports, or one port under half-link duplex), where such
    /// schedules state no closed form.
    pub fn for_symmetric_links(&self) -> Option<Model> {
        match (self.ports, self.duplex) {
            (Ports::Split { .. }, _) | (Ports::One, Duplex::HalfLink) => None,
            (Ports::All, Duplex::HalfLink) => Some(Model {
                duplex: Duplex::Half,
                ..*self
            }),
            _ => Some(*self),
        }
    }
}

/// How the simulator turns steps into time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// Lock-step rounds: each round costs what its slowest node needs (the papers' model).
    #[default]
    Rounds,
    /// Each node starts a step once it and the peers of that step finished the previous one.
    Async,
}

macro_rules! enum_str {
    ($t:ty, $what:literal, $($name:literal => $v:expr),+) => {
        impl FromStr for $t {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($name => Ok($v),)+
                    _ => Err(Error::InvalidParameter { what: $what, reason: format!("`{s}`; valid: {}", [$($name),+].join(", ")) }),
                }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                $(if *self == $v { return f.write_str($name); })+
                Ok(())
            }
        }
    };
}
enum_str!(Duplex, "--duplex", "full" => Duplex::Full, "half" => Duplex::Half, "half-link" => Duplex::HalfLink);
enum_str!(Timing, "--timing", "rounds" => Timing::Rounds, "async" => Timing::Async);

/// Start-up and per-element time of one class of link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkCost {
    /// Start-up time β.
    pub beta: f64,
    /// Time per element τ.
    pub tau: f64,
}

impl LinkCost {
    /// β + mτ (Saad & Schultz 1985, eq. 1.1).
    pub fn transfer(&self, m: u64) -> f64 {
        self.beta + m as f64 * self.tau
    }
}

/// A complete machine model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Processing-element links (β, τ).
    pub net: LinkCost,
    /// Host links (β_h, τ_h; Gichev eq. 2.1).
    pub host: LinkCost,
    pub ports: Ports,
    /// The host's own port rule (`--host-ports`; seed 003's host sends one message
    /// at a time, so `one` by default).
    pub host_ports: Ports,
    pub duplex: Duplex,
    pub timing: Timing,
}

impl Default for Model {
    /// β = 1, τ = 0.01 (β ≫ τ, as the papers assume), all ports, full duplex, rounds.
    fn default() -> Self {
        let net = LinkCost {
            beta: 1.0,
            tau: 0.01,
        };
        Model {
            net,
            host: net,
            ports: Ports::All,
            host_ports: Ports::One,
            duplex: Duplex::Full,
            timing: Timing::Rounds,
        }
    }
}

impl Model {
    /// A model with the given β and τ on every link class, other settings default.
    pub fn new(beta: f64, tau: f64) -> Result<Self, Error> {
        for (what, v) in [("--beta", beta), ("--tau", tau)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::InvalidParameter {
                    what,
                    reason: format!("{v} must be a finite number ≥ 0"),
                });
            }
        }
        let net = LinkCost { beta, tau };
        Ok(Model {
            net,
            host: net,
            ..Model::default()
        })
    }
    /// The cost parameters of a link class.
    pub fn link(&self, class: LinkClass) -> LinkCost {
        match class {
            LinkClass::Net => self.net,
            LinkClass::Host => self.host,
        }
    }
    /// β of the processing-element links.
    pub fn beta(&self) -> f64 {
        self.net.beta
    }
    /// τ of the processing-element links.
    pub fn tau(&self) -> f64 {
        self.net.tau
    }
}

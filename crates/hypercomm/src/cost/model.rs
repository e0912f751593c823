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

/// How many links a node drives at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Ports {
    /// All links at once (Saad & Schultz's communication overlapping assumption).
    #[default]
    All,
    /// One send and one receive at a time (single-port; Dimakopoulos & Dimopoulos).
    One,
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
enum_str!(Ports, "--ports", "all" => Ports::All, "one" => Ports::One);
enum_str!(Duplex, "--duplex", "full" => Duplex::Full, "half" => Duplex::Half);
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

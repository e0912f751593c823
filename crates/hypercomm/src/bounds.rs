//! Lower bounds from first principles, printed beside every result so a user sees how
//! far an algorithm is from optimal. All are for the rounds model with the same β and
//! τ on every link; `None` where we state none.
//!
//! Two arguments, combined:
//! - start-ups: every round costs at least β, and the data must travel the root's
//!   eccentricity e (diameter-type bound) — or, under `--ports one`, informed nodes can
//!   at most double per round, ⌈log₂ k⌉ rounds;
//! - volume: some node must receive (or send) V elements through its d links; under
//!   `--ports all` at most d·p_r per round r, under `--ports one` p_r, and Σ_r p_r τ is
//!   part of the time. Under half duplex a node that must both send and receive S and R
//!   elements pays for both.

use crate::collective::Collective;
use crate::cost::model::{Model, Ports};
use crate::topology::Topology;

/// A lower bound on the time of `collective` with length `m` on `topo` under `model`.
pub fn lower_bound(topo: &Topology, collective: &Collective, m: u64, model: &Model) -> Option<f64> {
    let k = topo.nodes() as u64;
    if m == 0 || k == 1 {
        return Some(0.0);
    }
    let (beta, tau) = (model.beta(), model.tau());
    let d = topo.degree() as f64;
    let ports = |v: u64| match model.ports {
        Ports::All => v as f64 / d,
        Ports::One => v as f64,
    };
    let log_k = (64 - (k - 1).leading_zeros()) as f64;
    match *collective {
        Collective::P2p { src, dst } => {
            let h = topo.distance(src, dst) as f64;
            if h == 0.0 {
                return Some(0.0);
            }
            Some(h * beta + ports(m) * tau)
        }
        Collective::Broadcast { root } => {
            let rounds = match model.ports {
                Ports::All => topo.eccentricity(root) as f64,
                Ports::One => log_k.max(topo.eccentricity(root) as f64),
            };
            Some(rounds * beta + ports(m) * tau)
        }
        Collective::Scatter { root } | Collective::Gather { root } => {
            let rounds = match model.ports {
                Ports::All => topo.eccentricity(root) as f64,
                Ports::One => log_k.max(topo.eccentricity(root) as f64),
            };
            Some(rounds * beta + ports((k - 1) * m) * tau)
        }
        _ => None,
    }
}

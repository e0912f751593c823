//! Lower bounds from first principles, printed beside every result so a user sees how
//! far an algorithm is from optimal. They hold in the rounds model with the same β and
//! τ on every link; `None` where we state none (topologies with a host).
//!
//! Time is Σ_r (β + p_r τ) over busy rounds r, p_r the largest message of round r. Two
//! arguments bound it:
//! - **Rounds (start-ups).** Data moves one hop per round, so a node that needs data
//!   from a node at distance e waits e rounds (e = the relevant eccentricity). Under
//!   `--ports one` a node receives one message per round, so the number of nodes whose
//!   data a node can have seen at most doubles per round: ⌈log₂ k⌉ rounds when a node
//!   needs everyone's data (reduce, all-gather, all-reduce, all-to-all, …).
//! - **Volume.** If some node must receive (or send) V elements through its d links,
//!   then Σ_r p_r ≥ V/d under `--ports all` (one message per link per round) and
//!   Σ_r p_r ≥ V under `--ports one`. For all-to-all the total distance travelled,
//!   Σ_{a,b} dist(a, b)·m, spread over the k·d directed links, gives a second bound.
//!
//! So T ≥ R·β + P·τ with R the rounds bound and P the volume bound. Duplex is ignored
//! (the bounds hold a fortiori under half duplex).

use crate::collective::Collective;
use crate::cost::model::{Model, Ports};
use crate::topology::Topology;

/// A lower bound on the time of `collective` with length `m` on `topo` under `model`.
pub fn lower_bound(topo: &Topology, collective: &Collective, m: u64, model: &Model) -> Option<f64> {
    if topo.host().is_some() {
        return None;
    }
    let k = topo.nodes() as u64;
    if m == 0 || k == 1 {
        return Some(0.0);
    }
    let (beta, tau) = (model.beta(), model.tau());
    if let Some(lb) = medium_bound(topo, collective, m, beta, tau) {
        return Some(lb);
    }
    let d = topo.degree().max(1) as f64;
    let one = model.ports == Ports::One;
    let per_link = |v: f64| if one { v } else { v / d };
    let log_k = (64 - (k - 1).leading_zeros()) as f64;
    // Rounds when one node needs data that starts `e` hops away, or everyone's data.
    let reach = |e: u32| e as f64;
    let gather_rounds = |e: u32| if one { log_k.max(e as f64) } else { e as f64 };
    let km = (k - 1) as f64 * m as f64;
    let (rounds, volume) = match *collective {
        Collective::P2p { src, dst } => {
            if src == dst {
                return Some(0.0);
            }
            (reach(topo.distance(src, dst)), per_link(m as f64))
        }
        Collective::Broadcast { root } => {
            (gather_rounds(topo.eccentricity(root)), per_link(m as f64))
        }
        Collective::Scatter { root } | Collective::Gather { root } => {
            (gather_rounds(topo.eccentricity(root)), per_link(km))
        }
        Collective::Allgather => (gather_rounds(topo.diameter()), per_link(km)),
        Collective::Alltoall => {
            let total: f64 = total_distance(topo) * m as f64;
            let links = k as f64 * d;
            let spread = if one { total / k as f64 } else { total / links };
            (gather_rounds(topo.diameter()), per_link(km).max(spread))
        }
        Collective::Reduce { root } => (gather_rounds(topo.eccentricity(root)), per_link(m as f64)),
        Collective::Allreduce => (gather_rounds(topo.diameter()), per_link(m as f64)),
        Collective::Scan | Collective::ExclusiveScan => {
            let e = topo.distance(0, (k - 1) as u32);
            (
                if one { log_k.max(e as f64) } else { e as f64 },
                per_link(m as f64),
            )
        }
        // Each rank's k − 1 foreign blocks must leave it, combined or not.
        Collective::ReduceScatter => (gather_rounds(topo.diameter()), per_link(km)),
    };
    Some(rounds * beta + volume * tau)
}

/// On a bus or a shared memory (seed 004, §2 (A)–(B)), for the collectives of data
/// movement; `None` elsewhere.
///
/// - **Bus**: one transfer at a time, each from one sender: T ≥ w·β + V·τ, w the
///   processors that must send (each its own transfer) and V the elements that must
///   cross the bus (each at least once; a multicast carries the same ones to all).
/// - **Shared memory** with S accesses per round: every move is a write and a read, a
///   round serves at most S of either and charges its longest access, so
///   T ≥ (⌈w/S⌉ + ⌈r/S⌉)β + (V_w + V_r)τ, w the processors that must write, r those
///   that must read, V_w and V_r the most one processor must write and read.
fn medium_bound(topo: &Topology, c: &Collective, m: u64, beta: f64, tau: f64) -> Option<f64> {
    use crate::topology::Medium;
    let kind = topo.medium_kind()?;
    let k = topo.pes() as u64;
    let m = m as f64;
    // (writers, readers, volume over the bus, most written by one, most read by one)
    let (w, r, v, vw, vr) = match *c {
        Collective::P2p { src, dst } if src == dst => return Some(0.0),
        Collective::P2p { .. } => (1, 1, m, m, m),
        Collective::Broadcast { .. } => (1, k - 1, m, m, m),
        Collective::Scatter { .. } => (1, k - 1, (k - 1) as f64 * m, (k - 1) as f64 * m, m),
        Collective::Gather { .. } => (k - 1, 1, (k - 1) as f64 * m, m, (k - 1) as f64 * m),
        Collective::Allgather => (k, k, k as f64 * m, m, (k - 1) as f64 * m),
        Collective::Alltoall => (
            k,
            k,
            (k * (k - 1)) as f64 * m,
            (k - 1) as f64 * m,
            (k - 1) as f64 * m,
        ),
        _ => return None,
    };
    match kind {
        Medium::Bus => Some(w as f64 * beta + v * tau),
        Medium::Shm { accesses } => {
            let s = accesses.max(1) as u64;
            Some((w.div_ceil(s) + r.div_ceil(s)) as f64 * beta + (vw + vr) * tau)
        }
        Medium::Switch => None,
    }
}

/// Σ over ordered pairs of the distance between them: from the factors
/// ([`Topology::total_distance`], seed 002 Theorem 1), or by visiting every pair.
fn total_distance(topo: &Topology) -> f64 {
    match topo.total_distance() {
        Some(t) => t as f64,
        None => {
            let k = topo.nodes();
            (0..k)
                .flat_map(|a| (0..k).map(move |b| (a, b)))
                .map(|(a, b)| topo.distance(a, b) as f64)
                .sum()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_distance_closed_form_matches_enumeration() {
        for n in 1..=6 {
            let topo: Topology = format!("hypercube:{n}").parse().unwrap();
            let k = topo.nodes();
            let brute: f64 = (0..k)
                .flat_map(|a| (0..k).map(move |b| (a, b)))
                .map(|(a, b)| topo.distance(a, b) as f64)
                .sum();
            assert_eq!(total_distance(&topo), brute);
        }
    }

    #[test]
    fn one_port_bounds_are_never_below_all_port_ones() {
        let topo: Topology = "hypercube:5".parse().unwrap();
        let all = Model::new(1.0, 0.1).unwrap();
        let one = Model {
            ports: Ports::One,
            ..all
        };
        for c in [
            Collective::Broadcast { root: 3 },
            Collective::Allgather,
            Collective::Alltoall,
            Collective::Allreduce,
            Collective::Scatter { root: 0 },
        ] {
            let (a, o) = (
                lower_bound(&topo, &c, 100, &all).unwrap(),
                lower_bound(&topo, &c, 100, &one).unwrap(),
            );
            assert!(o >= a, "{c}: one-port {o} < all-port {a}");
            assert!(a > 0.0);
        }
    }
}

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
//!   Σ_{a,b} dist(a, b)·m, spread over the k·d directed links, gives a second bound;
//!   under `--ports one` it is spread over the k nodes' single ports: Σ_r p_r ≥
//!   ⌈m·AS(G)⌉, AS(G) the average status (Dimakopoulos & Dimopoulos, seed 002, §3,
//!   eq. (1), with the ceiling the paper leaves out), computed from the factors of a
//!   product network (Corollary 1), never from all pairs.
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
            // Seed 002, §3, eq. (1): every element crosses its distance, m·S_G element
            // hops in all; one port moves at most one message per node per round, so
            // Σ_r p_r ≥ m·S_G/k = m·AS(G), and Σ_r p_r is a whole number: ⌈m·AS(G)⌉
            // (the paper's bound without its ceiling: docs/errata.md). All ports: the
            // k·d directed links, ⌈m·S_G/(k·d)⌉.
            let total = total_distance(topo) as u128 * m as u128;
            let over = if one {
                k as u128
            } else {
                k as u128 * d as u128
            };
            let spread = total.div_ceil(over) as f64;
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

/// Σ over ordered pairs of the distance between them: from the factors
/// ([`Topology::total_distance`], seed 002 Theorem 1), or by visiting every pair.
fn total_distance(topo: &Topology) -> u64 {
    match topo.total_distance() {
        Some(t) => t,
        None => {
            let k = topo.nodes();
            (0..k)
                .flat_map(|a| (0..k).map(move |b| (a, b)))
                .map(|(a, b)| topo.distance(a, b) as u64)
                .sum()
        }
    }
}

/// The average status AS(G) = Σ_v s(v) / |V| of a topology (seed 002, §3, eq. (1)):
/// the least time of a total exchange of one-element blocks under `--ports one`, β = 0,
/// τ = 1 is ⌈AS(G)⌉. From the factors on a product network (Corollary 1).
pub fn average_status(topo: &Topology) -> f64 {
    total_distance(topo) as f64 / topo.nodes() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_distance_closed_form_matches_enumeration() {
        for n in 1..=6 {
            let topo: Topology = format!("hypercube:{n}").parse().unwrap();
            let k = topo.nodes();
            let brute: u64 = (0..k)
                .flat_map(|a| (0..k).map(move |b| (a, b)))
                .map(|(a, b)| topo.distance(a, b) as u64)
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

    /// The one-port all-to-all bound is ⌈m·AS(G)⌉τ + rounds·β: the average status with
    /// its ceiling, from the factors (seed 002, eq. (1), Corollary 1).
    #[test]
    fn alltoall_one_port_bound_is_the_ceiled_average_status() {
        let one = Model {
            ports: Ports::One,
            ..Model::new(0.0, 1.0).unwrap()
        };
        // (topology, Σ_v s(v), k)
        for (t, total, k) in [
            ("path:3", 8u64, 3u64),
            ("mesh:3x3", 144, 9),
            ("ring:5", 30, 5),
            ("torus:3x4", 12 * (4 * 2 + 3 * 4), 12),
            ("ghc:3x4", 12 * (2 * 4 + 3 * 3), 12),
            ("hypercube:3", 8 * 12, 8),
        ] {
            let topo: Topology = t.parse().unwrap();
            assert_eq!(total_distance(&topo), total, "{t}");
            assert_eq!(average_status(&topo), total as f64 / k as f64, "{t}");
            for m in [1, 2, 7] {
                let lb = lower_bound(&topo, &Collective::Alltoall, m, &one).unwrap();
                assert_eq!(lb, (total * m).div_ceil(k) as f64, "{t}, m = {m}");
            }
        }
    }
}

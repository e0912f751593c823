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
    if *collective == Collective::Download {
        return download(topo, m, model);
    }
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
        Collective::Download => return download(topo, m, model),
    };
    Some(rounds * beta + volume * tau)
}

/// A lower bound on every download (Gichev 1992, seed 003) from the host h (the last
/// rank) to its K PEs, m elements each, under the rounds model with host links of
/// β_h, τ_h and PE links of β, τ; `None` without a host.
///
/// Facts used: every element of PE p's block exists at first only in h's `in`, so it
/// leaves h over a host link at least once; a round in which a message of b elements
/// moves over a link of class c costs at least β_c + bτ_c ≥ β_min = min(β, β_h); a
/// node holding no data of the download sends nothing (the verifier rejects a send of
/// unset data).
///
/// - `--ports one`: a round costs at least the sum of the host's sends in it, so
///   the rounds in which h sends cost at least sβ_h + Kmτ_h over its s messages
///   together. If s ≥ 2 that is at least β_h + Kmτ_h + β_h. If s = 1 (K ≥ 2), the one
///   PE that message reaches holds data only after its round, and the K − 1 others
///   are reached in later rounds, each of which costs at least β_min. So
///   T ≥ β_h + Kmτ_h + [K ≥ 2]·β_min. Start-ups: let q_r be the most messages any
///   node sends in round r; round r costs at least q_r·β_min, and the set of nodes
///   holding data grows at most by the factor 1 + q_r ≤ 2^{q_r}. It starts as {h} and
///   ends with all K + 1 nodes, so Σ q_r ≥ ⌈log₂(K + 1)⌉ (= n + 1 on the n-cube) and
///   T ≥ ⌈log₂(K + 1)⌉·β_min. The bound is the larger of the two.
/// - `--ports all`: the host links carry Km elements, so one of the K carries at
///   least m; its messages serialise, in one round or across rounds:
///   T ≥ β_h + mτ_h.
///
/// Under half duplex both hold a fortiori. With equal parameters and one port, the
/// best schedule of the class in `algorithms::download::optimal` (Gichev's,
/// (n + 1)β + Nτ) is within (n − 1)β of the first bound and within Nτ of the second.
fn download(topo: &Topology, m: u64, model: &Model) -> Option<f64> {
    let host = topo.host()?;
    let k = host as u64; // PEs: every rank below the host
    if m == 0 || k == 0 {
        return Some(0.0);
    }
    let (hb, ht) = (model.host.beta, model.host.tau);
    let beta_min = hb.min(model.beta());
    Some(match model.ports {
        Ports::All => hb + m as f64 * ht,
        Ports::One => {
            let volume = hb + (k * m) as f64 * ht + if k >= 2 { beta_min } else { 0.0 };
            let rounds = (64 - k.leading_zeros()) as f64; // ⌈log₂(K + 1)⌉
            volume.max(rounds * beta_min)
        }
    })
}

/// Σ over ordered pairs of the distance between them.
fn total_distance(topo: &Topology) -> f64 {
    match topo {
        // Each node has C(n, d) nodes at distance d: Σ_d d·C(n, d) = n·2^{n−1}.
        Topology::Hypercube(h) if h.dim() > 0 => {
            h.nodes() as f64 * h.dim() as f64 * (1u64 << (h.dim() - 1)) as f64
        }
        _ => {
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

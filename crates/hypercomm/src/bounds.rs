//! Lower bounds from first principles, printed beside every result so a user sees how
//! far an algorithm is from optimal. They hold in the rounds model with the same β and
//! τ on every link; `None` where we state none (topologies with a host).
//!
//! Time is Σ_r (β + p_r τ) over busy rounds r, p_r the largest load of one directed
//! link in round r (two messages on one link serialise, so a round costs at least
//! β + p_r τ whatever the port and duplex rules; idle rounds cost nothing). An element
//! of a message is one index of the data: the verifier's values are combinations over
//! ranks of one input element, never of several indices. Two arguments bound the sum:
//! - **Rounds (start-ups).** Data moves one hop per round, so a node that needs data
//!   from a node at distance e waits e rounds (e = the relevant eccentricity). Under
//!   `--ports one` a node receives one message per round, so the number of nodes whose
//!   data a node can have seen at most doubles per round: ⌈log₂ k⌉ rounds when a node
//!   needs everyone's data (reduce, all-gather, all-reduce, all-to-all, …).
//! - **Volume.** In round r a node receives (and sends) at most d·p_r elements through
//!   its d links under `--ports all`, and p_r under `--ports one`. So if some node must
//!   receive (or send) V elements, Σ_r p_r ≥ V/d (all ports) or ≥ V (one port). On the
//!   n-cube, d = n:
//!   - broadcast, reduce: the farthest node must receive (the root must send) all m
//!     indices: V = m, so T ≥ nβ + mτ/n with all ports; and under rounds timing both
//!     at once, which prices the pipeline's fill and drain: T ≥ (n − 1)β + mτ/n +
//!     min_x (xβ + mτ/(nx)) ≈ (√(mτ/n) + √β)² + (n − 2)β (`pipeline_bound`);
//!   - scatter, gather: the root's (k − 1) foreign blocks cross its links: V = (k − 1)m,
//!     T ≥ nβ + (2^n − 1)mτ/n;
//!   - all-gather, reduce-scatter: every node receives (sends) k − 1 blocks:
//!     T ≥ nβ + (2^n − 1)mτ/n;
//!   - all-to-all: besides that, every block crosses at least its Hamming distance, so
//!     the k·d directed links carry Σ_{a,b} dist(a, b)·m = k·n·2^{n−1}m elements in all
//!     and the busiest one at least 2^{n−1}m: T ≥ nβ + 2^{n−1}mτ;
//!   - all-reduce: for each index, the messages carrying it form a one-way gossip
//!     (each delivers what its sender knows of that index), which needs at least
//!     2(k − 1) transmissions: let r* be the first round after which some node f knows
//!     all k inputs; the transmissions that brought them to f form an in-tree over the
//!     k nodes (k − 1 of them, all in rounds ≤ r*); every other node that completes in
//!     round r* does so by a round-r* receive outside that tree (what arrives in round
//!     r* cannot be forwarded in it), and every node still incomplete after r* needs a
//!     later receive: k − 1 more. So the k nodes receive at least 2(k − 1)m elements,
//!     the busiest at least 2(k − 1)m/k: T ≥ nβ + 2(k − 1)mτ/(kn) with all ports
//!     (and 2(k − 1)mτ/k with one port, the classical bound of ring all-reduce).
//! - **Average status.** Under `--ports one` the all-to-all's total distance is spread
//!   over the k nodes' single ports: Σ_r p_r ≥ ⌈m·AS(G)⌉, AS(G) the average status
//!   (Dimakopoulos & Dimopoulos, seed 002, §3, eq. (1), with the ceiling the paper
//!   leaves out), computed from the factors of a product network (Corollary 1), never
//!   from all pairs.
//!
//! - **Cuts.** Any split of the nodes into S and T joined by c links: in round r the
//!   links carry at most c·p_r elements from S to T (and as many back), so
//!   Σ_r p_r ≥ D/c for the D elements that must cross from S to T. Under half duplex
//!   (`half` or `half-link`) a link carries both directions in one round only as two
//!   transfers (the simulator sums them), so Σ_r p_r ≥ (D_{S→T} + D_{T→S})/c. On a
//!   product network the cuts taken are those of one factor G_i of q nodes: S the
//!   nodes whose i-th coordinate lies in a set A of s factor nodes, cut by c_A factor
//!   links, so |S| = s·k/q and c = c_A·k/q (every copy of G_i is cut alike). A is a
//!   prefix of a path (c_A = 1), an arc of a cycle (c_A = 2), any set of a complete
//!   graph (c_A = s(q − s)), half a cube or all but one of its nodes
//!   (c_A = 2^{h−1}, h). All-to-all: D_{S→T} = |S||T|m; all-gather and reduce-scatter:
//!   D_{S→T} = |S|m (each of S's blocks crosses at least once; each index of T's
//!   blocks needs S's inputs). This is the bisection bound where the cut is a
//!   bisection, and on meshes it beats the others: on `mesh:Q` (Q even) an
//!   all-to-all needs Q²m/4 elements across the middle link each way.
//! A switch (`switch:K`, seed 004's model F) gives each node one port each way
//! whatever `--ports` says, so its bounds are the one-port ones: ⌈log₂k⌉ rounds when a
//! node needs everyone's data (or the root must reach everyone), and the volume through
//! one node's port.
//!
//! So T ≥ R·β + P·τ with R the rounds bound and P the volume bound (a sum, which is
//! more than the max of the two terms). Except in the cut bound, duplex is ignored
//! (the bounds hold a fortiori under half duplex). The tests below check the bound against the simulated time of
//! every registry algorithm on hypercube:0..=6 at lengths up to 10⁵, bandwidth
//! dominating or not.

use crate::collective::Collective;
use crate::cost::model::{Model, Ports, Timing};
use crate::topology::Topology;

/// A lower bound on the time of `collective` with length `m` on `topo` under `model`
/// (a variable-count collective: with every count m).
pub fn lower_bound(topo: &Topology, collective: &Collective, m: u64, model: &Model) -> Option<f64> {
    if *collective == Collective::Download {
        return download(topo, m, model);
    }
    if topo.host().is_some() {
        return None;
    }
    // A variable-count collective here has every count m (the question carries no
    // counts): its fixed-count form's bound. With other counts there is none.
    if collective.kind().is_varcount() {
        return lower_bound(topo, &collective.fixed(), m, model);
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
    // A switch's nodes have one port each way whatever `--ports` says (the simulator's
    // rule, `cost::node_ports`), so its bounds are the one-port ones.
    let switch = topo.medium_kind() == Some(crate::topology::Medium::Switch);
    let one = model.ports == Ports::One || switch;
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
        Collective::Broadcast { root } | Collective::Reduce { root }
            if model.timing == Timing::Rounds && topo.eccentricity(root) >= 2 =>
        {
            let e = topo.eccentricity(root);
            let c = if one { 1.0 } else { d };
            return Some(
                pipeline_bound(e, m as f64 / c, beta, tau)
                    .max(gather_rounds(e) * beta + per_link(m as f64) * tau),
            );
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
        // One-way gossip per index: 2(k − 1) transmissions, k ≥ 2 (module doc).
        Collective::Allreduce => (
            gather_rounds(topo.diameter()),
            per_link(2.0 * km / k as f64),
        ),
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
        Collective::Gatherv { .. }
        | Collective::Scatterv { .. }
        | Collective::Allgatherv
        | Collective::Alltoallv
        | Collective::ReduceScatterv => return None,
        // Rank r's m elements come from its mirror across the diagonal.
        Collective::Transpose => {
            let far = (0..k as u32)
                .map(|r| topo.distance(r, crate::collective::transposed(k as u32, r)))
                .max()
                .unwrap_or(0);
            if far == 0 {
                return Some(0.0);
            }
            (reach(far), per_link(m as f64))
        }
    };
    let volume = volume.max(cut_volume(topo, collective, m, model));
    Some(rounds * beta + volume * tau)
}

/// The cut bound of the module doc: the most elements per directed link that a cut
/// along one factor of a product network forces (0 where none is stated).
fn cut_volume(topo: &Topology, collective: &Collective, m: u64, model: &Model) -> f64 {
    use crate::cost::model::Duplex;
    use crate::topology::Factor;
    let Some(factors) = topo.factors() else {
        return 0.0;
    };
    let all_to_all = match collective {
        Collective::Alltoall => true,
        Collective::Allgather | Collective::ReduceScatter => false,
        _ => return 0.0,
    };
    let half = model.duplex != Duplex::Full;
    let k = topo.nodes() as f64;
    let m = m as f64;
    let mut best: f64 = 0.0;
    for f in factors {
        let q = f.nodes();
        if q < 2 {
            continue;
        }
        // (s, c_A): the factor nodes on S's side and the factor links cut.
        let cuts: Vec<(u32, f64)> = match *f {
            Factor::Path(_) => (1..q).map(|s| (s, 1.0)).collect(),
            Factor::Cycle(_) if q == 2 => vec![(1, 1.0)],
            Factor::Cycle(_) => (1..q).map(|s| (s, 2.0)).collect(),
            Factor::Complete(_) => (1..q).map(|s| (s, s as f64 * (q - s) as f64)).collect(),
            Factor::Cube(h) => {
                let n = h.dim();
                vec![(q / 2, (q / 2) as f64), (q - 1, n as f64)]
            }
        };
        let layer = k / q as f64;
        for (s, c_a) in cuts {
            let (s, t) = (s as f64, (q - s as u32) as f64);
            let c = c_a * layer;
            let (there, back) = if all_to_all {
                let d = s * layer * t * layer * m;
                (d, d)
            } else {
                (s * layer * m, t * layer * m)
            };
            let v = if half {
                (there + back) / c
            } else {
                there.max(back) / c
            };
            best = best.max(v);
        }
    }
    best
}

/// The pipelining bound on a broadcast (or a reduce) whose root is `e ≥ 2` hops from
/// its farthest node f, under rounds timing, when the root sends and f receives at most
/// `c·p_r` elements in round r (c = d links with all ports, 1 with one port), with
/// `a = m/c`: T ≥ (e − 1)β + aτ + min over whole x ≥ 1 of (xβ + aτ/x), about
/// (√(aτ) + √β)² + (e − 2)β, against eβ + aτ from start-ups and volume apart.
///
/// Proof. Number the busy rounds 1..S (idle ones cost nothing). For an index i of the
/// data, let σ(i) be the first round in which the root sends it and φ(i) the first in
/// which f receives it; one hop per round gives φ(i) ≥ σ(i) + e − 1, and φ(i) ≤ S, so
/// σ(i) ≤ x := S − e + 1 (x ≥ 1 when m ≥ 1). At most c·p_r indices have σ = r, and at
/// most c·p_r have φ = r. For each j in 1..x count the indices with σ(i) ≤ j and those
/// with φ(i) ≥ j + e − 1: index i is counted for x − σ(i) + 1 values of j by the first
/// and φ(i) − e + 1 ≥ σ(i) by the second, at least x + 1 in all, so the total is at
/// least m(x + 1). It is at most Σ_j c(Σ_{r ≤ j} p_r + Σ_{r ≥ j+e−1} p_r) = c·Σ_r w_r p_r
/// with w_r the number of j with j ≥ r or j ≤ r − e + 1, two disjoint sets (e ≥ 2), so
/// w_r ≤ x. Hence Σ_r p_r ≥ a(1 + 1/x) and T = Sβ + τΣ_r p_r ≥ (x + e − 1)β +
/// aτ(1 + 1/x). A reduce is the same argument run backwards: σ(i) the first round in
/// which f sends a value holding its input i, φ(i) the first in which the root receives
/// one. The nesbt broadcast (MSBT) takes (ν + n)(β + ⌈m/(nν)⌉τ) on the n-cube, about
/// (√(mτ/n) + √(nβ))²: within 4 % of this at mτ/n = 10⁴β, n = 8, where it was 5.65 %
/// above eβ + aτ.
fn pipeline_bound(e: u32, a: f64, beta: f64, tau: f64) -> f64 {
    let at = a * tau;
    // xβ + aτ/x is convex in x: its whole minimum is at ⌊x*⌋ or ⌈x*⌉, x* = √(aτ/β).
    let term = |x: f64| x * beta + at / x;
    let best = if beta > 0.0 {
        let x = (at / beta).sqrt();
        term(x.floor().max(1.0)).min(term(x.ceil().max(1.0)))
    } else {
        0.0
    };
    (e - 1) as f64 * beta + at + best
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
    // The host's own port rule (`--host-ports`, one by default) decides the volume
    // argument; the doubling argument needs every node one-port.
    Some(match (model.host_ports, model.ports) {
        (Ports::One, ports) => {
            let volume = hb + (k * m) as f64 * ht + if k >= 2 { beta_min } else { 0.0 };
            let rounds = (64 - k.leading_zeros()) as f64; // ⌈log₂(K + 1)⌉
            if ports == Ports::One {
                volume.max(rounds * beta_min)
            } else {
                volume
            }
        }
        _ => hb + m as f64 * ht,
    })
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

    /// The cut bound binds on meshes: the middle link of `mesh:Q` (Q even) carries
    /// Q²m/4 elements each way in an all-to-all (twice that under half duplex), where
    /// the distance-volume bound gives less; the end node's single link carries the
    /// Q − 1 blocks of an all-gather.
    #[test]
    fn cut_bound_binds_on_paths() {
        use crate::cost::model::Duplex;
        let model = Model::new(0.0, 1.0).unwrap();
        let half = Model {
            duplex: Duplex::HalfLink,
            ..model
        };
        for q in [2u32, 4, 6, 8] {
            let t: Topology = format!("path:{q}").parse().unwrap();
            let m = 3;
            let a2a = lower_bound(&t, &Collective::Alltoall, m, &model).unwrap();
            let want = (q * q / 4) as f64 * m as f64;
            assert_eq!(a2a, want, "path:{q}");
            let spread = (total_distance(&t) * m).div_ceil(2 * q as u64) as f64;
            assert!(q == 2 || spread < want, "path:{q}: {spread} ≥ {want}");
            let a2a_half = lower_bound(&t, &Collective::Alltoall, m, &half).unwrap();
            assert_eq!(a2a_half, 2.0 * want, "path:{q}, half-link");
            let ag = lower_bound(&t, &Collective::Allgather, m, &model).unwrap();
            assert_eq!(ag, ((q - 1) * m as u32) as f64, "path:{q}");
        }
    }

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

    /// A switch's nodes have one port each way: its bounds under `--ports all` are the
    /// one-port ones (a broadcast on switch:16 needs ⌈log₂16⌉ start-ups and m words
    /// through one port), as on `complete:K` under `--ports one`.
    #[test]
    fn switch_bounds_are_one_port_whatever_ports_says() {
        let all = Model::new(1.0, 0.01).unwrap();
        let one = Model {
            ports: Ports::One,
            ..all
        };
        for k in [2u32, 5, 16] {
            let switch: Topology = format!("switch:{k}").parse().unwrap();
            let complete: Topology = format!("complete:{k}").parse().unwrap();
            for c in [
                Collective::Broadcast { root: 0 },
                Collective::Scatter { root: 1 },
                Collective::Allgather,
                Collective::Alltoall,
            ] {
                let lb = lower_bound(&switch, &c, 4096, &all).unwrap();
                assert_eq!(lb, lower_bound(&switch, &c, 4096, &one).unwrap());
                assert_eq!(lb, lower_bound(&complete, &c, 4096, &one).unwrap());
            }
        }
        let b = lower_bound(
            &"switch:16".parse().unwrap(),
            &Collective::Broadcast { root: 0 },
            4096,
            &all,
        );
        assert_eq!(b, Some(4.0 + 40.96));
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

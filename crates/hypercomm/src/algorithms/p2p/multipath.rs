//! Point-to-point over node-disjoint paths, the message split over them and each
//! share pipelined: on a hypercube over its n paths with the paper's even split, on any
//! other product network over the product's disjoint paths with the split that
//! minimises the time.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §3, Prop. 3.1 (H paths of length
//! H and n − H of length H + 2) and Prop. 3.2 (the time). The product's paths are
//! [`Topology::disjoint_paths`]; the uneven split is ours (beyond the paper).
//!
//! **On a hypercube** (any topology the registry sees as a binary cube, [`Fit::Cube`]:
//! `hypercube:N`, `complete:2^N`, `torus:2x2x2`, a medium of 2^N processors) the m
//! elements are split evenly over the n paths of Prop. 3.1 (the first m mod n get one
//! more), each share in ν packets. Cost (rounds model, `--ports all`, full or half-link
//! duplex, seed 004's model E: the source drives n links at once, and the node-disjoint
//! paths use each link one way): ν + L − 1 steps of β + ⌈⌈m/n⌉/ν⌉τ, with L = H + 2 if
//! H < n else L = n; volume H·m + 2·(n − H)·m/n. Optimum (Prop. 3.2):
//! (√((m/n)τ) + √((L − 1)β))², a lower estimate; ⌊m/n⌋ replaces m/n when the long paths
//! carry only ⌊m/n⌋ (docs/errata.md, E6). Under `--ports one` the source's n sends
//! serialise and the method loses its point. (The product split below would be faster
//! on the cube too; the cube keeps the paper's, whose times are pinned.)
//!
//! **On any other product without host** ([`Fit::Product`]: rings, tori, meshes,
//! generalized hypercubes, `complete:K`, and products of them) the paths are the
//! product's P node-disjoint paths, of lengths L_1 ≤ … ≤ L_P (P = Σ κ_i over the
//! coordinates in which src and dst differ plus one detour per neighbour in each other
//! coordinate, so paths of the lengths d, d + 2 and longer; on a ring the two ways
//! round).
//!
//! *The split.* Every path is a pipeline and all pipelines run in the same lock-step
//! rounds, so a round costs β + s τ with s the largest packet in flight anywhere; in T
//! rounds a path of L hops delivers at most T − L + 1 packets (its last packet leaves
//! the source in round T − L at the latest). With all packets of one size z, T rounds
//! therefore carry at most z·N(T) elements, N(T) = Σ_j max(0, T − L_j + 1), and cost
//! T(β + zτ): the best split for T rounds fills every path to the last round with
//! equal packets, z = ⌈m/N(T)⌉. So path j gets ν_j = max(0, T − L_j + 1) packets: a
//! path one hop longer carries one packet less, and a path longer than T nothing.
//! With q = ⌊m/N(T)⌋ and r = m mod N(T), r packets hold q + 1 elements: the first
//! ones of the paths, filled like the packets themselves to the least level u* with
//! N(u*) ≥ r (path j gets max(0, u* − 1 − L_j + 1) of them, and the rest one each on
//! paths of L_j ≤ u*), so a (q + 1)-packet is in flight in rounds 0..u* only. ν, the
//! packet count given to `--packets`, is the shortest path's, ν_1 = T − L_1 + 1, so
//! T = ν + L_1 − 1; with `--packets opt` T minimises the time below over every T from
//! L_1 up to T_max = min{T : N(T) ≥ m}, where packets would start to be empty (past
//! 2^16 values of T: the first 2^12, 2^11 around the continuous optimum, and T_max;
//! `--packets opt` then searches ν by simulation on small machines). This is the
//! best split with equal packets (the bound above); it is never slower than the even
//! split at the same T (which has fewer packets of at least as many elements).
//!
//! *Cost* (rounds model, `--ports all`, full or half-link duplex: the paths share no
//! node but the ends, so no link, and each link carries one direction), exactly
//! T(β + qτ) + \[r > 0\]·u*·τ; for one path (P = 1) this is the pipeline's
//! (ν + d − 1)(β + qτ) + \[r > 0\](r + d − 1)τ. Volume Σ_j L_j·share_j. Under
//! `--ports one` the source sends, and the destination receives, up to P messages a
//! round, which serialise: each round costs at most P_used times the all-port one
//! (P_used the paths that carry data; max(P_used, 2) under `--duplex half`, where an
//! inner node's receive and send add up; 2 under all ports and `--duplex half`), an
//! upper bound stated as such; no form under other port counts.
//!
//! Constraints: a hypercube, or a product network without host. On the cube ν packets
//! per path, 1 ≤ ν ≤ max(⌈m/n⌉, 1); on a product 1 ≤ ν ≤ T_max − L_1 + 1 (each packet
//! needs an element). src = dst: one local copy, time 0; m = 0: no step.

use crate::algorithms::fit::{self, Built, Fit};
use crate::algorithms::pipeline::{self, PathPipeline};
use crate::algorithms::{Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::schedule::Rank;
use crate::topology::{Hypercube, Topology};
use crate::verify::Problem;

/// The cube, or any product network without host.
pub fn fits(t: &Topology) -> Result<Fit, String> {
    if let Ok(cube) = fit::cube(t) {
        return Ok(Fit::Cube(cube));
    }
    match (t.factors(), t.host()) {
        (Some(fs), None) => Ok(Fit::Product {
            factors: fs.to_vec(),
        }),
        _ => Err(
            "it runs on a hypercube or a product network without host (ring, torus, mesh, \
             ghc, complete, and their products)"
                .into(),
        ),
    }
}

fn endpoints(problem: &Problem<'_>) -> Result<(Rank, Rank), Error> {
    match problem.collective {
        Collective::P2p { src, dst } => Ok((src, dst)),
        other => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("multipath performs p2p, not {other}"),
        }),
    }
}

/// Build the schedule on the view `fits` found.
pub fn build(problem: &Problem<'_>, params: &Params, fit: &Fit) -> Built {
    match fit {
        Fit::Cube(cube) => build_cube(problem, params, cube),
        _ => {
            let s = Split::new(problem)?;
            let t = s.rounds(params)?;
            Ok(Box::new(s.schedule(t)))
        }
    }
}

/// The closed forms on the view of the problem's topology.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    match fits(problem.topology) {
        Ok(Fit::Cube(cube)) => cube_formulas(problem, params, &cube),
        Ok(_) => product_formulas(problem, params),
        Err(_) => vec![],
    }
}

/// Longest path that carries data: L of Prop. 3.2 (H + 2 if H < n, else H), except
/// that with m ≤ H only the H short paths carry an element (0 when src = dst).
fn longest(cube: &Hypercube, src: u32, dst: u32, m: u64) -> u64 {
    let h = Hypercube::hamming(src, dst) as u64;
    if h == 0 {
        0
    } else if h < cube.dim() as u64 && m > h {
        h + 2
    } else {
        h
    }
}

/// The largest share of one path: ⌈m/n⌉.
fn share(cube: &Hypercube, m: u64) -> u64 {
    m.div_ceil(cube.dim().max(1) as u64)
}

/// The cube's schedule: the n paths of Prop. 3.1, the message split evenly.
fn build_cube(problem: &Problem<'_>, params: &Params, cube: &Hypercube) -> Built {
    let (src, dst) = endpoints(problem)?;
    let part = share(cube, problem.len);
    // ν counts the packets of each path, so its limit is the largest share, ⌈m/n⌉,
    // not m: say so rather than `resolve`'s "ν packets for ⌈m/n⌉ elements".
    let nu = match pipeline::resolve(params, part, longest(cube, src, dst, problem.len)) {
        Err(Error::InvalidParameter { what, .. }) => {
            return Err(Error::InvalidParameter {
                what,
                reason: format!(
                    "{} packets per path, but the largest of the {} paths' shares is \
                     ⌈m/n⌉ = {part} of m = {} elements; valid: 1..={} (each packet needs \
                     an element) or `opt`",
                    packets_given(params),
                    cube.dim(),
                    problem.len,
                    part.max(1)
                ),
            });
        }
        other => other?,
    };
    Ok(Box::new(PathPipeline::new(
        cube.nodes(),
        src,
        dst,
        problem.len,
        nu,
        cube.disjoint_paths(src, dst),
    )))
}

fn packets_given(params: &Params) -> String {
    match params.packets {
        Packets::Count(nu) => nu.to_string(),
        Packets::Opt => "opt".into(),
    }
}

/// (ν + L − 1)(β + ⌈⌈m/n⌉/ν⌉τ) exact under all ports, full or half-link duplex;
/// Prop. 3.2 with
/// `--packets opt`.
fn cube_formulas(problem: &Problem<'_>, params: &Params, cube: &Hypercube) -> Vec<Formula> {
    let Ok((src, dst)) = endpoints(problem) else {
        return vec![];
    };
    // Node-disjoint paths, each link one way: half-link duplex as full.
    if params.model.ports != Ports::All || params.model.duplex == Duplex::Half {
        return vec![];
    }
    let (l, part) = (
        longest(cube, src, dst, problem.len),
        share(cube, problem.len),
    );
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let Ok(nu) = pipeline::resolve(params, part, l) else {
        return vec![];
    };
    // Exact when every packet of every path has the same size; otherwise the paths'
    // shares and packets differ by one element and ⌈·⌉ makes it an upper bound.
    let n = cube.dim().max(1) as u64;
    let even = problem.len % n == 0 && part % nu == 0;
    let expr = format!("(ν + L − 1)(β + ⌈⌈m/n⌉/ν⌉τ), L = {l}, ν = {nu}");
    let reference = "Saad & Schultz 1985, §3, Prop. 3.2 (discrete form)";
    let value = if l == 0 || part == 0 {
        0.0
    } else {
        (nu + l - 1) as f64 * (beta + part.div_ceil(nu) as f64 * tau)
    };
    let mut v = vec![if even {
        Formula::exact(expr, reference, value)
    } else {
        Formula::upper_bound(expr, reference, value)
    }];
    if params.packets == Packets::Opt {
        // Prop. 3.2 takes the per-path share as the real m/n. The longest path's own
        // pipeline bounds the time from below, so m/n is a lower estimate whenever
        // some path of length L carries at least m/n elements; when the long paths
        // carry only ⌊m/n⌋ (the m mod n extra elements all went to the H short
        // paths), the estimate takes ⌊m/n⌋ instead (docs/errata.md, E6).
        let h = Hypercube::hamming(src, dst) as u64;
        let floor_only = l == h + 2 && problem.len % n <= h;
        let (expr, s) = if floor_only {
            ("(√(⌊m/n⌋τ) + √((L − 1)β))²", (problem.len / n) as f64)
        } else {
            ("(√((m/n)τ) + √((L − 1)β))²", problem.len as f64 / n as f64)
        };
        let value = if l == 0 || problem.len == 0 {
            0.0
        } else {
            ((s * tau).sqrt() + ((l - 1) as f64 * beta).sqrt()).powi(2)
        };
        v.push(Formula::estimate(
            expr,
            "Saad & Schultz 1985, §3, Prop. 3.2",
            value,
        ));
    }
    v
}

/// The product's split (module doc): the disjoint paths, shortest first, and the
/// rounds T that fix every path's packets.
struct Split {
    nodes: u32,
    src: Rank,
    dst: Rank,
    m: u64,
    /// The paths, shortest first (src ..= dst).
    paths: Vec<Vec<Rank>>,
    /// Their lengths L_1 ≤ … ≤ L_P.
    lens: Vec<u64>,
}

/// The exact form's parts for T rounds: (T, q, r, u*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Parts {
    t: u64,
    q: u64,
    r: u64,
    u: u64,
}

impl Split {
    fn new(problem: &Problem<'_>) -> Result<Self, Error> {
        let (src, dst) = endpoints(problem)?;
        let topo = problem.topology;
        let mut paths = topo
            .disjoint_paths(src, dst)
            .ok_or_else(|| Error::InvalidParameter {
                what: "--topology",
                reason: format!("multipath has no disjoint paths on {topo}"),
            })?;
        paths.sort_by_key(|p| p.len());
        let lens = paths.iter().map(|p| p.len() as u64 - 1).collect();
        Ok(Split {
            nodes: topo.nodes(),
            src,
            dst,
            m: problem.len,
            paths,
            lens,
        })
    }

    /// L_1, the shortest path (0 when src = dst).
    fn shortest(&self) -> u64 {
        self.lens[0]
    }

    /// N(u) = Σ_j max(0, u − L_j + 1): the packets that reach dst within u rounds.
    fn slots(&self, u: u64) -> u64 {
        self.lens.iter().map(|&l| (u + 1).saturating_sub(l)).sum()
    }

    /// The least u ≥ L_1 with N(u) ≥ want (want ≥ 1).
    fn level(&self, want: u64) -> u64 {
        let (mut lo, mut hi) = (self.shortest(), self.shortest() + want);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.slots(mid) >= want {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// T_max = min{T : N(T) ≥ m}: more rounds would leave packets empty.
    fn most(&self) -> u64 {
        self.level(self.m.max(1))
    }

    /// The form's parts for T rounds (T ≤ T_max).
    fn parts(&self, t: u64) -> Parts {
        let n = self.slots(t);
        let (q, r) = (self.m / n, self.m % n);
        let u = if r > 0 { self.level(r) } else { 0 };
        Parts { t, q, r, u }
    }

    /// T(β + qτ) + [r > 0]·u*·τ.
    fn time(&self, t: u64, beta: f64, tau: f64) -> f64 {
        if self.m == 0 || self.src == self.dst {
            return 0.0;
        }
        let p = self.parts(t);
        p.t as f64 * (beta + p.q as f64 * tau) + p.u as f64 * tau
    }

    /// The rounds T: ν + L_1 − 1 for `--packets ν` (checked against T_max), or the T
    /// that minimises the time.
    fn rounds(&self, params: &Params) -> Result<u64, Error> {
        let (l1, most) = (self.shortest(), self.most());
        let nu_max = most - l1 + 1;
        match params.packets {
            Packets::Count(nu) if (1..=nu_max).contains(&nu) => Ok(nu + l1 - 1),
            Packets::Count(nu) => Err(Error::InvalidParameter {
                what: "--packets",
                reason: format!(
                    "{nu} packets on the shortest of the {} paths, but m = {} elements \
                     fill at most {nu_max} there (each packet needs an element); valid: \
                     1..={nu_max} or `opt`",
                    self.paths.len(),
                    self.m
                ),
            }),
            Packets::Opt => {
                let (beta, tau) = (params.model.beta(), params.model.tau());
                Ok(self
                    .candidates(beta, tau)
                    .min_by(|&a, &b| {
                        self.time(a, beta, tau)
                            .total_cmp(&self.time(b, beta, tau))
                            .then(a.cmp(&b))
                    })
                    .unwrap_or(l1))
            }
        }
    }

    /// The T searched for `opt`: every T from L_1 up to T_max when that is at most
    /// 2^16 values; else the first 2^12, a window around the continuous optimum of
    /// T(β + mτ/N(T)) with every path in use, and T_max.
    fn candidates(&self, beta: f64, tau: f64) -> Box<dyn Iterator<Item = u64>> {
        let (l1, most) = (self.shortest(), self.most());
        if most - l1 <= 1 << 16 {
            return Box::new(l1..=most);
        }
        // N(T) = P·T + c for T ≥ L_P, c = Σ_j (1 − L_j) ≤ 0; the minimum of
        // Tβ + mτT/(PT + c) is at (PT + c)² = −mτc/β.
        let p = self.lens.len() as f64;
        let c: f64 = self.lens.iter().map(|&l| 1.0 - l as f64).sum();
        let star = if beta > 0.0 && c < 0.0 {
            ((-(self.m as f64) * tau * c / beta).sqrt() - c) / p
        } else {
            most as f64
        };
        let mid = (star.max(l1 as f64) as u64).min(most);
        let window = mid.saturating_sub(1 << 10).max(l1)..=(mid + (1 << 10)).min(most);
        Box::new(
            (l1..=(l1 + (1 << 12)).min(most))
                .chain(window)
                .chain(std::iter::once(most)),
        )
    }

    /// Path j's (packets, elements) for T rounds: ν_j = max(0, T − L_j + 1) packets of
    /// q elements, and its r_j packets of q + 1 first.
    fn shares(&self, t: u64) -> Vec<(u64, u64)> {
        let p = self.parts(t);
        // Big packets: up to level u* − 1 on every path, then one each on the paths of
        // L_j ≤ u* until r is reached.
        let mut left = p.r - if p.r > 0 { self.slots(p.u - 1) } else { 0 };
        self.lens
            .iter()
            .map(|&l| {
                let nu = (t + 1).saturating_sub(l);
                let mut big = if p.r > 0 { p.u.saturating_sub(l) } else { 0 };
                if p.r > 0 && l <= p.u && left > 0 {
                    big += 1;
                    left -= 1;
                }
                (nu, nu * p.q + big)
            })
            .collect()
    }

    fn schedule(&self, t: u64) -> PathPipeline {
        let nu = t + 1 - self.shortest();
        let shares = if self.src == self.dst {
            vec![(self.paths[0].clone(), self.m, 1)]
        } else {
            self.paths
                .iter()
                .zip(self.shares(t))
                .map(|(path, (nu, len))| (path.clone(), len, nu))
                .collect()
        };
        PathPipeline::split(self.nodes, self.src, self.dst, self.m, nu, shares)
    }
}

/// T(β + qτ) + [r > 0]u*τ exact under all ports, full or half-link duplex; the
/// one-port and half-duplex upper bounds (module doc).
fn product_formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(s) = Split::new(problem) else {
        return vec![];
    };
    let Ok(t) = s.rounds(params) else {
        return vec![];
    };
    let model = &params.model;
    let (beta, tau) = (model.beta(), model.tau());
    let value = s.time(t, beta, tau);
    let p = s.parts(t);
    let used = if s.m == 0 || s.src == s.dst {
        1
    } else {
        s.shares(t).iter().filter(|(_, len)| *len > 0).count() as u64
    };
    let expr = format!(
        "T(β + qτ) + [r > 0]u*τ, N(T) = Σ_j max(0, T − L_j + 1), q = ⌊m/N(T)⌋, \
         r = m mod N(T), u* = min{{u : N(u) ≥ r}}; L = {:?}, T = {}, q = {}, r = {}, u* = {}",
        s.lens, p.t, p.q, p.r, p.u
    );
    let reference = "Saad & Schultz 1985, §3, Prop. 3.1–3.2, on a product's disjoint paths with the split that minimises the rounds (beyond the paper)";
    let factor = match (model.ports, model.duplex) {
        (Ports::All, Duplex::Full | Duplex::HalfLink) => {
            return vec![Formula::exact(expr, reference, value)]
        }
        (Ports::All, Duplex::Half) => 2,
        (Ports::One, Duplex::Half) => used.max(2),
        (Ports::One, _) => used,
        _ => return vec![],
    };
    vec![Formula::upper_bound(
        format!("{factor}·({expr})"),
        reference,
        factor as f64 * value,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::model::{Model, Timing};
    use crate::cost::simulate;
    use crate::verify::{verify, Strictness};

    fn problem(t: &Topology, src: Rank, dst: Rank, m: u64) -> Problem<'_> {
        Problem {
            topology: t,
            collective: Collective::P2p { src, dst },
            len: m,
            commutative: true,
            counts: None,
        }
    }

    /// The exact form against the simulator (rounds, all ports, full and half-link
    /// duplex) on tori, meshes, ghc and mixed products, from every source to four
    /// destinations (every pair on torus:3x3x3, whose ends differ in 0 to 3
    /// coordinates), both regimes, ν = 1, 2, 5 and `opt`; the one-port and
    /// half-duplex bounds hold.
    #[test]
    fn product_form_is_exact_from_every_source() {
        for name in [
            "torus:4x5",
            "torus:3x3x3",
            "mesh:3x4",
            "ghc:3x4",
            "ring:7",
            "ring:5*path:3",
            "complete:4*ring:3",
            "hypercube:2*ring:3",
            "complete:5",
        ] {
            let t: Topology = name.parse().unwrap();
            let k = t.nodes();
            for (beta, tau) in [(1.5, 0.03), (0.1, 1.0)] {
                for m in [1u64, 7, 100] {
                    for src in 0..k {
                        let dsts: Vec<Rank> = if name == "torus:3x3x3" {
                            (0..k).collect()
                        } else {
                            vec![0, k / 2, k - 1, (src * 7 + 3) % k]
                        };
                        for dst in dsts {
                            check(&t, src, dst, m, beta, tau);
                        }
                    }
                }
            }
        }
    }

    fn check(t: &Topology, src: Rank, dst: Rank, m: u64, beta: f64, tau: f64) {
        let pr = problem(t, src, dst, m);
        let s = Split::new(&pr).unwrap();
        for packets in [
            Packets::Count(1),
            Packets::Count(2),
            Packets::Count(5),
            Packets::Opt,
        ] {
            for (ports, duplex) in [
                (Ports::All, Duplex::Full),
                (Ports::All, Duplex::HalfLink),
                (Ports::One, Duplex::Full),
                (Ports::All, Duplex::Half),
            ] {
                let model = Model {
                    ports,
                    duplex,
                    timing: Timing::Rounds,
                    ..Model::new(beta, tau).unwrap()
                };
                let params = Params { packets, model };
                let Ok(sched) = build(&pr, &params, &Fit::Product { factors: vec![] }) else {
                    assert!(
                        matches!(packets, Packets::Count(nu) if nu > 1),
                        "{t} {src}→{dst}"
                    );
                    continue;
                };
                verify(pr, sched.as_ref(), Strictness::default()).unwrap();
                let time = simulate(t, sched.as_ref(), &model).time;
                let forms = formulas(&pr, &params);
                assert_eq!(forms.len(), 1, "{t} {src}→{dst} m {m}");
                let f = &forms[0];
                assert!(
                    f.holds_for(time),
                    "{t} {src}→{dst} m {m} {packets:?} {ports} {duplex}: {} = {} vs {time}",
                    f.expr,
                    f.value
                );
                if ports == Ports::All && duplex != Duplex::Half {
                    assert!(f.is_exact());
                    // Never slower than the paper's even split at its own best ν
                    // (ν on every path, T = ν + L_max − 1 rounds).
                    if src != dst && m > 0 && packets == Packets::Opt {
                        let p = s.paths.len() as u64;
                        let lmax = *s.lens.last().unwrap();
                        let part = m.div_ceil(p);
                        let even = (1..=part)
                            .map(|nu| {
                                (nu + lmax - 1) as f64 * (beta + part.div_ceil(nu) as f64 * tau)
                            })
                            .fold(f64::INFINITY, f64::min);
                        assert!(time <= even + 1e-9, "{t} {src}→{dst}: {time} > even {even}");
                    }
                }
            }
        }
    }

    /// The ends differ in 1, 2 and 3 coordinates: the paths are the degree's, and
    /// longer paths carry no more than shorter ones.
    #[test]
    fn longer_paths_carry_less() {
        let t: Topology = "torus:5x5x5".parse().unwrap();
        for dst in [
            t.rank_of(&[2, 0, 0]),
            t.rank_of(&[1, 2, 0]),
            t.rank_of(&[1, 1, 2]),
        ] {
            let pr = problem(&t, 0, dst, 1000);
            let s = Split::new(&pr).unwrap();
            assert_eq!(s.paths.len(), 6, "{dst}");
            for tt in [s.shortest(), s.shortest() + 3, s.most()] {
                let sh = s.shares(tt);
                assert_eq!(sh.iter().map(|x| x.1).sum::<u64>(), 1000);
                for w in 0..sh.len() - 1 {
                    assert!(
                        sh[w].1 >= sh[w + 1].1,
                        "{dst} T {tt}: {sh:?} over {:?}",
                        s.lens
                    );
                }
            }
            check(&t, 0, dst, 1000, 1.5, 0.03);
        }
    }

    /// A hypercube keeps the paper's even split: the view is the cube.
    #[test]
    fn cube_keeps_the_even_split() {
        for name in ["hypercube:3", "complete:8", "torus:2x2x2"] {
            let t: Topology = name.parse().unwrap();
            assert!(matches!(fits(&t), Ok(Fit::Cube(_))), "{name}");
        }
        assert!(matches!(
            fits(&"torus:3x4".parse().unwrap()),
            Ok(Fit::Product { .. })
        ));
        assert!(fits(&"hypercube:2+host".parse().unwrap()).is_err());
        assert!(fits(&"bus:3".parse().unwrap()).is_err());
    }
}

//! Point-to-point along one shortest path of any topology: on `complete:K` the one
//! message src → dst over their link; elsewhere store-and-forward along the path,
//! pipelined in ν packets.
//!
//! Reference: Saad & Schultz, "Data Communication in Parallel Architectures" (1986
//! report, Parallel Computing 1989; seed 004): on a switch every pair of processors is
//! linked, so a transfer is one message of cost β + mτ (§3.1 (F), T_{1,S} = τ_S + N/b_S,
//! exact on `switch:K` and `complete:K`); on a network where the ends are
//! d hops apart the message is forwarded along a shortest path, and split into ν packets
//! it is pipelined along it as on the hypercube (Saad & Schultz 1985, YALEU/DCS/RR-428,
//! §3, eq. (3.1); `ecube.rs` derives the exact form, `pipeline.rs` the schedule).
//!
//! The path is [`shortest_path`](crate::topology::Topology::shortest_path): the link
//! itself on `complete:K`; the e-cube route on `hypercube:N` (there this is the same
//! schedule as `ecube`, registered on every topology so that one name serves them all);
//! on `hypercube:N+host` the e-cube route when the ends are at most 2 cube hops apart,
//! else the two host links. A path's links are all of one class c (host links when it
//! touches the host, else net).
//!
//! Cost (rounds model, any port rule: each node makes at most one send and one receive
//! per step; under `--duplex half` an interior node does both in one step, so the form
//! is exact there only when d ≤ 1; under `--duplex half-link` each link of the path
//! carries one direction, so it holds): ν + d − 1 steps of β_c + ⌈m/ν⌉τ_c, exactly
//! (ν + d − 1)(β_c + qτ_c) + \[r > 0\](r + d − 1)τ_c with q = ⌊m/ν⌋, r = m mod ν; volume
//! d·m. On `complete:K` (d = 1) ν = 1 is optimal: one step, β + mτ, volume m, the least
//! possible. src = dst: one step of a local copy, time 0, volume 0; m = 0: no step.
//! With `--packets opt` ν minimises the exact form under the path's class costs, and
//! the continuous optimum (√(mτ_c) + √((d − 1)β_c))² of eq. (3.1) is a lower estimate.
//!
//! Constraints: any topology (`complete:K` for every K ≥ 1, `hypercube:N`,
//! `hypercube:N+host`), any src and dst (src = dst allowed); 1 ≤ ν ≤ max(m, 1).

use crate::algorithms::pipeline::{self, PathPipeline};
use crate::algorithms::{Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, LinkCost, Model};
use crate::error::Error;
use crate::schedule::{Rank, Schedule};
use crate::topology::LinkClass;
use crate::verify::Problem;

/// The path from src to dst and the cost of its links.
fn route(problem: &Problem<'_>, model: &Model) -> Result<(Vec<Rank>, LinkCost), Error> {
    let (src, dst) = match problem.collective {
        Collective::P2p { src, dst } => (src, dst),
        other => {
            return Err(Error::InvalidParameter {
                what: "--op",
                reason: format!("direct performs p2p, not {other}"),
            })
        }
    };
    let topo = problem.topology;
    let path = topo.shortest_path(src, dst);
    let class = path
        .windows(2)
        .next()
        .map_or(LinkClass::Net, |h| topo.link_class(h[0], h[1]));
    Ok((path, model.link(class)))
}

/// ν for a path of `depth` hops whose links cost `link`: `opt` minimises the exact
/// form under those costs; a count is checked against 1..=max(m, 1).
fn packets(params: &Params, m: u64, depth: u64, link: LinkCost) -> Result<u64, Error> {
    match params.packets {
        Packets::Opt => Ok(pipeline::best(m, depth, link.beta, link.tau)),
        Packets::Count(_) => pipeline::resolve(params, m, depth),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (path, link) = route(problem, &params.model)?;
    let (src, dst) = (path[0], path[path.len() - 1]);
    let nu = packets(params, problem.len, path.len() as u64 - 1, link)?;
    Ok(Box::new(PathPipeline::new(
        problem.topology.nodes(),
        src,
        dst,
        problem.len,
        nu,
        vec![path],
    )))
}

/// (ν + d − 1)(β + qτ) + \[r > 0\](r + d − 1)τ with the path's class costs, exact under
/// full or half-link duplex, or when d ≤ 1 (β + mτ on `complete:K` with ν = 1); the
/// continuous optimum (3.1) as a lower estimate with `--packets opt` there.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok((path, link)) = route(problem, &params.model) else {
        return vec![];
    };
    let d = path.len() as u64 - 1;
    let m = problem.len;
    let Ok(nu) = packets(params, m, d, link) else {
        return vec![];
    };
    let host = problem.topology.host().is_some_and(|h| path.contains(&h));
    let (beta, tau) = if host { ("β_h", "τ_h") } else { ("β", "τ") };
    let mut v = Vec::new();
    // The path's links carry one direction: half-link duplex as full.
    if params.model.duplex != Duplex::Half || d <= 1 {
        let expr = match (d, nu) {
            (0, _) => "0 (src = dst: a local copy)".to_string(),
            (1, 1) => format!("{beta} + m{tau} (one message over the link)"),
            _ => format!(
                "(ν + d − 1)({beta} + q{tau}) + [r > 0](r + d − 1){tau}, q = ⌊m/ν⌋, r = m mod ν, d = {d}, ν = {nu}"
            ),
        };
        v.push(Formula::exact(
            expr,
            "Saad & Schultz 1986 (seed 004), §3.1 (F), T_{1,S}, a transfer over one link; Saad & Schultz 1985, §3 (pipelining along one path)",
            pipeline::time(m, d, nu, link.beta, link.tau),
        ));
    }
    if params.packets == Packets::Opt && params.model.duplex != Duplex::Half {
        v.push(Formula::estimate(
            format!("(√(m{tau}) + √((d − 1){beta}))²"),
            "Saad & Schultz 1985, §3, eq. (3.1)",
            pipeline::continuous_optimum(m, d, link.beta, link.tau),
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::simulate;
    use crate::schedule::{materialize, Op};
    use crate::topology::Topology;
    use crate::verify::{verify, Strictness};

    fn topologies() -> Vec<Topology> {
        [
            "complete:1",
            "complete:2",
            "complete:3",
            "complete:7",
            "complete:8",
            "hypercube:0",
            "hypercube:3",
            "hypercube:0+host",
            "hypercube:1+host",
            "hypercube:4+host",
        ]
        .iter()
        .map(|t| t.parse().unwrap())
        .collect()
    }

    #[test]
    fn shortest_paths_are_shortest_simple_and_linked() {
        for topo in topologies() {
            let k = topo.nodes();
            for a in 0..k {
                for b in 0..k {
                    let p = topo.shortest_path(a, b);
                    assert_eq!(p.len() as u32 - 1, topo.distance(a, b), "{topo} {a}→{b}");
                    assert_eq!((p[0], p[p.len() - 1]), (a, b), "{topo}");
                    assert!(p.windows(2).all(|h| topo.are_linked(h[0], h[1])), "{topo}");
                    let classes: Vec<_> =
                        p.windows(2).map(|h| topo.link_class(h[0], h[1])).collect();
                    assert!(classes.windows(2).all(|c| c[0] == c[1]), "{topo} {p:?}");
                    let mut seen = p.clone();
                    seen.sort_unstable();
                    seen.dedup();
                    assert_eq!(seen.len(), p.len(), "{topo}: {p:?} revisits a node");
                }
            }
        }
    }

    /// On `complete:K`: one send, one receive, β + mτ, for every pair.
    #[test]
    fn one_message_on_a_complete_graph() {
        let model = Model::new(0.7, 0.13).unwrap();
        let params = Params {
            packets: Packets::Opt,
            model,
        };
        for k in 1..=9 {
            let topo = Topology::complete(k);
            for src in 0..k {
                for dst in 0..k {
                    let problem = Problem {
                        topology: &topo,
                        collective: Collective::P2p { src, dst },
                        len: 11,
                        commutative: true,
                        counts: None,
                    };
                    let s = build(&problem, &params).unwrap();
                    verify(problem, s.as_ref(), Strictness::default()).unwrap();
                    let ops: Vec<(Rank, Op)> = materialize(s.as_ref())
                        .programs
                        .iter()
                        .flat_map(|p| {
                            p.steps
                                .iter()
                                .flat_map(|st| st.ops.iter().map(|o| (p.rank, o.clone())))
                        })
                        .collect();
                    let want_ops = if src == dst { 1 } else { 2 };
                    assert_eq!(ops.len(), want_ops, "complete:{k} {src}→{dst}: {ops:?}");
                    let t = simulate(&topo, s.as_ref(), &model).time;
                    let want = if src == dst { 0.0 } else { 0.7 + 11.0 * 0.13 };
                    assert!((t - want).abs() < 1e-9, "complete:{k} {src}→{dst}: {t}");
                    let f = &formulas(&problem, &params)[0];
                    assert!(f.is_exact() && f.holds_for(t), "{f:?} against {t}");
                }
            }
        }
    }

    /// Through the host, the host links' β_h, τ_h price the pipeline, and `opt` is
    /// chosen against them.
    #[test]
    fn host_paths_are_priced_with_the_host_links() {
        let topo: Topology = "hypercube:3+host".parse().unwrap();
        let mut model = Model::new(1.0, 0.01).unwrap();
        model.host = LinkCost {
            beta: 6.5,
            tau: 0.008,
        };
        let params = Params {
            packets: Packets::Opt,
            model,
        };
        for (src, dst, hops) in [(0, 7, 2), (0, 3, 2), (8, 5, 1), (2, 8, 1)] {
            let problem = Problem {
                topology: &topo,
                collective: Collective::P2p { src, dst },
                len: 1000,
                commutative: true,
                counts: None,
            };
            let s = build(&problem, &params).unwrap();
            verify(problem, s.as_ref(), Strictness::default()).unwrap();
            let t = simulate(&topo, s.as_ref(), &model).time;
            let exact = formulas(&problem, &params)
                .into_iter()
                .find(|f| f.is_exact())
                .unwrap();
            assert!(exact.holds_for(t), "{src}→{dst}: {exact:?} against {t}");
            let through_host = src == 8 || dst == 8 || (src ^ dst).count_ones() > 2;
            let link = if through_host { model.host } else { model.net };
            let nu = pipeline::best(1000, hops, link.beta, link.tau);
            assert_eq!(s.packets(), Some(nu), "{src}→{dst}");
            let want = pipeline::time(1000, hops, nu, link.beta, link.tau);
            assert!((t - want).abs() < 1e-9, "{src}→{dst}: {t} ≠ {want}");
        }
    }
}

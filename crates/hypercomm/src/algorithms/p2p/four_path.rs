//! One-to-one on a torus grid over four edge-disjoint paths (Saad & Schultz 1986, seed
//! 004, §3.1 (D), Prop. 3.1 and eq. (3.11):
//! T^P_{1,G} = (√(N/(4b_G)) + √((i − 1)τ_G))², i ≤ dist(A, B) + 6 ≤ √k + 6).
//!
//! The paths: as many edge-disjoint paths from A to B as the grid allows (four on
//! `torus:AxB` with A, B ≥ 3; three when one side is 2; two on 2 × 2), of least total
//! length (a minimum-cost flow, one unit per link). Lemma 3.1 says that total is at
//! least 4(dist + 2) when A and B are not aligned; Prop. 3.1 picks four paths of
//! dist + 2 each, the flow may pick two of dist and two of dist + 4 (the same total),
//! and on a torus it uses the wrap-around, so a path may be much shorter than
//! Prop. 3.1's (docs/errata.md, E42). The N = m elements are split evenly over the
//! P paths (the shorter paths get the m mod P extra elements), each share pipelined
//! in ν packets (ν ≤ its share); packet p crosses hop h of its path in step p + h.
//!
//! Cost: max over paths of (ν_j + L_j − 1) steps; exact under all ports (§2 (D)),
//! full or half-link duplex (the paths share no link, and each link of a path carries
//! one direction): Σ_t (β + s_t τ), s_t the largest packet in flight in step t; with
//! `--packets opt` ν minimises it. Volume Σ_j L_j·share_j. (3.11) with i the longest
//! path L and N/4 its share is the continuous optimum of the longest path's pipeline,
//! a lower estimate.
//!
//! Constraints: `torus:AxB`; ν ≤ ⌈m/P⌉ (each packet of the largest share needs an
//! element).

use std::collections::VecDeque;

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{pipeline, Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::Ports;
use crate::error::Error;
use crate::schedule::{Buf, Rank, Region, Schedule};
use crate::topology::Topology;
use crate::verify::Problem;

const NAME: &str = "four-path";

/// Edge-disjoint paths from `src` to `dst` (src ≠ dst), as many as the topology allows,
/// of least total length, shortest first: successive shortest paths in the residual
/// graph of the directed links (capacity 1, cost 1; Bellman–Ford, the graph is small),
/// then the flow decomposed (a minimum-cost flow has no cycle, so every walk along it
/// is a simple path).
pub fn disjoint_paths(t: &Topology, src: Rank, dst: Rank) -> Vec<Vec<Rank>> {
    let k = t.nodes() as usize;
    // Arcs: (from, to); residual flow per arc; arc i ^ 1 is never its reverse here:
    // each directed link is one arc, its residual reverse is the arc `rev[i]`.
    let mut to = Vec::new();
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); k];
    for u in 0..k as Rank {
        for v in t.neighbors(u) {
            out[u as usize].push(to.len());
            to.push(v);
        }
    }
    let from: Vec<Rank> = (0..k as Rank)
        .flat_map(|u| std::iter::repeat_n(u, out[u as usize].len()))
        .collect();
    let n_arcs = to.len();
    let mut flow = vec![false; n_arcs];
    let mut paths_found = 0;
    loop {
        // Bellman–Ford over the residual graph: a forward arc with no flow costs +1;
        // an arc with flow may be undone from its head at cost −1.
        let mut dist = vec![i64::MAX; k];
        let mut via: Vec<Option<(usize, bool)>> = vec![None; k];
        dist[src as usize] = 0;
        let mut queue = VecDeque::from([src]);
        let mut queued = vec![false; k];
        queued[src as usize] = true;
        while let Some(u) = queue.pop_front() {
            queued[u as usize] = false;
            let du = dist[u as usize];
            let mut relax = |v: Rank, cost: i64, arc: usize, forward: bool| {
                if du + cost < dist[v as usize] {
                    dist[v as usize] = du + cost;
                    via[v as usize] = Some((arc, forward));
                    if !queued[v as usize] {
                        queued[v as usize] = true;
                        queue.push_back(v);
                    }
                }
            };
            for &a in &out[u as usize] {
                if !flow[a] {
                    relax(to[a], 1, a, true);
                }
            }
            for (a, &f) in flow.iter().enumerate() {
                if f && to[a] == u {
                    relax(from[a], -1, a, false);
                }
            }
        }
        if dist[dst as usize] == i64::MAX {
            break;
        }
        let mut v = dst;
        while v != src {
            let (a, forward) = via[v as usize].expect("reached");
            flow[a] = forward;
            v = if forward { from[a] } else { to[a] };
        }
        paths_found += 1;
    }
    let mut paths = Vec::with_capacity(paths_found);
    for _ in 0..paths_found {
        let mut path = vec![src];
        let mut u = src;
        while u != dst {
            let a = *out[u as usize]
                .iter()
                .find(|&&a| flow[a])
                .expect("flow is conserved");
            flow[a] = false;
            u = to[a];
            path.push(u);
        }
        paths.push(path);
    }
    paths.sort_by_key(|p| p.len());
    paths
}

/// The routes: each path with its share (offset, length) of the m elements, and the
/// packets of each.
struct Routes {
    paths: Vec<(Vec<Rank>, u64, u64)>,
    nu: u64,
}

impl Routes {
    fn new(t: &Topology, src: Rank, dst: Rank, m: u64, nu: u64) -> Self {
        let found = if src == dst {
            vec![]
        } else {
            disjoint_paths(t, src, dst)
        };
        let count = found.len().max(1) as u64;
        let paths = found
            .into_iter()
            .enumerate()
            .map(|(j, p)| {
                let (off, len) = pipeline::packet(m, count, j as u64);
                (p, off, len)
            })
            .filter(|(_, _, len)| *len > 0)
            .collect();
        Routes { paths, nu }
    }
    fn streams(&self, nu: u64) -> Vec<pipeline::Stream> {
        self.paths
            .iter()
            .map(|(p, _, len)| pipeline::Stream {
                t0: 0,
                depth: p.len() as u64 - 1,
                len: *len,
                nu: nu.min(*len),
            })
            .collect()
    }
    fn time(&self, nu: u64, params: &Params) -> f64 {
        pipeline::streams_time(&self.streams(nu), params.model.beta(), params.model.tau())
    }
}

/// The largest share, ⌈m/P⌉.
fn share(t: &Topology, m: u64) -> u64 {
    m.div_ceil(t.degree().max(1) as u64)
}

fn endpoints(problem: &Problem<'_>) -> Result<(Rank, Rank), Error> {
    match problem.collective {
        Collective::P2p { src, dst } => Ok((src, dst)),
        _ => Err(plan::unfit(NAME, "a point-to-point problem")),
    }
}

/// ν: the count given (at most the largest share), or the one that minimises the time.
fn routes(problem: &Problem<'_>, params: &Params) -> Result<Routes, Error> {
    let (src, dst) = endpoints(problem)?;
    let (t, m) = (problem.topology, problem.len);
    let part = share(t, m);
    match params.packets {
        Packets::Count(_) => {
            let nu = pipeline::resolve(params, part, 1)?;
            Ok(Routes::new(t, src, dst, m, nu))
        }
        Packets::Opt => {
            let mut r = Routes::new(t, src, dst, m, 1);
            r.nu = (1..=part.clamp(1, 4096))
                .min_by(|&a, &b| r.time(a, params).total_cmp(&r.time(b, params)))
                .unwrap_or(1);
            Ok(r)
        }
    }
}

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    params: &Params,
    _a: u32,
    _b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    let r = routes(problem, params)?;
    let k = problem.topology.nodes();
    let (m, c) = (problem.len, problem.collective);
    let Collective::P2p { src, dst } = c else {
        unreachable!("checked by routes")
    };
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    // Item: path j's packet q is j·ν + q.
    let nu = r.nu;
    let mut pieces = Vec::new();
    for (j, (path, off, len)) in r.paths.iter().enumerate() {
        let n = nu.min(*len);
        for q in 0..n {
            let (o, l) = pipeline::packet(*len, n, q);
            pieces.push((j as u64 * nu + q, off + o, l));
            for h in 0..path.len() - 1 {
                p.send(
                    (q as usize) + h,
                    path[h],
                    vec![path[h + 1]],
                    vec![j as u64 * nu + q],
                );
            }
        }
    }
    pieces.sort_unstable();
    let layout = move |i: u64, r: Rank| {
        let at = pieces.partition_point(|x| x.0 < i);
        let (_, off, len) = pieces[at];
        let buf = if r == src {
            Buf::In
        } else if r == dst {
            Buf::Out
        } else {
            Buf::Tmp
        };
        Region::new(buf, off, len)
    };
    Ok(plan::boxed(p.build(layout)?))
}

/// Σ_t (β + s_t τ), exact under all ports, full or half-link duplex; (3.11) for the
/// longest path as a lower estimate with `--packets opt`.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let model = &params.model;
    if model.ports != Ports::All || !plan::overlaps(model, true) {
        return vec![];
    }
    if crate::algorithms::fit::torus(problem.topology).is_err() {
        return vec![];
    }
    let Ok(r) = routes(problem, params) else {
        return vec![];
    };
    let eq = "Saad & Schultz 1986 (seed 004), §3.1 (D), Prop. 3.1, eq. (3.11)";
    let lengths: Vec<usize> = r.paths.iter().map(|p| p.0.len() - 1).collect();
    let mut v = vec![Formula::exact(
        format!(
            "Σ_t (β + s_t τ), {} paths of {lengths:?} hops, ν = {}",
            r.paths.len(),
            r.nu
        ),
        eq,
        r.time(r.nu, params),
    )];
    if params.packets == Packets::Opt {
        // The longest path's own pipeline bounds the time from below; its share is
        // the smallest, ⌊m/P⌋ (or what it carries when m < P).
        if let Some((path, _, len)) = r.paths.iter().max_by_key(|p| (p.0.len(), u64::MAX - p.2)) {
            let l = (path.len() - 1) as f64;
            v.push(Formula::estimate(
                "(√(sτ) + √((L − 1)β))², L the longest path, s its share",
                eq,
                ((*len as f64 * model.tau()).sqrt() + ((l - 1.0) * model.beta()).sqrt()).powi(2),
            ));
        }
    }
    v
}

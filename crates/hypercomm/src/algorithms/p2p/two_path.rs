//! One-to-one on a ring over both paths (Saad & Schultz 1986, seed 004, §3.1 (C),
//! eq. (3.6): T^{P2}_{i,R} = (√(N/(2b_R)) + √((i − 1)τ_R))², i ≤ k − 1).
//!
//! The N = m elements are split in two halves, ⌈m/2⌉ clockwise and ⌊m/2⌋
//! counter-clockwise, each pipelined in ν packets along its path (d and k − d hops).
//! The destination receives from both neighbours in the same steps, which the ring
//! rule (read from one neighbour at a time, `--ports 2,1`) forbids: `--strict
//! --ports 2,1` reports it, and without `--strict` the simulator serialises the two
//! receives. Under all ports (full or half-link duplex) the time is exact as
//! Σ_t (β + s_t τ), s_t the largest packet in flight in step t (a packet p of a path
//! of L hops is in flight in steps p..p + L − 1). On `ring:1`, `ring:2` or with one
//! element, one path.
//!
//! Constraints: `ring:K`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{pipeline, Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::{Model, Ports};
use crate::error::Error;
use crate::schedule::{Buf, Rank, Region, Schedule};
use crate::verify::Problem;

/// The two paths: (hops, elements, packets) for each, clockwise first.
fn split(k: u32, src: Rank, dst: Rank, m: u64, nu: u64) -> [(u64, u64, u64); 2] {
    let d = ((dst + k - src) % k) as u64;
    if k <= 2 || m < 2 || d == 0 {
        let hops = if d == 0 { 0 } else { d.min(k as u64 - d) };
        return [(hops, m, nu.min(m).max(1)), (0, 0, 0)];
    }
    let (a, b) = (m.div_ceil(2), m / 2);
    [(d, a, nu.min(a)), (k as u64 - d, b, nu.min(b))]
}

/// Exact time of the two pipelines side by side: Σ_t (β + s_t τ).
fn time(paths: &[(u64, u64, u64); 2], model: &Model) -> f64 {
    let streams: Vec<pipeline::Stream> = paths
        .iter()
        .map(|&(depth, len, nu)| pipeline::Stream {
            t0: 0,
            depth,
            len,
            nu,
        })
        .collect();
    pipeline::streams_time(&streams, model.beta(), model.tau())
}

fn nu_of(
    problem: &Problem<'_>,
    params: &Params,
    k: u32,
    src: Rank,
    dst: Rank,
) -> Result<u64, Error> {
    let m = problem.len;
    match params.packets {
        Packets::Count(_) => pipeline::resolve(params, m, 1),
        Packets::Opt => Ok((1..=m.div_ceil(2).clamp(1, 4096))
            .min_by(|&a, &b| {
                let ta = time(&split(k, src, dst, m, a), &params.model);
                let tb = time(&split(k, src, dst, m, b), &params.model);
                ta.total_cmp(&tb)
            })
            .unwrap_or(1)),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params, k: u32) -> Result<Box<dyn Schedule>, Error> {
    let (m, c) = (problem.len, problem.collective);
    let Collective::P2p { src, dst } = c else {
        return Err(plan::unfit("two-path", "a point-to-point problem"));
    };
    let nu = nu_of(problem, params, k, src, dst)?;
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let paths = split(k, src, dst, m, nu);
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    // Items: path j's packet q is j·ν₀ + q, ν₀ the first path's count.
    let nu0 = paths[0].2;
    for (j, &(hops, _, n)) in paths.iter().enumerate() {
        // The single path of a short message or a small ring goes the shorter way.
        let d = (dst + k - src) % k;
        let cw = if paths[1].1 == 0 { d <= k - d } else { j == 0 };
        let step: i64 = if cw { 1 } else { -1 };
        let at = |h: u64| ((src as i64 + step * h as i64).rem_euclid(k as i64)) as Rank;
        for q in 0..n {
            for h in 0..hops {
                p.send(
                    (q + h) as usize,
                    at(h),
                    vec![at(h + 1)],
                    vec![j as u64 * nu0 + q],
                );
            }
        }
    }
    let a = paths[0].1;
    let layout = move |i: u64, r: Rank| {
        let (off, len) = if i < nu0 {
            pipeline::packet(a, nu0, i)
        } else {
            let (o, l) = pipeline::packet(paths[1].1, paths[1].2, i - nu0);
            (a + o, l)
        };
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

/// Σ_t (β + s_t τ) under all ports, full or half-link duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(k) = plan::ring_len(problem.topology) else {
        return vec![];
    };
    let Collective::P2p { src, dst } = problem.collective else {
        return vec![];
    };
    if params.model.ports != Ports::All || !plan::overlaps(&params.model, true) {
        return vec![];
    }
    let Ok(nu) = nu_of(problem, params, k, src, dst) else {
        return vec![];
    };
    let v = if problem.len == 0 {
        0.0
    } else {
        time(&split(k, src, dst, problem.len, nu), &params.model)
    };
    vec![Formula::exact(
        format!("Σ_t (β + s_t τ), halves of ⌈m/2⌉ and ⌊m/2⌋ over d and k − d hops, ν = {nu}"),
        "Saad & Schultz 1986 (seed 004), §3.1 (C), eq. (3.6)",
        v,
    )]
}

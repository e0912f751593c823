//! All-to-all broadcast on a torus grid by a broadcast from every node in turn
//! (Saad & Schultz 1986, seed 004, §3.3 (D), eq. (3.29):
//! T^{SB}_{3,G} = k(√(N/(k b_G)) + √((√k − 1)τ_G))², √k even).
//!
//! N = km. For s = 0, 1, …, k − 1 in turn, node s broadcasts its block by the spine
//! tree (`broadcast/spine-tree`, (3.18)): ν packets pipelined down its column and every
//! row, depth D = ⌊A/2⌋ + ⌊B/2⌋ (√k on the paper's grid, √k even); the next broadcast
//! starts when the last ends. With q = ⌊m/ν⌋, r = m mod ν, exact under all ports, full
//! or half-link duplex: k[(ν + D − 1)(β + qτ) + \[r > 0\](r + D − 1)τ]; (3.29) is k times
//! the continuous optimum, a lower estimate with `--packets opt` (with D − 1 for its
//! √k − 1, which is the same when √k is even). Volume k(k − 1)m.
//!
//! Constraints: `torus:AxB`.

use crate::algorithms::broadcast::spine_tree;
use crate::algorithms::plan::{self, Item, Plan};
use crate::algorithms::{pipeline, Formula, Packets, Params};
use crate::cost::model::Ports;
use crate::error::Error;
use crate::schedule::{Buf, Rank, Region, Schedule};
use crate::verify::Problem;

/// Sides, depth and ν.
fn shape(
    problem: &Problem<'_>,
    params: &Params,
    a: u32,
    b: u32,
) -> Result<(u32, u32, u64, u64), Error> {
    let d = (a / 2 + b / 2) as u64;
    Ok((a, b, d, pipeline::resolve(params, problem.len, d)?))
}

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    params: &Params,
    a: u32,
    b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    let (a, b, d, nu) = shape(problem, params, a, b)?;
    let k = a * b;
    let (m, c) = (problem.len, problem.collective);
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    let each = (nu + d - 1) as usize;
    for s in 0..k {
        if p.is_over() {
            break;
        }
        let items: Vec<Item> = (0..nu).map(|j| s as u64 * nu + j).collect();
        plan::tree_pipeline_at(
            &mut p,
            s as usize * each,
            &spine_tree::parents(a, b, s),
            &items,
        );
    }
    let layout = move |i: Item, r: Rank| {
        let (block, (off, len)) = (i / nu, pipeline::packet(m, nu, i % nu));
        if r as u64 == block {
            Region::new(Buf::In, off, len)
        } else {
            Region::new(Buf::Out, block * m + off, len)
        }
    };
    Ok(plan::boxed(p.build(layout)?))
}

/// k times the spine tree's pipeline, exact; (3.29) as a lower estimate with
/// `--packets opt`.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let model = &params.model;
    if model.ports != Ports::All || !plan::overlaps(model, true) {
        return vec![];
    }
    let Ok((a, b)) = crate::algorithms::fit::torus(problem.topology) else {
        return vec![];
    };
    let Ok((a, b, d, nu)) = shape(problem, params, a, b) else {
        return vec![];
    };
    let (k, m) = ((a * b) as f64, problem.len);
    let eq = "Saad & Schultz 1986 (seed 004), §3.3 (D), eq. (3.29)";
    let mut v = vec![Formula::exact(
        format!("k[(ν + D − 1)(β + qτ) + [r > 0](r + D − 1)τ], D = ⌊A/2⌋ + ⌊B/2⌋ = {d}, ν = {nu}"),
        eq,
        k * pipeline::time(m, d, nu, model.beta(), model.tau()),
    )];
    if params.packets == Packets::Opt {
        v.push(Formula::estimate(
            "k(√(mτ) + √((D − 1)β))²",
            eq,
            k * pipeline::continuous_optimum(m, d, model.beta(), model.tau()),
        ));
    }
    v
}

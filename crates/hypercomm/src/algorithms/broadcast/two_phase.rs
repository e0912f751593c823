//! Two-phase broadcast on a torus grid: down the root's column, then along every row
//! (Saad & Schultz 1986, seed 004, §3.2 (D), eq. (3.20):
//! T³_{2,G} = 2(√(N/b_G) + √((i − 1)τ_G))², i = ⌊√k/2⌋).
//!
//! On `torus:AxB` (rank r·B + c), root (r0, c0): phase 1 pipelines the N = m elements
//! in ν packets two ways round the root's column (⌊A/2⌋ hops); once it has ended,
//! phase 2 pipelines them two ways round every row from its node of the root's column
//! (⌊B/2⌋ hops). Unlike the spine tree (3.18), a row waits for the whole column.
//! With q = ⌊m/ν⌋, r = m mod ν and P(D) = (ν + D − 1)(β + qτ) + \[r > 0\](r + D − 1)τ,
//! exact under all ports, full or half-link duplex (every link carries one direction):
//! P(⌊A/2⌋) + P(⌊B/2⌋); with `--packets opt` ν minimises it. (3.20) is twice the
//! continuous optimum over ⌊√k/2⌋ hops (the paper names that i τ, a typo), a lower
//! estimate: each phase takes at least (√(mτ) + √((D − 1)β))².
//!
//! Constraints: `torus:AxB`.

use crate::algorithms::plan::{self, toward, Item, Plan};
use crate::algorithms::{pipeline, Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::Ports;
use crate::error::Error;
use crate::schedule::{Rank, Schedule};
use crate::verify::Problem;

const NAME: &str = "two-phase";

/// Sides, root and ν.
fn shape(
    problem: &Problem<'_>,
    params: &Params,
    a: u32,
    b: u32,
) -> Result<(u32, u32, Rank, u64), Error> {
    let Collective::Broadcast { root } = problem.collective else {
        return Err(plan::unfit(NAME, "a broadcast"));
    };
    let m = problem.len;
    let nu = match params.packets {
        Packets::Count(_) => pipeline::resolve(params, m, 1)?,
        Packets::Opt => {
            // The sum's minimum lies between the two phases' own.
            let (beta, tau) = (params.model.beta(), params.model.tau());
            let (x, y) = (
                pipeline::best(m, (a / 2) as u64, beta, tau),
                pipeline::best(m, (b / 2) as u64, beta, tau),
            );
            (x.min(y)..=x.max(y))
                .min_by(|&p, &q| {
                    time(m, a, b, p, beta, tau).total_cmp(&time(m, a, b, q, beta, tau))
                })
                .unwrap_or(1)
        }
    };
    Ok((a, b, root, nu))
}

/// P(⌊A/2⌋) + P(⌊B/2⌋).
fn time(m: u64, a: u32, b: u32, nu: u64, beta: f64, tau: f64) -> f64 {
    pipeline::time(m, (a / 2) as u64, nu, beta, tau)
        + pipeline::time(m, (b / 2) as u64, nu, beta, tau)
}

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    params: &Params,
    a: u32,
    b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    let (a, b, root, nu) = shape(problem, params, a, b)?;
    let k = a * b;
    let (m, c) = (problem.len, problem.collective);
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let (r0, c0) = (root / b, root % b);
    let column: Vec<Option<Rank>> = (0..k)
        .map(|v| match v % b == c0 {
            true => toward(v / b, r0, a).map(|pr| pr * b + c0),
            false => None,
        })
        .collect();
    let rows: Vec<Option<Rank>> = (0..k)
        .map(|v| toward(v % b, c0, b).map(|pc| (v / b) * b + pc))
        .collect();
    let items: Vec<Item> = (0..nu).collect();
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    let d = plan::tree_pipeline_at(&mut p, 0, &column, &items);
    let t0 = if d == 0 { 0 } else { d + nu as usize - 1 };
    plan::tree_pipeline_at(&mut p, t0, &rows, &items);
    Ok(plan::boxed(
        p.build(plan::packet_layout(root, None, m, nu))?,
    ))
}

/// P(⌊A/2⌋) + P(⌊B/2⌋), exact; (3.20) as a lower estimate with `--packets opt`.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let model = &params.model;
    if model.ports != Ports::All || !plan::overlaps(model, true) {
        return vec![];
    }
    let Ok((a, b)) = crate::algorithms::fit::torus(problem.topology) else {
        return vec![];
    };
    let Ok((a, b, _, nu)) = shape(problem, params, a, b) else {
        return vec![];
    };
    let (m, beta, tau) = (problem.len, model.beta(), model.tau());
    let eq = "Saad & Schultz 1986 (seed 004), §3.2 (D), eq. (3.20)";
    let mut v = vec![Formula::exact(
        format!("P(⌊A/2⌋) + P(⌊B/2⌋), P(D) = (ν + D − 1)(β + qτ) + [r > 0](r + D − 1)τ, ν = {nu}"),
        eq,
        time(m, a, b, nu, beta, tau),
    )];
    if params.packets == Packets::Opt {
        v.push(Formula::estimate(
            "(√(mτ) + √((⌊A/2⌋ − 1)β))² + (√(mτ) + √((⌊B/2⌋ − 1)β))²",
            eq,
            pipeline::continuous_optimum(m, (a / 2) as u64, beta, tau)
                + pipeline::continuous_optimum(m, (b / 2) as u64, beta, tau),
        ));
    }
    v
}

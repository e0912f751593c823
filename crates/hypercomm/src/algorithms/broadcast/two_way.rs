//! Two-way pipelined broadcast on a ring (Saad & Schultz 1986, seed 004, §3.2 (C),
//! eq. (3.17): T²_{2,R} = (√(N/b_R) + √((i − 1)τ_R))², i = ⌊k/2⌋), and its one-way
//! variant (eq. (3.16), i = k − 1; [`build_one_way`]), which is also the switch's
//! first broadcast (§3.2 (F), eq. (3.22): the ring embedded in the switch by
//! Π(j) = (j mod k) + 1, one way only, since the embedding gives each node one
//! successor: T¹_{2,S} = (√(N/b_S) + √((k − 2)τ_S))², the same pipeline of k − 1 hops).
//!
//! The root splits the N = m elements into ν packets and sends each both ways round
//! the ring; every node forwards each packet one hop the next step, until the nodes
//! ⌊k/2⌋ clockwise and ⌊(k − 1)/2⌋ counter-clockwise have it (one-way: clockwise
//! only, k − 1 hops). With depth D = ⌊k/2⌋ (k − 1), q = ⌊m/ν⌋ and r = m mod ν, exact
//! under seed 004's ring rule (`--ports 2,1`) or all ports, full or half-link duplex:
//! (ν + D − 1)(β + qτ) + \[r > 0\](r + D − 1)τ. (3.16)/(3.17) are its continuous
//! optimum, a lower estimate with `--packets opt`.
//!
//! On `switch:K` (one-way only) every node sends one packet and receives one per step,
//! the switch's rule, so the same form is exact under full or half-link duplex.
//!
//! Constraints: `ring:K`, any K ≥ 1 (odd rings too); the one-way variant also
//! `switch:K`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{pipeline, Formula, Packets, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::{Rank, Schedule};
use crate::verify::Problem;

fn depth(k: u32, two_way: bool) -> u64 {
    if two_way {
        (k / 2) as u64
    } else {
        k.saturating_sub(1) as u64
    }
}

/// K of the ring the broadcast runs on: `ring:K`, or (one way) the ring embedded in
/// `switch:K`.
fn ring_nodes(t: &crate::topology::Topology, two_way: bool) -> Option<u32> {
    match plan::medium(t) {
        Some((crate::topology::Medium::Switch, k)) if !two_way => Some(k),
        _ => plan::ring_len(t),
    }
}

fn make(
    problem: &Problem<'_>,
    params: &Params,
    two_way: bool,
    k: u32,
) -> Result<Box<dyn Schedule>, Error> {
    let (m, c) = (problem.len, problem.collective);
    let Collective::Broadcast { root } = c else {
        return Err(plan::unfit("two-way", "a broadcast"));
    };
    let nu = pipeline::resolve(params, m, depth(k, two_way))?;
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut parent: Vec<Option<Rank>> = vec![None; k as usize];
    let at = |i: u32| (root + i) % k;
    if two_way {
        plan::two_way_parents(k, at, &mut parent);
    } else {
        for i in 1..k {
            parent[at(i) as usize] = Some(at(i - 1));
        }
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    plan::tree_pipeline(&mut p, &parent, nu);
    Ok(plan::boxed(
        p.build(plan::packet_layout(root, None, m, nu))?,
    ))
}

/// Build the two-way schedule (3.17).
pub fn build(problem: &Problem<'_>, params: &Params, k: u32) -> Result<Box<dyn Schedule>, Error> {
    make(problem, params, true, k)
}

/// Build the one-way schedule (3.16).
pub fn build_one_way(
    problem: &Problem<'_>,
    params: &Params,
    k: u32,
    _switch: bool,
) -> Result<Box<dyn Schedule>, Error> {
    make(problem, params, false, k)
}

fn forms(problem: &Problem<'_>, params: &Params, two_way: bool) -> Vec<Formula> {
    let Some(k) = ring_nodes(problem.topology, two_way) else {
        return vec![];
    };
    let model = &params.model;
    let switch = plan::ring_len(problem.topology).is_none();
    let (m, d) = (problem.len, depth(k, two_way));
    let Ok(nu) = pipeline::resolve(params, m, d) else {
        return vec![];
    };
    if !((plan::two_sends(model) || !two_way) && plan::overlaps(model, true)) {
        return vec![];
    }
    let (eq, which) = if switch {
        (
            "Saad & Schultz 1986 (seed 004), §3.2 (F), eq. (3.22)",
            "k − 1",
        )
    } else if two_way {
        (
            "Saad & Schultz 1986 (seed 004), §3.2 (C), eq. (3.17)",
            "⌊k/2⌋",
        )
    } else {
        (
            "Saad & Schultz 1986 (seed 004), §3.2 (C), eq. (3.16)",
            "k − 1",
        )
    };
    let mut v = vec![Formula::exact(
        format!("(ν + D − 1)(β + qτ) + [r > 0](r + D − 1)τ, D = {which} = {d}, ν = {nu}"),
        eq,
        pipeline::time(m, d, nu, model.beta(), model.tau()),
    )];
    if params.packets == Packets::Opt {
        v.push(Formula::estimate(
            format!("(√(mτ) + √((D − 1)β))², D = {which}"),
            eq,
            pipeline::continuous_optimum(m, d, model.beta(), model.tau()),
        ));
    }
    v
}

/// The exact pipeline time, and (3.17) as a lower estimate.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    forms(problem, params, true)
}

/// The exact pipeline time, and (3.16) as a lower estimate.
pub fn formulas_one_way(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    forms(problem, params, false)
}

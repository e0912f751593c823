//! Point-to-point over one shortest path (e-cube routing), pipelined.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §3: the path corrects the
//! differing bits one by one (here in ascending dimension order, e-cube routing); with ν
//! packets the transfer is pipelined along the path of H = H(A, B) hops.
//!
//! Cost (rounds model, any port or duplex rule: each node makes at most one send and one
//! receive per step, but interior nodes do both, so under `--duplex half` each step
//! costs two transfers; under `--duplex half-link` each link carries one direction,
//! so the form holds): ν + H − 1 steps of β + ⌈m/ν⌉τ, volume H·m.
//! Optimum (eq. 3.1): t_opt ≈ (√(mτ) + √((H − 1)β))² at ν_opt = √((H − 1)mτ/β)
//! (seed 000 prints ν_opt = √(iτ/β), which omits m; docs/errata.md E1).
//!
//! Constraints: hypercube; 1 ≤ ν ≤ max(m, 1).

use crate::algorithms::fit::Built;
use crate::algorithms::pipeline::{self, PathPipeline};
use crate::algorithms::{fit, Formula, Packets, Params};
use crate::collective::Collective;
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::topology::Hypercube;
use crate::verify::Problem;

fn endpoints(problem: &Problem<'_>) -> Result<(u32, u32), Error> {
    match problem.collective {
        Collective::P2p { src, dst } => Ok((src, dst)),
        other => Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("ecube performs p2p, not {other}"),
        }),
    }
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, params: &Params, cube: &Hypercube) -> Built {
    let (src, dst) = endpoints(problem)?;
    let path = cube.ecube_path(src, dst);
    let nu = pipeline::resolve(params, problem.len, path.len() as u64 - 1)?;
    Ok(Box::new(PathPipeline::new(
        cube.nodes(),
        src,
        dst,
        problem.len,
        nu,
        vec![path],
    )))
}

/// (ν + H − 1)(β + qτ) + \[r > 0\](r + H − 1)τ, q = ⌊m/ν⌋, r = m mod ν, exact under full
/// or half-link duplex; the continuous optimum (3.1) with
/// `--packets opt`.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let (Some(_), Ok((src, dst))) = (fit::cube_of(problem), endpoints(problem)) else {
        return vec![];
    };
    let h = Hypercube::hamming(src, dst) as u64;
    let m = problem.len;
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let Ok(nu) = pipeline::resolve(params, m, h) else {
        return vec![];
    };
    let mut v = Vec::new();
    // The path's links carry one direction: half-link duplex as full.
    if params.model.duplex != Duplex::Half || h <= 1 {
        v.push(Formula::exact(format!("(ν + H − 1)(β + qτ) + [r > 0](r + H − 1)τ, q = ⌊m/ν⌋, r = m mod ν, H = {h}, ν = {nu}"), "Saad & Schultz 1985, §3 (pipelining along one path)", pipeline::time(m, h, nu, beta, tau)));
    }
    if params.packets == Packets::Opt
        && params.model.duplex != Duplex::Half
        && params.model.ports == Ports::All
    {
        v.push(Formula::estimate(
            "(√(mτ) + √((H − 1)β))²",
            "Saad & Schultz 1985, §3, eq. (3.1)",
            pipeline::continuous_optimum(m, h, beta, tau),
        ));
    }
    v
}

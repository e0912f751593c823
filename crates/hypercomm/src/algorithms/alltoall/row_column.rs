//! Multiscatter (all-to-all) on a torus: rotate and drop round every row, then round
//! every column (after Saad & Schultz 1986, seed 004, §3.5 (C)–(D)).
//!
//! N = k²m. On `torus:AxB` (rank r·B + c): phase 1 moves every block to its
//! destination's column by the ring's rotate-and-drop round each row, a bundle being
//! the A blocks of one source for one column (B − 1 steps, (B − s)Am in step s);
//! phase 2 moves them to their row round each column, a bundle being the B blocks of
//! one row of sources for one destination (A − 1 steps, (A − s)Bm). Exact under full
//! duplex (half-link when A, B ≥ 3), any port rule:
//! (A + B − 2)β + AB(A + B − 2)mτ/2. The paper's grid entry (3.44) is for its
//! diagonal algorithm, which only sends block (x, y) to (y, x) — a transposition of
//! the grid, not a multiscatter (docs/errata.md); its form
//! 2(N/(√k b_G) + √k τ_G) is an upper bound of this one on √k × √k.
//!
//! Constraints: `torus:AxB`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    _params: &Params,
    a: u32,
    b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    let k = a * b;
    let (m, c) = (problem.len, problem.collective);
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let k64 = k as u64;
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    let mut t = 0;
    for row in 0..a {
        let ring: Vec<u32> = (0..b).map(|cc| row * b + cc).collect();
        t = plan::ring_rotate(&mut p, 0, &ring, |o, tc| {
            let src = (row * b + o as u32) as u64;
            (0..a)
                .map(|r| src * k64 + (r * b + tc as u32) as u64)
                .collect()
        });
    }
    for col in 0..b {
        let ring: Vec<u32> = (0..a).map(|r| r * b + col).collect();
        plan::ring_rotate(&mut p, t, &ring, |o, tr| {
            let dst = (tr as u32 * b + col) as u64;
            (0..b)
                .map(|cc| (o as u32 * b + cc) as u64 * k64 + dst)
                .collect()
        });
    }
    Ok(plan::boxed(p.build(plan::block_layout(
        Collective::Alltoall,
        k,
        m,
    ))?))
}

/// (A + B − 2)β + AB(A + B − 2)mτ/2, exact; 2(N/(√k b_G) + √k τ_G), an upper bound.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some((a, b)) = plan::torus_dims(problem.topology) else {
        return vec![];
    };
    let model = &params.model;
    if !plan::overlaps(model, a >= 3 && b >= 3) {
        return vec![];
    }
    let m = problem.len;
    if m == 0 {
        return vec![Formula::exact("0", "nothing to move", 0.0)];
    }
    let (a, b) = (a as u64, b as u64);
    let k = (a * b) as f64;
    vec![
        Formula::exact(
            "(A + B − 2)β + AB(A + B − 2)mτ/2",
            "after Saad & Schultz 1986 (seed 004), §3.5 (C), rows then columns",
            (a + b - 2) as f64 * model.beta()
                + (a * b * (a + b - 2) * m) as f64 / 2.0 * model.tau(),
        ),
        Formula::upper_bound(
            "2(N/(√k b_G) + √k τ_G)",
            "Saad & Schultz 1986 (seed 004), §3.5 (D), eq. (3.44)",
            2.0 * (k * k * m as f64 / k.sqrt() * model.tau() + k.sqrt() * model.beta()),
        ),
    ]
}

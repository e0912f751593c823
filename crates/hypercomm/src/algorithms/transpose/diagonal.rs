//! Transposition of a torus grid through its diagonal (Saad & Schultz 1986, seed 004,
//! §3.5 (D), eq. (3.44): T_{5,G} = 2(N/(√k b_G) + √k τ_G)).
//!
//! On `torus:QxQ` (rank x·Q + y at (x, y)), each node holds one block of m elements
//! (N = km in all). Phase 1: every diagonal node (x, x) gathers the blocks of its row,
//! two ways round the row ring, nearest first (the ring scatter reversed, ⌊Q/2⌋ steps
//! of one block per link). Phase 2: it scatters them down its column, two ways,
//! farthest first, (y, x) getting the block of (x, y) (⌊Q/2⌋ steps). So block (x, y)
//! goes to (y, x) only: this is the `transpose` collective, not the multiscatter of
//! Table 2's row (docs/errata.md, E35; `alltoall/row-column` is the grid's true
//! multiscatter). Exact under all ports (a diagonal node hears, then feeds, both
//! neighbours at once), full or half-link duplex (each phase uses a link one way):
//! 2⌊Q/2⌋(β + mτ). (3.44) bounds it: 2(√k mτ + √k β) with N = km. Volume: each block
//! crosses d(y, x) + d(x, y) hops of its row and column rings.
//!
//! Constraints: `torus:QxQ` (square).

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::cost::model::Ports;
use crate::error::Error;
use crate::schedule::{Rank, Schedule};
use crate::topology::Topology;
use crate::verify::Problem;

/// Q of `torus:QxQ`.
pub(crate) fn side(t: &Topology) -> Option<u32> {
    plan::torus_dims(t).and_then(|(a, b)| (a == b).then_some(a))
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, q: u32) -> Result<Box<dyn Schedule>, Error> {
    let k = q * q;
    let (m, c) = (problem.len, problem.collective);
    if c != Collective::Transpose {
        return Err(plan::unfit("diagonal", "a transposition"));
    }
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    // Phase 1: row x round its ring from (x, x), every block to the diagonal.
    let mut gather = Plan::new(k);
    let mut t = 0;
    for x in 0..q {
        let row: Vec<Rank> = (0..q).map(|i| x * q + (x + i) % q).collect();
        t = plan::ring_scatter(&mut gather, 0, &row, |pos| vec![row[pos] as u64]);
    }
    p.append(gather.reversed(), 0);
    // Phase 2: column x from (x, x); the node i steps down gets the block of
    // (x, x + i).
    for x in 0..q {
        let col: Vec<Rank> = (0..q).map(|i| ((x + i) % q) * q + x).collect();
        plan::ring_scatter(&mut p, t, &col, |pos| {
            vec![(x * q + (x + pos as u32) % q) as u64]
        });
    }
    Ok(plan::boxed(p.build(plan::block_layout(c, k, m))?))
}

/// 2⌊Q/2⌋(β + mτ), exact; (3.44), an upper bound.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(q) = side(problem.topology) else {
        return vec![];
    };
    let model = &params.model;
    if model.ports != Ports::All || !plan::overlaps(model, true) {
        return vec![];
    }
    let m = problem.len;
    if m == 0 {
        return vec![Formula::exact("0", "nothing to move", 0.0)];
    }
    let rk = q as f64;
    vec![
        Formula::exact(
            "2⌊Q/2⌋(β + mτ)",
            "Saad & Schultz 1986 (seed 004), §3.5 (D), gather to the diagonal, scatter down",
            2.0 * (q / 2) as f64 * plan::bt(model, m),
        ),
        Formula::upper_bound(
            "2(N/(√k b_G) + √k τ_G), N = km",
            "Saad & Schultz 1986 (seed 004), §3.5 (D), eq. (3.44)",
            2.0 * (rk * m as f64 * model.tau() + rk * model.beta()),
        ),
    ]
}

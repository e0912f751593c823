//! Ring reduce-scatter with per-rank counts (`MPI_Reduce_scatter`), for any number of
//! ranks: k − 1 steps. Commutative operators only.
//!
//! Reference: MPI-3.1, §5.10.2 (`MPI_Reduce_scatter`); Open MPI's
//! `ompi_coll_base_reduce_scatter_intra_ring` (the ring with each block its own count,
//! for commutative operators); Patarasuk & Yuan, JPDC 69(2), 2009.
//!
//! The schedule is `reduce_scatter::ring`'s with block b of c_b elements: in step s rank
//! r sends its partial of block r − s − 1 to r + 1 and receives the partial of block
//! r − s − 2 from r − 1, combining its own block of `in` into it; the partials alternate
//! between two `tmp` slots of max_b c_b elements. An empty block is no message.
//!
//! Cost: k − 1 steps (one for the copy when k = 1, none when every count is 0); every
//! block is in flight in every step: (k − 1)·t(max_b c_b) under full duplex,
//! (k − 1)·max_b (t(c_b) + t(c_{b−1})) under half, t(c) = β + cτ for c > 0, else 0; either
//! port rule. Volume (k − 1)·Σ c_b.
//!
//! Constraints: `complete:K`, any K ≥ 1; a commutative operator; any counts.

use crate::algorithms::allreduce::ring::needs_commutative;
use crate::algorithms::reduce_scatter::ring::RingReduceScatter;
use crate::algorithms::vcount::{exchange_formulas, Blocks};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, blocks) = Blocks::of(problem, "ring", OpKind::ReduceScatterv)?;
    needs_commutative(problem, "ring")?;
    Ok(Box::new(RingReduceScatter::with_blocks(k, blocks)))
}

/// (k − 1)·t(max c) under full duplex, (k − 1)·max_b (t(c_b) + t(c_{b−1})) under half.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok((k, blocks)) = Blocks::of(problem, "ring", OpKind::ReduceScatterv) else {
        return vec![];
    };
    exchange_formulas(
        &blocks,
        params,
        [
            "(k − 1)·max_b t(c_b), t(c) = β + cτ for c > 0, else 0",
            "(k − 1)·max_b (t(c_b) + t(c_{b−1})), t(c) = β + cτ for c > 0, else 0",
        ],
        "Open MPI ring reduce-scatter; Patarasuk & Yuan 2009",
        |s, r| ((r + 2 * k - s - 1) % k, (r + 2 * k - s - 2) % k),
    )
}

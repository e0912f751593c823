//! Pairwise-exchange reduce-scatter with per-rank counts (`MPI_Reduce_scatter`), in rank
//! order: k − 1 steps, any associative operator.
//!
//! Reference: MPI-3.1, §5.10.2 (`MPI_Reduce_scatter`: block r of c_r elements, at
//! Σ_{i<r} c_i of every input, goes to rank r); Thakur, Rabenseifner & Gropp, IJHPCA
//! 19(1), 2005, the reduce-scatter section (MPICH's pairwise exchange for long
//! messages, `MPIR_Reduce_scatter_intra_pairwise`, with each block its own count).
//!
//! The schedule is `reduce_scatter::pairwise`'s (two accumulators, so rank order holds
//! on any number of ranks) with block b of c_b elements: in step s rank j sends block
//! j + s (c_{j+s} elements) and receives its own block's x_{j−s} (c_j). A rank whose
//! count is 0 only sends; an empty block is no message.
//!
//! Cost: k − 1 steps (one for the copy when k = 1, none when every count is 0);
//! Σ_{s=1}^{k−1} max_j of max (full duplex) or sum (half) of t(c_{j+s}) and t(c_j),
//! t(c) = β + cτ for c > 0, else 0, either port rule; (k − 1)·t(max c) under full
//! duplex. Volume (k − 1)·Σ c_b. Memory: `tmp` of c_j on ranks 1..k − 3.
//!
//! Constraints: `complete:K`, any K ≥ 1; any associative operator; any counts.

use crate::algorithms::reduce_scatter::pairwise::PairwiseReduceScatter;
use crate::algorithms::vcount::{exchange_formulas, Blocks};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::verify::Problem;

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, blocks) = Blocks::of(problem, "pairwise", OpKind::ReduceScatterv)?;
    Ok(Box::new(PairwiseReduceScatter::with_blocks(k, blocks)))
}

/// Σ_s max_j of t(c_{j+s}) and t(c_j), joined by the duplex rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok((k, blocks)) = Blocks::of(problem, "pairwise", OpKind::ReduceScatterv) else {
        return vec![];
    };
    exchange_formulas(
        &blocks,
        params,
        [
            "Σ_{s=1}^{k−1} max_j max(t(c_{j+s}), t(c_j)), t(c) = β + cτ for c > 0, else 0",
            "Σ_{s=1}^{k−1} max_j (t(c_{j+s}) + t(c_j)), t(c) = β + cτ for c > 0, else 0",
        ],
        "Thakur, Rabenseifner & Gropp 2005, pairwise reduce-scatter",
        |s, j| ((j + s + 1) % k, j),
    )
}

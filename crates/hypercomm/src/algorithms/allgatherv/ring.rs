//! Ring allgatherv, for any number of ranks: k − 1 steps, block b of c_b elements
//! passed from rank to rank around the ring.
//!
//! Reference: MPI-3.1, §5.7 (`MPI_Allgatherv`); Thakur, Rabenseifner & Gropp, IJHPCA
//! 19(1), 2005, the allgather section (MPICH's `MPIR_Allgatherv_intra_ring`, its
//! allgatherv for long messages: the ring with each block its own length); Chan et al.,
//! CCPE 19(13), 2007, the bucket all-gather.
//!
//! In step s (0-based) rank r sends block (r − s) mod k to r + 1 (step 0 from `in`,
//! whose c_r elements it also copies to Σ_{i<r} c_i of `out`) and receives block
//! (r − s − 1) mod k from r − 1 into its place. An empty block is no message.
//!
//! Cost: k − 1 steps (one for the copy when k = 1, none when every count is 0). Every
//! block is in flight in every step, so each step waits for the largest:
//! (k − 1)·t(max_b c_b) under full duplex, (k − 1)·max_b (t(c_b) + t(c_{b−1})) under
//! half duplex, t(c) = β + cτ for c > 0, else 0; either port rule. Volume (k − 1)·Σ c_b.
//! Skew costs the ring: one large block holds up all k − 1 steps, where the linear and
//! pairwise forms pay for it once per sender.
//!
//! Constraints: `complete:K`, any K ≥ 1 (only links r → r + 1 are used), any counts.

use crate::algorithms::vcount::{exchange_formulas, Blocks};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The ring allgatherv schedule.
#[derive(Clone, Debug)]
pub struct RingAllgatherv {
    k: u32,
    blocks: Blocks,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, blocks) = Blocks::of(problem, "ring", OpKind::Allgatherv)?;
    Ok(Box::new(RingAllgatherv { k, blocks }))
}

impl Schedule for RingAllgatherv {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        if self.blocks.is_empty() {
            0
        } else {
            (self.k as usize - 1).max(1)
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, b) = (self.k, &self.blocks);
        let mut prog = Program::new(rank, self.steps());
        if self.steps() == 0 {
            return prog;
        }
        let out = |x: u32| Region::new(Buf::Out, b.off(x), b.len(x));
        let own = Region::new(Buf::In, 0, b.len(rank));
        if b.len(rank) > 0 {
            prog.push(0, Op::copy(own, out(rank)));
        }
        for s in 0..k - 1 {
            let (send, recv) = ((rank + k - s) % k, (rank + 2 * k - s - 1) % k);
            if b.len(send) > 0 {
                let from = if s == 0 { own } else { out(send) };
                prog.push(s as usize, Op::send((rank + 1) % k, from));
            }
            if b.len(recv) > 0 {
                prog.push(s as usize, Op::recv((rank + k - 1) % k, out(recv)));
            }
        }
        prog
    }
}

/// (k − 1)·t(max c) under full duplex, (k − 1)·max_b (t(c_b) + t(c_{b−1})) under half.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    match Blocks::of(problem, "ring", OpKind::Allgatherv) {
        Ok((k, blocks)) => exchange_formulas(
            &blocks,
            params,
            [
                "(k − 1)·max_b t(c_b), t(c) = β + cτ for c > 0, else 0",
                "(k − 1)·max_b (t(c_b) + t(c_{b−1})), t(c) = β + cτ for c > 0, else 0",
            ],
            "Thakur, Rabenseifner & Gropp 2005, ring allgatherv",
            |s, r| ((r + k - s) % k, (r + 2 * k - s - 1) % k),
        ),
        Err(_) => vec![],
    }
}

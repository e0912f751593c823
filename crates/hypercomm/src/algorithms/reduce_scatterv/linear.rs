//! Linear reduce-scatter with per-rank counts (`MPI_Reduce_scatter`): one step, every
//! rank sending block j of its input to rank j at once; each rank combines what it
//! received in rank order, so any associative operator works.
//!
//! Reference: MPI-3.1, §5.10.2 (`MPI_Reduce_scatter`); Open MPI's
//! `ompi_coll_base_reduce_scatter_intra_nonoverlapping` does a reduce then a scatterv;
//! this is the direct form of Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005 (every
//! block straight to its owner, as their linear all-to-all), which keeps the volume at
//! its least.
//!
//! Rank j receives x_i (c_j elements) from every i ≠ j into slot i of `tmp` ((k − 1)c_j
//! elements), then `out` = x_0 ⊕ x_1 ⊕ … ⊕ x_{k−1} by local operations in rank order
//! (its own x_j straight from `in`). An empty block is no message.
//!
//! Cost: one step (none when every count is 0). Rank j sends c_i to each i ≠ j and
//! receives k − 1 messages of c_j: max_j of the send side (Σ_{i≠j} t(c_i) under one
//! port, max_{i≠j} t(c_i) under all ports) and the receive side ((k − 1)·t(c_j) or
//! t(c_j)), joined by max (full duplex) or + (half), t(c) = β + cτ for c > 0, else 0.
//! Volume (k − 1)·Σ c_b. Memory: (k − 1)·c_j of `tmp` on rank j.
//!
//! Constraints: `complete:K`, any K ≥ 1; any associative operator; any counts.

use crate::algorithms::vcount::{node_time, Blocks};
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The linear reduce-scatterv schedule.
#[derive(Clone, Debug)]
pub struct LinearReduceScatterv {
    k: u32,
    blocks: Blocks,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let (k, blocks) = Blocks::of(problem, "linear", OpKind::ReduceScatterv)?;
    Ok(Box::new(LinearReduceScatterv { k, blocks }))
}

impl Schedule for LinearReduceScatterv {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        usize::from(!self.blocks.is_empty())
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, b) = (self.k, &self.blocks);
        let mut prog = Program::new(rank, self.steps());
        if self.steps() == 0 {
            return prog;
        }
        for s in 1..k {
            let to = (rank + s) % k;
            if b.len(to) > 0 {
                prog.push(0, Op::send(to, b.input(to)));
            }
        }
        let m = b.len(rank);
        if m == 0 {
            return prog;
        }
        // x_i: from `in` for the own rank, else slot i (i < j) or i − 1 (i > j) of `tmp`.
        let x = |i: Rank| {
            if i == rank {
                b.input(rank)
            } else {
                Region::new(Buf::Tmp, (i - u32::from(i > rank)) as u64 * m, m)
            }
        };
        for i in (0..k).filter(|&i| i != rank) {
            prog.push(0, Op::recv(i, x(i)));
        }
        prog.tmp_len = (k as u64 - 1) * m;
        let out = Region::new(Buf::Out, 0, m);
        prog.push(0, Op::copy(x(0), out));
        for i in 1..k {
            prog.push(
                0,
                Op::Local {
                    from: x(i),
                    into: out,
                    action: Action::CombineRight,
                },
            );
        }
        prog
    }
}

/// max_j of rank j's sends (c_i to each i ≠ j) and receives (k − 1 of c_j), by the
/// port and duplex rules.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let model = &params.model;
    if matches!(model.ports, Ports::Split { .. }) || model.duplex == Duplex::HalfLink {
        return vec![];
    }
    let Ok((k, b)) = Blocks::of(problem, "linear", OpKind::ReduceScatterv) else {
        return vec![];
    };
    let value = (0..k)
        .map(|j| {
            let others = (0..k).filter(|&i| i != j);
            let sends: Vec<u64> = others.clone().map(|i| b.len(i)).collect();
            let recvs: Vec<u64> = others.map(|_| b.len(j)).collect();
            node_time(model, &sends, &recvs)
        })
        .fold(0.0, f64::max);
    vec![Formula::exact(
        "max_j t_j(c_i to each i ≠ j, k − 1 receives of c_j); t: Σ or max of β + cτ by ports, sides by duplex",
        "MPI-3.1 §5.10.2; Thakur, Rabenseifner & Gropp 2005, direct exchange",
        value,
    )]
}

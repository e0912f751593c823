//! Linear all-to-all: every rank posts its k − 1 blocks to their destinations and its
//! k − 1 receives at once, in one step, for any number of ranks.
//!
//! Reference: Open MPI's `ompi_coll_base_alltoall_intra_basic_linear` (post every
//! receive and every send, then wait for all), which Open MPI's fixed rules choose for
//! small messages; Thakur, Rabenseifner & Gropp, "Optimization of Collective
//! Communication Operations in MPICH", IJHPCA 19(1), 2005, the alltoall section (MPICH
//! posts all sends and receives at once for medium messages).
//!
//! In its one step rank r copies block r of `in` to block r of `out`, sends block j of
//! `in` to j and receives block j of `out` from j, for every j ≠ r, in the order
//! r + 1, r + 2, … (mod k), so that not every rank sends to rank 0 first.
//!
//! Cost: one step (none when m = 0). Under the all-port rule every directed link carries
//! one message: β + mτ with full duplex, 2(β + mτ) with half duplex (a link's two
//! directions in turn). Under the one-port rule a node's k − 1 sends (and receives)
//! follow one another: (k − 1)(β + mτ) with full duplex, 2(k − 1)(β + mτ) with half
//! duplex, as the pairwise exchange. Volume k(k − 1)m, the least possible. Why then:
//! no rank's send waits for any receive, so each rank waits for every peer once, not
//! for a chain of k − 1 steps; with eager sends (the threads backend up to
//! `Config::eager`) and more ranks than cores, that is the cost that dominates a short
//! all-to-all (measured against Open MPI: `docs/perf-log/2026-11-24-matched-barrier.md`).
//!
//! Constraints: `complete:K`, any K ≥ 1. Under `--strict --ports one` it is a violation
//! (k − 1 messages per node in one step): it is an all-port schedule.

use crate::algorithms::broadcast::binomial::complete_ranks;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::cost::model::{Duplex, Ports};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::verify::Problem;

/// The linear all-to-all schedule.
#[derive(Clone, Debug)]
pub struct LinearAlltoall {
    k: u32,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params) -> Result<Box<dyn Schedule>, Error> {
    let k = complete_ranks(problem, "linear", OpKind::Alltoall)?;
    Ok(Box::new(LinearAlltoall { k, m: problem.len }))
}

impl Schedule for LinearAlltoall {
    fn nodes(&self) -> u32 {
        self.k
    }
    fn steps(&self) -> usize {
        usize::from(self.m > 0)
    }
    fn program(&self, rank: Rank) -> Program {
        let (k, m) = (self.k, self.m);
        let mut prog = Program::new(rank, self.steps());
        if m == 0 {
            return prog;
        }
        let input = |b: u32| Region::new(Buf::In, b as u64 * m, m);
        let output = |b: u32| Region::new(Buf::Out, b as u64 * m, m);
        prog.push(0, Op::copy(input(rank), output(rank)));
        for s in 1..k {
            let (to, from) = ((rank + s) % k, (rank + k - s) % k);
            prog.push(0, Op::send(to, input(to)));
            prog.push(0, Op::recv(from, output(from)));
        }
        prog
    }
}

/// β + mτ (all-port) or (k − 1)(β + mτ) (one-port), doubled under half duplex.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Ok(k) = complete_ranks(problem, "linear", OpKind::Alltoall) else {
        return vec![];
    };
    let model = &params.model;
    let one = model.beta() + problem.len as f64 * model.tau();
    let (expr, messages) = match (model.ports, model.duplex) {
        (Ports::Split { .. }, _) | (_, Duplex::HalfLink) => return vec![],
        (Ports::All, Duplex::Full) => ("β + mτ", 1.0),
        (Ports::All, Duplex::Half) => ("2(β + mτ)", 2.0),
        (Ports::One, Duplex::Full) => ("(k − 1)(β + mτ)", (k - 1) as f64),
        (Ports::One, Duplex::Half) => ("2(k − 1)(β + mτ)", 2.0 * (k - 1) as f64),
    };
    let value = if problem.len == 0 || k == 1 {
        0.0
    } else {
        messages * one
    };
    vec![Formula::exact(
        expr,
        "Open MPI basic_linear alltoall: every send and receive posted at once",
        value,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithms::broadcast::binomial::test_support::*;
    use crate::algorithms::find;
    use crate::collective::Collective;
    use crate::cost::model::Model;
    use crate::cost::simulate;
    use crate::verify::{verify, Strictness};

    /// Verified (all-port: one message per directed link and step) for every rank
    /// count and length, and timed under every rule against its closed form.
    #[test]
    fn verifies_and_matches_its_closed_form_for_every_rank_count() {
        let algo = find(OpKind::Alltoall, "linear").unwrap();
        for k in ranks() {
            let topo = complete(k);
            for m in [0, 1, 7] {
                let p = Problem {
                    topology: &topo,
                    collective: Collective::Alltoall,
                    len: m,
                    commutative: true,
                    counts: None,
                };
                let s = algo.build(&p, &Params::default()).unwrap();
                let strict = Strictness {
                    ports: Some(Ports::All),
                    duplex: None,
                    host_ports: None,
                };
                verify(p, s.as_ref(), strict).unwrap_or_else(|v| panic!("k = {k}, m = {m}: {v}"));
                for (ports, duplex) in MODELS {
                    let model = Model {
                        ports,
                        duplex,
                        ..Model::new(0.7, 0.13).unwrap()
                    };
                    let t = simulate(&topo, s.as_ref(), &model).time;
                    let params = Params {
                        model,
                        ..Params::default()
                    };
                    let f = &algo.formulas(&p, &params)[0];
                    assert!(
                        f.holds_for(t),
                        "k = {k}, m = {m}, {ports}/{duplex}: {} = {} but simulated {t}",
                        f.expr,
                        f.value
                    );
                }
            }
        }
    }

    #[test]
    fn is_one_step_and_refuses_a_hypercube() {
        assert_eq!(LinearAlltoall { k: 6, m: 2 }.steps(), 1);
        refuses_hypercube(OpKind::Alltoall, "linear");
    }
}

//! All-to-all (total exchange) on every link at once: n dimension exchanges of 1/n of
//! every block, exchange j crossing the dimensions in the order j, j + 1, …, j − 1
//! (mod n), so that in every step the n exchanges use the n different links.
//!
//! Reference: Johnsson & Ho, "Optimum broadcasting and personalized communication in
//! hypercubes", IEEE Trans. Computers 38(9), 1989, §6 (all-to-all personalized
//! communication with all ports: the data split over n rotated spanning binomial trees,
//! which reaches the bound nβ + 2^{n−1}mτ up to rounding); the single exchange is
//! [`super::dimension_exchange`].
//!
//! Schedule: block b of every node is cut into n parts (part j: [`pipeline::packet`]
//! `(m, n, j)`). Node X keeps the parts j of its k columns side by side in `tmp`
//! (part-major: column C of part j at k·off_j + C·len_j), so that the columns whose bit
//! d is set form one strided region. Step 0 copies `in` there (one local copy per
//! part). Step 1 + t, for every part j, crosses dimension d = (t + j) mod n exactly as
//! the dimension exchange does: the 2^{n−1} columns whose bit d differs from X's go to
//! X ⊕ 2^d as one message, and the partner's, which belong in the same columns, land in
//! a scratch area of `tmp` and are copied in place. The last step copies every part's
//! columns to `out`. With S the dimensions a part has crossed, its column C at X holds
//! part j of block (C & !S) | (X & S) of rank (X & !S) | (C & S) whatever the order, so
//! after the last step column C holds part j of block X of rank C.
//!
//! Cost (rounds model; m > 0, n ≥ 1; L = ⌈m/n⌉, the largest part; p = min(n, m) parts
//! are non-empty): in each of the n exchange steps every node sends one message of
//! 2^{n−1} parts on each of its n links (one per non-empty part) and receives as many:
//!
//! ```text
//! ports all, full duplex:  T = n(β + 2^{n−1}Lτ)
//! ports all, half duplex:  T = 2n(β + 2^{n−1}Lτ)
//! ports one, full duplex:  T = n(pβ + 2^{n−1}mτ)
//! ports one, half duplex:  T = 2n(pβ + 2^{n−1}mτ)
//! ```
//!
//! For n | m, all ports and full duplex, T = nβ + 2^{n−1}mτ: the lower bound of
//! [`crate::bounds`] (diameter rounds, and the total distance n·2^{n−1}m per node
//! spread over its n links), reached exactly. Volume n·2^{2n−1}m: every part crosses
//! exactly its Hamming distance. Memory: `tmp` of k·m + 2^{n−1}m elements.
//!
//! Constraints: hypercube.

use crate::algorithms::allgather::rotated_exchange::symmetric_form;
use crate::algorithms::alltoall::dimension_exchange::alltoall_cube;
use crate::algorithms::fit::{self, Built};
use crate::algorithms::pipeline;
use crate::algorithms::{Formula, Params};
use crate::cost::model::{Duplex, Model, Ports};
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The rotated all-port exchange.
#[derive(Clone, Debug)]
pub struct RotatedExchange {
    cube: Hypercube,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = alltoall_cube(problem, *cube, "rotated-exchange")?;
    Ok(Box::new(RotatedExchange {
        cube,
        m: problem.len,
    }))
}

impl Schedule for RotatedExchange {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        match (self.m, self.cube.dim()) {
            (0, _) => 0,
            (_, 0) => 1,
            (_, n) => n as usize + 1,
        }
    }
    fn program(&self, rank: Rank) -> Program {
        let mut prog = Program::new(rank, self.steps());
        self.fill(&mut prog);
        prog
    }
    fn program_into(&self, rank: Rank, out: &mut Program) {
        out.reset(rank, self.steps());
        self.fill(out);
    }
}

impl RotatedExchange {
    /// Write the program of `prog.rank` into `prog`, an empty program of `steps()`
    /// steps.
    fn fill(&self, prog: &mut Program) {
        let rank = prog.rank;
        let (n, m) = (self.cube.dim(), self.m);
        if m == 0 {
            return;
        }
        if n == 0 {
            prog.push(
                0,
                Op::copy(Region::new(Buf::In, 0, m), Region::new(Buf::Out, 0, m)),
            );
            return;
        }
        let k = self.cube.nodes() as u64;
        let half = k / 2;
        prog.tmp_len = k * m + half * m;
        for j in 0..n {
            let (off, len) = pipeline::packet(m, n as u64, j as u64);
            if len == 0 {
                continue;
            }
            let work = k * off;
            // Part j of every block, as laid out in `in` and `out` (stride m).
            let spread = |buf| Region::strided(buf, off, len, m, k);
            prog.push(
                0,
                Op::copy(spread(Buf::In), Region::new(Buf::Tmp, work, k * len)),
            );
            let scratch = Region::new(Buf::Tmp, k * m + half * off, half * len);
            for t in 0..n {
                let d = (t + j) % n;
                let peer = rank ^ (1 << d);
                let away = 1 - ((rank >> d) & 1) as u64;
                // The columns whose bit d is `away`: runs of 2^d every 2^{d+1}.
                let run = (1u64 << d) * len;
                let cols =
                    Region::strided(Buf::Tmp, work + away * run, run, 2 * run, 1 << (n - 1 - d));
                let s = t as usize + 1;
                prog.push(s, Op::send(peer, cols));
                prog.push(s, Op::recv(peer, scratch));
                prog.push(s, Op::copy(scratch, cols));
            }
        }
        // Every part's columns back to `out`, after the last step's copies in place.
        for j in 0..n {
            let (off, len) = pipeline::packet(m, n as u64, j as u64);
            if len > 0 {
                let from = Region::new(Buf::Tmp, k * off, k * len);
                prog.push(
                    n as usize,
                    Op::copy(from, Region::strided(Buf::Out, off, len, m, k)),
                );
            }
        }
    }
}

/// The exact time under `model` (see the module doc).
pub(crate) fn time(n: u32, m: u64, model: &Model) -> f64 {
    if m == 0 || n == 0 {
        return 0.0;
    }
    let (beta, tau) = (model.beta(), model.tau());
    let half = (1u64 << (n - 1)) as f64;
    let per_step = match model.ports {
        Ports::All => beta + half * m.div_ceil(n as u64) as f64 * tau,
        Ports::One | Ports::Split { .. } => (n as u64).min(m) as f64 * beta + half * m as f64 * tau,
    };
    let sides = match model.duplex {
        Duplex::Full => 1.0,
        Duplex::Half | Duplex::HalfLink => 2.0,
    };
    n as f64 * sides * per_step
}

/// The exact time under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) =
        fit::cube_of(problem).map(|c| alltoall_cube(problem, c, "rotated-exchange"))
    else {
        return vec![];
    };
    symmetric_form(
        cube.dim(),
        problem.len,
        params,
        [
            "n(β + 2^{n−1}⌈m/n⌉τ)",
            "2n(β + 2^{n−1}⌈m/n⌉τ)",
            "n(min(n, m)β + 2^{n−1}mτ)",
            "2n(min(n, m)β + 2^{n−1}mτ)",
        ],
        "Johnsson & Ho 1989, §6, all-to-all personalized communication on all ports (exact form: ours)",
        time,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::alltoall::dimension_exchange::test_support::exact_forms_hold;
    use crate::collective::Collective;
    use crate::topology::Topology;

    #[test]
    fn verifies_and_matches_the_exact_forms() {
        exact_forms_hold(build, formulas, Collective::Alltoall);
    }

    /// n | m: exactly the all-port lower bound.
    #[test]
    fn reaches_the_lower_bound_when_n_divides_m() {
        let model = Model::new(1.0, 0.01).unwrap();
        for n in 1..=6u32 {
            let topo: Topology = format!("hypercube:{n}").parse().unwrap();
            let m = 60 * n as u64;
            let lb = crate::bounds::lower_bound(&topo, &Collective::Alltoall, m, &model).unwrap();
            let t = time(n, m, &model);
            assert!((t - lb).abs() <= 1e-9 * lb, "n={n}: {t} vs bound {lb}");
        }
    }
}

//! Reduce-scatter on every link at once: n recursive-halving exchanges of 1/n of every
//! block, exchange j crossing the dimensions in the order j − 1, j − 2, …, j (mod n), so
//! that in every step the n exchanges use the n different links. The reverse of the
//! [`rotated-exchange` all-gather](crate::algorithms::allgather::rotated_exchange).
//!
//! Reference: Johnsson & Ho, "Optimum broadcasting and personalized communication in
//! hypercubes", IEEE Trans. Computers 38(9), 1989 (reduction as the reverse of
//! broadcasting, the data split over n rotated spanning binomial trees); recursive
//! halving after Thakur, Rabenseifner & Gropp 2005.
//!
//! Schedule: block b of every node's `in` is cut into n parts (part j:
//! [`pipeline::packet`]`(m, n, j)`). Step 0 copies part j of block b to position
//! rotr(b, j) (b rotated right by j bits) of part j's area of `tmp`: the blocks with
//! the same low j bits are consecutive positions, one strided copy each. Step 1 + t of
//! part j crosses dimension (n − 1 − t + j) mod n, bit n − 1 − t of the rotated
//! labels: of the aligned range of 2^{n−t} positions it still reduces, the node sends
//! the half without its own position rotr(X, j) to the partner and combines the
//! partner's partial sums of its own half into it. The last step copies position
//! rotr(X, j) to part j of `out`.
//!
//! Cost (rounds model; m > 0, n ≥ 1; L = ⌈m/n⌉; p = min(n, m)): the all-gather's,
//! step t of the reverse moving 2^{n−1−t} parts on every link:
//!
//! ```text
//! ports all, full duplex:  T = nβ + (2^n − 1)Lτ
//! ports all, half duplex:  T = 2(nβ + (2^n − 1)Lτ)
//! ports one, full duplex:  T = npβ + (2^n − 1)mτ
//! ports one, half duplex:  T = 2(npβ + (2^n − 1)mτ)
//! ```
//!
//! For n | m, all ports and full duplex, T = nβ + (2^n − 1)mτ/n, the lower bound of
//! [`crate::bounds`] (every node sends k − 1 blocks' worth over n links). Volume
//! k(k − 1)m. Memory: `tmp` of k·m elements.
//!
//! Constraints: hypercube; a commutative operator (ranks combine in a rotated order).

use crate::algorithms::allgather::rotated_exchange::{rotr, symmetric_form, time, FORMS};
use crate::algorithms::allreduce::dimension_exchange::reduction_cube;
use crate::algorithms::allreduce::ring::needs_commutative;
use crate::algorithms::fit::{self, Built};
use crate::algorithms::pipeline;
use crate::algorithms::{Formula, Params};
use crate::collective::OpKind;
use crate::schedule::{Action, Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The rotated all-port reduce-scatter.
#[derive(Clone, Debug)]
pub struct RotatedReduceScatter {
    cube: Hypercube,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = reduction_cube(problem, *cube, "rotated-exchange", OpKind::ReduceScatter)?;
    needs_commutative(problem, "rotated-exchange")?;
    Ok(Box::new(RotatedReduceScatter {
        cube,
        m: problem.len,
    }))
}

impl Schedule for RotatedReduceScatter {
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

impl RotatedReduceScatter {
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
        prog.tmp_len = k * m;
        for j in 0..n {
            let (off, len) = pipeline::packet(m, n as u64, j as u64);
            if len == 0 {
                continue;
            }
            let work = k * off;
            let me = rotr(rank as u64, j, n);
            let range =
                |first: u64, count: u64| Region::new(Buf::Tmp, work + first * len, count * len);
            // Blocks h·2^j + low go to positions h + low·2^{n−j}.
            let run = 1u64 << (n - j);
            for low in 0..(1u64 << j) {
                prog.push(
                    0,
                    Op::copy(
                        Region::strided(Buf::In, low * m + off, len, (1u64 << j) * m, run),
                        range(low * run, run),
                    ),
                );
            }
            for t in 0..n {
                let c = 1u64 << (n - 1 - t);
                let peer = rank ^ (1 << ((n - 1 - t + j) % n));
                let kept = me & !(c - 1);
                let s = 1 + t as usize;
                prog.push(s, Op::send(peer, range(kept ^ c, c)));
                prog.push(
                    s,
                    Op::Recv {
                        from: peer,
                        into: smallvec::smallvec![range(kept, c)],
                        action: Action::CombineRight,
                    },
                );
            }
            prog.push(
                n as usize,
                Op::copy(range(me, 1), Region::new(Buf::Out, off, len)),
            );
        }
    }
}

/// The exact time under every port and duplex rule (the all-gather's).
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem)
        .map(|c| reduction_cube(problem, c, "rotated-exchange", OpKind::ReduceScatter))
    else {
        return vec![];
    };
    symmetric_form(
        cube.dim(),
        problem.len,
        params,
        FORMS,
        "Johnsson & Ho 1989 (reduction as reversed broadcasting), recursive halving on all ports (exact form: ours)",
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

    #[test]
    fn verifies_and_matches_the_exact_forms() {
        exact_forms_hold(build, formulas, Collective::ReduceScatter);
    }
}

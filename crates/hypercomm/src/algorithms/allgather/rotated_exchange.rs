//! All-gather on every link at once: n recursive-doubling exchanges of 1/n of every
//! block, exchange j crossing the dimensions in the order j, j + 1, …, j − 1 (mod n), so
//! that in every step the n exchanges use the n different links.
//!
//! Reference: Johnsson & Ho, "Optimum broadcasting and personalized communication in
//! hypercubes", IEEE Trans. Computers 38(9), 1989 (all-to-all broadcasting with all
//! ports over n rotated spanning binomial trees; the data split n ways reaches the
//! bound nβ + (2^n − 1)mτ/n up to rounding); the single exchange is
//! [`super::dimension_exchange`].
//!
//! Schedule: every node's block is cut into n parts (part j: [`pipeline::packet`]
//! `(m, n, j)`). Node X keeps part j of rank a's block in `tmp` at position
//! rotr(a, j) (a's label rotated right by j bits) of part j's area, so that part j's
//! step t, which crosses dimension d = (t + j) mod n (bit t of the rotated label),
//! always holds one contiguous range: the 2^t positions that agree with rotr(X, j)
//! above bit t. Step t sends that range to X ⊕ 2^d and receives the partner's, the
//! adjacent range, in place (step 0 sends straight from `in` and copies the node's own
//! part). The last step copies every part to `out`: the ranks with the same low j bits
//! are consecutive positions, one strided copy each (2^j copies for part j).
//!
//! Cost (rounds model; m > 0, n ≥ 1; L = ⌈m/n⌉; p = min(n, m) parts are non-empty):
//! step t sends 2^t parts on every link and receives as many:
//!
//! ```text
//! ports all, full duplex:  T = nβ + (2^n − 1)Lτ
//! ports all, half duplex:  T = 2(nβ + (2^n − 1)Lτ)
//! ports one, full duplex:  T = npβ + (2^n − 1)mτ
//! ports one, half duplex:  T = 2(npβ + (2^n − 1)mτ)
//! ```
//!
//! For n | m, all ports and full duplex, T = nβ + (2^n − 1)mτ/n: the lower bound of
//! [`crate::bounds`] (diameter rounds; (2^n − 1)m elements into a node over n links),
//! reached exactly. Volume k(k − 1)m: every part of every block reaches every other
//! node in exactly one message. Memory: `tmp` of k·m elements.
//!
//! Constraints: hypercube.

use crate::algorithms::allgather::dimension_exchange::allgather_cube;
use crate::algorithms::fit::{self, Built};
use crate::algorithms::pipeline;
use crate::algorithms::{Formula, Params};
use crate::cost::model::{Duplex, Model, Ports};
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The rotated all-port all-gather.
#[derive(Clone, Debug)]
pub struct RotatedAllgather {
    cube: Hypercube,
    m: u64,
}

/// Rotate the low `n` bits of `c` right by `j` (j < n).
pub(crate) fn rotr(c: u64, j: u32, n: u32) -> u64 {
    if j == 0 {
        return c;
    }
    let mask = (1u64 << n) - 1;
    ((c >> j) | (c << (n - j))) & mask
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = allgather_cube(problem, *cube, "rotated-exchange")?;
    Ok(Box::new(RotatedAllgather {
        cube,
        m: problem.len,
    }))
}

impl Schedule for RotatedAllgather {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        match (self.m, self.cube.dim()) {
            (0, _) => 0,
            (_, 0) => 1,
            (_, n) => n as usize,
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

impl RotatedAllgather {
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
            // Positions [first, first + count) of part j's area.
            let range =
                |first: u64, count: u64| Region::new(Buf::Tmp, work + first * len, count * len);
            for t in 0..n {
                let d = (t + j) % n;
                let peer = rank ^ (1 << d);
                let held = me & !((1u64 << t) - 1);
                let theirs = held ^ (1u64 << t);
                let from = if t == 0 {
                    Region::new(Buf::In, off, len)
                } else {
                    range(held, 1 << t)
                };
                let s = t as usize;
                prog.push(s, Op::send(peer, from));
                prog.push(s, Op::recv(peer, range(theirs, 1 << t)));
                if t == 0 {
                    prog.push(s, Op::copy(Region::new(Buf::In, off, len), range(me, 1)));
                }
            }
            // Ranks h·2^j + low sit at positions h + low·2^{n−j}.
            let run = 1u64 << (n - j);
            for low in 0..(1u64 << j) {
                prog.push(
                    n as usize - 1,
                    Op::copy(
                        range(low * run, run),
                        Region::strided(Buf::Out, low * m + off, len, (1u64 << j) * m, run),
                    ),
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
    let all = ((1u64 << n) - 1) as f64;
    let one_way = match model.ports {
        Ports::All => n as f64 * beta + all * m.div_ceil(n as u64) as f64 * tau,
        Ports::One | Ports::Split { .. } => {
            (n as u64 * (n as u64).min(m)) as f64 * beta + all * m as f64 * tau
        }
    };
    match model.duplex {
        Duplex::Full => one_way,
        Duplex::Half | Duplex::HalfLink => 2.0 * one_way,
    }
}

/// The all-gather's exact forms, by port and duplex rule: all ports full and half
/// duplex, one port full and half duplex (the reduce-scatter's too).
pub(crate) const FORMS: [&str; 4] = [
    "nβ + (2^n − 1)⌈m/n⌉τ",
    "2(nβ + (2^n − 1)⌈m/n⌉τ)",
    "n·min(n, m)β + (2^n − 1)mτ",
    "2(n·min(n, m)β + (2^n − 1)mτ)",
];

/// The exact form of a rotated exchange on the n-cube, whose every step uses each link
/// both ways: `forms` as [`FORMS`] orders them, valued by `time`; none under split
/// ports, or under half-link duplex where the links are not symmetric.
pub(crate) fn symmetric_form(
    n: u32,
    m: u64,
    params: &Params,
    forms: [&str; 4],
    reference: &'static str,
    time: fn(u32, u64, &Model) -> f64,
) -> Vec<Formula> {
    let Some(model) = params.model.for_symmetric_links() else {
        return vec![];
    };
    let expr = match (model.ports, model.duplex) {
        (Ports::Split { .. }, _) | (_, Duplex::HalfLink) => return vec![],
        (Ports::All, Duplex::Full) => forms[0],
        (Ports::All, Duplex::Half) => forms[1],
        (Ports::One, Duplex::Full) => forms[2],
        (Ports::One, Duplex::Half) => forms[3],
    };
    vec![Formula::exact(expr, reference, time(n, m, &model))]
}

/// The exact time under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) =
        fit::cube_of(problem).map(|c| allgather_cube(problem, c, "rotated-exchange"))
    else {
        return vec![];
    };
    symmetric_form(
        cube.dim(),
        problem.len,
        params,
        FORMS,
        "Johnsson & Ho 1989, all-to-all broadcasting on all ports (exact form: ours)",
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
        exact_forms_hold(build, formulas, Collective::Allgather);
    }

    /// n | m: exactly the all-port lower bound.
    #[test]
    fn reaches_the_lower_bound_when_n_divides_m() {
        let model = Model::new(1.0, 0.01).unwrap();
        for n in 1..=6u32 {
            let topo: Topology = format!("hypercube:{n}").parse().unwrap();
            let m = 60 * n as u64;
            let lb = crate::bounds::lower_bound(&topo, &Collective::Allgather, m, &model).unwrap();
            let t = time(n, m, &model);
            assert!((t - lb).abs() <= 1e-9 * lb, "n={n}: {t} vs bound {lb}");
        }
    }
}

//! Sequential Multi-Gather (SMG): one spanning-binomial-tree gather per destination, in
//! turn.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §6: "simply perform k scatter or
//! gather operations", each of packets of N²/k² elements, with the Hypercube Gather of
//! §5 (eq. 5.1): t_SMG = k[(k − 1)(N²/k²)τ + nβ] ≈ N²τ + n2^nβ.
//!
//! Gather j (j = 0, …, k − 1) collects block j of every rank's `in` into rank j's `out`,
//! in the n steps from jn, with the tree and buffers of [`crate::algorithms::gather::sbt`]
//! (descending tree: every subtree's blocks form one contiguous range, so the root
//! assembles `out` in rank order and every message is one region). Inner nodes reuse
//! `tmp` from one gather to the next: a gather's last read of it precedes the next
//! gather's first write.
//!
//! Cost: kn steps (k steps of local copies when n = 0, none when m = 0); in every step a
//! node sends at most one message or receives at most one, never both, so under every
//! port and duplex rule the time is k gathers of nβ + (k − 1)mτ each:
//! t = k[nβ + (k − 1)mτ] = knβ + k(k − 1)mτ, the paper's t_SMG with m = N²/k². Its
//! "≈ N²τ + n2^nβ" is k²mτ + nkβ, an upper bound (it rounds k − 1 up to k). Volume
//! k·n·2^{n−1}·m, the least possible (each block crosses its Hamming distance).
//! Memory: `tmp` of 2^{n−1}m elements at most.
//!
//! Constraints: hypercube.

use crate::algorithms::alltoall::dimension_exchange::alltoall_cube;
use crate::algorithms::fit::{self, Built};
use crate::algorithms::gather::sbt::{push_gather, tmp_len as gather_tmp_len};
use crate::algorithms::scatter::sbt::steps;
use crate::algorithms::{Formula, Params};
use crate::schedule::{Program, Rank, Schedule, StepStream};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The sequential multi-gather schedule.
#[derive(Clone, Debug)]
pub struct Smg {
    cube: Hypercube,
    m: u64,
}

/// Build the schedule.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = alltoall_cube(problem, *cube, "smg")?;
    Ok(Box::new(Smg {
        cube,
        m: problem.len,
    }))
}

impl Schedule for Smg {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        self.cube.nodes() as usize * steps(&self.cube, self.m)
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    /// Gather after gather: only the current gather's steps are held.
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let (c, m) = (self.cube, self.m);
        let tmp = (0..c.nodes())
            .map(|j| gather_tmp_len(&c, rank, j, m))
            .max()
            .unwrap_or(0);
        let per = steps(&c, m);
        // Gather j: block j of every `in` to rank j, in steps j·per ..; a rank acts in
        // a few steps of each gather, and only those are streamed.
        StepStream::phases(rank, tmp, c.nodes() as usize, per, move |j, prog| {
            push_gather(prog, &c, j as Rank, m, 0, j as u64 * m);
        })
    }
}

/// k[nβ + (k − 1)mτ] (§6, t_SMG) exactly, and N²τ + n2^nβ with N² = k²m as an upper
/// bound; both under every port and duplex rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem).map(|c| alltoall_cube(problem, c, "smg")) else {
        return vec![];
    };
    let (n, m) = (cube.dim() as f64, problem.len as f64);
    let k = cube.nodes() as f64;
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let (exact, approx) = if problem.len == 0 {
        (0.0, 0.0)
    } else {
        (
            k * (n * beta + (k - 1.0) * m * tau),
            k * k * m * tau + n * k * beta,
        )
    };
    vec![
        Formula::exact(
            "k[(k − 1)mτ + nβ]",
            "Saad & Schultz 1985, §6, t_SMG (m = N²/k²)",
            exact,
        ),
        Formula::upper_bound(
            "N²τ + n2^nβ, N² = k²m",
            "Saad & Schultz 1985, §6, t_SMG ≈ N²τ + n2^nβ",
            approx,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::alltoall::dimension_exchange::test_support::{
        has_exact, timed, verified,
    };
    use crate::collective::Collective;

    #[test]
    fn verifies_for_every_cube_up_to_7_and_every_length() {
        for n in 0..=7 {
            for m in [0, 1, 7] {
                let s = verified(build, Collective::Alltoall, n, m, false);
                let k = 1usize << n;
                assert_eq!(s.steps(), if m == 0 { 0 } else { k * (n as usize).max(1) });
            }
        }
    }

    #[test]
    fn forms_hold_under_every_model() {
        for n in 0..=6 {
            for m in [0, 1, 7] {
                for (ports, duplex, _, forms) in timed(build, formulas, Collective::Alltoall, n, m)
                {
                    assert!(
                        has_exact(&forms, "k[(k − 1)mτ + nβ]"),
                        "{ports}/{duplex}: {forms:?}"
                    );
                    assert_eq!(forms.len(), 2);
                }
            }
        }
    }
}

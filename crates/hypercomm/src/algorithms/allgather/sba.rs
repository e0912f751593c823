//! All-gather by the Sequential Broadcasting Algorithm (SBA): one broadcast per node.
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §4.1, eq. (4.1): "broadcasting
//! the data from each node in turn using the Hypercube Broadcast Algorithm",
//! t_SBA = 2^n(√(mτ) + √((n − 1)β))².
//!
//! Node j's block is broadcast from j into block j of every `out` by
//! [`crate::algorithms::broadcast::sbt`]'s schedule (unpipelined one dimension per step
//! when ν = 1, level-pipelined in ν packets otherwise), nodes 0, 1, …, k − 1 in turn:
//! broadcast j occupies steps j·S..(j + 1)·S, S = ν + n − 1. Every node copies its `in`
//! to its block of `out` in step 0; a root sends from `in`.
//!
//! Cost: k·S steps, k = 2^n. ν = 1: k·n(β + mτ) under every port and duplex rule (eq.
//! 2.1 k times). ν > 1, all ports, full or half-link duplex: k times the pipeline's
//! (ν + n − 1)(β + qτ) + \[r > 0\](r + n − 1)τ, q = ⌊m/ν⌋, r = m mod ν, whose continuous
//! optimum is eq. (4.1); under one port or half duplex the multicasts and the
//! forwarding serialise and the simulator charges them. Volume k(k − 1)m.
//!
//! The broadcasts could overlap (broadcast j + 1 could start while j drains), but the
//! paper runs them in turn, and so do we: no step carries two broadcasts.
//!
//! Constraints: hypercube; 1 ≤ ν ≤ max(m, 1).

use crate::algorithms::allgather::dimension_exchange::allgather_cube;
use crate::algorithms::broadcast::sbt::SbtBroadcast;
use crate::algorithms::fit::{self, Built};
use crate::algorithms::pipeline;
use crate::algorithms::{Formula, Packets, Params};
use crate::cost::model::{Duplex, Ports};
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule, Step, StepStream};
use crate::topology::Hypercube;
use crate::verify::Problem;

/// The SBA schedule.
#[derive(Clone, Debug)]
pub struct Sba {
    cube: Hypercube,
    m: u64,
    nu: u64,
}

/// Build the schedule; ν is resolved for a pipeline of depth n.
pub fn build(problem: &Problem<'_>, params: &Params, cube: &Hypercube) -> Built {
    let cube = allgather_cube(problem, *cube, "sba")?;
    let nu = pipeline::resolve(params, problem.len, cube.dim() as u64)?;
    Ok(Box::new(Sba {
        cube,
        m: problem.len,
        nu,
    }))
}

impl Sba {
    /// Packets per message.
    pub fn packets(&self) -> u64 {
        self.nu
    }

    /// Steps of one broadcast, S = ν + n − 1.
    fn per_broadcast(&self) -> usize {
        self.nu as usize + self.cube.dim() as usize - 1
    }

    /// Move region `r` of broadcast `root`'s schedule to where the all-gather keeps it:
    /// the broadcast's `out` is block `root` of ours.
    fn relocate(&self, root: Rank, r: Region) -> Region {
        match r.buf {
            Buf::Out => Region::new(Buf::Out, root as u64 * self.m + r.off, r.len),
            _ => r,
        }
    }
}

impl Schedule for Sba {
    fn nodes(&self) -> u32 {
        self.cube.nodes()
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            0
        } else if self.cube.dim() == 0 {
            1
        } else {
            self.cube.nodes() as usize * self.per_broadcast()
        }
    }
    fn program(&self, rank: Rank) -> Program {
        self.stream(rank).into_program()
    }
    /// Broadcast after broadcast: only the current broadcast's S steps are held.
    fn stream(&self, rank: Rank) -> StepStream<'_> {
        let m = self.m;
        if m == 0 {
            return StepStream::new(rank, 0, std::iter::empty());
        }
        let mut copy = Some(Op::copy(
            Region::new(Buf::In, 0, m),
            Region::new(Buf::Out, rank as u64 * m, m),
        ));
        if self.cube.dim() == 0 {
            let step = Step {
                ops: copy.into_iter().collect(),
            };
            return StepStream::new(rank, 0, std::iter::once(step));
        }
        // Broadcast after broadcast, each written into one reused program; a rank acts
        // in a few steps of each, and only those are streamed.
        let (k, per) = (self.cube.nodes() as usize, self.per_broadcast());
        StepStream::phases(rank, 0, k, per, move |root, prog| {
            self.broadcast_into(root as Rank, prog);
            // Every node's copy, first in step 0.
            if let Some(op) = copy.take() {
                prog.steps[0].ops.insert(0, op);
            }
        })
    }
    fn packets(&self) -> Option<u64> {
        Some(self.nu)
    }
}

impl Sba {
    /// The S steps of broadcast `root` at `prog.rank` written into `prog` (an empty
    /// program of S steps), relocated into block `root` of `out` (without the root's
    /// copy, which step 0 does for every node).
    fn broadcast_into(&self, root: Rank, prog: &mut Program) {
        let bcast = SbtBroadcast::new(self.cube, root, self.m, self.nu);
        debug_assert_eq!(bcast.steps(), self.per_broadcast());
        bcast.program_into(prog.rank, prog);
        for step in &mut prog.steps {
            step.ops.retain(|op| !matches!(op, Op::Local { .. }));
            for op in &mut step.ops {
                match op {
                    Op::Send { from: regs, .. } | Op::Recv { into: regs, .. } => {
                        for r in regs.iter_mut() {
                            *r = self.relocate(root, *r);
                        }
                    }
                    Op::Local { .. } => {}
                }
            }
        }
    }
}

/// 2^n·n(β + mτ) for ν = 1 under every model; 2^n times the pipeline's discrete time for
/// ν > 1 under all ports, full or half-link duplex; eq. (4.1) as a lower estimate
/// with `--packets opt` there.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem).map(|c| allgather_cube(problem, c, "sba")) else {
        return vec![];
    };
    let (n, m) = (cube.dim() as u64, problem.len);
    let k = cube.nodes() as f64;
    let (beta, tau) = (params.model.beta(), params.model.tau());
    let Ok(nu) = pipeline::resolve(params, m, n) else {
        return vec![];
    };
    // One broadcast at a time, its tree links one way: half-link duplex as full.
    let all_full = params.model.ports == Ports::All && params.model.duplex != Duplex::Half;
    let mut v = Vec::new();
    if nu == 1 {
        v.push(Formula::exact(
            "2^n·n(β + mτ)",
            "Saad & Schultz 1985, §4.1 with §2, Prop. 2.1, eq. (2.1)",
            if m == 0 {
                0.0
            } else {
                k * n as f64 * (beta + m as f64 * tau)
            },
        ));
    } else if all_full {
        v.push(Formula::exact(
            format!(
                "2^n[(ν + n − 1)(β + qτ) + [r > 0](r + n − 1)τ], q = ⌊m/ν⌋, r = m mod ν, ν = {nu}"
            ),
            "Saad & Schultz 1985, §4.1 with §2, Prop. 2.2 (discrete form)",
            k * pipeline::time(m, n, nu, beta, tau),
        ));
    }
    if params.packets == Packets::Opt && all_full {
        v.push(Formula::estimate(
            "2^n(√(mτ) + √((n − 1)β))²",
            "Saad & Schultz 1985, §4.1, eq. (4.1)",
            k * pipeline::continuous_optimum(m, n, beta, tau),
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::allgather::dimension_exchange::test_support::{check, exact};
    use crate::algorithms::FormulaKind;

    #[test]
    fn verifies_and_matches_its_forms() {
        for n in 0..=7u32 {
            for m in [0u64, 1, 7] {
                for packets in [Packets::Count(1), Packets::Count(3), Packets::Opt] {
                    let Some(timed) = check(build, formulas, n, m, packets) else {
                        assert!(
                            matches!(packets, Packets::Count(c) if c > m.max(1)),
                            "n = {n}, m = {m}: {packets:?} refused"
                        );
                        continue;
                    };
                    let (k, n_) = ((1u64 << n) as f64, n as u64);
                    for t in &timed {
                        let all_full = t.ports == Ports::All && t.duplex == Duplex::Full;
                        let nu = match packets {
                            Packets::Count(c) => c,
                            Packets::Opt => pipeline::best(m, n_, 1.0, 0.01),
                        };
                        if nu == 1 {
                            let want = if m == 0 {
                                0.0
                            } else {
                                k * n as f64 * (1.0 + m as f64 * 0.01)
                            };
                            let f = exact(t, "2^n·n(β + mτ)");
                            assert!(Formula::exact("", "", want).holds_for(f.value));
                        } else if all_full {
                            assert!(t.formulas.iter().any(Formula::is_exact));
                        }
                        let estimate = t.formulas.iter().any(|f| f.kind == FormulaKind::Estimate);
                        assert_eq!(estimate, all_full && packets == Packets::Opt);
                    }
                }
            }
        }
    }

    /// With many elements the optimum pipelines, and (4.1) stays below the discrete time.
    #[test]
    fn pipelined_optimum_and_eq_4_1() {
        let timed = check(build, formulas, 4, 1000, Packets::Opt).unwrap();
        let t = &timed[0];
        assert!(t.ports == Ports::All && t.duplex == Duplex::Full);
        let nu = pipeline::best(1000, 4, 1.0, 0.01);
        assert!(nu > 1);
        assert!(
            Formula::exact("", "", 16.0 * pipeline::time(1000, 4, nu, 1.0, 0.01)).holds_for(t.time)
        );
        let est = t
            .formulas
            .iter()
            .find(|f| f.kind == FormulaKind::Estimate)
            .unwrap();
        assert!(est.value <= t.time);
    }
}

//! All-gather by the Alternate Direction Exchange Algorithm (ADEA).
//!
//! Reference: Saad & Schultz 1985 (YALEU/DCS/RR-428), §4.2, Algorithm ADEA and
//! eq. (4.3): step i (i = 1..n) exchanges the 2^{i−1} accumulated blocks with the
//! opposite node in the i-th direction, direction 1 being the leading (most
//! significant) bit.
//!
//! So step i crosses dimension n − i, and after i steps a node holds the blocks of the
//! i-subcube through it that agrees with it on the low n − i bits: 2^i blocks with a
//! stride of 2^{n−i} blocks in `out`. Each exchange is still one message: one strided
//! region (2^{i−1} segments of m elements at a stride of 2^{n−i}m, as
//! `MPI_Type_vector`); no layout of `out` makes them contiguous, since block r of `out`
//! is fixed at r·m. This is
//! [`super::dimension_exchange`]'s schedule with the dimensions in descending order.
//!
//! Cost: n steps; step i moves 2^{i−1}m elements each way between the two nodes of every
//! edge in direction i. Full duplex: nβ + (2^n − 1)mτ; half duplex (the paper's "we
//! twice move blocks of 2^{i−1}m elements"): 2nβ + (2^{n+1} − 2)mτ, eq. (4.3); under
//! either port rule (one send and one receive per node per step). Volume 2^n(2^n − 1)m.
//!
//! Constraints: hypercube.

use crate::algorithms::allgather::dimension_exchange::{
    allgather_cube, exchange_time, DimensionExchange,
};
use crate::algorithms::fit::{self, Built};
use crate::algorithms::{Formula, Params};
use crate::cost::model::Duplex;
use crate::topology::DimOrder;
use crate::topology::Hypercube;
use crate::verify::Problem;

/// Build the schedule: the dimension exchange, leading bit first.
pub fn build(problem: &Problem<'_>, _params: &Params, cube: &Hypercube) -> Built {
    let cube = allgather_cube(problem, *cube, "adea")?;
    Ok(Box::new(DimensionExchange::new(
        cube,
        problem.len,
        DimOrder::Descending,
    )))
}

/// 2nβ + (2^{n+1} − 2)mτ (eq. 4.3) under half duplex, nβ + (2^n − 1)mτ under full
/// duplex; both under either port rule.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some(Ok(cube)) = fit::cube_of(problem).map(|c| allgather_cube(problem, c, "adea")) else {
        return vec![];
    };
    let value = exchange_time(cube.dim(), problem.len, &params.model);
    vec![match params.model.duplex {
        Duplex::Full => Formula::exact(
            "nβ + (2^n − 1)mτ",
            "Saad & Schultz 1985, §4.2, eq. (4.3) with each exchange one transfer (full duplex)",
            value,
        ),
        Duplex::Half | Duplex::HalfLink => Formula::exact(
            "2nβ + (2^{n+1} − 2)mτ",
            "Saad & Schultz 1985, §4.2, eq. (4.3)",
            value,
        ),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    /// `build` with the cube found first, as the registry hands it.
    fn build(problem: &Problem<'_>, params: &Params) -> crate::algorithms::fit::Built {
        crate::algorithms::fit::on_cube(super::build, problem, params)
    }
    use crate::algorithms::allgather::dimension_exchange::test_support::{
        check, cube, exact, verify_time,
    };
    use crate::algorithms::Packets;
    use crate::collective::Collective;
    use crate::cost::model::Ports;
    use crate::schedule::{Buf, Op, Region};

    #[test]
    fn verifies_and_matches_eq_4_3() {
        for n in 0..=7u32 {
            for m in [0u64, 1, 7] {
                let timed = check(build, formulas, n, m, Packets::Count(1)).unwrap();
                let (k, mf) = ((1u64 << n) as f64, m as f64);
                let (beta, tau) = (1.0, 0.01);
                for t in &timed {
                    let (expr, want) = match t.duplex {
                        Duplex::Full => {
                            ("nβ + (2^n − 1)mτ", n as f64 * beta + (k - 1.0) * mf * tau)
                        }
                        Duplex::Half | Duplex::HalfLink => (
                            "2nβ + (2^{n+1} − 2)mτ",
                            2.0 * n as f64 * beta + (2.0 * k - 2.0) * mf * tau,
                        ),
                    };
                    let want = if m == 0 { 0.0 } else { want };
                    assert!(exact(t, expr).holds_for(t.time));
                    assert!(
                        Formula::exact(expr, "", want).holds_for(t.time),
                        "n = {n}, m = {m}, ports {}, duplex {}: {} ≠ {want}",
                        t.ports,
                        t.duplex,
                        t.time
                    );
                }
                // The case the issue names: --ports all --duplex half is eq. (4.3).
                let half = timed
                    .iter()
                    .find(|t| t.ports == Ports::All && t.duplex == Duplex::Half)
                    .unwrap();
                assert_eq!(
                    exact(half, "2nβ + (2^{n+1} − 2)mτ").reference,
                    "Saad & Schultz 1985, §4.2, eq. (4.3)"
                );
            }
        }
    }

    /// Step i crosses the leading remaining bit and sends the 2^{i−1} blocks that agree
    /// with the node on the low n − i + 1 bits, as one message.
    #[test]
    fn leading_bit_first_one_message_per_exchange() {
        let topo = cube(4);
        let problem = Problem {
            topology: &topo,
            collective: Collective::Allgather,
            len: 2,
            commutative: false,
            counts: None,
        };
        let s = build(&problem, &Params::default()).unwrap();
        let prog = s.program(0b0110);
        for (i, step) in prog.steps.iter().enumerate() {
            let sends: Vec<_> = step
                .ops
                .iter()
                .filter_map(|o| match o {
                    Op::Send { to, from } => Some((to.clone(), from.clone())),
                    _ => None,
                })
                .collect();
            assert_eq!(sends.len(), 1, "step {i}: one message");
            let (to, from) = &sends[0];
            assert_eq!(to.as_slice(), &[0b0110 ^ (0b1000 >> i)]);
            if i == 0 {
                assert_eq!(from.as_slice(), &[Region::new(Buf::In, 0, 2)]);
                continue;
            }
            let stride = 16 >> i;
            let want: Vec<Region> = (0..1u64 << i)
                .map(|h| h * stride + (0b0110 % stride))
                .map(|b| Region::new(Buf::Out, 2 * b, 2))
                .collect();
            assert_eq!(from.len(), 1, "step {i}: one strided region");
            assert_eq!(from[0].segments().collect::<Vec<_>>(), want, "step {i}");
        }
    }

    #[test]
    fn verifies_at_n_10() {
        let t = verify_time(build, 10, 7);
        println!("adea: verify at n = 10 took {t:?}");
    }

    /// ADEA's held blocks are strided (ranks r, r + s, r + 2s, …): its messages are one
    /// strided region each and the verifier holds them as strided runs.
    #[test]
    fn verify_time_at_n_12() {
        let t = verify_time(build, 12, 7);
        println!("adea: verify at n = 12 took {t:?}");
    }
}

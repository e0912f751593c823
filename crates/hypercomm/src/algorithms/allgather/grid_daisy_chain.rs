//! The daisy chain on a torus grid (Saad & Schultz 1986, seed 004, §3.3 (D), eq. (3.30):
//! T^{DC}_{3,G} = (k − 1)(N/(k b_G) + τ_G)).
//!
//! N = km. A ring through all k nodes of `torus:AxB` is embedded in the grid
//! (`hamiltonian_cycle`), and the ring's daisy chain runs on it: in each of k − 1
//! steps every node passes the block it received the step before (its own first) to
//! its successor. The paper embeds the ring when k is even; with the wrap-around every
//! torus has one (both sides odd: a snake over the first A − 1 rows, with a detour
//! round the last row through its wrap-around link). Exact: (k − 1)(β + mτ) under any
//! port rule, full duplex or half-link duplex (a node sends to its successor and hears
//! its predecessor over two links); (3.30) is exact. Volume k(k − 1)m.
//!
//! Constraints: `torus:AxB`.

use crate::algorithms::plan::{self, Plan};
use crate::algorithms::{Formula, Params};
use crate::collective::Collective;
use crate::error::Error;
use crate::schedule::{Rank, Schedule};
use crate::verify::Problem;

/// A cycle through every node of `torus:AxB` (rank r·B + c), each node linked to the
/// next and the last to the first. A even: the rows as a snake over columns 1..B, back
/// up column 0. A odd, B even: the same with rows and columns swapped. Both odd (≥ 3):
/// the snake over rows 0..A − 1, where the hop (A − 2, 2) → (A − 2, 1) becomes a
/// detour down to (A − 1, 2), round row A − 1 through its wrap-around to (A − 1, 1),
/// and back up.
pub(crate) fn hamiltonian_cycle(a: u32, b: u32) -> Vec<Rank> {
    // The snake over `rows` rows of `cols` columns, as (row, column).
    let snake = |rows: u32, cols: u32| -> Vec<(u32, u32)> {
        let mut v = vec![(0, 0)];
        for r in 0..rows {
            if r % 2 == 0 {
                v.extend((1..cols).map(|c| (r, c)));
            } else {
                v.extend((1..cols).rev().map(|c| (r, c)));
            }
        }
        v.extend((1..rows).rev().map(|r| (r, 0)));
        v
    };
    let cells: Vec<(u32, u32)> = if a % 2 == 0 {
        snake(a, b)
    } else if b % 2 == 0 {
        snake(b, a).into_iter().map(|(c, r)| (r, c)).collect()
    } else {
        let mut v = snake(a - 1, b);
        let at = v
            .iter()
            .position(|&x| x == (a - 2, 2))
            .expect("the snake's last row runs from column B − 1 down to 1");
        let detour: Vec<(u32, u32)> = (0..b).map(|i| (a - 1, (2 + i) % b)).collect();
        v.splice(at + 1..at + 1, detour);
        v
    };
    cells.into_iter().map(|(r, c)| r * b + c).collect()
}

/// Build the schedule.
pub fn build(
    problem: &Problem<'_>,
    _params: &Params,
    a: u32,
    b: u32,
) -> Result<Box<dyn Schedule>, Error> {
    let k = a * b;
    let (m, c) = (problem.len, problem.collective);
    if m == 0 {
        return Ok(plan::boxed(plan::empty(k)));
    }
    let mut p = Plan::new(k);
    plan::own_copies(&mut p, c, k, m);
    let ring = hamiltonian_cycle(a, b);
    plan::ring_daisy(&mut p, 0, &ring, |o| vec![ring[o] as u64]);
    Ok(plan::boxed(p.build(plan::block_layout(
        Collective::Allgather,
        k,
        m,
    ))?))
}

/// (k − 1)(β + mτ), exact.
pub fn formulas(problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
    let Some((a, b)) = plan::torus_dims(problem.topology) else {
        return vec![];
    };
    if !plan::overlaps(&params.model, true) {
        return vec![];
    }
    let (k, m) = (a * b, problem.len);
    let v = if m == 0 {
        0.0
    } else {
        (k - 1) as f64 * plan::bt(&params.model, m)
    };
    vec![Formula::exact(
        "(k − 1)(β + mτ)",
        "Saad & Schultz 1986 (seed 004), §3.3 (D), eq. (3.30)",
        v,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    /// The cycle visits every node once and steps over links only, on every torus
    /// from 2 × 2 to 9 × 9.
    #[test]
    fn the_cycle_is_hamiltonian() {
        for a in 2..=9 {
            for b in 2..=9 {
                let t: Topology = format!("torus:{a}x{b}").parse().unwrap();
                let cyc = hamiltonian_cycle(a, b);
                let mut seen = cyc.clone();
                seen.sort_unstable();
                assert_eq!(seen, (0..a * b).collect::<Vec<_>>(), "{a}x{b}");
                for i in 0..cyc.len() {
                    let (u, v) = (cyc[i], cyc[(i + 1) % cyc.len()]);
                    assert!(t.are_linked(u, v), "{a}x{b}: {u} → {v}");
                }
            }
        }
    }
}

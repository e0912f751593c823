//! The work a schedule asks of the verifier and the simulator, estimated before either
//! runs, so that a caller can refuse a schedule that would run for hours.
//!
//! Both consumers walk every rank's busy steps and, in each, every operation, every
//! region it names and every peer a send goes to; the verifier's state also grows by at
//! most a few runs per region written. The *work* of a rank is that count: busy steps +
//! operations + regions + peers. Per-node work is what makes `compare --topology
//! hypercube:18` run for hours: SBA, the daisy chain and SMG give every node about
//! 2^n busy steps (nodes² in all), the rotated-exchange all-gather 2^n regions per
//! node and step.
//!
//! [`estimate`] streams a few ranks' programs only: every rank when there are at most
//! [`EXACT_UP_TO`], otherwise the ranks named (the root), rank 0, the last rank and
//! [`SAMPLES`] ranks spread evenly, whose mean stands for every other rank. Each
//! sampled stream stops once it alone proves the limit passed, so the estimate costs
//! at most about `SAMPLES²/nodes` of the limit.

use super::{Op, Rank, Schedule};

/// Nodes up to which [`estimate`] counts every rank.
pub const EXACT_UP_TO: u32 = 16;

/// Ranks sampled evenly beyond [`EXACT_UP_TO`].
pub const SAMPLES: u32 = 8;

/// The work of one rank's program (busy steps + operations + regions + peers), or any
/// value above `cap` once it passes `cap` (the stream is then left unread).
pub fn rank_work(schedule: &dyn Schedule, rank: Rank, cap: u64) -> u64 {
    let mut stream = schedule.stream(rank);
    let mut work = 0u64;
    while let Some((_, step)) = stream.next_busy() {
        work += 1;
        for op in &step.ops {
            work += 1 + match op {
                Op::Send { to, from } => (to.len() + from.len()) as u64,
                Op::Recv { into, .. } => into.len() as u64,
                Op::Local { .. } => 2,
            };
        }
        if work > cap {
            break;
        }
    }
    work
}

/// The work of the whole schedule, estimated from a sample of its ranks, or a value
/// above `limit` as soon as the sample shows it exceeds `limit`. `named` are ranks
/// whose work is unlike the others' (a root), counted exactly.
pub fn estimate(schedule: &dyn Schedule, named: &[Rank], limit: u64) -> u64 {
    let nodes = schedule.nodes();
    let over = limit.saturating_add(1);
    if nodes <= EXACT_UP_TO {
        let mut total = 0u64;
        for r in 0..nodes {
            total = total.saturating_add(rank_work(schedule, r, limit - total.min(limit)));
            if total > limit {
                return over;
            }
        }
        return total;
    }
    let mut special: Vec<Rank> = vec![0, nodes - 1];
    special.extend(named.iter().copied().filter(|&r| r < nodes));
    special.sort_unstable();
    special.dedup();
    let mut total = 0u64;
    for &r in &special {
        total = total.saturating_add(rank_work(schedule, r, limit));
        if total > limit {
            return over;
        }
    }
    // A sampled rank's work above `cap` makes the mean above limit / nodes on its own.
    let others = u64::from(nodes) - special.len() as u64;
    let cap = (limit / others.max(1)).saturating_mul(u64::from(SAMPLES)) + 1;
    let mut sum = 0u64;
    for i in 0..SAMPLES {
        // Evenly spread, off the powers of two that the special ranks sit on.
        let r =
            ((u64::from(i) * u64::from(nodes) + u64::from(nodes) / 2) / u64::from(SAMPLES)) as Rank;
        let r = (r ^ (i + 1)).min(nodes - 1);
        let w = rank_work(schedule, r, cap);
        if w > cap {
            return over;
        }
        sum += w;
    }
    let mean = sum.div_ceil(u64::from(SAMPLES));
    let total = total.saturating_add(mean.saturating_mul(others));
    total.min(over)
}

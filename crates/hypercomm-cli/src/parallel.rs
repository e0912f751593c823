//! Streaming rounds simulation and verification split over the machine's cores. The
//! library spawns no threads of its own accord (its invariant): it offers
//! `RoundsPartial` and `verify::Options::threads`, and the binary decides how many
//! threads to use.

use hypercomm::cost::model::{Model, Timing};
use hypercomm::cost::{self, Report, RoundsPartial};
use hypercomm::schedule::Schedule;
use hypercomm::topology::Topology;

/// Below this many ranks one thread is faster than starting several.
const MIN_RANKS_PER_THREAD: u32 = 4096;

/// Below this many ranks verification runs on the caller's thread (its steps are too
/// small to split: see `verify::Options::parallel_from`).
const MIN_RANKS_TO_VERIFY_SPLIT: u32 = 1024;

/// How the binary verifies a schedule of `k` ranks: on every core from 1024 ranks on
/// (`MIN_RANKS_TO_VERIFY_SPLIT`), else on one thread. The verdict is the same
/// either way.
pub fn verify_options(k: u32) -> hypercomm::verify::Options {
    if k >= MIN_RANKS_TO_VERIFY_SPLIT {
        hypercomm::verify::Options::all_cores()
    } else {
        hypercomm::verify::Options::default()
    }
}

/// [`cost::simulate`], with the ranks of a `rounds` simulation split over the cores.
pub fn simulate(topo: &Topology, schedule: &dyn Schedule, model: &Model) -> Report {
    let k = schedule.nodes();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let threads = cores.min(k / MIN_RANKS_PER_THREAD).max(1);
    if model.timing != Timing::Rounds || threads == 1 {
        return cost::simulate(topo, schedule, model);
    }
    let chunk = k.div_ceil(threads);
    let parts: Vec<RoundsPartial> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut part = RoundsPartial::new(schedule.steps());
                    part.add_ranks(
                        topo,
                        schedule,
                        model,
                        (t * chunk).min(k)..((t + 1) * chunk).min(k),
                    );
                    part
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("simulation thread panicked"))
            .collect()
    });
    let mut all = RoundsPartial::new(schedule.steps());
    for part in &parts {
        all.merge(part);
    }
    all.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypercomm::algorithms::{find, Packets, Params};
    use hypercomm::collective::{Collective, OpKind};
    use hypercomm::verify::Problem;

    #[test]
    fn split_simulation_equals_the_single_one() {
        let topo: Topology = "hypercube:14".parse().unwrap();
        let problem = Problem {
            topology: &topo,
            collective: Collective::Broadcast { root: 77 },
            len: 1000,
            commutative: true,
            counts: None,
        };
        let params = Params {
            packets: Packets::Count(7),
            model: Model::default(),
        };
        let s = find(OpKind::Broadcast, "sbt")
            .unwrap()
            .build(&problem, &params)
            .unwrap();
        assert_eq!(
            simulate(&topo, s.as_ref(), &params.model),
            cost::simulate(&topo, s.as_ref(), &params.model)
        );
    }
}

//! # hypercomm
//!
//! Collective communication on parallel interconnects, after the papers in
//! `shared/seeds/`: every algorithm is a pure, rank-local [`schedule`](schedule::Schedule),
//! which the [`verify`] module proves correct, the [`cost`] module times under the
//! papers' machine models, and a runtime (later crates) executes on real buffers.
//!
//! The main types: [`Topology`](topology::Topology) (which ranks are linked),
//! [`Collective`](collective::Collective) (what must move where),
//! [`Program`](schedule::Program) (one rank's steps), the [`algorithms`] registry
//! (name → constructor, closed form, reference), [`Model`](cost::model::Model)
//! (β, τ, ports, duplex, timing).
//!
//! ```
//! use hypercomm::prelude::*;
//!
//! let topo: Topology = "hypercube:3".parse().unwrap();
//! let problem = Problem { topology: &topo, collective: Collective::Broadcast { root: 5 }, len: 100, commutative: true, counts: None };
//! let algo = hypercomm::algorithms::find(OpKind::Broadcast, "sbt").unwrap();
//! let schedule = algo.build(&problem, &Params::default()).unwrap();
//! hypercomm::verify::verify(problem, schedule.as_ref(), Strictness::default()).unwrap();
//! let report = hypercomm::cost::simulate(&topo, schedule.as_ref(), &Model::new(1.0, 0.01).unwrap());
//! assert_eq!(report.rounds, 3);
//! ```

#![warn(missing_docs)]
#![allow(missing_docs)] // fields and variants documented where it helps; items always.

pub mod algorithms;
pub mod bounds;
pub mod collective;
pub mod cost;
pub mod counts;
pub mod error;
pub mod schedule;
pub mod tables;
pub mod topology;
pub mod verify;

/// The types most programs need.
pub mod prelude {
    pub use crate::algorithms::{Algorithm, Packets, Params};
    pub use crate::collective::{Collective, OpKind};
    pub use crate::cost::model::{Duplex, Model, Ports, Timing};
    pub use crate::cost::{simulate, Report};
    pub use crate::counts::Counts;
    pub use crate::error::{Error, Result};
    pub use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};
    pub use crate::topology::Topology;
    pub use crate::verify::{verify, Problem, Strictness, Violation, ViolationKind};
}

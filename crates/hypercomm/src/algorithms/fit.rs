//! What an algorithm needs of the topology, as a typed view (issue 16, item 7).
//!
//! Every registry entry says what it needs with a [`Need`]: a cube, a rank count, a
//! ring, a torus, a medium, a hosted cube, a product. [`Algorithm::fits`] finds the
//! view once, from the topology, and returns it as a [`Fit`] (or why the topology is
//! not what the algorithm needs: the error the CLI prints); [`Algorithm::build`] hands
//! the same view to the algorithm's constructor, so that no algorithm file checks
//! the topology again (a hypercube algorithm receives its [`Hypercube`], a ring
//! algorithm its K, a torus algorithm its A and B).
//!
//! [`Algorithm::fits`]: super::Algorithm::fits
//! [`Algorithm::build`]: super::Algorithm::build

use crate::algorithms::Params;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::topology::{Factor, Hypercube, Medium, Topology};
use crate::verify::Problem;

/// What a constructor returns.
pub type Built = Result<Box<dyn Schedule>, Error>;

/// A hypercube constructor ([`Need::Cube`]): it receives the cube.
pub type CubeBuild = fn(&Problem<'_>, &Params, &Hypercube) -> Built;

/// Run a hypercube constructor on `problem` with the cube found first, as
/// [`Need::build`] does (for the unit tests, which call constructors directly).
#[cfg(test)]
pub(crate) fn on_cube(build: CubeBuild, problem: &Problem<'_>, params: &Params) -> Built {
    let c = cube(problem.topology).map_err(|reason| Error::InvalidParameter {
        what: "--topology",
        reason,
    })?;
    build(problem, params, &c)
}

/// The typed view of a topology that an algorithm fits ([`super::Algorithm::fits`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fit {
    /// Any topology, `k` nodes: the algorithm routes over the topology's own shortest
    /// paths (`direct`).
    Any {
        /// Nodes (processing elements and a host).
        k: u32,
    },
    /// The links of a binary n-cube: `hypercube:N`, `complete:2^N`, a product of
    /// edges, or a medium of 2^N processors ([`Topology::cube`]).
    Cube(Hypercube),
    /// `k` ranks any two of which talk directly: `complete:K`, `bus:K`, `shm:K,S`,
    /// `switch:K` ([`Topology::is_single_hop`]).
    Ranks {
        /// Ranks.
        k: u32,
    },
    /// `ring:K` (seed 004's model C).
    Ring {
        /// K.
        k: u32,
    },
    /// `torus:AxB` (seed 004's model D).
    Torus {
        /// Rows, the first factor.
        a: u32,
        /// Columns, the second factor.
        b: u32,
    },
    /// A shared medium of `k` processors: `bus:K`, `shm:K,S`, `switch:K` (seed 004's
    /// models A, B and F).
    Medium {
        /// Which medium.
        kind: Medium,
        /// Processors.
        k: u32,
    },
    /// `hypercube:N+host`, the host linked to every processing element (seed 003).
    Hosted {
        /// The cube's dimension.
        n: u32,
    },
    /// A product network, by its factors (seed 002's decompositions).
    Product {
        /// The factors, first (slowest) first.
        factors: Vec<Factor>,
    },
}

/// What a registry entry needs, with the constructor that receives it: the variant
/// decides the view [`Need::fit`] looks for, and the constructor's signature takes
/// that view.
#[derive(Clone, Copy)]
pub enum Need {
    /// Any topology.
    Any(fn(&Problem<'_>, &Params) -> Built),
    /// A binary cube's links ([`Fit::Cube`]): the constructor receives the cube.
    Cube(CubeBuild),
    /// Single-hop ranks ([`Fit::Ranks`]); the constructor takes K from the problem
    /// (which [`super::Algorithm::build`] checks against the topology).
    Ranks(fn(&Problem<'_>, &Params) -> Built),
    /// `ring:K`: the constructor receives K.
    Ring(fn(&Problem<'_>, &Params, u32) -> Built),
    /// `ring:K`, or `switch:K` with a ring embedded: the constructor receives K and
    /// whether it runs on the switch.
    RingOrSwitch(fn(&Problem<'_>, &Params, u32, bool) -> Built),
    /// `torus:AxB`: the constructor receives A and B.
    Torus(fn(&Problem<'_>, &Params, u32, u32) -> Built),
    /// `torus:QxQ`: the constructor receives Q.
    SquareTorus(fn(&Problem<'_>, &Params, u32) -> Built),
    /// `bus:K`: the constructor receives K.
    Bus(fn(&Problem<'_>, &Params, u32) -> Built),
    /// `shm:K,S`: the constructor receives K and S.
    Shm(fn(&Problem<'_>, &Params, u32, u32) -> Built),
    /// `switch:K`: the constructor receives K.
    Switch(fn(&Problem<'_>, &Params, u32) -> Built),
    /// `switch:2^n`: the constructor receives n.
    SwitchCube(fn(&Problem<'_>, &Params, u32) -> Built),
    /// `hypercube:N+host` whose n passes `check`: the constructor receives n.
    Hosted {
        /// Why an n does not do (`Ok` for every n but the algorithm's exceptions).
        check: fn(u32) -> Result<(), String>,
        /// The constructor.
        build: fn(&Problem<'_>, &Params, u32) -> Built,
    },
    /// A product network (or a single-hop topology laid out as a shape), as the
    /// algorithm's own `fits` finds it.
    Product {
        /// The view, or why not.
        fits: fn(&Topology) -> Result<Fit, String>,
        /// The constructor.
        build: fn(&Problem<'_>, &Params, &Fit) -> Built,
    },
}

impl Need {
    /// The view of `t` this need asks for, or why `t` does not have it.
    pub fn fit(&self, t: &Topology) -> Result<Fit, String> {
        match self {
            Need::Any(_) => Ok(Fit::Any { k: t.nodes() }),
            Need::Cube(_) => cube(t).map(Fit::Cube),
            Need::Ranks(_) => ranks(t).map(|k| Fit::Ranks { k }),
            Need::Ring(_) => ring(t).map(|k| Fit::Ring { k }),
            Need::RingOrSwitch(_) => ring_or_switch(t).map(|(k, switch)| match switch {
                true => Fit::Medium {
                    kind: Medium::Switch,
                    k,
                },
                false => Fit::Ring { k },
            }),
            Need::Torus(_) => torus(t).map(|(a, b)| Fit::Torus { a, b }),
            Need::SquareTorus(_) => square_torus(t).map(|q| Fit::Torus { a: q, b: q }),
            Need::Bus(_) => bus(t).map(|k| Fit::Medium {
                kind: Medium::Bus,
                k,
            }),
            Need::Shm(_) => shm(t).map(|(k, accesses)| Fit::Medium {
                kind: Medium::Shm { accesses },
                k,
            }),
            Need::Switch(_) => switch(t).map(|k| Fit::Medium {
                kind: Medium::Switch,
                k,
            }),
            Need::SwitchCube(_) => switch_cube(t).map(|n| Fit::Medium {
                kind: Medium::Switch,
                k: 1 << n,
            }),
            Need::Hosted { check, .. } => {
                let n = hosted(t)?;
                check(n).map(|()| Fit::Hosted { n })
            }
            Need::Product { fits, .. } => fits(t),
        }
    }

    /// Find the view of `problem`'s topology and build with it: `Err(reason)` when
    /// the topology does not fit, else what the constructor returns.
    pub fn build(&self, problem: &Problem<'_>, params: &Params) -> Result<Built, String> {
        let t = problem.topology;
        Ok(match *self {
            Need::Any(b) | Need::Ranks(b) => {
                self.fit(t)?;
                b(problem, params)
            }
            Need::Cube(b) => b(problem, params, &cube(t)?),
            Need::Ring(b) => b(problem, params, ring(t)?),
            Need::RingOrSwitch(b) => {
                let (k, switch) = ring_or_switch(t)?;
                b(problem, params, k, switch)
            }
            Need::Torus(b) => {
                let (a, bb) = torus(t)?;
                b(problem, params, a, bb)
            }
            Need::SquareTorus(b) => b(problem, params, square_torus(t)?),
            Need::Bus(b) => b(problem, params, bus(t)?),
            Need::Shm(b) => {
                let (k, s) = shm(t)?;
                b(problem, params, k, s)
            }
            Need::Switch(b) => b(problem, params, switch(t)?),
            Need::SwitchCube(b) => b(problem, params, switch_cube(t)?),
            Need::Hosted { check, build } => {
                let n = hosted(t)?;
                check(n)?;
                build(problem, params, n)
            }
            Need::Product { fits, build } => build(problem, params, &fits(t)?),
        })
    }
}

/// Every n.
pub fn any_dim(_: u32) -> Result<(), String> {
    Ok(())
}

/// The cube whose links join `t`'s processing elements ([`Topology::cube`]), or why
/// there is none.
pub fn cube(t: &Topology) -> Result<Hypercube, String> {
    if let Some(c) = t.cube() {
        return Ok(c);
    }
    if t.host().is_some() {
        // Said of every hosted machine: "a plain hypercube" read wrong on bus:3+host.
        return Err(format!(
            "it runs on a machine of processing elements alone (hypercube:N, or a bus, \
             shared memory or switch of 2^N), not on {t}, which has a host"
        ));
    }
    if !t.pes().is_power_of_two() {
        return Err(format!(
            "it needs 2^n nodes, and {} is not a power of two",
            t.pes()
        ));
    }
    Err(
        "it needs the links of a binary cube (hypercube:N, complete:2^N, a product of edges, \
         or a bus, shared memory or switch of 2^N processors)"
            .into(),
    )
}

/// The cube of a problem's topology, for the hypercube algorithms' closed forms:
/// they keep the registry's one signature ([`super::FormulaFn`]), so they look the
/// view up here rather than receive it (their constructors receive it).
pub fn cube_of(problem: &Problem<'_>) -> Option<Hypercube> {
    cube(problem.topology).ok()
}

/// K of a topology on which any two ranks talk directly (`complete:K`, `bus:K`,
/// `shm:K,S`, `switch:K`): the algorithms for any number of ranks (MPICH's and Open
/// MPI's), for a crossbar switch, a shared medium or threads of one process.
pub fn ranks(t: &Topology) -> Result<u32, String> {
    if t.is_single_hop() {
        Ok(t.nodes())
    } else {
        Err("it needs every pair of ranks linked (complete:K, bus:K, shm:K,S or switch:K)".into())
    }
}

/// K of `ring:K` (seed 004's model C), any K.
pub fn ring(t: &Topology) -> Result<u32, String> {
    match (t.factors(), t.host()) {
        (Some([Factor::Cycle(k)]), None) => Ok(*k),
        _ => Err("it runs on a ring (ring:K)".into()),
    }
}

/// (A, B) of `torus:AxB` (seed 004's model D, the grid with wrap-around).
pub fn torus(t: &Topology) -> Result<(u32, u32), String> {
    match (t.factors(), t.host()) {
        (Some([Factor::Cycle(a), Factor::Cycle(b)]), None) => Ok((*a, *b)),
        _ => Err("it runs on a two-dimensional torus (torus:AxB)".into()),
    }
}

/// Q of `torus:QxQ`, the square grid a transposition needs.
pub fn square_torus(t: &Topology) -> Result<u32, String> {
    match torus(t) {
        Ok((a, b)) if a == b => Ok(a),
        _ => Err("it transposes a square torus (torus:QxQ)".into()),
    }
}

/// The medium and its processors, without a host.
fn medium(t: &Topology) -> Option<(Medium, u32)> {
    match (t.medium_kind(), t.host()) {
        (Some(m), None) => Some((m, t.pes())),
        _ => None,
    }
}

/// K of `bus:K` (seed 004's model A).
pub fn bus(t: &Topology) -> Result<u32, String> {
    match medium(t) {
        Some((Medium::Bus, k)) => Ok(k),
        _ => Err("it runs on a broadcast bus (bus:K)".into()),
    }
}

/// (K, S) of `shm:K,S` (seed 004's model B).
pub fn shm(t: &Topology) -> Result<(u32, u32), String> {
    match medium(t) {
        Some((Medium::Shm { accesses }, k)) => Ok((k, accesses)),
        _ => Err("it runs on a shared memory (shm:K,S)".into()),
    }
}

/// K of `switch:K` (seed 004's model F).
pub fn switch(t: &Topology) -> Result<u32, String> {
    match medium(t) {
        Some((Medium::Switch, k)) => Ok(k),
        _ => Err("it runs on a crossbar switch (switch:K)".into()),
    }
}

/// n of `switch:2^n` (a switch emulating a binary cube).
pub fn switch_cube(t: &Topology) -> Result<u32, String> {
    match medium(t) {
        Some((Medium::Switch, k)) if k.is_power_of_two() => Ok(k.trailing_zeros()),
        Some((Medium::Switch, k)) => Err(format!(
            "it emulates a binary cube: it needs switch:2^n, and {k} is not a power of two"
        )),
        _ => Err("it runs on a switch of 2^n processors (switch:2^n)".into()),
    }
}

/// (K, whether on a switch) of `ring:K`, or of `switch:K` with the ring embedded
/// (seed 004, §3.2 (F)).
pub fn ring_or_switch(t: &Topology) -> Result<(u32, bool), String> {
    ring(t)
        .map(|k| (k, false))
        .or_else(|_| switch(t).map(|k| (k, true)))
        .map_err(|_| "it runs on a ring (ring:K) or a switch (switch:K)".to_string())
}

/// n of seed 003's machine, `hypercube:N+host`, or why `t` is not it.
pub fn hosted(t: &Topology) -> Result<u32, String> {
    crate::algorithms::download::plan::hosted_cube(t)
}

/// The view of a topology that a decomposition fits: `complete:K` as its K ranks (laid
/// out as a shape), any other topology by its factors (none for a medium).
pub fn product(t: &Topology) -> Fit {
    match (t.as_complete(), t.factors()) {
        (Some(k), _) => Fit::Ranks { k },
        (None, Some(fs)) => Fit::Product {
            factors: fs.to_vec(),
        },
        (None, None) => Fit::Ranks { k: t.pes() },
    }
}

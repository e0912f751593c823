//! The registry of algorithms: one entry per (collective, name), with its constructor,
//! its closed forms and its reference. It drives `--algo`, `hypercomm algorithms`, the
//! test matrix and the docs; no list of names exists anywhere else.
//!
//! Files are grouped by collective and named after the paper's algorithm
//! (`broadcast/sbt.rs`, `p2p/multipath.rs`, …); each file's doc comment gives the
//! reference, the cost in steps and volume, and the constraints.

pub mod fit;
pub mod pipeline;
pub mod plan;
pub mod shape;
pub mod vcount;

pub use fit::{Fit, Need};
pub use shape::Shape;

pub mod allgather {
    //! All-to-all broadcast (all-gather): every rank's block to every rank.

    pub mod adea;
    pub mod alternating_direction;
    pub mod bruck;
    pub mod bus;
    pub mod daisy_chain;
    pub mod dimension_exchange;
    pub mod grid_daisy_chain;
    pub mod ring;
    pub mod ring_daisy_chain;
    pub mod rotated_exchange;
    pub mod sba;
    pub mod sequential_broadcast;
    pub mod shm;
    pub mod tea1;
    pub mod tea2;
    // Appended (seed 002): the decomposition on product networks.
    pub mod product;
}
pub mod allreduce {
    //! Reduction whose result every rank gets.
    pub mod dimension_exchange;
    pub mod recursive_doubling;
    pub mod ring;
    pub mod rotated_exchange;
}
pub mod alltoall {
    //! Total exchange (transposition): a distinct block from every rank to every rank.

    pub mod bruck;
    pub mod bus;
    pub mod dimension_exchange;
    pub mod linear;
    pub mod mtadea;
    pub mod pairwise;
    pub mod rotate_drop;
    pub mod rotated_exchange;
    pub mod row_column;
    pub mod shm;
    pub mod smg;
    pub mod two_pass_exchange;
    // Appended (seed 002): the decomposition on product networks.
    pub mod a2;
    pub mod factor_exchange;
    pub mod product;
    pub mod product_allport;
}
pub mod broadcast {
    //! One-to-all broadcast.

    pub mod binary_tree;
    pub mod binomial;
    pub mod bus;
    pub mod dxdy;
    pub mod esbt;
    pub mod linear;
    pub mod nesbt;
    pub mod sbt;
    pub mod shm;
    pub mod spine_tree;
    pub mod two_phase;
    pub mod two_way;
}
pub mod exclusive_scan {
    //! Exclusive prefix reduction.
    pub mod dimension_exchange;
    pub mod recursive_doubling;
}
pub mod gather {
    //! All-to-one gather.

    pub mod binomial;
    pub mod bus;
    pub mod nesbt;
    pub mod row_column;
    pub mod sbt;
    pub mod shm;
    pub mod two_way;
}
pub mod p2p {
    //! Point-to-point transfers.

    pub mod bus;
    pub mod direct;
    pub mod ecube;
    pub mod four_path;
    pub mod multipath;
    pub mod shm;
    pub mod two_path;
}
pub mod reduce {
    //! Reduction to one root.
    pub mod binomial;
    pub mod nesbt;
    pub mod sbt;
}
pub mod reduce_scatter {
    //! Reduction whose result is scattered in blocks.
    pub mod pairwise;
    pub mod recursive_halving;
    pub mod ring;
    pub mod rotated_exchange;
}
pub mod scan {
    //! Inclusive prefix reduction.
    pub mod dimension_exchange;
    pub mod recursive_doubling;
}
pub mod scatter {
    //! One-to-all personalised scatter.

    pub mod binomial;
    pub mod bus;
    pub mod nesbt;
    pub mod row_column;
    pub mod sbt;
    pub mod shm;
    pub mod two_way;
}
pub mod transpose {
    //! Transposition of a square grid of ranks: block (x, y) to (y, x).
    pub mod diagonal;
}
pub mod gatherv {
    //! `MPI_Gatherv`: every rank's c_r elements to the root.
    pub mod linear;
    pub mod pairwise;
}
pub mod scatterv {
    //! `MPI_Scatterv`: the root's c_r elements to each rank r.
    pub mod linear;
    pub mod pairwise;
}
pub mod allgatherv {
    //! `MPI_Allgatherv`: every rank's c_r elements to every rank.
    pub mod bruck;
    pub mod dimension_exchange;
    pub mod linear;
    pub mod pairwise;
    pub mod ring;
}
pub mod alltoallv {
    //! `MPI_Alltoallv`: C\[i\]\[j\] elements from every rank i to every rank j.
    pub mod bruck;
    pub mod dimension_exchange;
    pub mod linear;
    pub mod mtadea;
    pub mod pairwise;
}
pub mod reduce_scatterv {
    //! `MPI_Reduce_scatter`: block r (c_r elements) of the reduction to rank r.
    pub mod linear;
    pub mod pairwise;
    pub mod ring;
}
pub mod download {
    //! Downloading data from a host into a hypercube (Gichev 1992, seed 003).
    pub mod ds;
    pub mod gichev;
    pub mod optimal;
    pub mod plan;
    pub mod rp;
    pub mod sl;
    pub mod ssa;
    pub mod ssa_repaired;
}

use serde::Serialize;

use crate::collective::OpKind;
use crate::cost::model::Model;
use crate::error::Error;
use crate::schedule::Schedule;
use crate::topology::Topology;
use crate::verify::Problem;

/// How many packets a pipelined algorithm splits each message into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Packets {
    /// Exactly this many (1 = no pipelining).
    Count(u64),
    /// The count that minimises the algorithm's exact closed form under the model.
    #[default]
    Opt,
}

impl std::str::FromStr for Packets {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        if s.trim().eq_ignore_ascii_case("opt") {
            return Ok(Packets::Opt);
        }
        match s.trim().parse::<u64>() {
            Ok(n) if n >= 1 => Ok(Packets::Count(n)),
            _ => Err(Error::InvalidParameter {
                what: "--packets",
                reason: format!("`{s}`; valid: a whole number ≥ 1, or `opt`"),
            }),
        }
    }
}

/// Build parameters besides the problem.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Params {
    /// Packets per message (pipelined algorithms only).
    pub packets: Packets,
    /// The machine model; `Packets::Opt` is resolved against it.
    pub model: Model,
}

impl Params {
    /// Parameters with `packets` and the default model.
    pub fn packets(n: u64) -> Self {
        Params {
            packets: Packets::Count(n),
            model: Model::default(),
        }
    }
}

/// How a closed form relates to the simulated time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FormulaKind {
    /// The simulator must give exactly this value.
    Exact,
    /// The simulated time is at most this value (e.g. the papers' ⌈·⌉ bounds).
    UpperBound,
    /// A lower estimate, such as pipelining's continuous optimum: the simulated time
    /// is at least this value.
    Estimate,
}

/// A closed form of an algorithm's time, evaluated for one problem and model.
///
/// It serialises as `{expr, reference, value, kind, exact}`, `exact` being
/// [`is_exact`](Formula::is_exact) (kept for JSON consumers).
#[derive(Clone, Debug, PartialEq)]
pub struct Formula {
    /// The formula in the papers' notation.
    pub expr: String,
    /// Paper, section, equation.
    pub reference: &'static str,
    /// Its value.
    pub value: f64,
    /// How the simulated time relates to `value`.
    pub kind: FormulaKind,
}

impl Serialize for Formula {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Formula", 5)?;
        st.serialize_field("expr", &self.expr)?;
        st.serialize_field("reference", self.reference)?;
        st.serialize_field("value", &self.value)?;
        st.serialize_field("kind", &self.kind)?;
        st.serialize_field("exact", &self.is_exact())?;
        st.end()
    }
}

impl Formula {
    fn of(kind: FormulaKind, expr: impl Into<String>, reference: &'static str, value: f64) -> Self {
        Formula {
            expr: expr.into(),
            reference,
            value,
            kind,
        }
    }
    /// Whether the simulator must match this form exactly (`kind == Exact`).
    pub fn is_exact(&self) -> bool {
        self.kind == FormulaKind::Exact
    }
    /// A form the simulator must match exactly.
    pub fn exact(expr: impl Into<String>, reference: &'static str, value: f64) -> Self {
        Self::of(FormulaKind::Exact, expr, reference, value)
    }
    /// A form the simulated time never exceeds.
    pub fn upper_bound(expr: impl Into<String>, reference: &'static str, value: f64) -> Self {
        Self::of(FormulaKind::UpperBound, expr, reference, value)
    }
    /// A lower estimate (continuous optimum) of the simulated time.
    pub fn estimate(expr: impl Into<String>, reference: &'static str, value: f64) -> Self {
        Self::of(FormulaKind::Estimate, expr, reference, value)
    }
    /// Whether `time` agrees with this form (relative tolerance 1e-9).
    pub fn holds_for(&self, time: f64) -> bool {
        let tol = 1e-9 * self.value.abs().max(time.abs()).max(1.0);
        match self.kind {
            FormulaKind::Exact => (time - self.value).abs() <= tol,
            FormulaKind::UpperBound => time <= self.value + tol,
            FormulaKind::Estimate => time + tol >= self.value,
        }
    }
}

/// Largest topology on which `--packets opt` searches ν by simulation.
pub const PACKET_SEARCH_NODES: u32 = 1024;

/// Shape of the constructor of every registry entry.
pub type BuildFn = fn(&Problem<'_>, &Params) -> Result<Box<dyn Schedule>, Error>;
/// Shape of the closed forms of every registry entry (empty when none applies to the model).
pub type FormulaFn = fn(&Problem<'_>, &Params) -> Vec<Formula>;

/// Constructor of an algorithm that lays out the ranks of a single-hop topology as a
/// given shape (`--shape AxB…`, [`Algorithm::build_shaped`]).
pub type ShapedFn = fn(&Problem<'_>, &Params, &[u32]) -> Result<Box<dyn Schedule>, Error>;

/// The algorithms that take a shape, by collective and name: the decompositions of
/// seed 002, whose factors on `complete:K` are virtual.
const SHAPED: &[(OpKind, &str, ShapedFn)] = &[
    (OpKind::Alltoall, "product", alltoall::product::build_shaped),
    (
        OpKind::Alltoall,
        "product-allport",
        alltoall::product_allport::build_shaped,
    ),
    (
        OpKind::Allgather,
        "product",
        allgather::product::build_shaped,
    ),
];

/// One registry entry.
#[derive(Clone, Copy)]
pub struct Algorithm {
    /// Name given to `--algo`.
    pub name: &'static str,
    /// The collective it performs.
    pub op: OpKind,
    /// One line on what it does.
    pub summary: &'static str,
    /// Where it comes from: paper, section, equation.
    pub reference: &'static str,
    /// Topology families it runs on.
    pub topologies: &'static str,
    /// Whether `--packets` applies.
    pub pipelined: bool,
    /// What it needs of the topology, and its constructor, which receives that.
    need: Need,
    formulas: FormulaFn,
}

impl std::fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.op, self.name)
    }
}

impl Algorithm {
    /// The view of `topo` the algorithm runs on ([`Fit`]: its cube, its ranks, its
    /// ring, …), or why it does not run there.
    pub fn fits(&self, topo: &Topology) -> Result<Fit, String> {
        self.need.fit(topo)
    }

    /// The constructor, given the view of the problem's topology it needs; a topology
    /// that does not fit is [`Error::AlgorithmDoesNotFit`].
    fn construct(
        &self,
        problem: &Problem<'_>,
        params: &Params,
    ) -> Result<Box<dyn Schedule>, Error> {
        self.need
            .build(problem, params)
            .map_err(|reason| Error::AlgorithmDoesNotFit {
                algo: self.name.to_string(),
                topology: problem.topology.to_string(),
                reason,
                valid: names(fitting(problem.topology, self.op)),
            })?
    }

    /// Build the schedule of `problem`, after checking that the algorithm fits.
    pub fn build(
        &self,
        problem: &Problem<'_>,
        params: &Params,
    ) -> Result<Box<dyn Schedule>, Error> {
        if problem.collective.kind() != self.op {
            return Err(Error::InvalidParameter {
                what: "--op",
                reason: format!(
                    "`{}` performs {}, not {}",
                    self.name,
                    self.op,
                    problem.collective.kind()
                ),
            });
        }
        problem.collective.check_ranks(problem.topology.nodes())?;
        problem.check_counts()?;
        self.fits(problem.topology)
            .map_err(|reason| Error::AlgorithmDoesNotFit {
                algo: self.name.to_string(),
                topology: problem.topology.to_string(),
                reason,
                valid: names(fitting(problem.topology, self.op)),
            })?;
        self.check_packets(params)?;
        self.construct(problem, &self.resolve_packets(problem, params))
    }

    /// Refuse a packet count above 1 for an algorithm that is not pipelined.
    fn check_packets(&self, params: &Params) -> Result<(), Error> {
        if !self.pipelined && matches!(params.packets, Packets::Count(n) if n > 1) {
            return Err(Error::InvalidParameter {
                what: "--packets",
                reason: format!("`{}` is not pipelined; omit --packets or use 1", self.name),
            });
        }
        Ok(())
    }

    /// Whether it takes a shape ([`Algorithm::build_shaped`]).
    pub fn takes_shape(&self) -> bool {
        self.shaped().is_some()
    }

    fn shaped(&self) -> Option<ShapedFn> {
        SHAPED
            .iter()
            .find(|(op, name, _)| *op == self.op && *name == self.name)
            .map(|&(_, _, f)| f)
    }

    /// Build the schedule of `problem` with the ranks laid out as `shape` (row-major,
    /// the last factor fastest; factors of 1 allowed, so a prime K runs as `1xK`), on
    /// a single-hop topology (`complete:K`); only the algorithms of which
    /// [`Algorithm::takes_shape`] holds take one, the error names them.
    pub fn build_shaped(
        &self,
        problem: &Problem<'_>,
        params: &Params,
        shape: &[u32],
    ) -> Result<Box<dyn Schedule>, Error> {
        let Some(build) = self.shaped() else {
            let valid: Vec<String> = SHAPED
                .iter()
                .map(|(op, name, _)| format!("{name} ({op})"))
                .collect();
            return Err(Error::InvalidParameter {
                what: "--shape",
                reason: format!(
                    "`{}` ({}) takes no shape; valid: {}",
                    self.name,
                    self.op,
                    valid.join(", ")
                ),
            });
        };
        if problem.collective.kind() != self.op {
            return self.build(problem, params);
        }
        problem.collective.check_ranks(problem.topology.nodes())?;
        // `--packets 3` with `--shape` was ignored, and the report said "packets 3".
        self.check_packets(params)?;
        build(problem, params, shape)
    }

    /// `params` with `--packets opt` resolved to the ν that minimises the simulated time
    /// under the model in force (ports, duplex, timing, link classes), on topologies of
    /// at most [`PACKET_SEARCH_NODES`] nodes (and nodes × (ν + 64) ≤ 2^17 and at most
    /// 2^16 units of work, [`crate::schedule::work`], so that a search simulates small
    /// schedules only); beyond, the algorithm's own choice (its
    /// exact form's optimum under all ports and full duplex). The search starts from
    /// the algorithm's choice ν0, tries ν = 1 and the powers of two below ν0, then
    /// walks to neighbouring counts (up to 2ν0 + 2) while the time falls; a count
    /// replaces the best only when strictly faster, so where the algorithm's choice is
    /// optimal it is kept.
    pub fn resolve_packets(&self, problem: &Problem<'_>, params: &Params) -> Params {
        // Past the search's size the algorithm's own choice stands: `--packets opt`
        // resolves to it in the constructor and the formulas alike, so nothing is built
        // here (building the schedule only to read its ν doubled the work of a broadcast
        // on torus:1024x1024).
        if !self.pipelined
            || params.packets != Packets::Opt
            || problem.topology.nodes() > PACKET_SEARCH_NODES
        {
            return *params;
        }
        let Ok(first) = self.construct(problem, params) else {
            return *params;
        };
        let Some(nu0) = first.packets() else {
            return *params;
        };
        let with = |nu: u64| Params {
            packets: Packets::Count(nu),
            ..*params
        };
        let m = problem.len;
        // The search simulates schedules of about ν + depth steps on every node: only
        // where that stays small.
        let work = problem.topology.nodes() as u64 * (nu0 + 64);
        if m <= 1 || work > 1 << 17 {
            return with(nu0);
        }
        // Nor where one candidate's work (crate::schedule::work) passes 2^16 units: SBA
        // does nodes² work, and its search took 14 s on hypercube:10.
        let named: Vec<u32> = problem.collective.root().into_iter().collect();
        let limit = (1u64 << 16) / self.simulate_weight();
        if crate::schedule::work::estimate(first.as_ref(), &named, limit) > limit {
            return with(nu0);
        }
        let time = |nu: u64| -> Option<f64> {
            let s = self.construct(problem, &with(nu)).ok()?;
            Some(crate::cost::simulate(problem.topology, s.as_ref(), &params.model).time)
        };
        let Some(t0) = time(nu0) else {
            return with(nu0);
        };
        let mut best = (nu0, t0);
        let consider = |nu: u64, best: &mut (u64, f64)| -> bool {
            match time(nu) {
                Some(t) if t < best.1 => {
                    *best = (nu, t);
                    true
                }
                _ => false,
            }
        };
        // The all-port, full-duplex optimum ν0 is the most a port or duplex rule that
        // charges start-ups more can want: try 1, 2, 4, … below it, then walk.
        let mut nu = 1;
        while nu < nu0 {
            consider(nu, &mut best);
            nu *= 2;
        }
        let top = m.min(2 * nu0 + 2);
        for dir in [-1i64, 1] {
            for _ in 0..16 {
                let next = best.0 as i64 + dir;
                if next < 1 || next as u64 > top || !consider(next as u64, &mut best) {
                    break;
                }
            }
        }
        with(best.0)
    }

    /// Whether the algorithm is written for a bus or a shared memory (its
    /// `topologies` is `bus` or `shm`), so that its closed forms price the medium.
    pub fn for_media(&self) -> bool {
        matches!(self.topologies, "bus" | "shm")
    }

    /// The closed forms that apply to `problem` under `params.model`. The forms are
    /// stated for links and ports: on a bus or a shared memory, where the medium
    /// prices the transfers, none applies unless the algorithm is written for the
    /// medium ([`for_media`](Algorithm::for_media)); on a switch they are evaluated
    /// under its one-port rule.
    pub fn formulas(&self, problem: &Problem<'_>, params: &Params) -> Vec<Formula> {
        use crate::topology::Medium;
        match problem.topology.medium_kind() {
            // Forms written for the medium itself (seed 004's bus and memory entries).
            Some(Medium::Bus | Medium::Shm { .. }) if self.for_media() => {
                (self.formulas)(problem, params)
            }
            Some(Medium::Bus | Medium::Shm { .. }) => vec![],
            Some(Medium::Switch) => {
                let mut p = *params;
                p.model.ports = crate::cost::model::Ports::One;
                (self.formulas)(problem, &p)
            }
            None if self.pipelined && params.packets == Packets::Opt => {
                // The forms at the ν that `build` uses, and the continuous optimum's
                // estimates, which bound every ν.
                let mut v = (self.formulas)(problem, &self.resolve_packets(problem, params));
                let estimates: Vec<Formula> = (self.formulas)(problem, params)
                    .into_iter()
                    .filter(|f| f.kind == FormulaKind::Estimate && !v.contains(f))
                    .collect();
                v.extend(estimates);
                v
            }
            None => (self.formulas)(problem, params),
        }
    }

    /// An estimate, from above, of the memory (bytes) verifying this algorithm's
    /// schedule on `nodes` nodes takes, whatever the length (the verifier's state
    /// counts blocks, not elements): quadratic in the nodes for the algorithms that
    /// scatter every node's blocks over its buffer (TEA1 and TEA2 about 4× per
    /// dimension, 1 GB at hypercube:12), linear for the others. Callers compare it with
    /// the memory they may take before verifying, to refuse rather than abort.
    pub fn verify_bytes(&self, nodes: u32) -> u64 {
        let k = u64::from(nodes);
        match self.per_pair() {
            Some(per_pair) => k.saturating_mul(k).saturating_mul(per_pair),
            None => k.saturating_mul(LINEAR_STATE),
        }
    }

    /// Whether the schedule moves blocks between every pair of nodes in pieces of its
    /// own (TEA1 and TEA2's tokens, the dimension exchange's columns): its simulation,
    /// like its verification, does work in nodes², about 2.5 s of CPU for TEA1 on
    /// hypercube:12, four times more per dimension.
    pub fn quadratic(&self) -> bool {
        self.state().is_some_and(|s| s.simulate_quadratic)
    }

    /// How many times a typical unit (about a microsecond) one unit of this algorithm's
    /// verification work costs on `nodes` nodes ([`crate::schedule::work`]): 1 for the
    /// algorithms whose buffers stay a few runs, more for those whose state holds a run
    /// or a cell per block, which every region written walks (`VERIFY_COST`).
    pub fn verify_weight(&self, nodes: u32) -> u64 {
        VERIFY_COST
            .iter()
            .find(|c| c.op == self.op && c.name == self.name)
            .map_or(1, |c| c.fixed.max(u64::from(nodes) / c.nodes_per_unit))
    }

    /// How many times a typical one (about 16 ns rounds-timed, 125 ns async) a unit of
    /// this algorithm's simulation work ([`crate::schedule::work`]) costs: 1 for most
    /// (5 to 24 ns a unit rounds-timed), more for those measured slower
    /// (`SIMULATE_COST`).
    pub fn simulate_weight(&self) -> u64 {
        SIMULATE_COST
            .iter()
            .find(|c| c.0 == self.op && c.1 == self.name)
            .map_or(1, |c| c.2)
    }

    fn per_pair(&self) -> Option<u64> {
        self.state().map(|s| s.bytes_per_pair)
    }

    fn state(&self) -> Option<&'static QuadraticState> {
        QUADRATIC_STATE
            .iter()
            .find(|s| s.op == self.op && s.name == self.name)
    }

    /// Why the algorithm, kept as published, does not perform its collective: the
    /// verifier rejects some of its schedules (the harness expects that), or `None`.
    pub fn published_flaw(&self) -> Option<&'static str> {
        match (self.op, self.name) {
            (OpKind::Download, "ssa") => Some(
                "for n ≥ 3 its two subcubes (x = ⌊n/2⌋ and n − x dimensions) leave PEs without data (Gichev 1992, §4)",
            ),
            _ => None,
        }
    }
}

/// An algorithm whose verification holds a state that grows with nodes² (each node's
/// buffer fills block by block in scattered order, so the verifier keeps a cell or a
/// run per block of every node; [`Algorithm::verify_bytes`]).
struct QuadraticState {
    op: OpKind,
    name: &'static str,
    /// Bytes per node², measured with `/usr/bin/time` and rounded up by a quarter or
    /// more.
    bytes_per_pair: u64,
    /// Whether its simulation does nodes² work too (its messages are cut per pair),
    /// so that [`Algorithm::quadratic`] refuses it beyond a size.
    simulate_quadratic: bool,
}

const fn quadratic(
    op: OpKind,
    name: &'static str,
    bytes_per_pair: u64,
    simulate_quadratic: bool,
) -> QuadraticState {
    QuadraticState {
        op,
        name,
        bytes_per_pair,
        simulate_quadratic,
    }
}

/// The algorithms of [`QuadraticState`], measured on hypercube:9 to 11 (TEA1 174 MB
/// at n = 10, TEA2 80 MB, TEA2 grouped 64 MB, the all-to-all dimension exchange 31 MB,
/// recursive halving 107 MB) and, for the all-port exchanges of issue 22, at n = 10
/// (the rotated-exchange all-gather 298 MB, reduce-scatter 1.9 GB, all-to-all more than
/// 1.9 GB; the reduce-scatter and the all-to-all aborted out of memory on hypercube:13
/// under 4 GB), and the all-port product all-to-all (1.2 to 1.3 KB per pair on
/// hypercube:7 and :8 with a length of at least its n parts, 30 B with one element; it
/// aborted on hypercube:14 under 4 GB). The other algorithms' state stays near one run per node (one
/// contiguous or strided piece per buffer).
const QUADRATIC_STATE: &[QuadraticState] = &[
    quadratic(OpKind::Allgather, "tea1", 200, true),
    quadratic(OpKind::Allgather, "tea2", 100, true),
    quadratic(OpKind::Allgather, "tea2-balanced", 100, true),
    quadratic(OpKind::Allgather, "tea2-grouped", 100, true),
    quadratic(OpKind::Allgather, "tea2-grouped-balanced", 100, true),
    quadratic(OpKind::Alltoall, "dimension-exchange", 40, true),
    quadratic(OpKind::ReduceScatter, "recursive-halving", 128, true),
    quadratic(OpKind::Allgather, "rotated-exchange", 384, false),
    quadratic(OpKind::ReduceScatter, "rotated-exchange", 2304, false),
    quadratic(OpKind::Alltoall, "rotated-exchange", 2560, false),
    quadratic(OpKind::Alltoall, "product-allport", 1536, false),
];

/// What one unit of an algorithm's verification work costs, in typical units:
/// `max(fixed, nodes / nodes_per_unit)` ([`Algorithm::verify_weight`]).
struct VerifyCost {
    op: OpKind,
    name: &'static str,
    fixed: u64,
    nodes_per_unit: u64,
}

const fn cost(op: OpKind, name: &'static str, fixed: u64, nodes_per_unit: u64) -> VerifyCost {
    VerifyCost {
        op,
        name,
        fixed,
        nodes_per_unit,
    }
}

/// Measured seconds per unit of work when verified, against about 1 µs for most
/// algorithms (SBA 1.0 µs on hypercube:10, ADEA 1.1 µs on :16, the nesbt broadcast
/// 1.6 µs on :16): the nesbt scatter 2 µs (:11 and :13), gather 3.4 µs (:12); MTADEA
/// 9 µs and the all-to-all dimension exchange 20 µs on :11; the rotated-exchange
/// all-gather 2.5 µs on :10 and over 4.3 µs on :11, the reduce-scatter 8.8 µs on :10,
/// the all-to-all over 67 µs on :10, all growing with the nodes; the all-port product
/// all-to-all 2.1 µs on :7 and 3 µs on :8.
const VERIFY_COST: &[VerifyCost] = &[
    cost(OpKind::Scatter, "nesbt", 2, u64::MAX),
    cost(OpKind::Gather, "nesbt", 4, u64::MAX),
    cost(OpKind::Alltoall, "mtadea", 1, 256),
    cost(OpKind::Alltoall, "dimension-exchange", 1, 128),
    cost(OpKind::Alltoall, "product", 1, 128),
    cost(OpKind::Allgather, "rotated-exchange", 1, 256),
    cost(OpKind::ReduceScatter, "rotated-exchange", 1, 64),
    cost(OpKind::Alltoall, "rotated-exchange", 1, 8),
    cost(OpKind::Alltoall, "product-allport", 2, 64),
];

/// What one unit of an algorithm's simulation work costs, in typical units
/// ([`Algorithm::simulate_weight`]), for those above 24 ns a unit rounds-timed or 200 ns
/// async, measured by `cargo run --release -p hypercomm --example simulate_rate --
/// TOPOLOGY LEN` on hypercube:10 (LEN 1 and 100000) and :14, torus:32x32 and
/// complete:1024 (ns a unit, rounds / async): SBA 25 / 280, TEA1 21 / 67, TEA2 and its
/// grouped forms 24 to 35 / 64, SMG 30 to 33 / 161 to 168 (complete:2048), the rotated-exchange all-reduce 70 / 257, the ring
/// all-reduce 70 / 437, the linear all-to-all 93 / 213, the sequential-broadcast
/// all-gather 97 / 208, the two-phase, spine-tree and dxdy broadcasts 35 to 54 / 80 to
/// 116. The nesbt scatter and gather (48 to 139 ns a unit, growing with the nodes) and
/// the linear broadcast are paid for by their nodes × steps instead (every program is
/// built with all its steps).
const SIMULATE_COST: &[(OpKind, &str, u64)] = &[
    (OpKind::Allgather, "sba", 3),
    (OpKind::Allgather, "tea1", 2),
    (OpKind::Allgather, "tea2", 2),
    (OpKind::Allgather, "tea2-balanced", 2),
    (OpKind::Allgather, "tea2-grouped", 3),
    (OpKind::Allgather, "tea2-grouped-balanced", 3),
    (OpKind::Allreduce, "rotated-exchange", 5),
    (OpKind::Allreduce, "ring", 5),
    (OpKind::Alltoall, "linear", 6),
    (OpKind::Alltoall, "smg", 2),
    (OpKind::Allgather, "sequential-broadcast", 7),
    (OpKind::Broadcast, "two-phase", 4),
    (OpKind::Broadcast, "spine-tree", 3),
    (OpKind::Broadcast, "dxdy-axes", 3),
    (OpKind::Broadcast, "dxdy-neighbours", 3),
];

/// Bytes the verifier takes per node for an algorithm outside [`QUADRATIC_STATE`]
/// (a generous bound: ADEA on hypercube:10 takes 7 MB in all, about 7 KB per node).
const LINEAR_STATE: u64 = 16 << 10;

/// Every algorithm.
pub static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "ecube",
        op: OpKind::P2p,
        summary: "one shortest path (e-cube routing), pipelined in ν packets",
        reference: "Saad & Schultz 1985, §3, eq. (3.1)",
        topologies: "hypercube",
        pipelined: true,
        need: Need::Cube(p2p::ecube::build),
        formulas: p2p::ecube::formulas,
    },
    Algorithm {
        name: "multipath",
        op: OpKind::P2p,
        summary: "data split over node-disjoint paths, each pipelined: the cube's n paths evenly; a product's disjoint paths, longer paths fewer packets",
        reference: "Saad & Schultz 1985, §3, Prop. 3.1 and 3.2; on products Topology::disjoint_paths with the split that minimises the rounds (beyond the paper)",
        topologies: "hypercube, product",
        pipelined: true,
        need: Need::Product {
            fits: p2p::multipath::fits,
            build: p2p::multipath::build,
        },
        formulas: p2p::multipath::formulas,
    },
    Algorithm {
        name: "direct",
        op: OpKind::P2p,
        summary: "one shortest path in ν packets: one message on complete:K (β + mτ), store-and-forward elsewhere",
        reference: "Saad & Schultz 1986 (seed 004), §3.1 (F), T_{1,S}; Saad & Schultz 1985, §3, eq. (3.1)",
        topologies: "any",
        pipelined: true,
        need: Need::Any(p2p::direct::build),
        formulas: p2p::direct::formulas,
    },
    Algorithm {
        name: "sbt",
        op: OpKind::Broadcast,
        summary:
            "spanning binomial tree; unpipelined one dimension a step, or pipelined level by level",
        reference: "Saad & Schultz 1985, §2, Prop. 2.1 eq. (2.1), Prop. 2.2 eq. (2.2)",
        topologies: "hypercube",
        pipelined: true,
        need: Need::Cube(broadcast::sbt::build),
        formulas: broadcast::sbt::formulas,
    },
    Algorithm {
        name: "esbt",
        op: OpKind::Broadcast,
        summary: "n edge-disjoint spanning binomial trees, chunks sent to the trees in turn",
        reference: "Johnsson & Ho 1989; seed 001, ESBT-broadcast",
        topologies: "hypercube",
        pipelined: true,
        need: Need::Cube(broadcast::esbt::build),
        formulas: broadcast::esbt::formulas,
    },
    Algorithm {
        name: "sbt",
        op: OpKind::Scatter,
        summary: "spanning binomial tree, halving the data at each level",
        reference: "Saad & Schultz 1985, §5, Prop. 5.1 eq. (5.1)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(scatter::sbt::build),
        formulas: scatter::sbt::formulas,
    },
    Algorithm {
        name: "sbt",
        op: OpKind::Gather,
        summary: "spanning binomial tree, doubling the data at each level",
        reference: "Saad & Schultz 1985, §5, Hypercube Gather, eq. (5.1)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(gather::sbt::build),
        formulas: gather::sbt::formulas,
    },
    Algorithm {
        name: "sba",
        op: OpKind::Allgather,
        summary: "a spanning-binomial-tree broadcast from each node in turn (pipelined in ν packets)",
        reference: "Saad & Schultz 1985, §4.1, eq. (4.1)",
        topologies: "hypercube",
        pipelined: true,
        need: Need::Cube(allgather::sba::build),
        formulas: allgather::sba::formulas,
    },
    Algorithm {
        name: "daisy-chain",
        op: OpKind::Allgather,
        summary: "blocks passed around the Gray-code ring, 2^n − 1 steps",
        reference: "Saad & Schultz 1985, §4.1, eq. (4.2)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgather::daisy_chain::build),
        formulas: allgather::daisy_chain::formulas,
    },
    Algorithm {
        name: "adea",
        op: OpKind::Allgather,
        summary: "exchange of all accumulated blocks across one direction per step, leading bit first; one strided region per message",
        reference: "Saad & Schultz 1985, §4.2, eq. (4.3)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgather::adea::build),
        formulas: allgather::adea::formulas,
    },
    Algorithm {
        name: "dimension-exchange",
        op: OpKind::Allgather,
        summary: "exchange of the accumulated blocks with i XOR 2^k, lowest dimension first; one region per message",
        reference: "seed 001, All-gather",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgather::dimension_exchange::build),
        formulas: allgather::dimension_exchange::formulas,
    },
    Algorithm {
        name: "tea1",
        op: OpKind::Allgather,
        summary: "Total Exchange TEA1: every link busy each step; tokens forwarded along every shortest path, duplicates into tmp",
        reference: "Saad & Schultz 1985, §4.3, TEA1, eq. (4.4)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgather::tea1::build),
        formulas: allgather::tea1::formulas,
    },
    Algorithm {
        name: "tea2",
        op: OpKind::Allgather,
        summary: "Total Exchange TEA2: each token reaches each node once, one word per cyclic-shift class per link (the paper's rule)",
        reference: "Saad & Schultz 1985, §4.3, TEA2, eq. (4.5)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgather::tea2::build),
        formulas: allgather::tea2::formulas,
    },
    Algorithm {
        name: "tea2-balanced",
        op: OpKind::Allgather,
        summary: "TEA2 with words assigned to links round robin: ⌈C(n,i)/n⌉ tokens per link in step i",
        reference: "Saad & Schultz 1985, §4.3, TEA2 (balanced assignment, beyond the paper)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgather::tea2::build_balanced),
        formulas: allgather::tea2::formulas_balanced,
    },
    Algorithm {
        name: "tea2-grouped",
        op: OpKind::Allgather,
        summary: "TEA2 in n + 1 half steps (even nodes send, then odd): Eisenstat's grouping for half-duplex links",
        reference: "Saad & Schultz 1985, §4.3, Eisenstat's grouping",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgather::tea2::build_grouped),
        formulas: allgather::tea2::formulas_grouped,
    },
    Algorithm {
        name: "tea2-grouped-balanced",
        op: OpKind::Allgather,
        summary: "Eisenstat's grouping with the balanced assignment",
        reference: "Saad & Schultz 1985, §4.3, Eisenstat's grouping (balanced assignment, beyond the paper)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgather::tea2::build_grouped_balanced),
        formulas: allgather::tea2::formulas_grouped_balanced,
    },
    Algorithm {
        name: "smg",
        op: OpKind::Alltoall,
        summary: "sequential multi-gather: one spanning-binomial-tree gather per destination, in turn",
        reference: "Saad & Schultz 1985, §6, t_SMG",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(alltoall::smg::build),
        formulas: alltoall::smg::formulas,
    },
    Algorithm {
        name: "mtadea",
        op: OpKind::Alltoall,
        summary: "matrix transposition by alternate direction exchange, highest dimension first; one strided region per message",
        reference: "Saad & Schultz 1985, §6, ALGORITHM MTADEA, t_MTADEA",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(alltoall::mtadea::build),
        formulas: alltoall::mtadea::formulas,
    },
    Algorithm {
        name: "dimension-exchange",
        op: OpKind::Alltoall,
        summary: "exchange with i XOR 2^k every block bound across dimension k, lowest dimension first",
        reference: "seed 001, All-to-all",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(alltoall::dimension_exchange::build),
        formulas: alltoall::dimension_exchange::formulas,
    },
    Algorithm {
        name: "sbt",
        op: OpKind::Reduce,
        summary: "spanning binomial tree, combining in rank order on the way to the root",
        reference: "Saad & Schultz 1985, §5, Hypercube Gather with combining",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(reduce::sbt::build),
        formulas: reduce::sbt::formulas,
    },
    Algorithm {
        name: "dimension-exchange",
        op: OpKind::Allreduce,
        summary: "exchange and combine with i XOR 2^k, lowest dimension first",
        reference: "seed 001, All-gather / all-reduce",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allreduce::dimension_exchange::build),
        formulas: allreduce::dimension_exchange::formulas,
    },
    Algorithm {
        name: "dimension-exchange",
        op: OpKind::Scan,
        summary: "exchange subcube totals with i XOR 2^k; lower halves' totals join the prefix",
        reference: "seed 001, Prefix sum",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(scan::dimension_exchange::build),
        formulas: scan::dimension_exchange::formulas,
    },
    Algorithm {
        name: "dimension-exchange",
        op: OpKind::ExclusiveScan,
        summary: "the prefix-sum exchanges with the node's own input left out of its prefix",
        reference: "seed 001, Prefix sum (exclusive)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(exclusive_scan::dimension_exchange::build),
        formulas: exclusive_scan::dimension_exchange::formulas,
    },
    Algorithm {
        name: "recursive-halving",
        op: OpKind::ReduceScatter,
        summary: "exchange half the blocks still held with i XOR 2^k and combine the kept half, lowest dimension first",
        reference: "Thakur, Rabenseifner & Gropp 2005, recursive halving",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(reduce_scatter::recursive_halving::build),
        formulas: reduce_scatter::recursive_halving::formulas,
    },
    Algorithm {
        name: "binomial",
        op: OpKind::Broadcast,
        summary: "binomial tree on ranks relative to the root, any number of ranks (MPICH)",
        reference: "Thakur, Rabenseifner & Gropp 2005, broadcast: binomial tree; Saad & Schultz 1986 (seed 004), §3.2 (F), eq. (3.23), recursive doubling on a switch",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(broadcast::binomial::build),
        formulas: broadcast::binomial::formulas,
    },
    Algorithm {
        name: "linear",
        op: OpKind::Broadcast,
        summary: "the root sends to every other rank in turn: k − 1 steps, every rank one hop from the root (Open MPI basic_linear)",
        reference: "Open MPI basic_linear broadcast; Chan et al. 2007, flat tree",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(broadcast::linear::build),
        formulas: broadcast::linear::formulas,
    },
    Algorithm {
        name: "binomial",
        op: OpKind::Scatter,
        summary: "binomial tree on relative ranks, each subtree's blocks one contiguous range (≤ 2 regions)",
        reference: "Thakur, Rabenseifner & Gropp 2005, binomial scatter; Saad & Schultz 1986 (seed 004), §3.4 (F), eq. (3.41), on a switch",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(scatter::binomial::build),
        formulas: scatter::binomial::formulas,
    },
    Algorithm {
        name: "binomial",
        op: OpKind::Gather,
        summary: "binomial tree on relative ranks, each subtree's blocks one contiguous range (≤ 2 regions)",
        reference: "Thakur, Rabenseifner & Gropp 2005, binomial gather",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(gather::binomial::build),
        formulas: gather::binomial::formulas,
    },
    Algorithm {
        name: "binomial",
        op: OpKind::Reduce,
        summary: "binomial tree combining on the way; in rank order (tree on rank 0, then to the root) for non-commutative operators",
        reference: "Thakur, Rabenseifner & Gropp 2005, reduce: binomial tree (MPICH MPIR_Reduce_intra_binomial)",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(reduce::binomial::build),
        formulas: reduce::binomial::formulas,
    },
    Algorithm {
        name: "ring",
        op: OpKind::Allgather,
        summary: "blocks passed around the ring r → r + 1, k − 1 steps",
        reference: "Thakur, Rabenseifner & Gropp 2005, allgather: ring",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(allgather::ring::build),
        formulas: allgather::ring::formulas,
    },
    Algorithm {
        name: "bruck",
        op: OpKind::Allgather,
        summary: "⌈log₂k⌉ steps: send the first min(2^s, k − 2^s) blocks held to r − 2^s, then a local rotation",
        reference: "Bruck et al. 1997, concatenation; Thakur, Rabenseifner & Gropp 2005, allgather: Bruck; Saad & Schultz 1986 (seed 004), §3.3 (F), eq. (3.35), shift doubling on a switch",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(allgather::bruck::build),
        formulas: allgather::bruck::formulas,
    },
    Algorithm {
        name: "bruck",
        op: OpKind::Alltoall,
        summary: "⌈log₂k⌉ steps: the blocks whose rotated index has bit s set go to r + 2^s; inverse rotation at the end",
        reference: "Bruck et al. 1997, index algorithm; Thakur, Rabenseifner & Gropp 2005, alltoall: Bruck",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(alltoall::bruck::build),
        formulas: alltoall::bruck::formulas,
    },
    Algorithm {
        name: "pairwise",
        op: OpKind::Alltoall,
        summary: "k − 1 steps: step s sends to r + s and receives from r − s (r XOR s when k is a power of two)",
        reference: "Thakur, Rabenseifner & Gropp 2005, alltoall: pairwise exchange",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(alltoall::pairwise::build),
        formulas: alltoall::pairwise::formulas,
    },
    Algorithm {
        name: "linear",
        op: OpKind::Alltoall,
        summary: "one step: every send and receive posted at once, no send waiting for a receive (Open MPI basic_linear)",
        reference: "Open MPI basic_linear alltoall; Thakur, Rabenseifner & Gropp 2005, alltoall",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(alltoall::linear::build),
        formulas: alltoall::linear::formulas,
    },
    Algorithm {
        name: "recursive-doubling",
        op: OpKind::Allreduce,
        summary: "recursive doubling among 2^⌊log₂k⌋ ranks, the others folded in before and served after; rank order",
        reference: "Thakur, Rabenseifner & Gropp 2005, allreduce: recursive doubling",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(allreduce::recursive_doubling::build),
        formulas: allreduce::recursive_doubling::formulas,
    },
    Algorithm {
        name: "ring",
        op: OpKind::Allreduce,
        summary: "ring reduce-scatter then ring all-gather of k blocks, 2(k − 1) steps; commutative operators only",
        reference: "Patarasuk & Yuan 2009, ring all-reduce",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(allreduce::ring::build),
        formulas: allreduce::ring::formulas,
    },
    Algorithm {
        name: "ring",
        op: OpKind::ReduceScatter,
        summary: "partials passed around the ring r → r + 1, k − 1 steps; commutative operators only",
        reference: "Chan et al. 2007, bucket reduce-scatter",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(reduce_scatter::ring::build),
        formulas: reduce_scatter::ring::formulas,
    },
    Algorithm {
        name: "pairwise",
        op: OpKind::ReduceScatter,
        summary: "k − 1 steps: step s sends block r + s to r + s; arrivals combine on the left of two partials, rank order",
        reference: "Thakur, Rabenseifner & Gropp 2005, reduce-scatter: pairwise exchange (MPICH), in rank order",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(reduce_scatter::pairwise::build),
        formulas: reduce_scatter::pairwise::formulas,
    },
    Algorithm {
        name: "recursive-doubling",
        op: OpKind::Scan,
        summary: "Hillis–Steele: step s receives from r − 2^s and combines on the left, ⌈log₂k⌉ steps",
        reference: "Hillis & Steele 1986; Thakur, Rabenseifner & Gropp 2005, scan",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(scan::recursive_doubling::build),
        formulas: scan::recursive_doubling::formulas,
    },
    Algorithm {
        name: "recursive-doubling",
        op: OpKind::ExclusiveScan,
        summary: "Hillis–Steele with the window before the rank kept apart, ⌈log₂k⌉ steps",
        reference: "Hillis & Steele 1986; Thakur, Rabenseifner & Gropp 2005, exscan",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(exclusive_scan::recursive_doubling::build),
        formulas: exclusive_scan::recursive_doubling::formulas,
    },
    Algorithm {
        name: "nesbt",
        op: OpKind::Broadcast,
        summary: "all n edge-disjoint spanning binomial trees at once, 1/n of the data each, pipelined in ν packets per tree (MSBT)",
        reference: "Johnsson & Ho 1989, §4, MSBT broadcast",
        topologies: "hypercube",
        pipelined: true,
        need: Need::Cube(broadcast::nesbt::build),
        formulas: broadcast::nesbt::formulas,
    },
    Algorithm {
        name: "nesbt",
        op: OpKind::Scatter,
        summary: "part t of every block down edge-disjoint spanning binomial tree t, all n at once, deepest destination first",
        reference: "Johnsson & Ho 1989, §5, one-to-all personalized communication",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(scatter::nesbt::build),
        formulas: scatter::nesbt::formulas,
    },
    Algorithm {
        name: "nesbt",
        op: OpKind::Gather,
        summary: "the nesbt scatter reversed: part t of every block up tree t, all n trees at once",
        reference: "Johnsson & Ho 1989, §5, all-to-one personalized communication",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(gather::nesbt::build),
        formulas: gather::nesbt::formulas,
    },
    Algorithm {
        name: "rotated-exchange",
        op: OpKind::Allgather,
        summary: "n recursive-doubling exchanges of 1/n of every block, exchange j crossing dimensions j, j + 1, … (mod n): every link busy in every step",
        reference: "Johnsson & Ho 1989, all-to-all broadcasting on all ports",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgather::rotated_exchange::build),
        formulas: allgather::rotated_exchange::formulas,
    },
    Algorithm {
        name: "rotated-exchange",
        op: OpKind::Alltoall,
        summary: "n dimension exchanges of 1/n of every block, exchange j crossing dimensions j, j + 1, … (mod n): every link busy in every step",
        reference: "Johnsson & Ho 1989, §6, all-to-all personalized communication on all ports",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(alltoall::rotated_exchange::build),
        formulas: alltoall::rotated_exchange::formulas,
    },
    Algorithm {
        name: "rotated-exchange",
        op: OpKind::Allreduce,
        summary: "recursive halving then doubling, as n exchanges of 1/n of the data in rotated dimension orders: every link busy in every step; commutative operators only",
        reference: "Johnsson & Ho 1989 (reduction as reversed broadcasting), Rabenseifner's reduce-scatter + all-gather, on all ports",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allreduce::rotated_exchange::build),
        formulas: allreduce::rotated_exchange::formulas,
    },
    Algorithm {
        name: "rotated-exchange",
        op: OpKind::ReduceScatter,
        summary: "n recursive-halving exchanges of 1/n of every block in rotated dimension orders: every link busy in every step; commutative operators only",
        reference: "Johnsson & Ho 1989 (reduction as reversed broadcasting), recursive halving on all ports",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(reduce_scatter::rotated_exchange::build),
        formulas: reduce_scatter::rotated_exchange::formulas,
    },
    Algorithm {
        name: "nesbt",
        op: OpKind::Reduce,
        summary: "the nesbt broadcast reversed: part t combined up edge-disjoint tree t, all n trees at once, pipelined in ν packets per tree; commutative operators only",
        reference: "Johnsson & Ho 1989, §4, MSBT broadcast reversed",
        topologies: "hypercube",
        pipelined: true,
        need: Need::Cube(reduce::nesbt::build),
        formulas: reduce::nesbt::formulas,
    },
    Algorithm {
        name: "sl",
        op: OpKind::Download,
        summary: "sequential loading: the host sends each PE its block in turn, k steps",
        reference: "Gichev 1992, §3.1, eq. (3.1)",
        topologies: "hypercube+host",
        pipelined: false,
        need: Need::Hosted {
            check: fit::any_dim,
            build: download::sl::build,
        },
        formulas: download::sl::formulas,
    },
    Algorithm {
        name: "rp",
        op: OpKind::Download,
        summary: "ratioed partitioning: SL's order with portions sized to finish together; equal blocks here, so SL's schedule",
        reference: "Gichev 1992, §3.2, eq. (3.2)",
        topologies: "hypercube+host",
        pipelined: false,
        need: Need::Hosted {
            check: fit::any_dim,
            build: download::rp::build,
        },
        formulas: download::rp::formulas,
    },
    Algorithm {
        name: "ds",
        op: OpKind::Download,
        summary: "data scattering: all N elements to PE 0, which halves and forwards them across the cube",
        reference: "Gichev 1992, §3.3, eqs. (3.3)–(3.4)",
        topologies: "hypercube+host",
        pipelined: false,
        need: Need::Hosted {
            check: fit::any_dim,
            build: download::ds::build,
        },
        formulas: download::ds::formulas,
    },
    Algorithm {
        name: "ssa",
        op: OpKind::Download,
        summary: "Prasad & Murthy's sequential scattering as published: DS in an x-subcube, SL in an (n − x)-subcube; misses PEs for n ≥ 3",
        reference: "Gichev 1992, §4 (Prasad & Murthy 1991)",
        topologies: "hypercube+host (n ≥ 2)",
        pipelined: false,
        need: Need::Hosted {
            check: download::ssa::check,
            build: download::ssa::build,
        },
        formulas: download::ssa::formulas,
    },
    Algorithm {
        name: "ssa-repaired",
        op: OpKind::Download,
        summary: "SSA repaired: DS in an x-subcube, SL to every other PE, the best x (x = 0 is SL, x = n is DS)",
        reference: "Gichev 1992, §4; the repair is ours (docs/errata.md)",
        topologies: "hypercube+host",
        pipelined: false,
        need: Need::Hosted {
            check: fit::any_dim,
            build: download::ssa_repaired::build,
        },
        formulas: download::ssa_repaired::formulas,
    },
    Algorithm {
        name: "gichev",
        op: OpKind::Download,
        summary: "step i sends N/2^i to the root of an (n − i)-subcube while earlier subcubes run DS; (n + 1)β + Nτ",
        reference: "Gichev 1992, §5, eqs. (5.1)–(5.8)",
        topologies: "hypercube+host",
        pipelined: false,
        need: Need::Hosted {
            check: fit::any_dim,
            build: download::gichev::build,
        },
        formulas: download::gichev::formulas,
    },
    Algorithm {
        name: "optimal",
        op: OpKind::Download,
        summary: "the best sequence of host-to-subcube messages with DS inside, by a recursion over subcube sizes, for any β_h, τ_h, β, τ",
        reference: "beyond Gichev 1992 (§5): recursion over subcube sizes (issue 19)",
        topologies: "hypercube+host",
        pipelined: false,
        need: Need::Hosted {
            check: fit::any_dim,
            build: download::optimal::build,
        },
        formulas: download::optimal::formulas,
    },
    Algorithm {
        name: "bus",
        op: OpKind::P2p,
        summary: "one transfer on the bus",
        reference: "Saad & Schultz 1986 (seed 004), §3.1 (A), eq. (3.1)",
        topologies: "bus",
        pipelined: false,
        need: Need::Bus(p2p::bus::build),
        formulas: p2p::bus::formulas,
    },
    Algorithm {
        name: "shm",
        op: OpKind::P2p,
        summary: "a write to the shared memory, then a read",
        reference: "Saad & Schultz 1986 (seed 004), §3.1 (B), eq. (3.2)",
        topologies: "shm",
        pipelined: false,
        need: Need::Shm(p2p::shm::build),
        formulas: p2p::shm::formulas,
    },
    Algorithm {
        name: "bus",
        op: OpKind::Broadcast,
        summary: "one multicast on the bus",
        reference: "Saad & Schultz 1986 (seed 004), §3.2 (A)",
        topologies: "bus",
        pipelined: false,
        need: Need::Bus(broadcast::bus::build),
        formulas: broadcast::bus::formulas,
    },
    Algorithm {
        name: "shm",
        op: OpKind::Broadcast,
        summary: "the root writes the message and S processors read it, per step",
        reference: "Saad & Schultz 1986 (seed 004), §3.2 (B), eq. (3.15)",
        topologies: "shm",
        pipelined: false,
        need: Need::Shm(broadcast::shm::build),
        formulas: broadcast::shm::formulas,
    },
    Algorithm {
        name: "two-way",
        op: OpKind::Broadcast,
        summary: "pipelined both ways round the ring, ⌊k/2⌋ hops",
        reference: "Saad & Schultz 1986 (seed 004), §3.2 (C), eq. (3.17)",
        topologies: "ring",
        pipelined: true,
        need: Need::Ring(broadcast::two_way::build),
        formulas: broadcast::two_way::formulas,
    },
    Algorithm {
        name: "one-way",
        op: OpKind::Broadcast,
        summary: "pipelined one way round the ring, k − 1 hops (on a switch: the ring embedded by Π(j) = j + 1)",
        reference: "Saad & Schultz 1986 (seed 004), §3.2 (C), eq. (3.16); §3.2 (F), eq. (3.22)",
        topologies: "ring, switch",
        pipelined: true,
        need: Need::RingOrSwitch(broadcast::two_way::build_one_way),
        formulas: broadcast::two_way::formulas_one_way,
    },
    Algorithm {
        name: "spine-tree",
        op: OpKind::Broadcast,
        summary: "pipelined down the root's column and every row, ⌊A/2⌋ + ⌊B/2⌋ hops",
        reference: "Saad & Schultz 1986 (seed 004), §3.2 (D), eq. (3.18)",
        topologies: "torus",
        pipelined: true,
        need: Need::Torus(broadcast::spine_tree::build),
        formulas: broadcast::spine_tree::formulas,
    },
    Algorithm {
        name: "binary-tree",
        op: OpKind::Broadcast,
        summary: "pipelined down the heap tree emulated by the switch, each packet to the left child then the right",
        reference: "Saad & Schultz 1986 (seed 004), §3.2 (F), eqs. (3.24)–(3.25)",
        topologies: "switch",
        pipelined: true,
        need: Need::Switch(broadcast::binary_tree::build),
        formulas: broadcast::binary_tree::formulas,
    },
    Algorithm {
        name: "two-pass-exchange",
        op: OpKind::Alltoall,
        summary: "the hypercube's exchange per dimension on a switch of 2^n, in two passes (bit 0 sends, then bit 1), as the paper times it",
        reference: "Saad & Schultz 1986 (seed 004), §3.5 (F), T_{5,S}",
        topologies: "switch",
        pipelined: false,
        need: Need::SwitchCube(alltoall::two_pass_exchange::build),
        formulas: alltoall::two_pass_exchange::formulas,
    },
    Algorithm {
        name: "bus",
        op: OpKind::Allgather,
        summary: "each processor multicasts its block in turn, k steps",
        reference: "Saad & Schultz 1986 (seed 004), §3.3 (A), eq. (3.26)",
        topologies: "bus",
        pipelined: false,
        need: Need::Bus(allgather::bus::build),
        formulas: allgather::bus::formulas,
    },
    Algorithm {
        name: "shm",
        op: OpKind::Allgather,
        summary: "each processor writes its block for S readers a step",
        reference: "Saad & Schultz 1986 (seed 004), §3.3 (B), eq. (3.27)",
        topologies: "shm",
        pipelined: false,
        need: Need::Shm(allgather::shm::build),
        formulas: allgather::shm::formulas,
    },
    Algorithm {
        name: "ring-daisy-chain",
        op: OpKind::Allgather,
        summary: "blocks passed round the ring, k − 1 steps",
        reference: "Saad & Schultz 1986 (seed 004), §3.3 (C), eq. (3.28)",
        topologies: "ring",
        pipelined: false,
        need: Need::Ring(allgather::ring_daisy_chain::build),
        formulas: allgather::ring_daisy_chain::formulas,
    },
    Algorithm {
        name: "alternating-direction",
        op: OpKind::Allgather,
        summary: "daisy chains round the columns, then round the rows with a column's blocks",
        reference: "Saad & Schultz 1986 (seed 004), §3.3 (D), eq. (3.31)",
        topologies: "torus",
        pipelined: false,
        need: Need::Torus(allgather::alternating_direction::build),
        formulas: allgather::alternating_direction::formulas,
    },
    Algorithm {
        name: "bus",
        op: OpKind::Scatter,
        summary: "the root sends the blocks one a step",
        reference: "Saad & Schultz 1986 (seed 004), §3.4 (A), eq. (3.36)",
        topologies: "bus",
        pipelined: false,
        need: Need::Bus(scatter::bus::build),
        formulas: scatter::bus::formulas,
    },
    Algorithm {
        name: "shm",
        op: OpKind::Scatter,
        summary: "the root writes one block a step, its reader reads it",
        reference: "Saad & Schultz 1986 (seed 004), §3.4 (B), eq. (3.37)",
        topologies: "shm",
        pipelined: false,
        need: Need::Shm(scatter::shm::build),
        formulas: scatter::shm::formulas,
    },
    Algorithm {
        name: "two-way",
        op: OpKind::Scatter,
        summary: "both ways round the ring, farthest block first, ⌊k/2⌋ steps",
        reference: "Saad & Schultz 1986 (seed 004), §3.4 (C), eq. (3.38)",
        topologies: "ring",
        pipelined: false,
        need: Need::Ring(scatter::two_way::build),
        formulas: scatter::two_way::formulas,
    },
    Algorithm {
        name: "row-column",
        op: OpKind::Scatter,
        summary: "two-way scatter of column bundles round the root's row, then round every column",
        reference: "Saad & Schultz 1986 (seed 004), §3.4 (D), eq. (3.39)",
        topologies: "torus",
        pipelined: false,
        need: Need::Torus(scatter::row_column::build),
        formulas: scatter::row_column::formulas,
    },
    Algorithm {
        name: "bus",
        op: OpKind::Gather,
        summary: "the bus scatter reversed",
        reference: "Saad & Schultz 1986 (seed 004), §3, §3.4 (A)",
        topologies: "bus",
        pipelined: false,
        need: Need::Bus(gather::bus::build),
        formulas: gather::bus::formulas,
    },
    Algorithm {
        name: "shm",
        op: OpKind::Gather,
        summary: "the shared-memory scatter reversed",
        reference: "Saad & Schultz 1986 (seed 004), §3, §3.4 (B)",
        topologies: "shm",
        pipelined: false,
        need: Need::Shm(gather::shm::build),
        formulas: gather::shm::formulas,
    },
    Algorithm {
        name: "two-way",
        op: OpKind::Gather,
        summary: "the ring's two-way scatter reversed",
        reference: "Saad & Schultz 1986 (seed 004), §3, §3.4 (C)",
        topologies: "ring",
        pipelined: false,
        need: Need::Ring(gather::two_way::build),
        formulas: gather::two_way::formulas,
    },
    Algorithm {
        name: "row-column",
        op: OpKind::Gather,
        summary: "the torus's row-column scatter reversed",
        reference: "Saad & Schultz 1986 (seed 004), §3, §3.4 (D)",
        topologies: "torus",
        pipelined: false,
        need: Need::Torus(gather::row_column::build),
        formulas: gather::row_column::formulas,
    },
    Algorithm {
        name: "bus",
        op: OpKind::Alltoall,
        summary: "each processor multicasts its k − 1 blocks in turn",
        reference: "Saad & Schultz 1986 (seed 004), §3.5 (A)",
        topologies: "bus",
        pipelined: false,
        need: Need::Bus(alltoall::bus::build),
        formulas: alltoall::bus::formulas,
    },
    Algorithm {
        name: "shm",
        op: OpKind::Alltoall,
        summary: "k − 1 shifts, each in ⌈k/S⌉ steps of S writes and S reads",
        reference: "Saad & Schultz 1986 (seed 004), §3.5 (B), eq. (3.42)",
        topologies: "shm",
        pipelined: false,
        need: Need::Shm(alltoall::shm::build),
        formulas: alltoall::shm::formulas,
    },
    Algorithm {
        name: "rotate-drop",
        op: OpKind::Alltoall,
        summary: "rotate round the ring, dropping a block at each node, k − 1 steps",
        reference: "Saad & Schultz 1986 (seed 004), §3.5 (C), eq. (3.43)",
        topologies: "ring",
        pipelined: false,
        need: Need::Ring(alltoall::rotate_drop::build),
        formulas: alltoall::rotate_drop::formulas,
    },
    Algorithm {
        name: "row-column",
        op: OpKind::Alltoall,
        summary: "rotate and drop round every row, then round every column",
        reference: "Saad & Schultz 1986 (seed 004), §3.5 (C)–(D)",
        topologies: "torus",
        pipelined: false,
        need: Need::Torus(alltoall::row_column::build),
        formulas: alltoall::row_column::formulas,
    },
    Algorithm {
        name: "two-path",
        op: OpKind::P2p,
        summary: "halves pipelined both ways round the ring; the destination hears both neighbours (not the ring rule)",
        reference: "Saad & Schultz 1986 (seed 004), §3.1 (C), eq. (3.6)",
        topologies: "ring",
        pipelined: true,
        need: Need::Ring(p2p::two_path::build),
        formulas: p2p::two_path::formulas,
    },
    Algorithm {
        name: "four-path",
        op: OpKind::P2p,
        summary: "the message split over four edge-disjoint paths (fewer on a side of 2), each pipelined",
        reference: "Saad & Schultz 1986 (seed 004), §3.1 (D), Prop. 3.1, eq. (3.11)",
        topologies: "torus",
        pipelined: true,
        need: Need::Torus(p2p::four_path::build),
        formulas: p2p::four_path::formulas,
    },
    Algorithm {
        name: "dxdy-neighbours",
        op: OpKind::Broadcast,
        summary: "halves D_x down the column then the rows, D_y along the row then the columns, side by side; neighbours pass on the halves the axes miss",
        reference: "Saad & Schultz 1986 (seed 004), §3.2 (D), eq. (3.19), the first remedy",
        topologies: "torus",
        pipelined: true,
        need: Need::Torus(broadcast::dxdy::build_neighbours),
        formulas: broadcast::dxdy::formulas_neighbours,
    },
    Algorithm {
        name: "dxdy-axes",
        op: OpKind::Broadcast,
        summary: "halves D_x and D_y side by side as dxdy-neighbours, then D_x along the root's row and D_y down its column",
        reference: "Saad & Schultz 1986 (seed 004), §3.2 (D), eq. (3.19), the second remedy",
        topologies: "torus",
        pipelined: true,
        need: Need::Torus(broadcast::dxdy::build_axes),
        formulas: broadcast::dxdy::formulas_axes,
    },
    Algorithm {
        name: "two-phase",
        op: OpKind::Broadcast,
        summary: "pipelined down the root's column, then along every row once the column is done",
        reference: "Saad & Schultz 1986 (seed 004), §3.2 (D), eq. (3.20)",
        topologies: "torus",
        pipelined: true,
        need: Need::Torus(broadcast::two_phase::build),
        formulas: broadcast::two_phase::formulas,
    },
    Algorithm {
        name: "grid-daisy-chain",
        op: OpKind::Allgather,
        summary: "blocks passed round a ring through every node of the torus, k − 1 steps",
        reference: "Saad & Schultz 1986 (seed 004), §3.3 (D), eq. (3.30)",
        topologies: "torus",
        pipelined: false,
        need: Need::Torus(allgather::grid_daisy_chain::build),
        formulas: allgather::grid_daisy_chain::formulas,
    },
    Algorithm {
        name: "sequential-broadcast",
        op: OpKind::Allgather,
        summary: "every node in turn broadcasts its block by the pipelined spine tree",
        reference: "Saad & Schultz 1986 (seed 004), §3.3 (D), eq. (3.29)",
        topologies: "torus",
        pipelined: true,
        need: Need::Torus(allgather::sequential_broadcast::build),
        formulas: allgather::sequential_broadcast::formulas,
    },
    Algorithm {
        name: "diagonal",
        op: OpKind::Transpose,
        summary: "every row gathered at its diagonal node, then scattered down its column: block (x, y) to (y, x)",
        reference: "Saad & Schultz 1986 (seed 004), §3.5 (D), eq. (3.44)",
        topologies: "torus",
        pipelined: false,
        need: Need::SquareTorus(transpose::diagonal::build),
        formulas: transpose::diagonal::formulas,
    },
    Algorithm {
        name: "a2",
        op: OpKind::Alltoall,
        summary: "Algorithm A2: one factor at a time, last first, N/n_i rounds of the factor's single-port total exchange (Cayley shifts; greedy on paths), one block per message",
        reference: "Dimakopoulos & Dimopoulos (seed 002), §4 Fig. 3, §5 Theorem 2 and Corollary 2",
        topologies: "product",
        pipelined: false,
        need: Need::Product {
            fits: alltoall::a2::fits,
            build: alltoall::a2::build,
        },
        formulas: alltoall::a2::formulas,
    },
    Algorithm {
        name: "product",
        op: OpKind::Alltoall,
        summary: "A2's factor-by-factor order with each phase's blocks for a peer in one message; complete:K as a shape AxB… chosen by the cost model",
        reference: "Dimakopoulos & Dimopoulos (seed 002), §4 Fig. 3, combining per peer (beyond the paper)",
        topologies: "product, complete (composite K)",
        pipelined: false,
        need: Need::Product {
            fits: alltoall::product::fits,
            build: alltoall::product::build,
        },
        formulas: alltoall::product::formulas,
    },
    Algorithm {
        name: "product-allport",
        op: OpKind::Alltoall,
        summary: "product with every block cut into d parts, part j crossing the factors in an order rotated by j: all factors' links at once (all-port)",
        reference: "Dimakopoulos & Dimopoulos (seed 002), §4 Fig. 3 combined per peer, with Johnsson & Ho 1989's rotated dimension orders (beyond the paper)",
        topologies: "product, complete (composite K)",
        pipelined: false,
        need: Need::Product {
            fits: alltoall::product_allport::fits,
            build: alltoall::product_allport::build,
        },
        formulas: alltoall::product_allport::formulas,
    },
    Algorithm {
        name: "product",
        op: OpKind::Allgather,
        summary: "a ring all-gather along each factor in turn, last first, of every block gathered so far; complete:K as a shape AxB… chosen by the cost model",
        reference: "Dimakopoulos & Dimopoulos (seed 002), §4 decomposition, with Thakur, Rabenseifner & Gropp 2005's ring inside each factor (beyond the paper)",
        topologies: "product of rings, complete graphs, cubes; complete (composite K)",
        pipelined: false,
        need: Need::Product {
            fits: allgather::product::fits,
            build: allgather::product::build,
        },
        formulas: allgather::product::formulas,
    },
    Algorithm {
        name: "linear",
        op: OpKind::Gatherv,
        summary: "one step: every rank's c_r elements to the root at once (Open MPI basic_linear)",
        reference: "MPI-3.1 §5.5; Open MPI basic_linear gatherv",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(gatherv::linear::build),
        formulas: gatherv::linear::formulas,
    },
    Algorithm {
        name: "pairwise",
        op: OpKind::Gatherv,
        summary: "k − 1 steps: rank root − s sends to the root in step s, one message a step",
        reference: "MPI-3.1 §5.5; Thakur, Rabenseifner & Gropp 2005, pairwise order",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(gatherv::pairwise::build),
        formulas: gatherv::pairwise::formulas,
    },
    Algorithm {
        name: "linear",
        op: OpKind::Scatterv,
        summary: "one step: the root sends every rank its c_r elements at once (Open MPI basic_linear)",
        reference: "MPI-3.1 §5.6; Open MPI basic_linear scatterv",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(scatterv::linear::build),
        formulas: scatterv::linear::formulas,
    },
    Algorithm {
        name: "pairwise",
        op: OpKind::Scatterv,
        summary: "k − 1 steps: the root sends rank root + s its block in step s",
        reference: "MPI-3.1 §5.6; Thakur, Rabenseifner & Gropp 2005, pairwise order",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(scatterv::pairwise::build),
        formulas: scatterv::pairwise::formulas,
    },
    Algorithm {
        name: "linear",
        op: OpKind::Allgatherv,
        summary: "one step: every rank's c_r elements to every other rank at once",
        reference: "MPI-3.1 §5.7; Open MPI basic allgatherv",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(allgatherv::linear::build),
        formulas: allgatherv::linear::formulas,
    },
    Algorithm {
        name: "pairwise",
        op: OpKind::Allgatherv,
        summary: "k − 1 steps: rank i sends its block to i + s in step s",
        reference: "MPI-3.1 §5.7; Thakur, Rabenseifner & Gropp 2005, pairwise exchange",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(allgatherv::pairwise::build),
        formulas: allgatherv::pairwise::formulas,
    },
    Algorithm {
        name: "ring",
        op: OpKind::Allgatherv,
        summary: "k − 1 steps around the ring, each block its own length; every step waits for the largest block",
        reference: "MPI-3.1 §5.7; Thakur, Rabenseifner & Gropp 2005, ring allgatherv (MPICH)",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(allgatherv::ring::build),
        formulas: allgatherv::ring::formulas,
    },
    Algorithm {
        name: "bruck",
        op: OpKind::Allgatherv,
        summary: "⌈log₂k⌉ steps, each doubling the window of blocks held; blocks straight to their places (a wrapping window is two regions)",
        reference: "Bruck et al. 1997; MPICH Bruck allgatherv (Thakur, Rabenseifner & Gropp 2005)",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(allgatherv::bruck::build),
        formulas: allgatherv::bruck::formulas,
    },
    Algorithm {
        name: "dimension-exchange",
        op: OpKind::Allgatherv,
        summary: "n steps on a hypercube: swap the aligned subcube's blocks with i XOR 2^t; each step waits for the heaviest subcube",
        reference: "seed 001, All-gather; MPICH recursive-doubling allgatherv (Thakur, Rabenseifner & Gropp 2005)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(allgatherv::dimension_exchange::build),
        formulas: allgatherv::dimension_exchange::formulas,
    },
    Algorithm {
        name: "linear",
        op: OpKind::Alltoallv,
        summary: "one step: every C[i][j] block posted at once; the busiest row or column sets the time (Open MPI basic_linear)",
        reference: "MPI-3.1 §5.8; Open MPI basic_linear alltoallv",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(alltoallv::linear::build),
        formulas: alltoallv::linear::formulas,
    },
    Algorithm {
        name: "pairwise",
        op: OpKind::Alltoallv,
        summary: "k − 1 steps: rank i sends C[i][i+s] to i + s in step s; each step waits for its largest block",
        reference: "MPI-3.1 §5.8; Thakur, Rabenseifner & Gropp 2005, pairwise exchange",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(alltoallv::pairwise::build),
        formulas: alltoallv::pairwise::formulas,
    },
    Algorithm {
        name: "bruck",
        op: OpKind::Alltoallv,
        summary: "⌈log₂k⌉ steps of Bruck's index algorithm, each block its own size: step s sends the positions with bit s set; each step waits for its heaviest message",
        reference: "Bruck et al. 1997, index algorithm; MPI-3.1 §5.8 (beyond the papers: variable blocks)",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(alltoallv::bruck::build),
        formulas: alltoallv::bruck::formulas,
    },
    Algorithm {
        name: "dimension-exchange",
        op: OpKind::Alltoallv,
        summary: "n steps on a hypercube: send i XOR 2^d every held block bound across dimension d, each its own size; each step waits for its largest message",
        reference: "seed 001, All-to-all; Saad & Schultz 1985, §6 (MTADEA); MPI-3.1 §5.8 (beyond the papers: variable blocks)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(alltoallv::dimension_exchange::build),
        formulas: alltoallv::dimension_exchange::formulas,
    },
    Algorithm {
        name: "mtadea",
        op: OpKind::Alltoallv,
        summary: "the dimension exchange of variable blocks, highest dimension first; each step waits for its largest message",
        reference: "Saad & Schultz 1985, §6, ALGORITHM MTADEA; MPI-3.1 §5.8 (beyond the paper: variable blocks)",
        topologies: "hypercube",
        pipelined: false,
        need: Need::Cube(alltoallv::mtadea::build),
        formulas: alltoallv::mtadea::formulas,
    },
    Algorithm {
        name: "linear",
        op: OpKind::ReduceScatterv,
        summary: "one step: block j of every input straight to rank j, combined there in rank order",
        reference: "MPI-3.1 §5.10.2; Thakur, Rabenseifner & Gropp 2005, direct exchange",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(reduce_scatterv::linear::build),
        formulas: reduce_scatterv::linear::formulas,
    },
    Algorithm {
        name: "pairwise",
        op: OpKind::ReduceScatterv,
        summary: "k − 1 steps of the pairwise exchange with per-rank blocks, rank order kept by two accumulators",
        reference: "MPI-3.1 §5.10.2; Thakur, Rabenseifner & Gropp 2005, pairwise reduce-scatter",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(reduce_scatterv::pairwise::build),
        formulas: reduce_scatterv::pairwise::formulas,
    },
    Algorithm {
        name: "ring",
        op: OpKind::ReduceScatterv,
        summary: "k − 1 steps around the ring with per-rank blocks; commutative operators only",
        reference: "MPI-3.1 §5.10.2; Open MPI ring reduce-scatter; Patarasuk & Yuan 2009",
        topologies: "complete",
        pipelined: false,
        need: Need::Ranks(reduce_scatterv::ring::build),
        formulas: reduce_scatterv::ring::formulas,
    },
];

/// Every algorithm.
pub fn all() -> &'static [Algorithm] {
    ALGORITHMS
}

/// The algorithm `name` for `op`.
pub fn find(op: OpKind, name: &str) -> Option<&'static Algorithm> {
    ALGORITHMS
        .iter()
        .find(|a| a.op == op && a.name.eq_ignore_ascii_case(name.trim()))
}

/// The algorithms of `op`.
pub fn for_op(op: OpKind) -> impl Iterator<Item = &'static Algorithm> {
    ALGORITHMS.iter().filter(move |a| a.op == op)
}

/// The algorithms of `op` that fit `topo`.
pub fn fitting(topo: &Topology, op: OpKind) -> Vec<&'static Algorithm> {
    for_op(op).filter(|a| a.fits(topo).is_ok()).collect()
}

/// Names, space-separated (or "none").
pub fn names(algos: Vec<&'static Algorithm>) -> String {
    if algos.is_empty() {
        return "none".into();
    }
    algos.iter().map(|a| a.name).collect::<Vec<_>>().join(" ")
}

/// Look up `name` for the problem's collective, with an error naming the algorithms
/// that fit when there is none of that name.
pub fn lookup(topo: &Topology, op: OpKind, name: &str) -> Result<&'static Algorithm, Error> {
    find(op, name).ok_or_else(|| Error::UnknownAlgorithm {
        given: name.to_string(),
        op: op.to_string(),
        topology: topo.to_string(),
        valid: names(fitting(topo, op)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every algorithm the verifier's memory table names is in the registry, so the
    /// table cannot go stale; TEA1 on hypercube:13 is estimated beyond 4 GiB (it ran
    /// out of memory there, issue 21), ADEA on hypercube:16 far below.
    #[test]
    fn the_quadratic_state_table_names_registry_algorithms() {
        let named = QUADRATIC_STATE
            .iter()
            .map(|s| (s.op, s.name))
            .chain(VERIFY_COST.iter().map(|c| (c.op, c.name)));
        for (op, name) in named {
            assert!(
                find(op, name).is_some(),
                "{op} {name} is not in the registry"
            );
        }
        let tea1 = find(OpKind::Allgather, "tea1").unwrap();
        assert!(tea1.verify_bytes(1 << 13) > 4 << 30);
        assert!(tea1.verify_bytes(1 << 10) < 256 << 20);
        let adea = find(OpKind::Allgather, "adea").unwrap();
        assert!(adea.verify_bytes(1 << 16) < 2 << 30);
    }

    /// `exact` is no field any more, but JSON consumers still get it, from `kind`.
    #[test]
    fn formula_json_keeps_exact() {
        for (f, exact) in [
            (Formula::exact("a", "r", 1.5), true),
            (Formula::upper_bound("b", "r", 2.0), false),
            (Formula::estimate("c", "r", 0.5), false),
        ] {
            assert_eq!(f.is_exact(), exact);
            let kind = serde_json::to_value(f.kind).unwrap();
            assert_eq!(
                serde_json::to_value(&f).unwrap(),
                serde_json::json!({
                    "expr": f.expr,
                    "reference": "r",
                    "value": f.value,
                    "kind": kind,
                    "exact": exact,
                })
            );
        }
        let text = serde_json::to_string(&Formula::exact("e", "r", 1.0)).unwrap();
        assert_eq!(
            text,
            r#"{"expr":"e","reference":"r","value":1.0,"kind":"exact","exact":true}"#
        );
    }
}

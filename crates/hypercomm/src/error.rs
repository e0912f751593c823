//! Typed errors of the library. The CLI maps [`enum@Error`] to exit code 2 (bad input);
//! a schedule that runs but breaks a rule is not an error but a
//! [`Violation`](crate::verify::Violation).

use thiserror::Error;

/// Everything that can go wrong when asking the library for a schedule, a cost or a
/// verification, before any schedule is executed.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The topology string could not be parsed or names an unknown family.
    #[error("unknown topology `{given}`; valid topologies: {valid}")]
    UnknownTopology { given: String, valid: String },
    /// The topology parameters are out of range (e.g. a hypercube too large).
    #[error("topology `{given}` is out of range: {reason}")]
    TopologyOutOfRange { given: String, reason: String },
    /// A rank (root, source, destination) is not a node of the topology.
    #[error("{what} {rank} is out of range: the topology has {nodes} nodes (valid: 0..={max})", max = nodes.saturating_sub(1))]
    RankOutOfRange {
        what: &'static str,
        rank: u64,
        nodes: u32,
    },
    /// The collective named does not exist.
    #[error("unknown collective `{given}`; valid: {valid}")]
    UnknownOp { given: String, valid: String },
    /// No algorithm of that name exists for the collective.
    #[error("no algorithm `{given}` for {op}; algorithms that fit {topology}: {valid}")]
    UnknownAlgorithm {
        given: String,
        op: String,
        topology: String,
        valid: String,
    },
    /// The algorithm exists but cannot run on this topology or with these parameters.
    #[error("algorithm `{algo}` does not fit {topology}: {reason}; algorithms that fit: {valid}")]
    AlgorithmDoesNotFit {
        algo: String,
        topology: String,
        reason: String,
        valid: String,
    },
    /// A required parameter is missing (e.g. `--src` for point-to-point).
    #[error("missing parameter: {0}")]
    MissingParameter(String),
    /// A parameter has an invalid value.
    #[error("invalid {what}: {reason}")]
    InvalidParameter { what: &'static str, reason: String },
    /// The schedule is too large to build in memory.
    #[error("schedule too large: {0}")]
    TooLarge(String),
    /// The counts of a variable-count collective do not fit it (wrong number, not
    /// k × k, an overflowing total, or counts given to a fixed-count collective).
    #[error("bad counts: {0}")]
    BadCounts(String),
    /// A schedule file is malformed; `path` is the JSON path of the problem.
    #[error("malformed schedule at `{path}`: {reason}")]
    MalformedSchedule { path: String, reason: String },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

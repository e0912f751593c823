//! Typed errors of the runtime: what a transport reports (a peer failed, a wait timed
//! out, a message did not match) and what the collective API refuses (buffer lengths,
//! an algorithm that does not fit, a schedule that cannot run safely).

use hypercomm::schedule::Rank;
use thiserror::Error;

use crate::transport::Tag;

/// Everything that can go wrong when running a collective.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Rank `rank` panicked, returned an error, or left before sending or receiving what
    /// this rank waited for.
    #[error("rank {rank} failed or left the communicator")]
    PeerFailed {
        /// The rank that failed first.
        rank: Rank,
    },
    /// Rank `rank` waited longer than the configured timeout for `peer` in step `step`.
    #[error("rank {rank} timed out waiting for rank {peer} in step {step}")]
    Timeout {
        /// The rank that waited.
        rank: Rank,
        /// The rank it waited for.
        peer: Rank,
        /// The step of the schedule (0 for point-to-point).
        step: u32,
    },
    /// The next message from `peer` belongs to another call or step: the ranks do not
    /// run the same sequence of collectives.
    #[error("rank {rank} expected a message of {expected} from rank {peer} and got one of {got}")]
    TagMismatch {
        /// The receiving rank.
        rank: Rank,
        /// The sender.
        peer: Rank,
        /// The call and step the receive belongs to.
        expected: Tag,
        /// The call and step of the message.
        got: Tag,
    },
    /// A message from `peer` is not as long as the receive posted for it.
    #[error("rank {rank} posted a receive of {expected} bytes from rank {peer} (step {step}), which sent {got}")]
    LengthMismatch {
        /// The receiving rank.
        rank: Rank,
        /// The sender.
        peer: Rank,
        /// The step of the schedule.
        step: u32,
        /// Bytes the receive expects.
        expected: usize,
        /// Bytes of the message.
        got: usize,
    },
    /// A buffer passed to a collective has the wrong length.
    #[error("{what} has {got} elements; {expected} expected")]
    BufferLength {
        /// Which buffer.
        what: &'static str,
        /// Elements it must have.
        expected: usize,
        /// Elements it has.
        got: usize,
    },
    /// The root of a collective must pass a buffer (`Some`) that other ranks omit.
    #[error("{0}")]
    RootBuffer(String),
    /// A collective that builds a communicator (on MPI: its duplicates, the all-gather
    /// of the ranks' hosts, the all-reduce of its generation) was not joined by every
    /// rank within the timeout: a rank stalled, failed before building its communicator,
    /// or calls something else.
    #[error("rank {rank}: {call} was not joined by every rank within {timeout:?} (a rank stalled, failed before building its communicator, or runs other calls)")]
    SetupTimeout {
        /// The rank that waited.
        rank: Rank,
        /// The collective of the set-up.
        call: &'static str,
        /// How long it waited.
        timeout: std::time::Duration,
    },
    /// The library refused the problem (unknown or unfitting algorithm, rank out of range).
    #[error(transparent)]
    Library(#[from] hypercomm::error::Error),
    /// No algorithm of the registry performs this collective on this many ranks.
    #[error("no algorithm performs {op} on complete:{ranks}{why}")]
    NoAlgorithm {
        /// The collective.
        op: String,
        /// The number of ranks.
        ranks: u32,
        /// A qualification (" that combines in rank order"), or nothing.
        why: &'static str,
    },
    /// The algorithm's schedule does not keep rank order, so a non-commutative operator
    /// would give a wrong result.
    #[error("`{algo}` does not combine in rank order for {op}; use a commutative operator or another algorithm")]
    NotOrderPreserving {
        /// The algorithm.
        algo: &'static str,
        /// The collective.
        op: String,
    },
    /// An algorithm kept as published with a known flaw (`Algorithm::published_flaw`)
    /// whose schedule fails verification for this call: it would leave results unset.
    #[error("`{algo}` on {topology} is refused: {flaw}; verification failed: {violation}")]
    Flawed {
        /// The algorithm.
        algo: &'static str,
        /// The machine its schedule was built for.
        topology: String,
        /// The flaw, as the registry states it.
        flaw: &'static str,
        /// The verifier's first violation.
        violation: String,
    },
    /// A program cannot be executed: a region out of bounds, a write to `in`, a race
    /// between a receive and a send of the same step, a combine without an operator.
    #[error("cannot execute the program of rank {rank}: step {step}: {reason}")]
    InvalidProgram {
        /// The program's rank.
        rank: Rank,
        /// The step at fault.
        step: usize,
        /// What is wrong.
        reason: String,
    },
    /// The calibration file could not be read or parsed.
    #[error("calibration: {0}")]
    Calibration(String),
    /// An environment variable of the runtime has a value it does not take.
    #[error("{name} = {value:?}: {valid}")]
    Environment {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// The values it takes.
        valid: &'static str,
    },
    /// A point-to-point message to or from oneself (it would wait forever).
    #[error("rank {rank} cannot send to or receive from itself")]
    SelfMessage {
        /// The rank.
        rank: Rank,
    },
    /// A threads communicator of this many ranks is refused (zero, or more than
    /// [`crate::threads::MAX_RANKS`]: every pair of ranks has a mailbox, so memory grows
    /// with the square of the count).
    #[error("a threads communicator has 1..={max} ranks, not {ranks} (memory grows with the square of the count)")]
    RankCount {
        /// The count asked for.
        ranks: u32,
        /// The most allowed.
        max: u32,
    },
    /// The thread of rank `rank` could not be started (the ranks before it were, and
    /// ended with [`Error::PeerFailed`] once they needed it, naming it unless one of
    /// them had failed first).
    #[error("could not start the thread of rank {rank}: {reason}")]
    Spawn {
        /// The first rank not started.
        rank: Rank,
        /// The system's reason.
        reason: String,
    },
    /// A call this communicator or its backend cannot make (a split of an endpoint
    /// made outside a run, a non-blocking call where MPI was not initialized for
    /// threads).
    #[error("{call}: {reason}")]
    Unsupported {
        /// The call.
        call: &'static str,
        /// Why.
        reason: String,
    },
    /// Zero-sized element types carry no data and are refused.
    #[error("zero-sized element types are not supported")]
    ZeroSized,
    /// `Algo::Named("native")` cannot run this call: the backend has no collectives of
    /// its own (threads), does not know the element type or operator of a reduction, or
    /// its collective failed.
    #[error("native {op}: {reason}")]
    Native {
        /// The collective.
        op: String,
        /// Why.
        reason: String,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

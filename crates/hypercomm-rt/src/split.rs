//! Sub-communicators: [`Comm::split`] (MPI's `MPI_Comm_split`), [`Comm::dup`],
//! [`Comm::split_shared`] and [`Comm::node_comms`] (node-local and across-node
//! communicators), [`Comm::split_dim`] and [`Comm::rows_and_columns`] (the groups of a
//! product shape's dimensions).
//!
//! A sub-communicator is a full [`Comm`] of the same backend: its ranks are numbered
//! 0..size of the group, its schedules are built for `complete:size`, every collective
//! and algorithm runs on it, and its failures and timeouts are reported as on its
//! parent. Its messages never match those of its parent, its siblings or any other
//! communicator: the threads backend gives every communicator mailboxes of its own,
//! the MPI backend a communicator of its own (`MPI_Comm_split`, whose context MPI keeps
//! apart).
//!
//! Every call here is collective over the parent: every rank makes it, in the same
//! order relative to the parent's other collectives (as in MPI).
//!
//! ```
//! use hypercomm_rt::{threads, Algo, Op};
//! // 6 ranks as a 2x3 grid: rows {0,1,2} {3,4,5}, columns {0,3} {1,4} {2,5}.
//! let got = threads::run(6, |comm| {
//!     let r = comm.rank();
//!     // Even and odd ranks, ordered by descending rank.
//!     let mut half = comm.split(Some(r % 2), -(r as i32))?.expect("every rank has a color");
//!     let shape = "2x3".parse().unwrap();
//!     let (mut row, mut column) = comm.rows_and_columns(&shape)?;
//!     let mut sums = [0u32; 3];
//!     half.all_reduce_into(&[r], &mut sums[..1], &Op::sum(), Algo::Auto)?;
//!     row.all_reduce_into(&[r], &mut sums[1..2], &Op::sum(), Algo::Auto)?;
//!     column.all_reduce_into(&[r], &mut sums[2..], &Op::sum(), Algo::Auto)?;
//!     Ok::<_, hypercomm_rt::Error>((half.rank(), sums))
//! }).unwrap();
//! assert_eq!(got[0], (2, [6, 3, 3])); // 0+2+4; row 0+1+2; column 0+3
//! assert_eq!(got[5], (0, [9, 12, 7])); // 1+3+5; row 3+4+5; column 2+5
//! ```

use hypercomm::algorithms::Shape;
use hypercomm::schedule::Rank;

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::select::Algo;
use crate::transport::Transport;

/// A backend that makes sub-communicators.
pub trait Split: Transport + Sized {
    /// This rank's transport on a new communicator of the ranks that passed `color`
    /// (`None`: none, MPI's `MPI_UNDEFINED`), or `None` for a rank without a color.
    /// `members` are those ranks of this communicator in the new order (by `key`, then
    /// by rank here), as every member computed them from an all-gather of the colors
    /// and keys ([`Comm::split`] does it first); a backend may use them (threads) or
    /// pass `color` and `key` to its own split (MPI). Collective over this
    /// communicator, between collective calls, with nothing posted.
    fn split(&mut self, color: Option<u32>, key: i32, members: &[Rank]) -> Result<Option<Self>>;

    /// This rank's transport on the communicator of the ranks that share its memory
    /// (MPI's `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`), ranked as here; `None` when
    /// every rank does (the default: [`Comm::split_shared`] then duplicates).
    fn split_shared(&mut self) -> Option<Result<Self>> {
        None
    }
}

/// The largest color a split takes (MPI's colors are non-negative `int`s).
pub const MAX_COLOR: u32 = i32::MAX as u32;

/// A color's stand-in in the all-gather of a split: no color.
const NO_COLOR: u32 = u32::MAX;

impl<X: Split> Comm<X> {
    /// A sub-communicator over `transport`: this one's calibration, tuning policy and
    /// budget
    /// (with `Tuning::Measure`, its `Auto` calls measure on its own ranks, whose picks
    /// are kept under its own rank count, as [`Transport::machine_key`] says).
    fn child(&self, transport: X) -> Comm<X> {
        let mut sub = Comm::new(transport, self.calibration());
        sub.tuner = crate::tune::Tuner::new(self.tuner.policy.clone());
        sub.tuner.budget = self.tuner.budget;
        sub
    }

    /// Split this communicator, as MPI's `MPI_Comm_split`: the ranks that pass the same
    /// `color` form a new communicator each, ranked by `key`, ties broken by their rank
    /// here; a rank that passes `None` (MPI's `MPI_UNDEFINED`) gets `None`. Collective:
    /// every rank calls it. A color above [`MAX_COLOR`] is refused on every rank. The
    /// colors and keys travel by an all-gather on this communicator (its failures and
    /// timeouts are this call's); [`Comm::last`] is left as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let got = threads::run(5, |comm| {
    ///     let r = comm.rank();
    ///     // Rank 4 joins no group; the others form {0, 2} and {1, 3}, by key 0 for all.
    ///     let color = (r < 4).then_some(r % 2);
    ///     let Some(mut sub) = comm.split(color, 0)? else { return Ok((None, vec![])) };
    ///     let mut all = vec![0u32; sub.size() as usize];
    ///     sub.all_gather_into(&[r], &mut all, Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>((Some(sub.rank()), all))
    /// }).unwrap();
    /// assert_eq!(got[2], (Some(1), vec![0, 2]));
    /// assert_eq!(got[3], (Some(1), vec![1, 3]));
    /// assert_eq!(got[4], (None, vec![]));
    /// ```
    pub fn split(&mut self, color: Option<u32>, key: i32) -> Result<Option<Comm<X>>> {
        let k = self.size() as usize;
        let mine = [color.unwrap_or(NO_COLOR), key as u32];
        let mut all = vec![0u32; 2 * k];
        let last = self.last;
        // A schedule, never the backend's own call: its waits are bounded (a rank that
        // never splits makes the others time out), so every rank that goes on to the
        // backend's split (MPI's blocking `MPI_Comm_split`) finds the others there.
        // Bruck's fits every size, in ⌈log₂k⌉ steps.
        let gathered = self.all_gather_into(&mine, &mut all, Algo::Named("bruck"));
        self.last = last;
        gathered?;
        let entries: Vec<(u32, i32)> = all.chunks(2).map(|p| (p[0], p[1] as i32)).collect();
        if let Some(r) = entries
            .iter()
            .position(|&(c, _)| c != NO_COLOR && c > MAX_COLOR)
        {
            return Err(hypercomm::error::Error::InvalidParameter {
                what: "color",
                reason: format!(
                    "rank {r} passed color {}; valid: 0..={MAX_COLOR}, or None for no group",
                    entries[r].0
                ),
            }
            .into());
        }
        let mut members: Vec<Rank> = match color {
            Some(c) => (0..k as Rank)
                .filter(|&q| entries[q as usize].0 == c)
                .collect(),
            None => Vec::new(),
        };
        members.sort_by_key(|&q| (entries[q as usize].1, q));
        let sub = self.transport.split(color, key, &members)?;
        let sub = sub.map(|t| self.child(t));
        if let Some(sub) = &sub {
            let at = members.iter().position(|&q| q == self.rank());
            if sub.size() as usize != members.len() || Some(sub.rank() as usize) != at {
                return Err(Error::Unsupported {
                    call: "split",
                    reason: format!(
                        "the backend ranked this rank {} of {}, the split's order {at:?} of {}",
                        sub.rank(),
                        sub.size(),
                        members.len()
                    ),
                });
            }
        }
        Ok(sub)
    }

    /// A duplicate: the same ranks, in the same order, with messages of its own (MPI's
    /// `MPI_Comm_dup`). Collective.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// threads::run(3, |comm| {
    ///     let mut twin = comm.dup()?;
    ///     assert_eq!((twin.rank(), twin.size()), (comm.rank(), comm.size()));
    ///     let mut buf = [comm.rank()];
    ///     twin.broadcast_into(2, &mut buf, Algo::Auto)?;
    ///     assert_eq!(buf, [2]);
    ///     Ok::<_, hypercomm_rt::Error>(())
    /// }).unwrap();
    /// ```
    pub fn dup(&mut self) -> Result<Comm<X>> {
        let rank = self.rank() as i32;
        Ok(self.split(Some(0), rank)?.expect("every rank has color 0"))
    }

    /// The communicator of the ranks that share this rank's memory (a node), ranked as
    /// here: MPI's `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)` on MPI; on threads, where
    /// every rank does, a duplicate. Collective.
    pub fn split_shared(&mut self) -> Result<Comm<X>> {
        match self.transport.split_shared() {
            Some(t) => Ok(self.child(t?)),
            None => self.dup(),
        }
    }

    /// The node-local communicator ([`Comm::split_shared`]) and the across-node one
    /// (the ranks of the same local rank on every node, ranked as here). Collective.
    /// For nodes given as a shape instead (threads that stand for nodes), see
    /// [`Comm::rows_and_columns`] with the shape `[nodes, ranks per node]`.
    pub fn node_comms(&mut self) -> Result<(Comm<X>, Comm<X>)> {
        let node = self.split_shared()?;
        let rank = self.rank() as i32;
        let across = self.split(Some(node.rank()), rank)?;
        Ok((node, across.expect("every rank has a color")))
    }

    /// The communicator of the ranks that differ from this one in coordinate `dim` of
    /// `shape` only (row-major, the last factor fastest, as `--shape` lays ranks out),
    /// ranked by that coordinate. Collective. The shape must lay out exactly this
    /// communicator's ranks.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::threads;
    /// let got = threads::run(12, |comm| {
    ///     let shape = "2x3x2".parse().unwrap();
    ///     let middle = comm.split_dim(&shape, 1)?;
    ///     Ok::<_, hypercomm_rt::Error>((middle.rank(), middle.size()))
    /// }).unwrap();
    /// // Rank 9 = (1, 1, 1): its group is {7, 9, 11}, where it is second.
    /// assert_eq!(got[9], (1, 3));
    /// ```
    pub fn split_dim(&mut self, shape: &Shape, dim: usize) -> Result<Comm<X>> {
        shape.check(self.size())?;
        let factors = shape.factors();
        if dim >= factors.len() {
            return Err(hypercomm::error::Error::InvalidParameter {
                what: "dim",
                reason: format!(
                    "{dim} of the shape {shape}; valid: 0..{} (its factors)",
                    factors.len()
                ),
            }
            .into());
        }
        let stride: u32 = factors[dim + 1..].iter().product();
        let r = self.rank();
        let coordinate = r / stride % factors[dim];
        let color = r - coordinate * stride;
        Ok(self
            .split(Some(color), coordinate as i32)?
            .expect("every rank has a color"))
    }

    /// The row and column communicators of a 2-factor shape `[a, b]` (a rows of b
    /// consecutive ranks): `(row, column)`, the row the b ranks with this rank's first
    /// coordinate, the column the a ranks with its second. With the shape
    /// `[nodes, ranks per node]`, the node-local and the across-node communicators.
    /// Collective.
    pub fn rows_and_columns(&mut self, shape: &Shape) -> Result<(Comm<X>, Comm<X>)> {
        if shape.factors().len() != 2 {
            return Err(hypercomm::error::Error::InvalidParameter {
                what: "--shape",
                reason: format!("{shape} has {} factors; valid: AxB", shape.len()),
            }
            .into());
        }
        let row = self.split_dim(shape, 1)?;
        let column = self.split_dim(shape, 0)?;
        Ok((row, column))
    }
}

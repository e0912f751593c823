//! The variable-count collectives (MPI's `*v` forms): [`Comm::gatherv_into`],
//! [`Comm::scatterv_into`], [`Comm::all_gatherv_into`], [`Comm::all_to_allv_into`] and
//! [`Comm::reduce_scatter_into`]; their persistent forms, counts fixed when planned
//! ([`Comm::plan_gatherv`], …, [`Comm::plan_reduce_scatter`]), here too, and their
//! non-blocking ones in [`crate::immediate`] ([`Comm::immediate_gatherv_into`], …).
//!
//! **Counts and displacements.** Counts are `&[usize]`, one per rank, in elements;
//! displacements are implied contiguous: rank r's block starts where rank r − 1's ends
//! (MPI's `displs` as the prefix sums of `counts`). A program whose MPI displacements
//! leave gaps or reorder blocks packs its buffer first. Counts of zero are allowed.
//! Differences from MPI:
//! - `gatherv` and `scatterv` take the whole `counts` on every rank (MPI reads
//!   `recvcounts` / `sendcounts` at the root only), and every rank must pass the same:
//!   the schedule (and `Algo::Auto`'s choice) is computed from them on each rank without
//!   talking to the others. Ranks given different counts may choose different
//!   algorithms and then wait for each other for ever, as ranks that call different MPI
//!   collectives do; `all_gatherv` and `reduce_scatter` have the same rule in MPI.
//! - `all_to_allv` takes, as MPI does, this rank's `send_counts` (row) and
//!   `recv_counts` (column). The whole k × k matrix, which the schedules and `Auto`
//!   need, is first all-gathered (2k counts a rank), and every rank checks that each
//!   send count matches its receive count, so a mismatch is an error on every rank,
//!   not a hang ([`hypercomm::error::Error::BadCounts`]). A named direct algorithm
//!   (`linear`, `pairwise`) skips that exchange (this rank's program reads only its row
//!   and column; a mismatch is then a length mismatch at the receiver), and so does
//!   `Algo::Named("native")`: MPI's `MPI_Alltoallv` takes the row and column as they
//!   are. The store-and-forward ones (`bruck`, `dimension-exchange`, `mtadea`)
//!   forward other ranks' blocks, so their programs need the whole matrix: they
//!   exchange it.
//!
//! **Algorithms.** The registry's (`hypercomm algorithms --op alltoallv`): `linear`,
//! `pairwise`, `bruck`, and on 2^n ranks `dimension-exchange` and `mtadea` for
//! alltoallv, and `ring` for allgatherv and reduce-scatter. `Algo::Auto` simulates every
//! one that fits under the calibration's model with the actual counts and takes the
//! fastest (the first in registry order on a tie), the same on every rank; under
//! measured tuning (MPI's default) it takes the measured pick instead, MPI's own call
//! among the timed ([`Comm::v_auto_with`]; all-to-allv takes MPI's own). There are no
//! in-place forms yet.

use std::mem::size_of;
use std::sync::Arc;

use bytemuck::Pod;
use hypercomm::algorithms::{self, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::counts::Counts;
use hypercomm::error::Error as LibError;
use hypercomm::schedule::{Rank, Schedule};
use hypercomm::verify::Problem;

use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::exec::{Buffers, Plan};
use crate::op::Op;
use crate::persistent::{refuse_native, Persistent};
use crate::select::{Algo, Ran, NATIVE};
use crate::transport::{Elem, NativeCall, Transport};

fn bad(reason: String) -> Error {
    Error::Library(LibError::BadCounts(reason))
}

#[inline(always)]
fn check_len(what: &'static str, got: usize, expected: u64) -> Result<()> {
    if got as u64 == expected {
        Ok(())
    } else {
        Err(Error::BufferLength {
            what,
            expected: expected as usize,
            got,
        })
    }
}

fn to_u64(c: &[usize]) -> Vec<u64> {
    c.iter().map(|&x| x as u64).collect()
}

/// The schedules' copy of one count per rank (an allocation: not on the native path).
#[inline(never)]
fn per_rank(c: &[usize]) -> Counts {
    Counts::PerRank(to_u64(c))
}

/// A call given `got` counts where it needs one per rank (`k`).
#[cold]
#[inline(never)]
fn one_per_rank(kind: OpKind, k: usize, got: usize) -> Error {
    bad(format!("{kind} needs one count per rank, {k}, got {got}"))
}

/// The largest count, as a multiple of the mean, for which a variable-count call takes
/// the pick measured with equal counts ([`Comm::v_auto_with`]).
const MEASURED_SKEW: usize = 2;

/// Whether `algo` names the backend's own collective (first by address: `Auto`'s
/// choice is [`NATIVE`] itself, asked several times a call).
#[inline]
fn is_native(algo: Algo) -> bool {
    matches!(algo, Algo::Named(n) if std::ptr::eq(n, NATIVE) || n.eq_ignore_ascii_case(NATIVE))
}

/// What decides a variable-count call's plan, besides the algorithm and the element
/// type: the blocking, non-blocking and persistent forms all start from it.
struct VSpec<'a> {
    collective: Collective,
    counts: Counts,
    commutative: bool,
    /// This rank's send and receive counts, as MPI's native call takes them.
    native: (&'a [usize], &'a [usize]),
}

impl<X: Transport> Comm<X> {
    /// Gatherv (`MPI_Gatherv`): the root's `recv` gets every rank's `send`, rank r's
    /// `counts[r]` elements at Σ_{i<r} counts\[i\]. Every rank passes the same `counts`
    /// (one per rank) and its own `send` of `counts[rank]` elements; the root passes
    /// `Some(recv)` of Σ counts elements, the others `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let counts = [2, 0, 3]; // rank 1 sends nothing
    /// let got = threads::run(3, |comm| {
    ///     let r = comm.rank() as usize;
    ///     let send = vec![r as u32; counts[r]];
    ///     let mut all = vec![0u32; 5];
    ///     let recv = (r == 0).then_some(&mut all[..]);
    ///     comm.gatherv_into(0, &send, recv, &counts, Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(all)
    /// }).unwrap();
    /// assert_eq!(got[0], [0, 0, 2, 2, 2]);
    /// ```
    #[inline]
    pub fn gatherv_into<T: Pod>(
        &mut self,
        root: Rank,
        send: &[T],
        recv: Option<&mut [T]>,
        counts: &[usize],
        algo: Algo,
    ) -> Result<Ran> {
        let c = Collective::Gatherv { root };
        let (algo, auto) = self.v_auto_with::<T>(c, counts, algo, None)?;
        let spec = self.spec(c, counts, true, algo)?;
        let output = match recv {
            Some(r) => r,
            None if self.rank() == root => {
                return Err(Error::RootBuffer(format!(
                    "rank {root} is the root: it must pass Some(recv)"
                )))
            }
            None => &mut [],
        };
        let ran = self.varcount(spec, send, output, None, algo)?;
        Ok(self.v_ran(ran, auto))
    }

    /// Scatterv (`MPI_Scatterv`): rank r's `recv` gets `counts[r]` elements of the
    /// root's `send`, from Σ_{i<r} counts\[i\] on. Every rank passes the same `counts`;
    /// the root passes `Some(send)` of Σ counts elements, the others `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let counts = [1, 3, 0];
    /// let got = threads::run(3, |comm| {
    ///     let data = [7u8, 8, 9, 10];
    ///     let root = comm.rank() == 2;
    ///     let mut mine = vec![0u8; counts[comm.rank() as usize]];
    ///     comm.scatterv_into(2, root.then_some(&data[..]), &mut mine, &counts, Algo::Named("pairwise"))?;
    ///     Ok::<_, hypercomm_rt::Error>(mine)
    /// }).unwrap();
    /// assert_eq!(got, vec![vec![7], vec![8, 9, 10], vec![]]);
    /// ```
    #[inline]
    pub fn scatterv_into<T: Pod>(
        &mut self,
        root: Rank,
        send: Option<&[T]>,
        recv: &mut [T],
        counts: &[usize],
        algo: Algo,
    ) -> Result<Ran> {
        let c = Collective::Scatterv { root };
        let (algo, auto) = self.v_auto_with::<T>(c, counts, algo, None)?;
        let spec = self.spec(c, counts, true, algo)?;
        let input = match send {
            Some(s) => s,
            None if self.rank() == root => {
                return Err(Error::RootBuffer(format!(
                    "rank {root} is the root: it must pass Some(send)"
                )))
            }
            None => &[],
        };
        let ran = self.varcount(spec, input, recv, None, algo)?;
        Ok(self.v_ran(ran, auto))
    }

    /// Allgatherv (`MPI_Allgatherv`): every rank's `recv` (Σ counts elements) gets
    /// every rank's `send`, rank r's `counts[r]` elements at Σ_{i<r} counts\[i\].
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// let counts = [1, 2, 0, 1];
    /// let got = threads::run(4, |comm| {
    ///     let r = comm.rank() as usize;
    ///     let send = vec![10 * r as i32; counts[r]];
    ///     let mut all = [0i32; 4];
    ///     comm.all_gatherv_into(&send, &mut all, &counts, Algo::Named("ring"))?;
    ///     Ok::<_, hypercomm_rt::Error>(all)
    /// }).unwrap();
    /// assert_eq!(got, vec![[0, 10, 10, 30]; 4]);
    /// ```
    #[inline]
    pub fn all_gatherv_into<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        algo: Algo,
    ) -> Result<Ran> {
        let c = Collective::Allgatherv;
        let (algo, auto) = self.v_auto_with::<T>(c, counts, algo, None)?;
        let spec = self.spec(c, counts, true, algo)?;
        let ran = self.varcount(spec, send, recv, None, algo)?;
        Ok(self.v_ran(ran, auto))
    }

    /// Alltoallv (`MPI_Alltoallv`): this rank sends `send_counts[j]` elements to rank
    /// j, block j of `send` at Σ_{j'<j} send_counts[j'], and receives
    /// `recv_counts[i]` from rank i into `recv` at Σ_{i'<i} recv_counts[i']. Rank i's
    /// `send_counts[j]` must equal rank j's `recv_counts[i]`; every rank checks it
    /// (the counts are all-gathered first, see the module's doc) and a mismatch is
    /// [`hypercomm::error::Error::BadCounts`] on every rank.
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo};
    /// // Rank i sends i + j copies of 100i + j to rank j.
    /// let got = threads::run(3, |comm| {
    ///     let i = comm.rank() as usize;
    ///     let send_counts: Vec<usize> = (0..3).map(|j| i + j).collect();
    ///     let recv_counts: Vec<usize> = (0..3).map(|j| j + i).collect();
    ///     let send: Vec<u32> = (0..3).flat_map(|j| vec![(100 * i + j) as u32; i + j]).collect();
    ///     let mut recv = vec![0u32; recv_counts.iter().sum()];
    ///     comm.all_to_allv_into(&send, &send_counts, &mut recv, &recv_counts, Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(recv)
    /// }).unwrap();
    /// assert_eq!(got[1], [1, 101, 101, 201, 201, 201]);
    /// ```
    #[inline]
    pub fn all_to_allv_into<T: Pod>(
        &mut self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
        algo: Algo,
    ) -> Result<Ran> {
        // Resolved first: native takes the counts as they are, with no exchange.
        let (algo, auto) = self.v_auto::<T>(algo, None);
        let spec = self.alltoallv_spec(send_counts, recv_counts, algo)?;
        let ran = self.varcount(spec, send, recv, None, algo)?;
        Ok(self.v_ran(ran, auto))
    }

    /// Reduce-scatter with per-rank counts (`MPI_Reduce_scatter`): every rank's `send`
    /// holds Σ counts elements; rank r's `recv` (`counts[r]` elements) gets elements
    /// Σ_{i<r} counts\[i\] .. of send_0 ⊕ send_1 ⊕ … ⊕ send_{k−1}, in rank order (a
    /// non-commutative `op` is honoured: `ring` then refuses and `Auto` skips it).
    /// The fixed-count form is [`Comm::reduce_scatter_block_into`].
    ///
    /// # Examples
    ///
    /// ```
    /// use hypercomm_rt::{threads, Algo, Op};
    /// let counts = [3, 0, 1];
    /// let got = threads::run(3, |comm| {
    ///     let send = [1u64, 2, 3, 4].map(|x| x * (comm.rank() as u64 + 1));
    ///     let mut mine = vec![0u64; counts[comm.rank() as usize]];
    ///     comm.reduce_scatter_into(&send, &mut mine, &counts, &Op::sum(), Algo::Auto)?;
    ///     Ok::<_, hypercomm_rt::Error>(mine)
    /// }).unwrap();
    /// assert_eq!(got, vec![vec![6, 12, 18], vec![], vec![24]]); // (1 + 2 + 3) · x
    /// ```
    #[inline]
    pub fn reduce_scatter_into<T: Pod>(
        &mut self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: &Op<'_, T>,
        algo: Algo,
    ) -> Result<Ran> {
        let c = Collective::ReduceScatterv;
        let (algo, auto) = self.v_auto_with::<T>(c, counts, algo, Some(op))?;
        let spec = self.spec(c, counts, op.is_commutative(), algo)?;
        let ran = self.varcount(spec, send, recv, Some(op), algo)?;
        Ok(self.v_ran(ran, auto))
    }

    /// The spec of a call with one count per rank (`counts`, the same on every rank):
    /// the root checked, and MPI's send and receive counts of this rank. Under `algo`
    /// native, the schedules' copy of the counts is left empty: MPI's call takes them
    /// as they are, and the copy was an allocation per call.
    #[inline(always)]
    fn spec<'a>(
        &self,
        collective: Collective,
        counts: &'a [usize],
        commutative: bool,
        algo: Algo,
    ) -> Result<VSpec<'a>> {
        collective.check_ranks(self.size())?;
        let me = self.rank() as usize;
        let mine = counts.get(me..me + 1).unwrap_or(&[]);
        let native = match collective {
            Collective::Scatterv { .. } => (counts, mine),
            Collective::ReduceScatterv => (&[][..], counts),
            _ => (mine, counts),
        };
        Ok(VSpec {
            collective,
            counts: if is_native(algo) {
                Counts::PerRank(Vec::new())
            } else {
                per_rank(counts)
            },
            commutative,
            native,
        })
    }

    /// The spec of an alltoallv: this rank's row and column of the count matrix, the
    /// whole matrix exchanged and checked when `algo` needs it (see the module's doc).
    fn alltoallv_spec<'a>(
        &mut self,
        send_counts: &'a [usize],
        recv_counts: &'a [usize],
        algo: Algo,
    ) -> Result<VSpec<'a>> {
        let k = self.size() as usize;
        for (what, c) in [("send_counts", send_counts), ("recv_counts", recv_counts)] {
            if c.len() != k {
                return Err(bad(format!(
                    "alltoallv's {what} needs one count per rank, {k}, got {}",
                    c.len()
                )));
            }
        }
        let counts = match algo {
            // MPI takes this rank's row and column as they are.
            _ if is_native(algo) => Counts::Matrix(vec![]),
            // A direct schedule's program on this rank reads only its row and column:
            // no exchange (a count that disagrees with its peer's is a length mismatch
            // at the receiver). The store-and-forward ones (`bruck`,
            // `dimension-exchange`, `mtadea`) carry other ranks' blocks: they need the
            // whole matrix.
            Algo::Named(n) if algorithms::vcount::alltoallv_reads_own_counts_only(n) => {
                self.local_matrix(send_counts, recv_counts)?
            }
            _ => self.count_matrix(send_counts, recv_counts)?,
        };
        Ok(VSpec {
            collective: Collective::Alltoallv,
            counts,
            commutative: true,
            native: (send_counts, recv_counts),
        })
    }

    /// The k × k matrix as this rank sees it: its row and its column, zeros elsewhere.
    fn local_matrix(&self, send: &[usize], recv: &[usize]) -> Result<Counts> {
        let (k, me) = (self.size() as usize, self.rank() as usize);
        if send[me] != recv[me] {
            return Err(bad(format!(
                "alltoallv: rank {me} sends itself {} elements but expects {}",
                send[me], recv[me]
            )));
        }
        let mut rows = vec![vec![0u64; k]; k];
        for j in 0..k {
            rows[me][j] = send[j] as u64;
            rows[j][me] = recv[j] as u64;
        }
        Ok(Counts::Matrix(rows))
    }

    /// The k × k matrix from every rank's row (`send`) and column (`recv`), checked:
    /// rank i's send count to j equals rank j's receive count from i.
    fn count_matrix(&mut self, send: &[usize], recv: &[usize]) -> Result<Counts> {
        let k = self.size() as usize;
        let mine: Vec<u64> = send.iter().chain(recv).map(|&c| c as u64).collect();
        let mut all = vec![0u64; 2 * k * k];
        self.all_gather_into(&mine, &mut all, Algo::Auto)?;
        let rows: Vec<Vec<u64>> = (0..k).map(|i| all[2 * k * i..][..k].to_vec()).collect();
        for (j, col) in (0..k).map(|j| (j, &all[2 * k * j + k..][..k])) {
            if let Some(i) = (0..k).find(|&i| rows[i][j] != col[i]) {
                return Err(bad(format!(
                    "alltoallv: rank {i} sends rank {j} {} elements, but rank {j} expects {} \
                     from rank {i} (send_counts[j] of rank i must equal recv_counts[i] of \
                     rank j)",
                    rows[i][j], col[i]
                )));
            }
        }
        Ok(Counts::Matrix(rows))
    }

    /// `Algo::Auto` of a blocking variable-count call, and whether it was `Auto`: on a
    /// backend with collectives of its own (MPI) and unless tuning is off, the
    /// library's (`MPI_Alltoallv`, …), when it can run this call (a reduction needs a
    /// built-in operator on primitive elements). Our schedules measured 1.2–3.3× of
    /// MPI's at 8 B–1 KiB (BENCHMARKS.md section 6; on one rank, `linear`'s plan 0.73 µs
    /// against `MPI_Alltoallv`'s 0.08 at 1 B). What all-to-allv always takes, and the
    /// others where their measured pick is not a schedule ([`Comm::v_auto_with`]).
    /// Elsewhere the cost model chooses among the schedules; the persistent forms take
    /// the measured pick where it is a schedule, else the model's ([`Comm::plan_auto`]).
    #[inline(always)]
    fn v_auto<'a, T: Pod>(&self, algo: Algo<'a>, op: Option<&Op<'_, T>>) -> (Algo<'a>, bool) {
        match algo {
            Algo::Auto if self.v_auto_native(op) => (Algo::Named(NATIVE), true),
            _ => (algo, matches!(algo, Algo::Auto)),
        }
    }

    /// [`Comm::v_auto`] of a call whose counts every rank passes whole (gatherv,
    /// scatterv, allgatherv, reduce-scatter), under measured tuning: the pick measured
    /// at the size of the counts' mean block ([`Comm::pick`], which times native and
    /// every fitting schedule with every count that mean, as it times the fixed-count
    /// collectives), native where native measured fastest or nothing was measured. On
    /// 2 MPICH ranks `ring` and `linear` all-gatherv took 0.5–0.75 of `MPI_Allgatherv`
    /// from 16 KiB, which `Auto` never ran while it took MPI's call everywhere. Every
    /// rank has the same counts, so every rank measures and picks alike. An
    /// all-to-allv is not measured: a rank knows only its own row and column, and the
    /// size its pick would be of is not the same on every rank. Nor is a call whose
    /// largest count is more than [`MEASURED_SKEW`] times the mean: the picks were timed
    /// with equal counts, and a schedule whose steps wait for the largest block (ring,
    /// pairwise) may not be the faster one there; it keeps MPI's call (the model's
    /// choice on a backend without one).
    #[inline(always)]
    fn v_auto_with<'a, T: Pod>(
        &mut self,
        collective: Collective,
        counts: &[usize],
        algo: Algo<'a>,
        op: Option<&Op<'_, T>>,
    ) -> Result<(Algo<'a>, bool)> {
        if matches!(algo, Algo::Auto) {
            if let Some(name) = self.v_measured(collective, counts, op)? {
                return Ok((Algo::Named(name), true));
            }
        }
        Ok(self.v_auto::<T>(algo, op))
    }

    /// The schedule measured fastest for a variable-count `Auto` call at its counts'
    /// mean block ([`Comm::v_auto_with`]'s rule), or `None`: tuning off, a call `spec`
    /// refuses, counts past [`MEASURED_SKEW`], or a pick that is the backend's own call
    /// or the model's.
    #[inline(always)]
    fn v_measured<T: Pod>(
        &mut self,
        collective: Collective,
        counts: &[usize],
        op: Option<&Op<'_, T>>,
    ) -> Result<Option<&'static str>> {
        let k = self.size() as usize;
        let measured = self.tuner.policy != crate::tune::Tuning::Off;
        if !measured || counts.len() != k || size_of::<T>() == 0 {
            return Ok(None);
        }
        let total = counts.iter().fold(0usize, |t, &c| t.saturating_add(c));
        let mean = total.div_ceil(k.max(1));
        let most = counts.iter().copied().max().unwrap_or(0);
        if most > MEASURED_SKEW.saturating_mul(mean) {
            return Ok(None);
        }
        Ok(match self.pick(collective, mean, op)? {
            Some(crate::tune::Pick::Named(name)) => Some(name),
            _ => None,
        })
    }

    /// Whether `Algo::Auto` of a variable-count call runs the backend's own
    /// ([`Comm::v_auto`]'s rule; the immediate forms start its non-blocking one).
    #[inline(always)]
    pub(crate) fn v_auto_native<T: Pod>(&self, op: Option<&Op<'_, T>>) -> bool {
        let native_fits = op.map_or(true, Op::backend_knows);
        self.transport.has_native() && self.tuner.policy != crate::tune::Tuning::Off && native_fits
    }

    /// `ran`, marked as `Auto`'s choice when `auto` (also as the last call).
    #[inline(always)]
    fn v_ran(&mut self, ran: Ran, auto: bool) -> Ran {
        if auto && !ran.auto {
            self.auto_ran(ran)
        } else {
            ran
        }
    }

    /// Check the counts and buffers, choose the algorithm, build this rank's plan (or
    /// find it cached) and run it (or MPI's own call). Inlined down to the backend's
    /// call, as the fixed-count calls are ([`Comm::collective`]'s note): each result
    /// returned through memory on the way cost a few ns (on one Open MPI rank a named
    /// native all-gatherv took 17 ns in MPI and 46 more in ours).
    #[inline(always)]
    fn varcount<T: Pod>(
        &mut self,
        spec: VSpec<'_>,
        input: &[T],
        output: &mut [T],
        op: Option<&Op<'_, T>>,
        algo: Algo,
    ) -> Result<Ran> {
        if is_native(algo) {
            return self.varcount_native(spec, input, output, op);
        }
        self.varcount_planned(spec, input, output, op, algo)
    }

    /// [`Comm::varcount`] by a schedule.
    #[inline(never)]
    fn varcount_planned<T: Pod>(
        &mut self,
        spec: VSpec<'_>,
        input: &[T],
        output: &mut [T],
        op: Option<&Op<'_, T>>,
        algo: Algo,
    ) -> Result<Ran> {
        let (ran, plan) = self.vplan::<T>(spec, algo)?;
        let (in_len, out_len) = plan.lens();
        check_len("the send buffer", input.len(), in_len as u64)?;
        check_len("the receive buffer", output.len(), out_len as u64)?;
        self.execute(&plan, Buffers::new(input, output), op)?;
        self.last = Some(ran);
        Ok(ran)
    }

    /// This rank's plan of `spec` for elements of `T` under `algo` (not `native`): the
    /// one cached for the same call (collective, counts, algorithm, element size,
    /// commutativity), or chosen, built and cached now.
    fn vplan<T: Pod>(&mut self, spec: VSpec<'_>, algo: Algo) -> Result<(Ran, Arc<Plan>)> {
        if size_of::<T>() == 0 {
            return Err(Error::ZeroSized);
        }
        let (k, me) = (self.size(), self.rank());
        let kind = spec.collective.kind();
        if let Algo::Shaped { name, .. } = algo {
            return Err(Error::Library(LibError::InvalidParameter {
                what: "--algo",
                reason: format!("`{name}` takes a shape; no variable-count algorithm does"),
            }));
        }
        spec.counts.check(kind, k)?;
        let topology = self.topology();
        let commutative = spec.commutative;
        let key = VKey {
            collective: spec.collective,
            counts: spec.counts,
            algo: match algo {
                Algo::Named(name) => name.into(),
                _ => "".into(),
            },
            elem_bytes: size_of::<T>(),
            commutative,
        };
        // A call made before (same collective, counts, algorithm, element size) runs
        // the plan built then: no choice, no schedule, no plan built per call.
        if let Some((ran, plan)) = self.selector.vplans.get(&key) {
            return Ok((*ran, Arc::clone(plan)));
        }
        let problem = Problem {
            topology: &topology,
            collective: spec.collective,
            len: key.counts.mean(),
            commutative,
            counts: Some(&key.counts),
        };
        let (name, auto, schedule) = match algo {
            Algo::Named(name) => {
                let a = algorithms::lookup(&topology, kind, name)?;
                match a.build(&problem, &Params::default()) {
                    Ok(s) => (a.name, false, s),
                    // It refuses a non-commutative operator itself (as the fixed-count
                    // calls report it).
                    Err(_)
                        if !commutative
                            && a.build(
                                &Problem {
                                    commutative: true,
                                    ..problem
                                },
                                &Params::default(),
                            )
                            .is_ok() =>
                    {
                        return Err(Error::NotOrderPreserving {
                            algo: a.name,
                            op: kind.to_string(),
                        })
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Algo::Auto => {
                let (name, s) = self.choose(&problem, size_of::<T>())?;
                (name, true, s)
            }
            Algo::Shaped { .. } => unreachable!("refused above"),
        };
        let lens = (problem.in_len(me) as usize, problem.out_len(me) as usize);
        let plan = Arc::new(Plan::new(schedule.program(me), k, lens.0, lens.1)?);
        let ran = Ran {
            op: kind,
            algorithm: name,
            auto,
            steps: schedule.steps(),
            in_place: false,
        };
        self.selector.vplans.put(key, ran, Arc::clone(&plan));
        Ok((ran, plan))
    }

    /// `Algo::Auto`: the fastest fitting algorithm under the calibration's model, with
    /// the actual counts (the first in registry order on a tie).
    fn choose(
        &self,
        problem: &Problem<'_>,
        elem_bytes: usize,
    ) -> Result<(&'static str, Box<dyn Schedule>)> {
        let model = self.calibration().model(elem_bytes);
        let params = Params {
            model,
            ..Params::default()
        };
        let mut best: Option<(f64, &'static str, Box<dyn Schedule>)> = None;
        for a in algorithms::fitting(problem.topology, problem.collective.kind()) {
            let Ok(s) = a.build(problem, &params) else {
                continue;
            };
            let t = hypercomm::cost::simulate(problem.topology, s.as_ref(), &model).time;
            if best.as_ref().map_or(true, |(b, _, _)| t < *b) {
                best = Some((t, a.name, s));
            }
        }
        best.map(|(_, n, s)| (n, s)).ok_or(Error::NoAlgorithm {
            op: problem.collective.kind().to_string(),
            ranks: self.size(),
            why: "",
        })
    }

    /// MPI's own `MPI_Gatherv`, … ([`Transport::native`]).
    #[inline(always)]
    fn varcount_native<T: Pod>(
        &mut self,
        spec: VSpec<'_>,
        input: &[T],
        output: &mut [T],
        op: Option<&Op<'_, T>>,
    ) -> Result<Ran> {
        if size_of::<T>() == 0 {
            return Err(Error::ZeroSized);
        }
        let kind = spec.collective.kind();
        let k = self.size() as usize;
        let (send_counts, recv_counts) = spec.native;
        let sum = |c: &[usize]| c.iter().sum::<usize>();
        // The lengths MPI will read and write on this rank.
        let me = self.rank();
        let root = spec.collective.root().unwrap_or(0);
        let (want_counts, want_in, want_out) = match spec.collective {
            Collective::Gatherv { .. } => (
                recv_counts.len() == k,
                send_counts.iter().sum::<usize>(),
                if me == root { sum(recv_counts) } else { 0 },
            ),
            Collective::Scatterv { .. } => (
                send_counts.len() == k,
                if me == root { sum(send_counts) } else { 0 },
                sum(recv_counts),
            ),
            Collective::Allgatherv => (recv_counts.len() == k, sum(send_counts), sum(recv_counts)),
            Collective::Alltoallv => (true, sum(send_counts), sum(recv_counts)),
            _ => (
                recv_counts.len() == k,
                sum(recv_counts),
                recv_counts.get(me as usize).copied().unwrap_or(0),
            ),
        };
        if !want_counts {
            return Err(one_per_rank(
                kind,
                k,
                recv_counts.len().max(send_counts.len()),
            ));
        }
        check_len("the send buffer", input.len(), want_in as u64)?;
        check_len("the receive buffer", output.len(), want_out as u64)?;
        let native = NativeCall {
            collective: spec.collective,
            len: 0,
            elem_bytes: size_of::<T>(),
            elem: Elem::of::<T>(),
            op: op.and_then(Op::builtin),
            input: bytemuck::cast_slice(input),
            output: bytemuck::cast_slice_mut(output),
            send_counts,
            recv_counts,
            in_place: None,
        };
        self.run_native(native, false, false)
    }
}

/// The persistent forms (MPI-4's `MPI_Gatherv_init`, `MPI_Alltoallv_init`, …): the
/// counts are fixed when the call is planned, and [`Persistent::run`] (or
/// [`Persistent::start`]) runs it as many times as needed with new data, as the
/// fixed-count plans do ([`crate::persistent`]). Each takes the blocking call's counts
/// and algorithm; `native` is refused ([`Error::Native`]). A run takes this rank's
/// `send` and `recv` of [`Persistent::lens`] elements (the ranks without a buffer of a
/// rooted call pass an empty slice); any other length is
/// [`Error::BufferLength`], naming the expected one.
///
/// ```
/// use hypercomm_rt::{threads, Algo};
/// // Rank i sends j + 1 copies of its data to rank j, every run with new data.
/// let got = threads::run(3, |comm| {
///     let i = comm.rank() as usize;
///     let send_counts: Vec<usize> = (0..3).map(|j| j + 1).collect();
///     let recv_counts = vec![i + 1; 3];
///     let plan = comm.plan_all_to_allv::<u32>(&send_counts, &recv_counts, Algo::Auto)?;
///     assert_eq!(plan.lens(), (6, 3 * (i + 1)));
///     let mut recv = vec![0u32; 3 * (i + 1)];
///     for run in 0..4 {
///         let send: Vec<u32> = (0..3).flat_map(|j| vec![(10 * run + i) as u32; j + 1]).collect();
///         plan.run(comm, &send, &mut recv)?; // no counts exchanged, no schedule built
///     }
///     Ok::<_, hypercomm_rt::Error>(recv)
/// }).unwrap();
/// assert_eq!(got[1], [30, 30, 31, 31, 32, 32]); // the last run's, from ranks 0, 1, 2
/// ```
impl<X: Transport> Comm<X> {
    /// A persistent [`Comm::gatherv_into`] of `counts` (the same on every rank) to
    /// `root`.
    pub fn plan_gatherv<T: Pod>(
        &mut self,
        root: Rank,
        counts: &[usize],
        algo: Algo,
    ) -> Result<Persistent<'static, T>> {
        let c = Collective::Gatherv { root };
        let (algo, tuned) = self.plan_auto::<T>(c, counts, algo, None)?;
        let spec = self.spec(c, counts, true, algo)?;
        self.plan_v(spec, None, algo, tuned)
    }

    /// A persistent [`Comm::scatterv_into`] of `counts` (the same on every rank) from
    /// `root`.
    pub fn plan_scatterv<T: Pod>(
        &mut self,
        root: Rank,
        counts: &[usize],
        algo: Algo,
    ) -> Result<Persistent<'static, T>> {
        let c = Collective::Scatterv { root };
        let (algo, tuned) = self.plan_auto::<T>(c, counts, algo, None)?;
        let spec = self.spec(c, counts, true, algo)?;
        self.plan_v(spec, None, algo, tuned)
    }

    /// A persistent [`Comm::all_gatherv_into`] of `counts` (the same on every rank).
    pub fn plan_all_gatherv<T: Pod>(
        &mut self,
        counts: &[usize],
        algo: Algo,
    ) -> Result<Persistent<'static, T>> {
        let c = Collective::Allgatherv;
        let (algo, tuned) = self.plan_auto::<T>(c, counts, algo, None)?;
        let spec = self.spec(c, counts, true, algo)?;
        self.plan_v(spec, None, algo, tuned)
    }

    /// A persistent [`Comm::all_to_allv_into`] of this rank's `send_counts` and
    /// `recv_counts`: collective; the count matrix, when the algorithm needs it, is
    /// exchanged and checked once, here (a mismatch is
    /// [`hypercomm::error::Error::BadCounts`] on every rank), never by a run.
    pub fn plan_all_to_allv<T: Pod>(
        &mut self,
        send_counts: &[usize],
        recv_counts: &[usize],
        algo: Algo,
    ) -> Result<Persistent<'static, T>> {
        refuse_native(Collective::Alltoallv, algo)?;
        let spec = self.alltoallv_spec(send_counts, recv_counts, algo)?;
        self.plan_v(spec, None, algo, false)
    }

    /// A persistent [`Comm::reduce_scatter_into`] of `counts` (the same on every rank),
    /// with `op`.
    pub fn plan_reduce_scatter<'f, T: Pod>(
        &mut self,
        counts: &[usize],
        op: Op<'f, T>,
        algo: Algo,
    ) -> Result<Persistent<'f, T>> {
        let c = Collective::ReduceScatterv;
        let (algo, tuned) = self.plan_auto(c, counts, algo, Some(&op))?;
        let spec = self.spec(c, counts, op.is_commutative(), algo)?;
        self.plan_v(spec, Some(op), algo, tuned)
    }

    /// `Algo::Auto` of a persistent variable-count call (not all-to-allv): the blocking
    /// call's measured pick where it is a schedule ([`Comm::v_measured`]), else `Auto`
    /// (the cost model among the schedules: the backend's own call has no persistent
    /// form here); and whether the pick was measured. `native` is refused.
    fn plan_auto<'a, T: Pod>(
        &mut self,
        collective: Collective,
        counts: &[usize],
        algo: Algo<'a>,
        op: Option<&Op<'_, T>>,
    ) -> Result<(Algo<'a>, bool)> {
        refuse_native(collective, algo)?;
        if matches!(algo, Algo::Auto) {
            if let Some(name) = self.v_measured(collective, counts, op)? {
                return Ok((Algo::Named(name), true));
            }
        }
        Ok((algo, false))
    }

    fn plan_v<'f, T: Pod>(
        &mut self,
        spec: VSpec<'_>,
        op: Option<Op<'f, T>>,
        algo: Algo,
        tuned: bool,
    ) -> Result<Persistent<'f, T>> {
        let (ran, plan) = self.vplan::<T>(spec, algo)?;
        let ran = Ran {
            auto: ran.auto || tuned,
            ..ran
        };
        // Not staged: the backend's requests made once are proven on the fixed-count
        // plans only (`persistent_check`); a variable-count run posts as a plain call.
        Ok(Persistent::new(plan, op, ran, None))
    }
}

/// A variable-count call as the plan cache knows it: what decides its plan.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VKey {
    collective: Collective,
    counts: Counts,
    /// The algorithm's name as given, or empty for `Algo::Auto`.
    algo: Box<str>,
    elem_bytes: usize,
    commutative: bool,
}

/// The plans of the last few variable-count calls ([`VPlans::CAPACITY`]), newest
/// last: a call repeated with the same counts (a solver's iterations, a benchmark's
/// timed calls) finds its plan by comparison, where building it takes a choice among
/// the fitting algorithms (`Algo::Auto` simulates each), a schedule and a [`Plan`].
#[derive(Default)]
pub(crate) struct VPlans(Vec<(VKey, (Ran, Arc<Plan>))>);

impl VPlans {
    /// Calls kept.
    pub const CAPACITY: usize = 8;

    /// The plan of `key`, if cached (moved to the newest place).
    fn get(&mut self, key: &VKey) -> Option<&(Ran, Arc<Plan>)> {
        let at = self.0.iter().rposition(|(k, _)| k == key)?;
        if at + 1 != self.0.len() {
            let hit = self.0.remove(at);
            self.0.push(hit);
        }
        self.0.last().map(|(_, hit)| hit)
    }

    fn put(&mut self, key: VKey, ran: Ran, plan: Arc<Plan>) {
        if self.0.len() == Self::CAPACITY {
            self.0.remove(0);
        }
        self.0.push((key, (ran, plan)));
    }
}

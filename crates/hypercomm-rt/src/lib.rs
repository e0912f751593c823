//! # hypercomm-rt
//!
//! The runtime of [`hypercomm`]: it executes the library's schedules (the same ones the
//! verifier proves correct and the cost simulator times) on real buffers.
//!
//! The main types: [`Comm`], a rank's handle with the collective API; [`Algo`], which
//! algorithm of the registry runs (by name, or `Auto`: the fastest under the cost model
//! and a [`Calibration`]); [`Op`], reduction operators; [`Ran`], what a call ran;
//! [`Transport`], what a backend implements; [`threads`], k ranks as threads of one
//! process moving data with a single copy; [`exec`], one rank's program on typed buffers.
//!
//! Schedules are built for `complete:k` (every pair of ranks linked), so any algorithm
//! of the registry that fits k ranks runs: every collective has algorithms for any k
//! (point-to-point `direct`, one message), and the hypercube algorithms join them when
//! k = 2^n.
//!
//! Every example below runs 4 ranks with [`threads::run`], which returns each rank's
//! result in rank order. Each call's doc in [`Comm`] says what it computes.
//!
//! ## All-reduce (the README's example)
//! ```
//! use hypercomm_rt::{threads, Algo, Op};
//!
//! // 4 ranks, each a thread of this process; every rank returns its sum.
//! let sums = threads::run(4, |comm| {
//!     let mine = [comm.rank() as u64 + 1, 10]; // rank r holds [r + 1, 10]
//!     let mut sum = [0u64; 2];
//!     let ran = comm.all_reduce_into(&mine, &mut sum, &Op::sum(), Algo::Auto)?;
//!     assert!(ran.auto); // the algorithm the cost model chose: ran.algorithm
//!     Ok::<_, hypercomm_rt::Error>(sum)
//! })
//! .unwrap();
//! assert_eq!(sums, vec![[10, 40]; 4]); // 1+2+3+4, 4×10, on every rank
//! ```
//!
//! ## Broadcast (in place)
//! ```
//! use hypercomm_rt::{threads, Algo};
//! let got = threads::run(4, |comm| {
//!     let mut buf = if comm.rank() == 2 { [7u32, 8, 9] } else { [0; 3] };
//!     let ran = comm.broadcast_into(2, &mut buf, Algo::Named("sbt"))?;
//!     assert_eq!(ran.algorithm, "sbt");
//!     Ok::<_, hypercomm_rt::Error>(buf)
//! }).unwrap();
//! assert_eq!(got, vec![[7, 8, 9]; 4]);
//! ```
//!
//! ## Scatter and gather
//! ```
//! use hypercomm_rt::{threads, Algo};
//! let got = threads::run(4, |comm| {
//!     let data: Vec<u16> = (0..8).collect();
//!     let root_data = (comm.rank() == 0).then_some(&data[..]);
//!     let mut mine = [0u16; 2];
//!     comm.scatter_into(0, root_data, &mut mine, Algo::Auto)?;
//!     let mut back = vec![0u16; 8];
//!     let recv = (comm.rank() == 3).then_some(&mut back[..]);
//!     comm.gather_into(3, &mine, recv, Algo::Auto)?;
//!     Ok::<_, hypercomm_rt::Error>((mine, back))
//! }).unwrap();
//! assert_eq!(got[1].0, [2, 3]);
//! assert_eq!(got[3].1, (0..8).collect::<Vec<u16>>());
//! ```
//!
//! ## All-gather and all-to-all
//! ```
//! use hypercomm_rt::{threads, Algo};
//! let got = threads::run(4, |comm| {
//!     let r = comm.rank() as i64;
//!     let mut all = [0i64; 4];
//!     comm.all_gather_into(&[r], &mut all, Algo::Auto)?;
//!     let send: Vec<i64> = (0..4).map(|j| 10 * r + j).collect(); // block j goes to rank j
//!     let mut recv = [0i64; 4];
//!     comm.all_to_all_into(&send, &mut recv, Algo::Auto)?;
//!     Ok::<_, hypercomm_rt::Error>((all, recv))
//! }).unwrap();
//! assert_eq!(got[2].0, [0, 1, 2, 3]);
//! assert_eq!(got[2].1, [2, 12, 22, 32]);
//! ```
//!
//! ## Reduce and all-reduce (built-in and user operators)
//! ```
//! use hypercomm_rt::{threads, Algo, Op};
//! let got = threads::run(4, |comm| {
//!     let x = [comm.rank() as f64 + 1.0];
//!     let mut product = [0.0];
//!     let recv = (comm.rank() == 0).then_some(&mut product[..]);
//!     comm.reduce_into(0, &x, recv, &Op::product(), Algo::Auto)?;
//!     let mut max = [0.0];
//!     comm.all_reduce_into(&x, &mut max, &Op::max(), Algo::Auto)?;
//!     // A non-commutative operator: concatenation of decimal numbers, each held as
//!     // [value, 10^digits].
//!     let concat = Op::associative(|a: &[u64; 2], b: &[u64; 2]| [a[0] * b[1] + b[0], a[1] * b[1]]);
//!     let mut digits = [[comm.rank() as u64 + 1, 10]];
//!     comm.all_reduce_in_place(&mut digits, &concat, Algo::Auto)?;
//!     Ok::<_, hypercomm_rt::Error>((product[0], max[0], digits[0][0]))
//! }).unwrap();
//! assert_eq!(got[0], (24.0, 4.0, 1234));
//! assert_eq!(got[3].2, 1234);
//! ```
//!
//! ## Scans
//! ```
//! use hypercomm_rt::{threads, Algo, Op};
//! let got = threads::run(4, |comm| {
//!     let x = [comm.rank() as u32 + 1];
//!     let (mut incl, mut excl) = ([0u32], [0u32]);
//!     comm.scan_into(&x, &mut incl, &Op::sum(), Algo::Auto)?;
//!     comm.exclusive_scan_into(&x, &mut excl, &Op::sum(), Algo::Auto)?;
//!     Ok::<_, hypercomm_rt::Error>((incl[0], excl[0]))
//! }).unwrap();
//! assert_eq!(got[3], (10, 6)); // 1+2+3+4, 1+2+3
//! ```
//!
//! ## Reduce-scatter
//! ```
//! use hypercomm_rt::{threads, Algo, Op};
//! let got = threads::run(4, |comm| {
//!     let send = [1u8; 8]; // 4 blocks of 2
//!     let mut recv = [0u8; 2];
//!     comm.reduce_scatter_block_into(&send, &mut recv, &Op::sum(), Algo::Auto)?;
//!     Ok::<_, hypercomm_rt::Error>(recv)
//! }).unwrap();
//! assert_eq!(got, vec![[4, 4]; 4]);
//! ```
//!
//! ## Point to point
//! ```
//! use hypercomm_rt::{threads, Algo};
//! let got = threads::run(4, |comm| {
//!     let (r, k) = (comm.rank(), comm.size());
//!     // A ring shift: send right, receive from the left, at once.
//!     let mut left = [0u32];
//!     comm.send_receive_into((r + 1) % k, &[r], (r + k - 1) % k, &mut left)?;
//!     // Direct send and receive.
//!     let mut got = [0u32; 2];
//!     match r {
//!         0 => comm.send(1, &[5u32, 6])?,
//!         1 => comm.receive_into(0, &mut got)?,
//!         _ => {}
//!     }
//!     // Routed through the schedule's paths: every rank takes part.
//!     let mut routed = [0u32; 3];
//!     let send = [1u32, 2, 3];
//!     comm.p2p_into(0, 3, 3, (r == 0).then_some(&send[..]), (r == 3).then_some(&mut routed[..]), Algo::Auto)?;
//!     Ok::<_, hypercomm_rt::Error>((left[0], got, routed))
//! }).unwrap();
//! assert_eq!(got[0].0, 3);
//! assert_eq!(got[1].1, [5, 6]);
//! assert_eq!(got[3].2, [1, 2, 3]);
//! ```
//!
//! ## Barrier
//! ```
//! use hypercomm_rt::{threads, Barrier};
//! threads::run(5, |comm| {
//!     comm.barrier()?; // recursive doubling, as MPI_Barrier
//!     comm.barrier_with(Barrier::Tree) // fan-in to rank 0, fan-out: rank 0 leaves first
//! }).unwrap();
//! ```
//!
//! ## Which algorithm ran
//! ```
//! use hypercomm_rt::{threads, Algo, Error};
//! threads::run(4, |comm| {
//!     let mut buf = [0u8; 1000];
//!     let ran = comm.broadcast_into(0, &mut buf, Algo::Auto)?;
//!     assert!(ran.auto);
//!     assert_eq!(comm.last_algorithm(), Some(ran.algorithm));
//!     // An algorithm that does not fit names those that do.
//!     let err = comm.broadcast_into(0, &mut buf, Algo::Named("no-such")).unwrap_err();
//!     assert!(err.to_string().contains("sbt"));
//!     Ok::<_, Error>(())
//! }).unwrap();
//! ```
//!
//! ## Application examples
//!
//! `crates/hypercomm-rt/examples` holds the seeds' motivating programs, each checking its
//! result against a serial computation on every rank: `power_iteration` (all-gather),
//! `conjugate_gradient` (all-gather, all-reduce), `gaussian_elimination` (pivot-row
//! broadcast), `nbody` (all-gather), `transpose` (all-to-all) and `prefix_sums` (scans).
//! Their kernels (`examples/apps/mod.rs`) are generic over [`Transport`], so the MPI
//! backend runs the same code. `cargo run --release -p hypercomm-rt --example nbody -- 5`.

#![warn(missing_docs)]
#![warn(unsafe_op_in_unsafe_fn)]

mod alias;

/// The text of a panic's payload (a `&str` or a `String`, as `panic!` makes them).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

pub mod comm;
pub mod error;
pub mod exec;
pub mod immediate;
pub mod op;
pub mod persistent;
pub mod predict;
pub mod select;
pub mod split;
pub mod threads;
pub mod transport;
pub mod tune;
mod vcount;

pub use comm::{Barrier, Comm};
pub use error::{Error, Result};
pub use immediate::{
    scope as request_scope, Detach, NativeScope, Request, RequestScope, ScopedRequest,
};
pub use op::Op;
pub use persistent::Persistent;
pub use select::{topology_for, Algo, Calibration, Ran, NATIVE};
pub use split::Split;
pub use transport::Transport;
pub use tune::{Tuned, Tuning};

#[cfg(test)]
mod readme {
    /// The README's runtime example is the crate's doctest "All-reduce (the README's
    /// example)", line for line, so that it compiles and runs.
    #[test]
    fn the_readme_example_is_the_doctest() {
        let readme = include_str!("../../../README.md");
        let section = readme
            .split("## Using the runtime")
            .nth(1)
            .expect("README has a `Using the runtime` section");
        let code = section
            .split("```rust\n")
            .nth(1)
            .and_then(|c| c.split("```").next())
            .expect("a rust block");
        let doctest: String = include_str!("lib.rs")
            .split("//! ## All-reduce (the README's example)\n//! ```\n")
            .nth(1)
            .and_then(|d| d.split("//! ```").next())
            .expect("the doctest")
            .lines()
            .map(|l| {
                l.strip_prefix("//!")
                    .unwrap_or(l)
                    .strip_prefix(' ')
                    .unwrap_or("")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(code, doctest);
    }
}

/// Everything a program using the runtime needs.
pub mod prelude {
    pub use crate::threads;
    pub use crate::{Algo, Barrier, Calibration, Comm, Error, Op, Ran, Transport};
}

//! Where a small all-reduce's time goes on the MPI backend, layer by layer (issue 24's
//! persistent calls, issue 20's per-call overhead): 2 ranks exchange `bytes` bytes
//! (one step of recursive doubling), `calls` times back to back, each layer timed on its
//! own, the layers in turn per repetition:
//!
//! 1. `raw`: `MPI_Irecv` + `MPI_Isend` + `MPI_Waitall`, the least MPI can do;
//! 2. `raw-init`: the same on persistent requests (`MPI_Send_init` + `MPI_Recv_init`
//!    once, `MPI_Startall` + `MPI_Waitall` per call), what a persistent plan runs on;
//! 3. `probe`: `MPI_Isend`, then `MPI_Improbe` (any tag) until the message is there,
//!    `MPI_Imrecv`, `MPI_Test` until done, as the backend's transport receives (a
//!    message of the wrong length or step is reported, never received);
//! 4. `persistent`: `plan_all_reduce` once, `run` per call (the executor and transport);
//! 5. `plain`: `all_reduce_into` with the algorithm named (adds its choice and look-up);
//! 6. `native`: `MPI_Allreduce`.
//!
//! ```text
//! mpirun -n 2 target/release/examples/small_call_path [bytes] [calls] [reps] [layer,…]
//! ```
//! Prints each layer's median ns per call over the repetitions (rank 0's), with the
//! quartiles. On a loaded machine, take short blocks and many repetitions (e.g. `8 200
//! 301`): the layers then alternate every 200 calls, and the median ignores the blocks in
//! which a rank was descheduled.

use std::ffi::c_void;
use std::time::Instant;

use hypercomm_mpi::HypercommExt;
use hypercomm_rt::{Algo, Op};
use mpi::collective::SystemOperation;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::traits::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let bytes: usize = a.first().map_or(Ok(8), |s| s.parse())?;
    let calls: u32 = a.get(1).map_or(Ok(20_000), |s| s.parse())?;
    let reps: usize = a.get(2).map_or(Ok(5), |s| s.parse())?;
    // Optional: the layers to run, by name, comma-separated (all by default).
    let only: Option<Vec<String>> = a.get(3).map(|s| s.split(',').map(str::to_owned).collect());
    let universe = mpi::initialize().ok_or("MPI was already initialized")?;
    let world = universe.world();
    if world.size() != 2 {
        return Err("run on 2 ranks (mpirun -n 2)".into());
    }
    let me = world.rank();
    let peer = 1 - me;
    let raw = world.as_raw();
    let m = bytes / 8;
    let send = vec![me as u64 + 1; m.max(1)];
    let mut recv = vec![0u64; m.max(1)];
    let mut comm = world.hypercomm()?;
    let algo = Algo::Named("recursive-doubling");
    let sum = Op::<u64>::sum();
    let plan = comm.plan_all_reduce::<u64>(m, Op::sum(), algo)?;
    let names = ["raw", "raw-init", "probe", "persistent", "plain", "native"];
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let n = (m * 8) as i32;
    let u8t = unsafe { ffi::RSMPI_UINT8_T };
    // SAFETY: `send` and `recv` outlive the requests, freed below before they are.
    let mut inits = unsafe {
        let mut reqs = [std::mem::zeroed::<ffi::MPI_Request>(); 2];
        let rp = recv.as_mut_ptr() as *mut c_void;
        ffi::MPI_Recv_init(rp, n, u8t, peer, 8, raw, &mut reqs[0]);
        let sp = send.as_ptr() as *const c_void;
        ffi::MPI_Send_init(sp, n, u8t, peer, 8, raw, &mut reqs[1]);
        reqs
    };
    for _ in 0..reps {
        for (layer, out) in ns.iter_mut().enumerate() {
            if only
                .as_ref()
                .is_some_and(|o| !o.iter().any(|n| n == names[layer]))
            {
                continue;
            }
            world.barrier();
            let start = Instant::now();
            for _ in 0..calls {
                match layer {
                    // SAFETY: buffers outlive the requests, completed before the next call.
                    0 => unsafe {
                        let mut reqs = [std::mem::zeroed::<ffi::MPI_Request>(); 2];
                        let rp = recv.as_mut_ptr() as *mut c_void;
                        ffi::MPI_Irecv(rp, n, u8t, peer, 7, raw, &mut reqs[0]);
                        let sp = send.as_ptr() as *const c_void;
                        ffi::MPI_Isend(sp, n, u8t, peer, 7, raw, &mut reqs[1]);
                        ffi::MPI_Waitall(2, reqs.as_mut_ptr(), ffi::RSMPI_STATUSES_IGNORE);
                    },
                    // SAFETY: as above (the requests' buffers are `send` and `recv`).
                    1 => unsafe {
                        ffi::MPI_Startall(2, inits.as_mut_ptr());
                        ffi::MPI_Waitall(2, inits.as_mut_ptr(), ffi::RSMPI_STATUSES_IGNORE);
                    },
                    // SAFETY: as above; the probed message is received whole.
                    2 => unsafe {
                        let mut sreq = std::mem::zeroed::<ffi::MPI_Request>();
                        let sp = send.as_ptr() as *const c_void;
                        ffi::MPI_Isend(sp, n, u8t, peer, 7, raw, &mut sreq);
                        let (mut flag, mut msg) = (0, ffi::RSMPI_MESSAGE_NULL);
                        let mut status = std::mem::zeroed::<ffi::MPI_Status>();
                        while flag == 0 {
                            ffi::MPI_Improbe(
                                peer,
                                ffi::RSMPI_ANY_TAG,
                                raw,
                                &mut flag,
                                &mut msg,
                                &mut status,
                            );
                        }
                        let mut count: ffi::MPI_Count = 0;
                        ffi::MPI_Get_elements_x(&status, u8t, &mut count);
                        assert_eq!(count as i32, n);
                        let mut rreq = std::mem::zeroed::<ffi::MPI_Request>();
                        let rp = recv.as_mut_ptr() as *mut c_void;
                        ffi::MPI_Imrecv(rp, n, u8t, &mut msg, &mut rreq);
                        for req in [&mut rreq, &mut sreq] {
                            let mut done = 0;
                            while done == 0 {
                                ffi::MPI_Test(req, &mut done, ffi::RSMPI_STATUS_IGNORE);
                            }
                        }
                    },
                    3 => {
                        plan.run(&mut comm, &send[..m], &mut recv[..m])?;
                    }
                    4 => {
                        comm.all_reduce_into(&send[..m], &mut recv[..m], &sum, algo)?;
                    }
                    _ => world.all_reduce_into(&send[..m], &mut recv[..m], SystemOperation::sum()),
                }
            }
            out.push(start.elapsed().as_secs_f64() * 1e9 / calls as f64);
        }
    }
    if me == 0 {
        println!("2 ranks, {bytes} B, {calls} calls back to back, median of {reps}: ns per call");
        for (name, v) in names.iter().zip(&mut ns).filter(|(_, v)| !v.is_empty()) {
            v.sort_by(f64::total_cmp);
            let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
            println!(
                "{name:<11} {:>9.1}   (quartiles {:.1}–{:.1}, min {:.1}, max {:.1})",
                q(0.5),
                q(0.25),
                q(0.75),
                v[0],
                v[v.len() - 1]
            );
        }
    }
    for r in &mut inits {
        // SAFETY: inactive persistent requests of ours.
        unsafe { ffi::MPI_Request_free(r) };
    }
    drop(plan);
    drop(comm);
    Ok(())
}

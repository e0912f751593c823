//! The runtime's one integration-test binary: the harness that runs every registry
//! algorithm on the threads backend against a serial reference, and the tests of
//! failures, point-to-point messages, in-place calls and errors.

mod api;
mod failures;
mod harness;
mod reference;
mod tuning;
mod vcount;
mod vcount_async;

/// Run `f` on a thread that may use at most two CPUs (Linux; elsewhere any), so that
/// three ranks or more outnumber the CPUs on any machine and `Config::fibers` engages
/// (the runtime counts the CPUs the launching thread may use).
pub fn on_two_cpus<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| {
        s.spawn(|| {
            restrict_to_two_cpus();
            f()
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

#[cfg(target_os = "linux")]
fn restrict_to_two_cpus() {
    // SAFETY: `set` is a plain bit set, zeroed, and its size is passed along.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        assert_eq!(libc::sched_getaffinity(0, size, &mut set), 0);
        let mut kept = 0;
        for cpu in 0..libc::CPU_SETSIZE as usize {
            if libc::CPU_ISSET(cpu, &set) {
                if kept == 2 {
                    libc::CPU_CLR(cpu, &mut set);
                } else {
                    kept += 1;
                }
            }
        }
        assert_eq!(libc::sched_setaffinity(0, size, &set), 0);
    }
}

#[cfg(not(target_os = "linux"))]
fn restrict_to_two_cpus() {}

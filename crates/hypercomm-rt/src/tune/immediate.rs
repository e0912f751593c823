//! Measured routes for `Algo::Auto` in an [`crate::immediate::scope`] (issue 20): the
//! backend's own non-blocking collective (MPI's `MPI_Iallreduce`, …) started on the
//! rank's thread, or the blocking call run on a progress thread.
//!
//! Which is faster is the machine's and the library's business, not the model's: on
//! 2 Open MPI 4.1 ranks (2 vCPUs) `MPI_Iallreduce` of 1 MiB took 738 µs from start to
//! wait, a dimension-exchange all-reduce on a progress thread 173 µs (0.235 of it),
//! while up to 32 KiB a progress thread's start (about 40 µs) made the thread path
//! 1.6–5× slower (`hypercomm-mpi osu iallreduce`,
//! `docs/perf-log/2026-11-27-immediate-routes.md`). So, as for blocking calls
//! ([`super`]), the first `Auto` call of a collective key in a scope measures, at every
//! size from 8 B to 4 MiB: native's non-blocking call (start, then wait) against the
//! progress thread running the blocking call's measured pick at that size (native's
//! blocking collective on the thread's duplicate, or a schedule) and, where different,
//! the cost model's best schedule. A thread route is taken only where it measured at
//! most [`MARGIN`] of native's time by the trimmed mean and by the median
//! ([`beats`]), after an all-reduce of the times (their maximum over the ranks), so
//! every rank takes the same routes. The routes are kept in the tuning file beside the
//! blocking picks (`immediate allreduce 8B commutative`: `native`, `thread native`,
//! `thread <schedule>` per size).
//!
//! What is timed is the request's whole life with nothing to overlap (OSU's "pure"
//! time): a route that is slower there but overlaps more is not preferred.
//! The thread route needs MPI initialized with `MPI_THREAD_MULTIPLE`; without it
//! ([`Detach::detachable`], the same on every rank of a job) native is the route, with
//! nothing measured.

use super::*;
use crate::comm::STARTED;
use crate::immediate::Detach;

/// How an `Auto` call in an [`crate::immediate::scope`] runs (the machinery of the
/// sealed [`crate::immediate::RequestScope`], not for use outside the crate).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Route {
    /// The backend's non-blocking collective, started on the rank's thread.
    #[default]
    Native,
    /// The blocking call with this algorithm ([`NATIVE`]: the backend's blocking
    /// collective) on a progress thread.
    Thread(&'static str),
}

/// The tuning file's word for a thread route, before its algorithm.
const THREAD: &str = "thread";

/// The code of [`Route::Thread`] with the backend's blocking collective.
const CODE_THREAD_NATIVE: u16 = u16::MAX - 3;

/// The tuning file's name of a route: `native`, `thread native`, `thread <schedule>`.
fn route_name(r: Route) -> String {
    match r {
        Route::Native => NATIVE.to_string(),
        Route::Thread(name) => format!("{THREAD} {name}"),
    }
}

/// The code of a route's name in the tuning file ([`CODE_NONE`] if it names none).
fn route_code(n: &str, fitting: &[&'static Algorithm]) -> u16 {
    match n.strip_prefix(THREAD).and_then(|n| n.strip_prefix(' ')) {
        None if n == NATIVE => CODE_NATIVE,
        None => CODE_NONE,
        Some(NATIVE) => CODE_THREAD_NATIVE,
        Some(name) => code_of(name, fitting),
    }
}

fn route_of(code: u16, fitting: &[&'static Algorithm]) -> Route {
    match code {
        CODE_THREAD_NATIVE => Route::Thread(NATIVE),
        c => match fitting.get(c as usize) {
            Some(a) => Route::Thread(a.name),
            None => Route::Native,
        },
    }
}

/// One way [`Comm::measure_routes`] times a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// The backend's non-blocking collective, started and waited for.
    Native,
    /// A progress thread running the blocking call with this algorithm.
    Thread(&'static str),
}

/// The route of one size from its slots' agreed times (`slots[0]` native's
/// non-blocking call, the others progress threads): the thread slot of least trimmed
/// mean, if it ran and [`beats`] native (at most [`MARGIN`] of its time by the trimmed
/// mean and by the median, or native refused the call), else native.
fn route_from(slots: &[Slot], times: &[Summary]) -> Route {
    let best = (1..slots.len().min(times.len()))
        .filter(|&i| times[i].trimmed.is_finite())
        .min_by(|&x, &y| times[x].trimmed.total_cmp(&times[y].trimmed));
    match best.map(|i| (slots[i], times[i])) {
        Some((Slot::Thread(name), ours)) if beats(times[0], ours) => Route::Thread(name),
        _ => Route::Native,
    }
}

impl<X: Detach> Comm<X> {
    /// The route of an `Auto` call of `collective` with `len` elements per block in an
    /// [`crate::immediate::scope`] on a backend with collectives of its own: measured
    /// (collectively, once per key and machine) or read from the tuning file, after the
    /// blocking call's picks. [`Route::Native`] without tuning, or where the blocking
    /// call is the model's alone.
    pub(crate) fn immediate_route<T: Pod + Send + Sync>(
        &mut self,
        collective: Collective,
        len: usize,
        op: Option<&Op<'_, T>>,
    ) -> Result<Route> {
        let key = Key::of(collective, op);
        let b = bucket(len.saturating_mul(key.elem_bytes));
        // A loop of calls: the routes found at the first.
        if let Some(routes) = self.tuner.routes.get(&key) {
            return Ok(routes[b]);
        }
        if !self.transport.detachable() || self.pick(collective, len, op)?.is_none() {
            self.tuner.routes.insert(key, [Route::Native; BUCKETS]);
            return Ok(Route::Native);
        }
        let start = Instant::now();
        let name = format!("immediate {}", key.name());
        let fitting = self.selector.fitting(key.kind);
        let saved = self.saved_codes(&name, |n| route_code(n, &fitting))?;
        let path = saved.path.clone();
        let (routes, measured_for) = if saved.codes.iter().all(|&c| c != CODE_NONE) {
            (saved.codes.map(|c| route_of(c, &fitting)), 0.0)
        } else {
            let routes = self.measure_routes(collective, key, op)?;
            saved.save(name.clone(), routes.iter().map(|r| route_name(*r)));
            (routes, start.elapsed().as_secs_f64())
        };
        self.tuner.routes.insert(key, routes);
        self.tuner.reports.push(Tuned {
            key: name,
            picks: routes
                .iter()
                .enumerate()
                .map(|(b, r)| {
                    let shown = match r {
                        Route::Native => "native (non-blocking)",
                        Route::Thread(n) => n,
                    };
                    (bucket_bytes(b), shown)
                })
                .collect(),
            measured_for,
            left_out: Vec::new(),
            file: path,
        });
        Ok(routes[b])
    }

    /// Time native's non-blocking call against the progress-thread slots at every
    /// size; the agreed routes.
    fn measure_routes<T: Pod + Send + Sync>(
        &mut self,
        collective: Collective,
        key: Key,
        op: Option<&Op<'_, T>>,
    ) -> Result<[Route; BUCKETS]> {
        let k = self.size();
        let picks = self.tuner.picks.get(&key).copied();
        // Per size: native, the blocking pick on a thread, the model's best on a thread.
        const WIDE: usize = 3;
        let mut times = vec![f64::INFINITY; BUCKETS * WIDE * 2];
        let mut slots_at: Vec<Vec<Slot>> = Vec::with_capacity(BUCKETS);
        for b in 0..BUCKETS {
            let (bytes, m) = (bucket_bytes(b), key.elems_at(b));
            if !measurable(collective, k, m, key.elem_bytes) {
                slots_at.push(Vec::new());
                continue;
            }
            let mut slots = vec![Slot::Native];
            let blocking = match picks.map(|p| p[b]) {
                Some(Pick::Native) => Some(NATIVE),
                Some(Pick::Named(n)) => Some(n),
                _ => None,
            };
            let model = candidates(&self.selector, key.call(collective, m))
                .first()
                .map(|a| a.name);
            for name in [blocking, model].into_iter().flatten() {
                if !slots.contains(&Slot::Thread(name)) {
                    slots.push(Slot::Thread(name));
                }
            }
            let got = self.time_slots(collective, m, op, &slots, timed_calls(bytes))?;
            for (i, s) in got.iter().enumerate() {
                times[(b * WIDE + i) * 2] = s.trimmed;
                times[(b * WIDE + i) * 2 + 1] = s.median;
            }
            slots_at.push(slots);
        }
        let times = self.agree(&times)?;
        let log = logging() && self.rank() == 0;
        let mut routes = [Route::Native; BUCKETS];
        for (b, slots) in slots_at.iter().enumerate() {
            let at = |i: usize| Summary {
                trimmed: times[(b * WIDE + i) * 2],
                median: times[(b * WIDE + i) * 2 + 1],
            };
            let summaries: Vec<Summary> = (0..slots.len()).map(at).collect();
            routes[b] = route_from(slots, &summaries);
            if log && !slots.is_empty() {
                let names: Vec<String> = slots
                    .iter()
                    .map(|s| match s {
                        Slot::Native => "native non-blocking".to_string(),
                        Slot::Thread(n) => format!("thread {n}"),
                    })
                    .collect();
                let shown: Vec<(&str, f64)> = names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.as_str(), at(i).trimmed))
                    .collect();
                eprintln!("{}", log_line(&key, "immediate", bucket_bytes(b), &shown));
            }
        }
        // A size too large to measure takes the route of the largest measured one.
        for b in 1..BUCKETS {
            if slots_at[b].is_empty() {
                routes[b] = routes[b - 1];
            }
        }
        if log {
            let all: Vec<String> = routes
                .iter()
                .enumerate()
                .map(|(b, r)| format!("{} {}", bucket_bytes(b), route_name(*r)))
                .collect();
            eprintln!(
                "hypercomm tuning: immediate {} routes: {}",
                key.name(),
                all.join(", ")
            );
        }
        Ok(routes)
    }

    /// [`Comm::time_calls`] of `slots` on buffers of `m` elements per block, in blocks.
    fn time_slots<T: Pod + Send + Sync>(
        &mut self,
        collective: Collective,
        m: usize,
        op: Option<&Op<'_, T>>,
        slots: &[Slot],
        iters: u32,
    ) -> Result<Vec<Summary>> {
        let n = slots.len();
        self.time_on_buffers(
            collective,
            m,
            n,
            iters,
            Order::Blocks,
            |comm, s, input, output| {
                match slots[s] {
                    Slot::Native => comm.start_and_wait(collective, input, output, op),
                    // Measured only where threads can start (`Detach::detachable`).
                    Slot::Thread(name) => std::thread::scope(|scope| {
                        comm.spawn_request(scope, move |c| {
                            c.call_once(collective, input, output, op, Algo::Named(name))
                        })?
                        .wait()
                    }),
                }
            },
        )
    }

    /// One call of the backend's non-blocking collective, started as an
    /// `immediate::scope` starts it and waited for at once.
    fn start_and_wait<T: Pod>(
        &mut self,
        collective: Collective,
        input: &[T],
        output: &mut [T],
        op: Option<&Op<'_, T>>,
    ) -> Result<()> {
        self.starting = true;
        let done = self.call_once(collective, input, output, op, Algo::Named(NATIVE));
        self.starting = false;
        let started = STARTED.with_borrow_mut(Option::take);
        done?;
        match started {
            Some(mut s) => s.request.wait(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_the_route_only_where_it_beats_native_by_both_statistics() {
        let t = |trimmed: f64, median: f64| Summary { trimmed, median };
        let slots = [Slot::Native, Slot::Thread(NATIVE), Slot::Thread("ring")];
        let route = |times: [Summary; 3]| route_from(&slots, &times);
        // Ring is fastest and at most MARGIN of native both ways.
        let native = t(100.0, 100.0);
        assert_eq!(
            route([native, t(80.0, 80.0), t(60.0, 60.0)]),
            Route::Thread("ring")
        );
        // The faster thread by the trimmed mean, though both win.
        assert_eq!(
            route([native, t(60.0, 60.0), t(80.0, 80.0)]),
            Route::Thread(NATIVE)
        );
        // Above MARGIN of native by the median: native.
        assert_eq!(route([native, t(99.0, 99.0), t(90.0, 96.0)]), Route::Native);
        // Slower: native.
        assert_eq!(
            route([native, t(150.0, 150.0), t(120.0, 110.0)]),
            Route::Native
        );
        // A thread slot that refused the call is never the route, even beside a
        // native call that refused too.
        let refused = t(f64::INFINITY, f64::INFINITY);
        assert_eq!(route([refused, refused, refused]), Route::Native);
        assert_eq!(
            route([native, refused, t(50.0, 50.0)]),
            Route::Thread("ring")
        );
        // Native refused, a thread ran: the thread.
        assert_eq!(
            route([refused, t(70.0, 70.0), refused]),
            Route::Thread(NATIVE)
        );
        // A size not measured (no slots): native.
        assert_eq!(route_from(&[], &[]), Route::Native);
    }

    #[test]
    fn a_route_reads_back_as_written() {
        let machine = hypercomm::topology::Topology::complete(4);
        let fitting = hypercomm::algorithms::fitting(&machine, OpKind::Allreduce);
        let ring = fitting.iter().position(|a| a.name == "ring").unwrap() as u16;
        for (route, code) in [
            (Route::Native, CODE_NATIVE),
            (Route::Thread(NATIVE), CODE_THREAD_NATIVE),
            (Route::Thread("ring"), ring),
        ] {
            let name = route_name(route);
            assert_eq!(route_code(&name, &fitting), code, "{name}");
            if code != CODE_NATIVE {
                assert_eq!(route_of(code, &fitting), route, "{name}");
            }
        }
        assert_eq!(route_name(Route::Thread("ring")), "thread ring");
        for unknown in ["thread", "thread nonesuch", "threadring", "ring"] {
            assert_eq!(route_code(unknown, &fitting), CODE_NONE, "{unknown}");
        }
    }
}

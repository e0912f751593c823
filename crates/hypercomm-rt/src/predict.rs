//! The one prediction of a collective call's time: what `Algo::Auto` ranks the
//! algorithms by ([`crate::select`], and the candidates [`crate::tune`] measures), and
//! what `hypercomm bench`, `run` and `hypercomm-mpi vs-native` print as `pred µs`. Both
//! call [`predict_schedule`], so `auto` never picks what its own prediction calls
//! slower (issue 20).
//!
//! The prediction is the papers' rounds model (Saad & Schultz 1985, eq. (1.1): a message
//! of m elements costs β + mτ; single-port and full duplex as in Dimakopoulos &
//! Dimopoulos §1: a rank's step costs the larger of its sends' and its receives' sums,
//! a round the largest over the ranks), with four things the papers do not price:
//! - each message at the (β, τ) of its size's band ([`Calibration::at`]), when the
//!   calibration has bands (with none it is the one line, and the time is
//!   [`hypercomm::cost::simulate`]'s exactly), and a message of data its sender wrote
//!   earlier in the call at the calibration's `fresh` bands ([`fresh_sends`],
//!   [`Calibration::fresh_at`]);
//! - the schedule's local copies, per byte on the rank that copies the most: below p*,
//!   the size whose message moves a byte fastest, that least time per byte; from p* on
//!   the τ of their size's band; at most a message's time per byte ([`Price::local`]);
//! - a floor under every copy's time per byte, from the bytes the call's ranks hold
//!   ([`held_bytes`], [`Calibration::copy_floor`]; across hosts, one host's share):
//!   beyond the caches, every byte comes from memory whatever the message's size;
//! - what the backend does ([`Execution`]): a large message copied by two cores, ranks
//!   sharing a CPU taking turns, a message between two fibers of one CPU at the
//!   calibration's `same-cpu` bands ([`Calibration::same_cpu_at`]), and a message
//!   between two hosts of an MPI job at its `network` bands
//!   ([`Calibration::network_at`]).

use hypercomm::algorithms::{Algorithm, Packets, Params, Shape};
use hypercomm::collective::Collective;
use hypercomm::cost::model::LinkCost;
use hypercomm::counts::Counts;
use hypercomm::schedule::{Op as IrOp, Program, Rank, Schedule, Step};
use hypercomm::verify::Problem;

use crate::select::Calibration;
use crate::threads::block;

/// What a backend does that the papers' model does not price, for [`predict_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Execution {
    /// Messages of at least this many bytes that the receiver and its idle sender copy
    /// together (`hypercomm_rt::threads::SHARED_COPY_FROM`): the threads backend, with a
    /// CPU per rank ([`shared_copy_programs`]) or as fibers (a sender whose CPU has
    /// nothing to receive in the step, [`cpu_shared_time`]).
    pub shared_copy_from: Option<u64>,
    /// Whether a combining receive (a reduction's) lands in a buffer of the transport
    /// and is combined into place after: one more pass over its bytes, priced at τ per
    /// byte on the receiver (the MPI backend; the threads backend combines as it copies
    /// out of the sender's memory, in the one pass the message is priced for).
    pub combine_pass: bool,
    /// The CPUs the ranks run on, when fewer than the ranks: rank r on CPU ⌊r·n/k⌋ (the
    /// threads backend's blocks), and ranks that share a CPU run their steps one after
    /// another ([`cpu_shared_time`]).
    pub cpus: Option<usize>,
    /// Whether the ranks that share a CPU ([`Execution::cpus`]) run as fibers of one
    /// thread (`hypercomm_rt::threads::Config::fibers`): a message between two of them
    /// is a copy within that CPU's caches, priced at the calibration's `same-cpu` bands
    /// where it has them ([`Calibration::same_cpu_at`]).
    pub fibers: bool,
    /// When the ranks span hosts: how many share each, in consecutive blocks (ranks
    /// 0..n on the first host, n..2n on the next; the MPI backend's
    /// `hypercomm_mpi::ranks_per_host`). A message between two hosts is priced at the
    /// calibration's `network` bands where it has them ([`Calibration::network_at`]),
    /// and the call's floor counts the bytes one host holds, not all of them
    /// ([`Calibration::copy_floor`]). `None`: every rank on one machine.
    pub ranks_per_host: Option<u32>,
}

/// Where rank `r`'s data sits in `out` for the in-place form of `c` with `m` elements
/// per block: its own block for an all-gather, the start otherwise.
pub fn in_place_offset(c: Collective, r: Rank, m: usize) -> usize {
    match c {
        Collective::Allgather => r as usize * m,
        _ => 0,
    }
}

/// The predicted time (seconds) of `algo` for `c` on `k` ranks with `len` elements of
/// `elem_bytes` bytes, under `calibration`, of the schedule built with `packets`
/// (`Algo::Auto` builds with [`Packets::Opt`]) and `shape`; `None` if the schedule does
/// not build. [`predict_with`] with no counts.
#[allow(clippy::too_many_arguments)]
pub fn predict(
    c: Collective,
    k: u32,
    len: u64,
    elem_bytes: usize,
    algo: &Algorithm,
    packets: Packets,
    shape: Option<&Shape>,
    calibration: Calibration,
    in_place: bool,
    execution: Execution,
) -> Option<f64> {
    let call = (c, k, len, None);
    predict_with(
        call,
        elem_bytes,
        algo,
        packets,
        shape,
        calibration,
        in_place,
        execution,
    )
}

/// [`predict`] of a call `(collective, ranks, len, counts)` with the counts of a
/// variable-count collective: the schedule built on [`crate::topology_for`]'s machine,
/// then [`predict_schedule`].
#[allow(clippy::too_many_arguments)]
pub fn predict_with(
    (c, k, len, counts): (Collective, u32, u64, Option<&Counts>),
    elem_bytes: usize,
    algo: &Algorithm,
    packets: Packets,
    shape: Option<&Shape>,
    calibration: Calibration,
    in_place: bool,
    execution: Execution,
) -> Option<f64> {
    let schedule = build_for(
        (c, k, len, counts),
        elem_bytes,
        algo,
        packets,
        shape,
        calibration,
    )?;
    let form = Form {
        collective: c,
        len,
        elem_bytes,
        in_place,
    };
    Some(predict_schedule(
        schedule.as_ref(),
        form,
        calibration,
        execution,
    ))
}

/// The schedule `algo` builds for the call under `calibration`'s model (as `Algo::Auto`
/// and a named call build it), `None` where it does not build.
fn build_for(
    (c, k, len, counts): (Collective, u32, u64, Option<&Counts>),
    elem_bytes: usize,
    algo: &Algorithm,
    packets: Packets,
    shape: Option<&Shape>,
    calibration: Calibration,
) -> Option<Box<dyn Schedule>> {
    let topology = crate::topology_for(c.kind(), k)?;
    let problem = Problem {
        topology: &topology,
        collective: c,
        len,
        commutative: true,
        counts,
    };
    let model = calibration.model(elem_bytes);
    let params = Params { packets, model };
    match shape {
        Some(shape) => algo.build_shaped(&problem, &params, shape),
        None => algo.build(&problem, &params),
    }
    .ok()
}

/// A digest of the schedule `algo` builds for the call, as [`predict_with`] builds it
/// (the same problem, model and packets): every rank's program, in rank order, hashed
/// (deterministically: the same in every process of one build). Two algorithms with one
/// digest send the same messages from the same places in the same steps at that size
/// (on 2^n ranks `recursive-doubling` and `dimension-exchange` all-reduces are one
/// schedule; on 2 ranks most all-to-alls are one exchange), so a benchmark telling
/// them apart measures noise; `bench` prints it (`schedule`). `None` where the schedule
/// does not build.
pub fn schedule_digest(
    call: (Collective, u32, u64, Option<&Counts>),
    elem_bytes: usize,
    algo: &Algorithm,
    packets: Packets,
    shape: Option<&Shape>,
    calibration: Calibration,
) -> Option<u64> {
    let schedule = build_for(call, elem_bytes, algo, packets, shape, calibration)?;
    Some(digest(schedule.as_ref()))
}

/// The digest of a built schedule, as [`schedule_digest`] takes it: every rank's
/// program, in rank order, hashed. Tuning screens one algorithm of each digest
/// ([`crate::select`]'s ranking: two of one schedule time alike but for noise).
pub fn digest(schedule: &dyn Schedule) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    let mut program = Program::default();
    for r in 0..schedule.nodes() {
        schedule.program_into(r, &mut program);
        program.hash(&mut h);
    }
    h.finish()
}

/// What a call is, beside its schedule, for [`predict_schedule`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Form {
    /// The collective (a broadcast always runs in place).
    pub collective: Collective,
    /// Elements per block.
    pub len: u64,
    /// Bytes per element.
    pub elem_bytes: usize,
    /// Whether `in` lies in `out` at [`in_place_offset`].
    pub in_place: bool,
}

/// The predicted time (seconds) of `schedule`, the one function behind `auto`'s ranking
/// and `bench`'s `pred µs`. The schedule's machine is the runtime's (`complete:k`, or a
/// download's hosted cube), every link priced alike.
///
/// The papers' model, and so the simulator, prices messages only. On a runtime a local
/// copy (an all-gather's own block from `in` to `out`, MTADEA's final transpose) costs
/// what a received byte does (on the threads backend both are one `memcpy`), so the
/// prediction adds the local bytes of the rank with the most, priced per byte as
/// [`Price::local`] has it (below p* the least time per byte of any message, from p* on
/// the τ of their size's band; at most a message's time per byte, at least the call's
/// floor): at 16 MiB on 2 ranks the all-gather's own-block copy is as long
/// as its one exchange. With `in_place` (always for a broadcast, which the API runs in
/// place) `in` lies in `out` at [`in_place_offset`], and a local copy onto itself (the
/// all-gather's own block, a broadcast root's) costs nothing, as the runtime skips it.
///
/// `execution` says what else the backend does ([`Execution`]): copies shared by two
/// cores, ranks sharing CPUs, ranks on several hosts.
pub fn predict_schedule(
    schedule: &dyn Schedule,
    form: Form,
    calibration: Calibration,
    execution: Execution,
) -> f64 {
    let Form {
        collective: c,
        len,
        elem_bytes,
        in_place,
    } = form;
    let k = schedule.nodes();
    // A broadcast always runs in place (`broadcast_into` takes one buffer).
    let in_place = in_place || matches!(c, Collective::Broadcast { .. });
    let alias = |r: Rank| in_place.then(|| in_place_offset(c, r, len as usize) as u64);
    let mut price = Price::new(calibration, elem_bytes).with_fresh(schedule, alias);
    price.combine_pass = execution.combine_pass;
    let local = local_elements_by_rank(schedule, alias);
    // Ranks in blocks of `n` per host, when the job spans hosts.
    let per_host = execution.ranks_per_host.filter(|&n| n > 0 && n < k);
    if let Some(n) = per_host {
        price = price.with_hosts(n);
    }
    if !calibration.bands.is_empty() {
        let held = held_bytes(schedule, alias, elem_bytes);
        // What one host holds: its share of the ranks' bytes.
        let held = match per_host {
            Some(n) => (held as u128 * u128::from(n) / u128::from(k)) as u64,
            None => held,
        };
        price.floor = calibration.copy_floor(held);
    }
    if let (Some(n), true) = (execution.cpus, execution.fibers) {
        price = price.with_fibers(n, k);
        if price.fibers.is_some() {
            // The same-CPU calibration's CPU holds its pair's four buffers: warm at
            // 4 × `warm` bytes, cold at 4 × 2 `warm` (the next size it measured); a
            // call is priced cold beyond that (a 4-rank broadcast holding just that
            // much ran at its warm price: docs/perf-log/2026-11-27-fibers-prediction.md).
            let warm = calibration.same_cpu_warm_bytes();
            if warm > 0 {
                let most = cpu_bytes(schedule, alias, elem_bytes, n).into_iter().max();
                let most = most.unwrap_or(0);
                if most > warm.saturating_mul(8) {
                    price.held = most;
                } else {
                    price.warm_same_cpu = Some(warm);
                }
            }
        }
    }
    let t = match (execution.shared_copy_from, execution.cpus) {
        (_, Some(n)) if n > 0 && (n as u64) < u64::from(k) => {
            let helped = execution.shared_copy_from.filter(|_| execution.fibers);
            let messages = cpu_shared_time(schedule, &price, n, helped);
            let mut per_cpu = vec![0u64; n];
            for (r, l) in local.iter().enumerate() {
                per_cpu[block(r as Rank, n, k)] += l;
            }
            messages + price.local(per_cpu.into_iter().max().unwrap_or(0))
        }
        (shared, _) => {
            let messages = match shared {
                Some(from) => {
                    let mut rounds = Rounds::new(schedule.steps(), &price);
                    shared_copy_programs(schedule, elem_bytes, from, |bytes| {
                        calibration.shared_copy_share(bytes)
                    })
                    .iter()
                    .for_each(|p| rounds.add(p));
                    rounds.time()
                }
                None => {
                    // One program at a time, each written over the last.
                    let mut rounds = Rounds::new(schedule.steps(), &price);
                    let mut program = Program::default();
                    for r in 0..k {
                        schedule.program_into(r, &mut program);
                        rounds.add(&program);
                    }
                    rounds.time()
                }
            };
            messages + price.local(local.iter().copied().max().unwrap_or(0))
        }
    };
    if t == 0.0 {
        0.0
    } else {
        t
    }
}

/// What a message costs under a calibration, for elements of one size.
#[derive(Clone, Debug)]
pub struct Price {
    /// The one line, per element (as [`Calibration::model`] has it).
    line: LinkCost,
    calibration: Calibration,
    elem_bytes: u64,
    /// Which (step, sender) sends data the sender wrote earlier in the call
    /// ([`fresh_sends`]); empty when the calibration prices fresh data as any other.
    fresh: Vec<bool>,
    /// The ranks of the schedule `fresh` describes.
    ranks: usize,
    /// A combining receive costs one more pass over its bytes ([`Execution::combine_pass`]).
    combine_pass: bool,
    /// (CPUs, ranks) when ranks share CPUs as fibers and the calibration prices a
    /// message between two of one CPU ([`Price::with_fibers`]).
    fibers: Option<(usize, Rank)>,
    /// The bytes the fullest CPU holds in the call ([`cpu_bytes`]) when more than stay
    /// in its caches ([`Calibration::same_cpu_warm_bytes`]), else 0: then a message of
    /// n bytes of the call's input between two CPUs is priced as fresh data when that
    /// is more than the 3n its calibration's CPU held (its two buffers and the one it
    /// read), as its receiver's cache no longer holds it.
    held: u64,
    /// [`Calibration::same_cpu_warm_bytes`] when the call's data stay in its CPUs'
    /// caches: a larger message between two fibers of one CPU is priced on the band of
    /// this size (beyond it the calibration's pairs outgrew the caches, the call's do
    /// not).
    warm_same_cpu: Option<u64>,
    /// The least seconds per byte of any copy in the call, from the bytes its ranks
    /// hold ([`Calibration::copy_floor`]); 0 when they stay in the caches.
    floor: f64,
    /// p*, the size whose message moves a byte fastest (0 without bands), and
    /// [`Calibration::least_per_byte`], the price of a byte of a local copy below it.
    least_per_byte: (u64, f64),
    /// Ranks per host when the job spans hosts and the calibration prices a message
    /// between two ([`Price::with_hosts`]).
    per_host: Option<Rank>,
}

impl Price {
    /// The prices of `calibration` for elements of `elem_bytes` bytes, every message
    /// priced as data its receiver read at the previous call.
    pub fn new(calibration: Calibration, elem_bytes: usize) -> Self {
        Price {
            line: calibration.model(elem_bytes).net,
            least_per_byte: (
                calibration.fastest_size().map_or(0, |(p, _)| p),
                calibration.least_per_byte(),
            ),
            calibration,
            elem_bytes: elem_bytes as u64,
            fresh: Vec::new(),
            ranks: 0,
            combine_pass: false,
            fibers: None,
            held: 0,
            warm_same_cpu: None,
            floor: 0.0,
            per_host: None,
        }
    }

    /// These prices with the ranks on hosts in consecutive blocks of `n`: a message
    /// between two hosts at the calibration's `network` bands
    /// ([`Calibration::network_at`]), whatever its data. Nothing changes when the
    /// calibration has no such bands.
    pub fn with_hosts(mut self, n: Rank) -> Self {
        if !self.calibration.network.is_empty() && n > 0 {
            self.per_host = Some(n);
        }
        self
    }

    /// These prices with `k` ranks run as fibers on `n` CPUs in blocks
    /// ([`block`]): a message between two ranks of one CPU at the calibration's
    /// `same-cpu` bands ([`Calibration::same_cpu_at`]), whatever its data (the
    /// sender's writes are in the same CPU's caches). Nothing changes when the
    /// calibration has no such bands.
    pub fn with_fibers(mut self, n: usize, k: Rank) -> Self {
        if !self.calibration.same_cpu.is_empty() && n > 0 {
            self.fibers = Some((n, k));
        }
        self
    }

    /// These prices for `schedule`'s messages: those whose data the sender wrote
    /// earlier in the call at the calibration's fresh bands ([`Calibration::fresh_at`];
    /// [`fresh_sends`] tells them, `alias` as in [`local_elements`]). Nothing changes
    /// when the calibration has no fresh bands.
    pub fn with_fresh(
        mut self,
        schedule: &dyn Schedule,
        alias: impl Fn(Rank) -> Option<u64>,
    ) -> Self {
        if !self.calibration.fresh.is_empty() {
            self.ranks = schedule.nodes() as usize;
            self.fresh = fresh_sends(schedule, alias);
        }
        self
    }

    /// Whether `sender`'s messages of step `step` carry data it wrote in the call.
    fn is_fresh(&self, step: usize, sender: Rank) -> bool {
        let i = step * self.ranks + sender as usize;
        self.fresh.get(i).copied().unwrap_or(false)
    }

    /// Seconds for a message of `elems` elements: β + mτ of its size's band, or of the
    /// one line (then in the simulator's own floating-point operations,
    /// [`LinkCost::transfer`]).
    pub fn message(&self, elems: u64) -> f64 {
        if self.calibration.bands.is_empty() {
            return self.line.transfer(elems);
        }
        let bytes = elems.saturating_mul(self.elem_bytes);
        let (beta, tau) = self.calibration.at(bytes);
        beta + bytes as f64 * tau
    }

    /// [`Price::message`] of `sender`'s message to `receiver` in step `step`: at the
    /// network bands if they are on two hosts ([`Price::with_hosts`]), at the same-CPU
    /// bands if both run as fibers of one CPU ([`Price::with_fibers`]), else at the
    /// fresh bands if the sender wrote its data earlier in the call.
    fn message_of(&self, elems: u64, step: usize, sender: Rank, receiver: Rank) -> f64 {
        let bytes = elems.saturating_mul(self.elem_bytes);
        let t = self.priced(elems, step, sender, receiver);
        t.max(bytes as f64 * self.floor)
    }

    /// [`Price::message_of`] before the call's floor.
    fn priced(&self, elems: u64, step: usize, sender: Rank, receiver: Rank) -> f64 {
        let bytes = elems.saturating_mul(self.elem_bytes);
        if self.per_host.is_some_and(|n| sender / n != receiver / n) {
            if let Some((beta, tau)) = self.calibration.network_at(bytes) {
                return beta + bytes as f64 * tau;
            }
        }
        let within = self
            .fibers
            .is_some_and(|(n, k)| block(sender, n, k) == block(receiver, n, k));
        match (within, self.warm_same_cpu) {
            // A warm call's message larger than the calibration's warm pairs': at
            // their time per byte at that size.
            (true, Some(warm)) if bytes > warm => {
                if let Some((beta, tau)) = self.calibration.same_cpu_at(warm) {
                    return (beta + warm as f64 * tau) / warm as f64 * bytes as f64;
                }
            }
            (true, _) => {
                if let Some((beta, tau)) = self.calibration.same_cpu_at(bytes) {
                    return beta + bytes as f64 * tau;
                }
            }
            (false, _) => {}
        }
        let cold = self.held > bytes.saturating_mul(3);
        if !cold && !self.is_fresh(step, sender) {
            return self.message(elems);
        }
        let (beta, tau) = self.calibration.fresh_at(bytes);
        beta + bytes as f64 * tau
    }

    /// Seconds for copying `elems` elements locally, per byte: below p*, the size whose
    /// message moves a byte fastest, that least time per byte
    /// ([`Calibration::least_per_byte`]: a copy of data in the caches moves its bytes at
    /// least that fast); from p* on, τ of their size's band (messages and copies slow
    /// down together as the data leave the caches); either no more than a message of
    /// their size took per byte, and no less than the call's floor
    /// ([`Calibration::copy_floor`]: beyond the caches, memory's speed). Below p* a
    /// band's slope is no copy speed: 1.3e-9 s/B at 512 B on the threads backend, and on
    /// 2 MPI ranks 3.6e-10 at 512 B–4 KiB, which priced Bruck's two local copies of a
    /// 1 KiB all-gather at 1.1 µs (it measured 1.0 µs in all, message included).
    pub fn local(&self, elems: u64) -> f64 {
        if self.calibration.bands.is_empty() {
            return elems as f64 * (self.elem_bytes as f64 * self.calibration.tau);
        }
        let bytes = elems.saturating_mul(self.elem_bytes);
        if bytes == 0 {
            return 0.0;
        }
        let (beta, tau) = self.calibration.at(bytes);
        let (p, least) = self.least_per_byte;
        let slope = if bytes < p { least } else { tau };
        let per_byte = slope.min((beta + tau * bytes as f64) / bytes as f64);
        bytes as f64 * per_byte.max(self.floor)
    }
}

/// The time of one rank's step on its own: its sends one after another, its receives
/// one after another, both at once (single-port, full duplex: what the simulator's
/// rounds charge a node under `ports = one`).
fn sides(step: &Step, price: &Price, s: usize, rank: Rank) -> (f64, f64) {
    let (mut send, mut recv) = (0.0f64, 0.0f64);
    for op in &step.ops {
        match op {
            IrOp::Send { to, .. } => {
                for &receiver in to {
                    send += price.message_of(op.message_len(), s, rank, receiver);
                }
            }
            IrOp::Recv { from, action, .. } => {
                let len = op.message_len();
                recv += price.message_of(len, s, *from, rank);
                if price.combine_pass && *action != hypercomm::schedule::Action::Place {
                    recv += price.local(len);
                }
            }
            IrOp::Local { .. } => {}
        }
    }
    (send, recv)
}

/// The rounds time of programs added one at a time: Σ over steps of the largest
/// rank's step time.
struct Rounds<'p> {
    round: Vec<f64>,
    price: &'p Price,
}

impl<'p> Rounds<'p> {
    fn new(steps: usize, price: &'p Price) -> Self {
        Rounds {
            round: vec![0.0; steps],
            price,
        }
    }

    fn add(&mut self, program: &Program) {
        for (s, (round, step)) in self.round.iter_mut().zip(&program.steps).enumerate() {
            let (send, recv) = sides(step, self.price, s, program.rank);
            *round = round.max(send.max(recv));
        }
    }

    fn time(&self) -> f64 {
        self.round.iter().sum()
    }
}

/// The rounds timing of `schedule` when its k ranks share `n` < k CPUs in blocks
/// (`hypercomm_rt::threads::block`: rank r on CPU ⌊r·n/k⌋). A CPU runs its ranks one
/// after another (one thread runs them as fibers, or the scheduler time-slices their
/// threads), and the work of a message is its receiver's copy (the threads backend's
/// receiver copies straight from the sender's memory while the sender waits, handing
/// its CPU on): so a round costs the largest, over the CPUs, of the sum of its ranks'
/// receive-side times, where the papers' rounds take the largest over the ranks of
/// max(send side, receive side). The two agree when every rank sends what it receives
/// in each step (rings, exchanges). A CPU that runs more than one rank also spends the
/// calibration's [`Calibration::switch`] on each of its ranks that sends or receives in
/// the step (the system's switch to it and its turn at polling; 0 but where measured, on
/// MPI jobs with more ranks than CPUs). With `shared_from` (fibers: a waiting sender helps
/// copy, `Shared::help` in `threads`), a message of at least that many bytes, one piece
/// placed into one part, whose sender sends nothing else in the step and whose sender's
/// CPU receives nothing in it, is copied by both CPUs: each CPU's work is the price of
/// the calibration's share of the message ([`Calibration::shared_copy_share`], ½ when
/// not measured; a 4-rank binomial broadcast's first step, from 1 MiB, measured
/// 0.61–0.69 of the prediction without this). Not counted: an eager message's copy by
/// its sender (small messages). Ranks are generated one at a time
/// ([`Schedule::program_into`]), so memory is steps × n plus the large messages, not the
/// whole schedule.
pub fn cpu_shared_time(
    schedule: &dyn Schedule,
    price: &Price,
    n: usize,
    shared_from: Option<u64>,
) -> f64 {
    use hypercomm::schedule::Action;
    use std::collections::HashSet;
    let (k, n) = (schedule.nodes(), n.max(1));
    let mut work = vec![0.0f64; schedule.steps() * n];
    // A CPU's turn to each of its ranks active in a step, where it runs more than one.
    let mut ranks_of = vec![0u32; n];
    for r in 0..k {
        ranks_of[block(r, n, k)] += 1;
    }
    // Whether a CPU's ranks receive anything in a step.
    let mut receives = vec![false; schedule.steps() * n];
    // Messages of at least `shared_from` bytes, one piece placed into one part, between
    // two CPUs: (step, sender, receiver, elements); and the (step, sender, receiver) of
    // the senders that send only that one piece in their step.
    let mut large: Vec<(usize, Rank, Rank, u64)> = Vec::new();
    let mut sole: HashSet<(usize, Rank, Rank)> = HashSet::new();
    let mut program = Program::default();
    for r in 0..k {
        schedule.program_into(r, &mut program);
        let cpu = block(r, n, k);
        for (s, step) in program.steps.iter().enumerate() {
            work[s * n + cpu] += sides(step, price, s, r).1;
            if !step.ops.is_empty() && ranks_of[cpu] > 1 {
                work[s * n + cpu] += price.calibration.switch;
            }
            receives[s * n + cpu] |= step.ops.iter().any(|op| matches!(op, IrOp::Recv { .. }));
            let Some(from) = shared_from else { continue };
            if let Some((to, _)) = sole_piece_send(step) {
                sole.insert((s, r, to));
            }
            for op in &step.ops {
                if let IrOp::Recv {
                    from: q,
                    into,
                    action,
                } = op
                {
                    let bytes = op.message_len().saturating_mul(price.elem_bytes);
                    if *action == Action::Place
                        && one_piece(into)
                        && block(*q, n, k) != cpu
                        && bytes >= from
                    {
                        large.push((s, *q, r, op.message_len()));
                    }
                }
            }
        }
    }
    // A sender whose CPU receives nothing in the step copies its message with its
    // receiver: each CPU is charged the calibration's share of it.
    for (s, q, r, elems) in large {
        let (a, b) = (block(q, n, k), block(r, n, k));
        if !receives[s * n + a] && sole.contains(&(s, q, r)) {
            let whole = price.message_of(elems, s, q, r);
            let bytes = elems.saturating_mul(price.elem_bytes);
            let share = price.calibration.shared_copy_share(bytes);
            let part = price.message_of(shared_part(elems, share), s, q, r);
            work[s * n + b] -= whole - part;
            work[s * n + a] += part;
        }
    }
    work.chunks(n)
        .map(|cpus| cpus.iter().copied().fold(0.0, f64::max))
        .sum()
}

/// The elements of a shared copy of `elems` each end is priced at, for the share
/// `share` ([`Calibration::shared_copy_share`], held to [`crate::select::MIN_SHARED_COPY`]–1):
/// rounded up, at least one of a non-empty message.
fn shared_part(elems: u64, share: f64) -> u64 {
    let share = if share.is_finite() { share } else { 0.5 };
    let share = share.clamp(crate::select::MIN_SHARED_COPY, 1.0);
    ((elems as f64 * share).ceil() as u64).clamp(elems.min(1), elems)
}

/// Whether `regions` is one contiguous piece.
fn one_piece(regions: &hypercomm::schedule::Regions) -> bool {
    regions.len() == 1 && regions[0].count == 1
}

/// The receiver and length (elements) of a step's send when it is the step's only send,
/// to one receiver, from one contiguous region ([`one_piece`]): what a sender can help
/// copy ([`shared_copy_programs`], [`cpu_shared_time`]).
fn sole_piece_send(step: &Step) -> Option<(Rank, u64)> {
    let mut sends = step.ops.iter().filter_map(|op| match op {
        IrOp::Send { to, from } => Some((to, from)),
        _ => None,
    });
    match (sends.next(), sends.next()) {
        (Some((to, regions)), None) if to.len() == 1 && one_piece(regions) => {
            Some((to[0], regions[0].len))
        }
        _ => None,
    }
}

/// The programs of `schedule`, with every message that the threads backend copies on
/// two cores cut to `share(bytes)` of its length at both ends (½ for an even split; the
/// calibration's measured share at the message's size:
/// [`Calibration::shared_copy_share`]), so that the papers' model prices it at
/// `β + (share · m)τ`.
///
/// The threads backend (`hypercomm_rt::threads`, its module documentation) lets a
/// receiver hand half of a rendezvous of at least `from` bytes, one contiguous piece into
/// one contiguous part, to its sender, which copies it while it waits for its send to be
/// taken. The sender only helps if it is idle, so a message is halved here when, in its
/// step, its sender receives nothing and sends nothing else, both ends are one
/// contiguous region (`count == 1`), and the receive places the data (a combining
/// receive, `CombineLeft`/`CombineRight`, runs on the receiver alone); and only if every
/// rank has a CPU, which the caller decides (`None` for `from` in [`predict`]). Steps in
/// which every rank also receives (a ring's, Bruck's, a dimension exchange's) are priced
/// as before; one-way steps (a broadcast's, SBA's) are halved.
pub fn shared_copy_programs(
    schedule: &dyn hypercomm::schedule::Schedule,
    elem_bytes: usize,
    from: u64,
    share: impl Fn(u64) -> f64,
) -> Vec<hypercomm::schedule::Program> {
    use hypercomm::schedule::{Action, Op as IrOp};
    use std::collections::HashSet;
    let mut programs: Vec<_> = (0..schedule.nodes()).map(|r| schedule.program(r)).collect();
    let large = |elems: u64| elems.saturating_mul(elem_bytes as u64) >= from;
    let part = |elems: u64| shared_part(elems, share(elems.saturating_mul(elem_bytes as u64)));
    // (step, sender, receiver) of the messages whose sender is idle but for them.
    let mut idle: HashSet<(usize, Rank, Rank)> = HashSet::new();
    for p in &programs {
        for (s, step) in p.steps.iter().enumerate() {
            let receives = step.ops.iter().any(|op| matches!(op, IrOp::Recv { .. }));
            if let Some((to, len)) = sole_piece_send(step) {
                if !receives && large(len) {
                    idle.insert((s, p.rank, to));
                }
            }
        }
    }
    // The receivers that take such a message as one piece: halve both ends.
    let mut shared: HashSet<(usize, Rank, Rank)> = HashSet::new();
    for p in &mut programs {
        for (s, step) in p.steps.iter_mut().enumerate() {
            for op in &mut step.ops {
                if let IrOp::Recv { from, into, action } = op {
                    let placed = *action == Action::Place;
                    if placed && one_piece(into) && idle.contains(&(s, *from, p.rank)) {
                        into[0].len = part(into[0].len);
                        shared.insert((s, *from, p.rank));
                    }
                }
            }
        }
    }
    for p in &mut programs {
        for (s, step) in p.steps.iter_mut().enumerate() {
            for op in &mut step.ops {
                if let IrOp::Send { to, from } = op {
                    if to.len() == 1 && shared.contains(&(s, p.rank, to[0])) {
                        from[0].len = part(from[0].len);
                    }
                }
            }
        }
    }
    programs
}

/// Which ranks send, in which steps, data they wrote earlier in the call: entry
/// `step · k + rank` is true when one of the rank's sends of that step reads a region
/// that a receive or a local copy of an earlier step wrote (`alias` as in
/// [`local_elements`]: an in-place rank's `in` lies in its `out`). Every other send reads
/// the call's input, which a repeated call's receivers read at the previous call.
///
/// Why it matters (beyond the seeds, whose message costs β + mτ whatever its data): a
/// receiver copies a fresh message's lines out of its sender's cache, the input's out of
/// its own, and from 16 KiB to 256 KiB the first is 2.5–3× the second on threads and on
/// Open MPI ([`Calibration::fresh_at`]). The written regions are tracked as spans per
/// buffer, at most [`SPANS`] per rank (beyond, merged into one span per buffer, which
/// only makes more sends fresh), so the cost is O(ops · [`SPANS`]) per rank.
pub fn fresh_sends(schedule: &dyn Schedule, alias: impl Fn(Rank) -> Option<u64>) -> Vec<bool> {
    use hypercomm::schedule::{Action, Buf, Region};
    let (k, steps) = (schedule.nodes() as usize, schedule.steps());
    let mut fresh = vec![false; steps * k];
    let mut program = Program::default();
    let mut written: Vec<(Buf, u64, u64)> = Vec::new();
    for r in 0..k {
        schedule.program_into(r as Rank, &mut program);
        let off = alias(r as Rank);
        // The span a region covers, its buffer as aliased.
        let span = |g: &Region| -> (Buf, u64, u64) {
            let seg = g.len / g.count.max(1);
            let (buf, start) = match (g.buf, off) {
                (Buf::In, Some(at)) => (Buf::Out, g.off + at),
                (b, _) => (b, g.off),
            };
            let end = start + g.stride * g.count.saturating_sub(1) + seg;
            (buf, start, end)
        };
        written.clear();
        for (s, step) in program.steps.iter().enumerate().take(steps) {
            let reads_written = step.ops.iter().any(|op| match op {
                IrOp::Send { from, .. } => from.iter().any(|g| {
                    let (b, lo, hi) = span(g);
                    lo < hi && written.iter().any(|&(w, a, z)| w == b && a < hi && lo < z)
                }),
                _ => false,
            });
            fresh[s * k + r] = reads_written;
            for op in &step.ops {
                let into: &[Region] = match op {
                    IrOp::Recv { into, .. } => into,
                    // A copy onto itself (in place) writes nothing: the runtime skips it.
                    IrOp::Local { from, into, action }
                        if !(*action == Action::Place && span(from) == span(into)) =>
                    {
                        std::slice::from_ref(into)
                    }
                    IrOp::Local { .. } | IrOp::Send { .. } => &[],
                };
                written.extend(into.iter().map(span).filter(|&(_, lo, hi)| lo < hi));
            }
            if written.len() > SPANS {
                let mut merged: Vec<(Buf, u64, u64)> = Vec::new();
                for (b, lo, hi) in written.drain(..) {
                    match merged.iter_mut().find(|m| m.0 == b) {
                        Some(m) => *m = (b, m.1.min(lo), m.2.max(hi)),
                        None => merged.push((b, lo, hi)),
                    }
                }
                written = merged;
            }
        }
    }
    fresh
}

/// The bytes the ranks of each of `n` CPUs (in blocks, [`block`]) hold in its caches
/// during `schedule`: each rank's buffers ([`buffer_elements`]) and the bytes it
/// receives from ranks of other CPUs (its copy reads them there), for the caches they
/// must fit in ([`Calibration::same_cpu_warm_bytes`]).
pub fn cpu_bytes(
    schedule: &dyn Schedule,
    alias: impl Fn(Rank) -> Option<u64>,
    elem_bytes: usize,
    n: usize,
) -> Vec<u64> {
    let (k, n) = (schedule.nodes(), n.max(1));
    let mut per_cpu = vec![0u64; n];
    let mut program = Program::default();
    for r in 0..k {
        schedule.program_into(r, &mut program);
        let cpu = block(r, n, k);
        let remote: u64 = program
            .steps
            .iter()
            .flat_map(|s| &s.ops)
            .filter(|op| matches!(op, IrOp::Recv { from, .. } if block(*from, n, k) != cpu))
            .map(|op| op.message_len())
            .sum();
        let elems = buffer_elements(&program, alias(r)) + remote;
        per_cpu[cpu] += elems.saturating_mul(elem_bytes as u64);
    }
    per_cpu
}

/// The bytes all of `schedule`'s ranks hold in their buffers ([`buffer_elements`]), for
/// [`Calibration::copy_floor`].
pub fn held_bytes(
    schedule: &dyn Schedule,
    alias: impl Fn(Rank) -> Option<u64>,
    elem_bytes: usize,
) -> u64 {
    let mut program = Program::default();
    (0..schedule.nodes())
        .map(|r| {
            schedule.program_into(r, &mut program);
            buffer_elements(&program, alias(r)).saturating_mul(elem_bytes as u64)
        })
        .fold(0, u64::saturating_add)
}

/// The elements of a rank's buffers, `in`, `out` and `tmp`, as far as its program
/// reaches into each; with `alias = Some(off)` its `in` lies in its `out` at `off`.
pub fn buffer_elements(program: &Program, alias: Option<u64>) -> u64 {
    use hypercomm::schedule::{Buf, Region};
    // The end of each buffer's furthest region (`in` of an in-place rank: none).
    let mut ends = [0u64; 3];
    let mut reach = |g: &Region| {
        let seg = g.len / g.count.max(1);
        let end = g.off + g.stride * g.count.saturating_sub(1) + seg;
        let at = match (g.buf, alias) {
            (Buf::In, Some(off)) => (1, end + off),
            (Buf::In, None) => (0, end),
            (Buf::Out, _) => (1, end),
            (Buf::Tmp, _) => (2, end),
        };
        ends[at.0] = ends[at.0].max(at.1);
    };
    for op in program.steps.iter().flat_map(|s| &s.ops) {
        match op {
            IrOp::Send { from, .. } => from.iter().for_each(&mut reach),
            IrOp::Recv { into, .. } => into.iter().for_each(&mut reach),
            IrOp::Local { from, into, .. } => {
                reach(from);
                reach(into);
            }
        }
    }
    ends.iter().sum()
}

/// Written spans a rank keeps apart in [`fresh_sends`] before merging them.
pub const SPANS: usize = 64;

/// The elements the schedule copies locally on the rank that copies the most; with
/// `alias(r) = Some(off)` rank r's `in` lies in its `out` at `off`, and a copy onto
/// itself is no copy.
pub fn local_elements(
    schedule: &dyn hypercomm::schedule::Schedule,
    alias: impl Fn(Rank) -> Option<u64>,
) -> u64 {
    local_elements_by_rank(schedule, alias)
        .into_iter()
        .max()
        .unwrap_or(0)
}

/// The elements each rank copies locally ([`local_elements`]), in rank order.
pub fn local_elements_by_rank(
    schedule: &dyn hypercomm::schedule::Schedule,
    alias: impl Fn(Rank) -> Option<u64>,
) -> Vec<u64> {
    use hypercomm::schedule::{Action, Buf, Op as IrOp};
    (0..schedule.nodes())
        .map(|r| {
            let at = |reg: &hypercomm::schedule::Region| match (reg.buf, alias(r)) {
                (Buf::In, Some(off)) => (Buf::Out, reg.off + off),
                _ => (reg.buf, reg.off),
            };
            schedule
                .stream(r)
                .flat_map(|step| step.ops)
                .map(|op| match op {
                    IrOp::Local { from, into, action }
                        if !(action == Action::Place && at(&from) == at(&into)) =>
                    {
                        from.len
                    }
                    _ => 0,
                })
                .sum::<u64>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hypercomm::algorithms;
    use hypercomm::collective::OpKind;
    use hypercomm::cost;
    use hypercomm::topology::Topology;

    /// The prediction is the simulator's time plus the busiest rank's local copies at τ
    /// per byte: for an all-gather, every rank's own block.
    #[test]
    fn the_prediction_adds_the_local_copies_at_tau_per_byte() {
        let calibration = Calibration::line(1e-6, 1e-9);
        for (k, len) in [(2u32, 1000u64), (3, 7), (4, 1 << 16)] {
            let topology = Topology::complete(k);
            let problem = Problem {
                topology: &topology,
                collective: Collective::Allgather,
                len,
                commutative: true,
                counts: None,
            };
            let algo = algorithms::find(OpKind::Allgather, "ring").unwrap();
            let model = calibration.model(8);
            let params = Params {
                packets: Packets::Count(1),
                model,
            };
            let schedule = algo.build(&problem, &params).unwrap();
            assert_eq!(local_elements(schedule.as_ref(), |_| None), len, "k {k}");
            // In place, the own block is already there: nothing to copy.
            let own = |r: Rank| Some(r as u64 * len);
            assert_eq!(local_elements(schedule.as_ref(), own), 0, "k {k}");
            let messages = cost::simulate(&topology, schedule.as_ref(), &model).time;
            let [got, in_place] = [false, true].map(|in_place| {
                let at = Packets::Count(1);
                predict(
                    Collective::Allgather,
                    k,
                    len,
                    8,
                    algo,
                    at,
                    None,
                    calibration,
                    in_place,
                    Execution::default(),
                )
                .unwrap()
            });
            assert!((in_place - messages).abs() <= 1e-12 * messages, "k {k}");
            // A broadcast runs in place: its root's copy onto itself is not priced.
            let bcast = Collective::Broadcast { root: 0 };
            let sbt = algorithms::find(OpKind::Broadcast, "binomial").unwrap();
            let problem = Problem {
                collective: bcast,
                ..problem
            };
            let s = sbt.build(&problem, &params).unwrap();
            assert_eq!(local_elements(s.as_ref(), |_| None), len, "the root's copy");
            let alone = cost::simulate(&topology, s.as_ref(), &model).time;
            let p = predict(
                bcast,
                k,
                len,
                8,
                sbt,
                Packets::Count(1),
                None,
                calibration,
                false,
                Execution::default(),
            );
            let p = p.unwrap();
            assert!((p - alone).abs() <= 1e-12 * alone, "k {k}: {p} vs {alone}");
            let want = messages + len as f64 * 8.0 * 1e-9;
            assert!((got - want).abs() <= 1e-12 * want, "k {k}: {got} vs {want}");
        }
    }

    /// A message its sender waits on alone is priced at half its length once large
    /// enough: a broadcast of 2L elements (its root and inner nodes only send in their
    /// steps) costs what one of L costs unshared; an all-gather, whose every rank also
    /// receives in each step, and a message below the threshold, cost as before.
    #[test]
    fn the_prediction_halves_the_messages_an_idle_sender_helps_copy() {
        let calibration = Calibration::line(1e-6, 1e-9);
        let p = |c: Collective, name: &str, k: u32, len: u64, from: Option<u64>| {
            let algo = algorithms::find(c.kind(), name).unwrap();
            predict(
                c,
                k,
                len,
                8,
                algo,
                Packets::Count(1),
                None,
                calibration,
                false,
                Execution {
                    shared_copy_from: from,
                    ..Execution::default()
                },
            )
            .unwrap()
        };
        let bcast = Collective::Broadcast { root: 0 };
        // (The linear broadcast sends to one rank a step: its root is idle in each.)
        for (name, k) in [
            ("linear", 2),
            ("linear", 3),
            ("binomial", 2),
            ("binomial", 4),
            ("binomial", 8),
        ] {
            let len = 1 << 15; // 256 KiB of u64
            let shared = p(bcast, name, k, 2 * len, Some(256 << 10));
            let half = p(bcast, name, k, len, None);
            assert!(
                (shared - half).abs() <= 1e-12 * half,
                "{name} k {k}: {shared} vs {half}"
            );
            // Below the threshold (and without one) the whole length is priced.
            let whole = p(bcast, name, k, 2 * len, None);
            assert!(whole > shared * 1.5, "{name} k {k}");
            assert_eq!(
                p(bcast, name, k, 2 * len, Some(1 << 30)),
                whole,
                "{name} k {k}"
            );
        }
        // A binomial reduce places its first step's messages (combined locally after)
        // and combines the others as they arrive, which the runtime does alone: one step
        // of log₂k is halved, m/2 elements of τ saved.
        for k in [2, 4, 8] {
            let m = 1u64 << 16;
            let reduce = |from| p(Collective::Reduce { root: 0 }, "binomial", k, m, from);
            let saved = reduce(None) - reduce(Some(0));
            let half = (m / 2) as f64 * 8.0 * 1e-9;
            assert!(
                (saved - half).abs() <= 1e-9 * half,
                "reduce k {k}: {saved} vs {half}"
            );
        }
        for (name, k) in [
            ("ring", 2),
            ("ring", 5),
            ("bruck", 5),
            ("dimension-exchange", 4),
        ] {
            let ag = |from| p(Collective::Allgather, name, k, 1 << 16, from);
            assert_eq!(ag(Some(0)), ag(None), "{name} k {k}");
        }
    }

    /// Each condition of [`shared_copy_programs`], on a step built by hand: rank 0
    /// sends `len` elements to rank 1, which receives them; one change at a time makes
    /// the message one the runtime copies alone.
    #[test]
    fn a_message_is_halved_only_when_the_runtime_shares_its_copy() {
        use hypercomm::schedule::{Action, Buf, Materialized, Op as IrOp, Program, Region, Step};
        let len = 1000u64;
        let whole = Region::new(Buf::In, 0, len);
        let into = Region::new(Buf::Out, 0, len);
        // Rank 0's and rank 1's step, and the threshold, give the first message's
        // length at each end after `shared_copy_programs`.
        let lens_at = |send: Vec<IrOp>, recv: Vec<IrOp>, from: u64, share: f64| {
            let program = |rank, ops| Program {
                rank,
                tmp_len: 0,
                steps: vec![Step { ops }],
            };
            let schedule = Materialized {
                nodes: 3,
                steps: 1,
                programs: vec![program(0, send), program(1, recv), program(2, vec![])],
            };
            let p = shared_copy_programs(&schedule, 8, from, |_| share);
            let first = |r: usize| p[r].steps[0].ops.first().map_or(0, IrOp::message_len);
            (first(0), first(1))
        };
        let lens = |send: Vec<IrOp>, recv: Vec<IrOp>, from: u64| lens_at(send, recv, from, 0.5);
        let (send, recv) = (IrOp::send(1, whole), IrOp::recv(0, into));
        let bytes = len * 8;
        // Shared: halved at both ends, from exactly the threshold on.
        assert_eq!(
            lens(vec![send.clone()], vec![recv.clone()], bytes),
            (500, 500)
        );
        assert_eq!(
            lens(vec![send.clone()], vec![recv.clone()], bytes + 1),
            (len, len)
        );
        // A measured share (the calibration's `shared-copy`): that part at both ends,
        // rounded up; a share out of range is held to ¼..1.
        let at = |share| lens_at(vec![send.clone()], vec![recv.clone()], 0, share);
        assert_eq!(at(0.6), (600, 600));
        assert_eq!(at(0.6001), (601, 601));
        assert_eq!(at(1.0), (len, len));
        assert_eq!(at(0.4), (400, 400));
        assert_eq!(at(0.1), (250, 250));
        assert_eq!(at(3.0), (len, len));
        // The sender also receives in the step: it is busy, not helping.
        let busy = vec![send.clone(), IrOp::recv(2, Region::new(Buf::Out, 0, 1))];
        assert_eq!(lens(busy, vec![recv.clone()], 0), (len, len));
        // The sender sends another message in the step.
        let two = vec![send.clone(), IrOp::send(2, whole)];
        assert_eq!(lens(two, vec![recv.clone()], 0), (len, len));
        // A multicast: the receivers race for one helper; priced whole.
        let multicast = vec![IrOp::multicast([1, 2], whole)];
        assert_eq!(lens(multicast, vec![recv.clone()], 0), (len, len));
        // The send is two pieces, or strided.
        let halves = [Region::new(Buf::In, 0, 500), Region::new(Buf::In, 500, 500)];
        let pieces = IrOp::Send {
            to: [1].into_iter().collect(),
            from: halves.into_iter().collect(),
        };
        assert_eq!(lens(vec![pieces], vec![recv.clone()], 0), (len, len));
        let strided = IrOp::send(1, Region::strided(Buf::In, 0, 500, 600, 2));
        assert_eq!(lens(vec![strided], vec![recv.clone()], 0), (len, len));
        // The receive is two parts, or combines.
        let halves = [
            Region::new(Buf::Out, 0, 500),
            Region::new(Buf::Out, 500, 500),
        ];
        let parts = IrOp::Recv {
            from: 0,
            into: halves.into_iter().collect(),
            action: Action::Place,
        };
        assert_eq!(lens(vec![send.clone()], vec![parts], 0), (len, len));
        for action in [Action::CombineLeft, Action::CombineRight] {
            let combine = IrOp::Recv {
                from: 0,
                into: [into].into_iter().collect(),
                action,
            };
            let got = lens(vec![send.clone()], vec![combine], 0);
            assert_eq!(got, (len, len), "{action:?}");
        }
    }

    /// Ranks sharing CPUs take turns, each CPU copying its ranks' receives one after
    /// another: with a CPU per rank, exchanges (every rank receiving what it sends)
    /// time as in the simulator; with 4 ranks on 2 CPUs a ring all-gather takes twice
    /// as long (and its own-block copies add up per CPU); a binomial broadcast still
    /// takes two transfers (its second step has one receiver on each CPU); 5 ranks on 2
    /// CPUs in blocks, {0, 1, 2} and {3, 4}, take three transfers a ring step.
    #[test]
    fn ranks_that_share_a_cpu_take_turns() {
        let calibration = Calibration::line(1e-6, 1e-9);
        let model = calibration.model(8);
        let price = Price::new(calibration, 8);
        let m = 1000u64;
        let build = |c: Collective, name: &str, k: u32| {
            let topology = Topology::complete(k);
            let problem = Problem {
                topology: &topology,
                collective: c,
                len: m,
                commutative: true,
                counts: None,
            };
            let params = Params {
                packets: Packets::Count(1),
                model,
            };
            let algo = algorithms::find(c.kind(), name).unwrap();
            let schedule = algo.build(&problem, &params).unwrap();
            let rounds = cost::simulate(&topology, schedule.as_ref(), &model).time;
            (algo, rounds, schedule)
        };
        let transfer = 1e-6 + m as f64 * 8.0 * 1e-9;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.max(1e-300);
        let ag = Collective::Allgather;
        for (c, name) in [
            (ag, "ring"),
            (ag, "bruck"),
            (Collective::Alltoall, "pairwise"),
        ] {
            let (_, rounds, schedule) = build(c, name, 4);
            let own = cpu_shared_time(schedule.as_ref(), &price, 4, None);
            assert!(close(own, rounds), "{name}: {own} vs {rounds}");
        }
        let (ring, rounds, schedule) = build(ag, "ring", 4);
        assert!(close(rounds, 3.0 * transfer));
        let shared = cpu_shared_time(schedule.as_ref(), &price, 2, None);
        assert!(close(shared, 2.0 * rounds), "{shared} vs 2 × {rounds}");
        let execution = Execution {
            cpus: Some(2),
            ..Execution::default()
        };
        let predicted = predict(
            ag,
            4,
            m,
            8,
            ring,
            Packets::Count(1),
            None,
            calibration,
            false,
            execution,
        );
        // Two ranks' own blocks per CPU, copied at τ per byte.
        let want = shared + 2.0 * m as f64 * 8.0 * 1e-9;
        let predicted = predicted.unwrap();
        assert!(close(predicted, want), "{predicted} vs {want}");
        let (_, rounds, schedule) = build(Collective::Broadcast { root: 0 }, "binomial", 4);
        assert!(close(rounds, 2.0 * transfer));
        let shared = cpu_shared_time(schedule.as_ref(), &price, 2, None);
        assert!(close(shared, 2.0 * transfer), "{shared}");
        // As fibers, a waiting sender helps copy: the first step's 0 → 2 (CPU 0 to
        // CPU 1; CPU 0 receives nothing) is half a message on each CPU, from 8000 B; the
        // second step's two messages stay within their CPUs.
        let half = 1e-6 + (m / 2) as f64 * 8.0 * 1e-9;
        let helped = cpu_shared_time(schedule.as_ref(), &price, 2, Some(8000));
        assert!(close(helped, half + transfer), "{helped}");
        let unhelped = cpu_shared_time(schedule.as_ref(), &price, 2, Some(8001));
        assert!(close(unhelped, 2.0 * transfer), "{unhelped}");
        // Under a measured share (the calibration's `shared-copy` at the message's
        // size), each CPU is charged that part of it, rounded up to whole elements.
        let bytes = m * 8;
        let mut measured = calibration;
        measured.shared_copy =
            crate::select::Shares::new(&[(bytes / 2, 0.9), (bytes * 2, 0.5)]).unwrap();
        let share = measured.shared_copy_share(bytes);
        assert!(share > 0.5 && share < 0.9, "{share}");
        let part = ((m as f64 * share).ceil()) as u64;
        let with_share = Price::new(measured, 8);
        let helped = cpu_shared_time(schedule.as_ref(), &with_share, 2, Some(8000));
        let want = 1e-6 + part as f64 * 8.0 * 1e-9 + transfer;
        assert!(close(helped, want), "{helped} vs {want}");
        // A ring's every CPU receives in every step: no one helps.
        let (_, _, schedule) = build(ag, "ring", 4);
        let ring_helped = cpu_shared_time(schedule.as_ref(), &price, 2, Some(8000));
        assert!(close(ring_helped, 2.0 * 3.0 * transfer), "{ring_helped}");
        // Blocks of unequal size: the larger decides each round.
        let (_, _, schedule) = build(ag, "ring", 5);
        let shared = cpu_shared_time(schedule.as_ref(), &price, 2, None);
        assert!(close(shared, 4.0 * 3.0 * transfer), "{shared}");
        assert_eq!(
            (0..5).map(|r| block(r, 2, 5)).collect::<Vec<_>>(),
            [0, 0, 0, 1, 1]
        );
        // With a switch (time-sliced ranks): each shared CPU adds it per rank active in
        // the step. The ring: 2 ranks a CPU in each of 3 steps; the binomial broadcast:
        // 0 → 2 (one rank active on each CPU), then 0 → 1 and 2 → 3 (two); a CPU per
        // rank switches to none.
        let sw = 3e-6;
        let mut switched = calibration;
        switched.switch = sw;
        let price = Price::new(switched, 8);
        let (_, rounds, schedule) = build(ag, "ring", 4);
        let shared = cpu_shared_time(schedule.as_ref(), &price, 2, None);
        assert!(close(shared, 2.0 * rounds + 6.0 * sw), "{shared}");
        let own = cpu_shared_time(schedule.as_ref(), &price, 4, None);
        assert!(close(own, rounds), "{own} vs {rounds}");
        let (_, _, schedule) = build(Collective::Broadcast { root: 0 }, "binomial", 4);
        let shared = cpu_shared_time(schedule.as_ref(), &price, 2, None);
        assert!(close(shared, 2.0 * transfer + 3.0 * sw), "{shared}");
        // 3 ranks on 2 CPUs, {0, 1} and {2}: only the first CPU switches.
        let (_, _, schedule) = build(ag, "ring", 3);
        let shared = cpu_shared_time(schedule.as_ref(), &price, 2, None);
        assert!(close(shared, 2.0 * (2.0 * transfer + 2.0 * sw)), "{shared}");
    }
}

#[cfg(test)]
mod one_band {
    use super::*;
    use hypercomm::collective::OpKind;
    use hypercomm::cost;

    /// The fixed-count collectives (rooted ones at root 0).
    fn collectives() -> Vec<Collective> {
        use Collective as C;
        vec![
            C::Broadcast { root: 0 },
            C::Scatter { root: 0 },
            C::Gather { root: 0 },
            C::Reduce { root: 0 },
            C::Allgather,
            C::Alltoall,
            C::Allreduce,
            C::Scan,
            C::ExclusiveScan,
            C::ReduceScatter,
            C::Download,
        ]
    }

    /// With one line (no bands, every calibration file written before them), the
    /// prediction is what it was: the simulator's time under `Calibration::model`, plus
    /// the busiest rank's local copies at τ per byte (and, with shared copies, the
    /// simulator's time of the halved programs), bit for bit, for every algorithm that
    /// fits, at several rank counts and lengths.
    #[test]
    fn with_one_band_the_prediction_is_the_simulators_time_exactly() {
        let calibration = Calibration::line(2.7e-7, 8.8e-11);
        let mut checked = 0;
        for c in collectives() {
            for k in [2u32, 3, 4, 5, 8, 9] {
                let Some(topology) = crate::topology_for(c.kind(), k) else {
                    continue;
                };
                let model = calibration.model(8);
                for len in [1u64, 100, 40_000] {
                    let problem = Problem {
                        topology: &topology,
                        collective: c,
                        len,
                        commutative: true,
                        counts: None,
                    };
                    let params = Params {
                        packets: Packets::Opt,
                        model,
                    };
                    for algo in hypercomm::algorithms::fitting(&topology, c.kind()) {
                        let Ok(schedule) = algo.build(&problem, &params) else {
                            continue;
                        };
                        // A broadcast runs in place: its root's copy onto itself is free.
                        let bcast = matches!(c, Collective::Broadcast { .. });
                        let local = local_elements(schedule.as_ref(), |_| bcast.then_some(0));
                        let copies = local as f64 * (8.0 * calibration.tau);
                        let plain = cost::simulate(&topology, schedule.as_ref(), &model).time;
                        let from = 4096;
                        let halved = shared_copy_programs(schedule.as_ref(), 8, from, |_| 0.5);
                        let shared =
                            cost::simulate_programs(&topology, &halved, schedule.steps(), &model)
                                .time;
                        for (execution, messages) in [
                            (Execution::default(), plain),
                            (
                                Execution {
                                    shared_copy_from: Some(from),
                                    ..Execution::default()
                                },
                                shared,
                            ),
                        ] {
                            let got = predict(
                                c,
                                k,
                                len,
                                8,
                                algo,
                                Packets::Opt,
                                None,
                                calibration,
                                false,
                                execution,
                            )
                            .unwrap();
                            let want = messages + copies;
                            assert_eq!(got, want, "{c} {} k={k} len={len}", algo.name);
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 500, "{checked}");
    }

    /// One band from `from` bytes: `beta + n·tau`.
    fn one_band(from: u64, beta: f64, tau: f64) -> crate::select::Bands {
        crate::select::Bands::new(&[crate::select::Band { from, beta, tau }]).unwrap()
    }

    /// A band prices each message at its own size: a message of the band's size and
    /// more at the band's line, smaller ones at the one line.
    #[test]
    fn each_message_is_priced_by_its_sizes_band() {
        let mut c = Calibration::line(1e-6, 1e-9);
        c.bands = one_band(1000, 5e-6, 2e-9);
        let price = Price::new(c, 4);
        assert_eq!(price.message(249), 1e-6 + 996.0 * 1e-9);
        assert_eq!(price.message(250), 5e-6 + 1000.0 * 2e-9);
        // A 2-rank broadcast of 250 four-byte elements is one message at the band.
        let t = |len: u64| {
            let algo = hypercomm::algorithms::find(OpKind::Broadcast, "binomial").unwrap();
            let b = Collective::Broadcast { root: 0 };
            let exe = Execution::default();
            predict(b, 2, len, 4, algo, Packets::Opt, None, c, true, exe).unwrap()
        };
        assert_eq!(t(250), 5e-6 + 1000.0 * 2e-9);
        assert_eq!(t(10), 1e-6 + 40.0 * 1e-9);
    }

    /// The schedule of `name` for `c` on `k` ranks of `len` elements.
    fn built(c: Collective, name: &str, k: u32, len: u64) -> Box<dyn Schedule> {
        let topology = crate::topology_for(c.kind(), k).unwrap();
        let problem = Problem {
            topology: &topology,
            collective: c,
            len,
            commutative: true,
            counts: None,
        };
        let params = Params {
            packets: Packets::Count(1),
            model: Calibration::default().model(8),
        };
        let algo = hypercomm::algorithms::find(c.kind(), name).unwrap();
        algo.build(&problem, &params).unwrap()
    }

    /// Which sends carry data written in the call: a binomial broadcast's root only
    /// sends what it was given (never fresh), every other rank forwards what it
    /// received (fresh); a recursive-doubling all-reduce's first exchange sends the
    /// input, every later one the partial sums; an all-gather's ring sends its own
    /// input block first (from `in`; in place, the block it did not write) and then
    /// what it received.
    #[test]
    fn fresh_sends_are_those_of_data_written_in_the_call() {
        let at = |f: &[bool], k: usize, s: usize, r: usize| f[s * k + r];
        let b = built(Collective::Broadcast { root: 0 }, "binomial", 8, 100);
        let f = fresh_sends(b.as_ref(), |_| Some(0));
        let mut program = Program::default();
        for r in 0..8u32 {
            b.program_into(r, &mut program);
            for (s, step) in program.steps.iter().enumerate() {
                let sends = step.ops.iter().any(|op| matches!(op, IrOp::Send { .. }));
                assert_eq!(
                    at(&f, 8, s, r as usize),
                    sends && r != 0,
                    "rank {r} step {s}"
                );
            }
        }
        let ar = built(Collective::Allreduce, "recursive-doubling", 8, 100);
        let f = fresh_sends(ar.as_ref(), |_| None);
        for r in 0..8 {
            assert!(!at(&f, 8, 0, r), "rank {r}");
            assert!((1..ar.steps()).all(|s| at(&f, 8, s, r)), "rank {r}");
        }
        let ring = built(Collective::Allgather, "ring", 5, 100);
        for in_place in [false, true] {
            let f = fresh_sends(ring.as_ref(), |r| in_place.then_some(u64::from(r) * 100));
            for r in 0..5 {
                assert!(!at(&f, 5, 0, r), "in place {in_place}, rank {r}");
                assert!((1..ring.steps()).all(|s| at(&f, 5, s, r)), "rank {r}");
            }
        }
    }

    /// With fresh bands, a message of data written in the call is priced at them and
    /// every other as before: a binomial broadcast on 4 ranks is one message of input
    /// (the root's first) and then a round where the root sends input and rank 2
    /// forwards (fresh), so it costs one message of each; a 2-rank all-gather, one
    /// exchange of input, costs what it did without fresh bands.
    #[test]
    fn fresh_messages_are_priced_at_the_fresh_bands() {
        let mut c = Calibration::line(1e-6, 1e-9);
        c.fresh = one_band(1, 2e-6, 3e-9);
        let exe = Execution::default();
        let bcast = Collective::Broadcast { root: 0 };
        let binomial = hypercomm::algorithms::find(OpKind::Broadcast, "binomial").unwrap();
        let got = predict(
            bcast,
            4,
            1000,
            8,
            binomial,
            Packets::Opt,
            None,
            c,
            true,
            exe,
        )
        .unwrap();
        let (warm, fresh) = (1e-6 + 8000.0 * 1e-9, 2e-6 + 8000.0 * 3e-9);
        assert!((got - (warm + fresh)).abs() < 1e-15, "{got}");
        let plain = Calibration::line(1e-6, 1e-9);
        let was = predict(
            bcast,
            4,
            1000,
            8,
            binomial,
            Packets::Opt,
            None,
            plain,
            true,
            exe,
        );
        assert!((was.unwrap() - 2.0 * warm).abs() < 1e-15);
        let de = hypercomm::algorithms::find(OpKind::Allgather, "dimension-exchange").unwrap();
        let ag = |cal| {
            predict(
                Collective::Allgather,
                2,
                1000,
                8,
                de,
                Packets::Opt,
                None,
                cal,
                false,
                exe,
            )
        };
        assert_eq!(ag(c), ag(plain));
    }

    /// Ranks run as fibers on fewer CPUs: a message between two ranks of one CPU is
    /// priced at the `same-cpu` bands, every other as before. A ring all-gather on 4
    /// ranks over 2 CPUs ({0, 1}, {2, 3}) receives, on each CPU and in each of its 3
    /// steps, one message from the other CPU (rank 0 from 3, rank 2 from 1) and one
    /// from its own (rank 1 from 0, rank 3 from 2). Without fibers (threads the
    /// scheduler time-slices, MPI processes), or without the bands, nothing changes.
    #[test]
    fn a_message_between_fibers_of_one_cpu_is_priced_at_the_same_cpu_bands() {
        let mut c = Calibration::line(1e-6, 1e-9);
        c.same_cpu = one_band(1, 2e-7, 1e-10);
        let ag = Collective::Allgather;
        let ring = hypercomm::algorithms::find(OpKind::Allgather, "ring").unwrap();
        let fibers = Execution {
            cpus: Some(2),
            fibers: true,
            ..Execution::default()
        };
        let threads = Execution {
            fibers: false,
            ..fibers
        };
        let m = 1000u64;
        let t = |cal, exe| predict(ag, 4, m, 8, ring, Packets::Count(1), None, cal, true, exe);
        let (cross, same) = (1e-6 + 8000.0 * 1e-9, 2e-7 + 8000.0 * 1e-10);
        let got = t(c, fibers).unwrap();
        assert!((got - 3.0 * (cross + same)).abs() < 1e-15, "{got}");
        let plain = Calibration::line(1e-6, 1e-9);
        assert_eq!(t(c, threads), t(plain, threads));
        assert_eq!(t(plain, fibers), t(plain, threads));
        let was = t(plain, threads).unwrap();
        assert!((was - 6.0 * cross).abs() < 1e-15, "{was}");
        // A message across CPUs keeps its fresh price; one within a CPU takes the
        // same-CPU one whatever its data: a binomial broadcast from 0 on 4 ranks sends
        // 0 → 2 (across, input) and then 0 → 1, 2 → 3 (within, the second fresh).
        let mut both = c;
        both.fresh = one_band(1, 3e-6, 3e-9);
        let b = binomial_broadcast_of_4(m, both, fibers);
        assert!((b - (cross + same)).abs() < 1e-15, "{b}");
    }

    /// A CPU holds its ranks' buffers and what they read from other CPUs: on 4 ranks
    /// over 2 CPUs an all-to-all's rank holds 4m of `in` and 4m of `out` and reads 2m
    /// across; an in-place binomial broadcast's ranks hold m each and rank 2 reads its m
    /// from rank 0, on the other CPU.
    #[test]
    fn a_cpu_holds_its_ranks_buffers_and_what_they_read_across() {
        let m = 100u64;
        let a2a = built(Collective::Alltoall, "linear", 4, m);
        assert_eq!(cpu_bytes(a2a.as_ref(), |_| None, 8, 2), [160 * m, 160 * m]);
        let b = built(Collective::Broadcast { root: 0 }, "binomial", 4, m);
        assert_eq!(cpu_bytes(b.as_ref(), |_| Some(0), 8, 2), [16 * m, 24 * m]);
        // A CPU per rank: nothing read across a CPU is in another's.
        assert_eq!(
            cpu_bytes(b.as_ref(), |_| Some(0), 8, 4),
            [8 * m, 16 * m, 16 * m, 16 * m]
        );
    }

    /// The bytes a call holds are every rank's buffers: a 4-rank linear all-to-all of
    /// m elements holds in (4m) and out (4m) on each; an in-place binomial broadcast
    /// only its buffer of m, on each rank.
    #[test]
    fn a_call_holds_every_ranks_buffers() {
        let m = 100u64;
        let a2a = built(Collective::Alltoall, "linear", 4, m);
        assert_eq!(held_bytes(a2a.as_ref(), |_| None, 8), 4 * 8 * m * 8);
        let b = built(Collective::Broadcast { root: 0 }, "binomial", 4, m);
        assert_eq!(held_bytes(b.as_ref(), |_| Some(0), 8), 4 * m * 8);
        // Not in place, the root also holds its `in`.
        assert_eq!(held_bytes(b.as_ref(), |_| None, 8), 5 * m * 8);
    }

    /// The prediction of an in-place binomial broadcast from rank 0 on 4 ranks of `m`
    /// u64 elements, one packet: 0 → 2, then 0 → 1 and 2 → 3.
    fn binomial_broadcast_of_4(m: u64, c: Calibration, exe: Execution) -> f64 {
        let bcast = Collective::Broadcast { root: 0 };
        let binomial = hypercomm::algorithms::find(OpKind::Broadcast, "binomial").unwrap();
        predict(
            bcast,
            4,
            m,
            8,
            binomial,
            Packets::Count(1),
            None,
            c,
            true,
            exe,
        )
        .unwrap()
    }

    /// The calibration β = 0.2 µs, τ = 2.5e-11 s/B from 1 B, and a second band from
    /// `from` bytes on.
    fn cache_and_memory(from: u64, beta: f64, tau: f64) -> Calibration {
        let mut c = Calibration::line(2e-7, 2.5e-11);
        let band = |from, beta, tau| crate::select::Band { from, beta, tau };
        c.bands =
            crate::select::Bands::new(&[band(1, 2e-7, 2.5e-11), band(from, beta, tau)]).unwrap();
        c
    }

    /// A calibration whose copies run at 2.5e-11 s/B (and β) while its exchange holds
    /// up to 32 MiB (messages to 8 MiB) and at 1e-10 s/B from 64 MiB held: an 8-rank ring
    /// all-gather of 1 MiB per rank holds 8 × 9 MiB, so each of its messages costs at
    /// least 1e-10 s/B, and its own-block copy too; one of 16 KiB holds 1.1 MiB and is
    /// priced at its bands, as before the floor.
    #[test]
    fn a_call_that_outgrows_the_caches_copies_at_memory_speed() {
        let c = cache_and_memory(16 << 20, 0.0, 1e-10);
        let ring = hypercomm::algorithms::find(OpKind::Allgather, "ring").unwrap();
        let exe = Execution::default();
        let t = |bytes: u64, c: Calibration| {
            let len = bytes / 8;
            let a = Collective::Allgather;
            predict(a, 8, len, 8, ring, Packets::Count(1), None, c, false, exe).unwrap()
        };
        let mib = 1u64 << 20;
        assert!(c.copy_floor(8 * 9 * mib) >= 1e-10 - 1e-20);
        // 7 steps of 1 MiB and the own block's copy, each at 1e-10 s/B at least.
        let floor = 8.0 * mib as f64 * 1e-10;
        let got = t(mib, c);
        assert!(got >= floor * (1.0 - 1e-12), "{got} < {floor}");
        // At the bands alone it would be 7 messages at β + 1 MiB × 2.5e-11 and the copy.
        let banded = 7.0 * (2e-7 + mib as f64 * 2.5e-11) + mib as f64 * 2.5e-11;
        assert!(got > 3.0 * banded, "{got} vs {banded}");
        // In the caches: the floor is 0 and the time is the bands' alone, the copy at
        // the least time per byte of any message (8 MiB's, just above 2.5e-11).
        let small = 16 * 1024;
        assert_eq!(c.copy_floor(8 * 9 * small), 0.0);
        let least = c.least_per_byte();
        assert!(least > 2.5e-11 && least < 2.51e-11, "{least}");
        let expect = 7.0 * (2e-7 + small as f64 * 2.5e-11) + small as f64 * least;
        assert!((t(small, c) - expect).abs() <= 1e-12 * expect);
    }

    /// Two names of one schedule have one digest: recursive doubling and dimension
    /// exchange on 2 and 4 ranks; schedules that differ (ring against recursive
    /// doubling, or one algorithm at two sizes) do not.
    #[test]
    fn one_schedule_under_two_names_has_one_digest() {
        let find = |name| hypercomm::algorithms::find(OpKind::Allreduce, name).unwrap();
        let c = Calibration::line(1e-6, 1e-9);
        let d = |k: u32, len: u64, name| {
            let call = (Collective::Allreduce, k, len, None);
            schedule_digest(call, 8, find(name), Packets::Opt, None, c).unwrap()
        };
        for k in [2, 4] {
            for len in [1, 100] {
                assert_eq!(
                    d(k, len, "recursive-doubling"),
                    d(k, len, "dimension-exchange")
                );
            }
            assert_ne!(d(k, 100, "ring"), d(k, 100, "recursive-doubling"), "{k}");
            assert_ne!(d(k, 8, "ring"), d(k, 100, "ring"), "{k}");
        }
        // The same call gives the same digest again.
        assert_eq!(d(4, 7, "ring"), d(4, 7, "ring"));
    }

    /// Across hosts, a host holds its own ranks' bytes: the same 8-rank all-gather of
    /// 1 MiB on 4 hosts of 2 ranks holds 18 MiB a host, within what the calibration's
    /// exchange held at its best (32 MiB), so it is priced at its bands, floor 0.
    #[test]
    fn the_floor_counts_the_bytes_of_one_host() {
        let c = cache_and_memory(16 << 20, 0.0, 1e-10);
        let ring = hypercomm::algorithms::find(OpKind::Allgather, "ring").unwrap();
        let mib = 1u64 << 20;
        let t = |exe| {
            let a = Collective::Allgather;
            predict(
                a,
                8,
                mib / 8,
                8,
                ring,
                Packets::Count(1),
                None,
                c,
                false,
                exe,
            )
            .unwrap()
        };
        let banded = 7.0 * (2e-7 + mib as f64 * 2.5e-11) + mib as f64 * c.least_per_byte();
        let hosts = Execution {
            ranks_per_host: Some(2),
            ..Execution::default()
        };
        assert!((t(hosts) - banded).abs() <= 1e-12 * banded, "{}", t(hosts));
        assert!(t(Execution::default()) > 3.0 * banded);
        // All 8 on one host (or a count that is not a split): as one machine.
        for one in [Some(8), Some(0), None] {
            let exe = Execution {
                ranks_per_host: one,
                ..Execution::default()
            };
            assert_eq!(t(exe), t(Execution::default()), "{one:?}");
        }
    }

    /// Ranks on hosts of 2 ({0, 1}, {2, 3}): a message between hosts is priced at the
    /// `network` bands, one within a host as before. A ring all-gather on 4 ranks
    /// receives in each of its 3 steps two messages across (0 from 3, 2 from 1) and two
    /// within (1 from 0, 3 from 2); each step takes its slowest, the network's. Without
    /// the bands, or on one host, nothing changes.
    #[test]
    fn a_message_between_hosts_is_priced_at_the_network_bands() {
        let mut c = Calibration::line(1e-6, 1e-9);
        c.network = one_band(1, 2e-6, 1e-8);
        let ring = hypercomm::algorithms::find(OpKind::Allgather, "ring").unwrap();
        let hosts = Execution {
            ranks_per_host: Some(2),
            ..Execution::default()
        };
        let one = Execution {
            ranks_per_host: None,
            ..hosts
        };
        let m = 1000u64;
        let ag = Collective::Allgather;
        let t = |cal, exe| predict(ag, 4, m, 8, ring, Packets::Count(1), None, cal, true, exe);
        let (within, across) = (1e-6 + 8000.0 * 1e-9, 2e-6 + 8000.0 * 1e-8);
        let got = t(c, hosts).unwrap();
        assert!((got - 3.0 * across).abs() < 1e-15, "{got}");
        let plain = Calibration::line(1e-6, 1e-9);
        assert_eq!(t(c, one), t(plain, one));
        assert_eq!(t(plain, hosts), t(plain, one));
        let was = t(plain, one).unwrap();
        assert!((was - 3.0 * within).abs() < 1e-15, "{was}");
        // A binomial broadcast from 0 on 4 ranks sends 0 → 2 (across), then 0 → 1 and
        // 2 → 3 (within): the network once.
        let b = |exe| binomial_broadcast_of_4(m, c, exe);
        assert!((b(hosts) - (across + within)).abs() < 1e-15, "{}", b(hosts));
        // On one host, both of its steps are within.
        assert!((b(one) - 2.0 * within).abs() < 1e-15, "{}", b(one));
    }

    /// A local copy costs no more per byte than a message of its size: a band that
    /// crosses from the caches to memory (here from 4 MiB: β < 0, steep τ) would
    /// otherwise price a 4 MiB copy at its slope, 3× the message's time per byte.
    #[test]
    fn a_local_copy_costs_no_more_per_byte_than_a_message_of_its_size() {
        let c = cache_and_memory(4 << 20, -8.4e-4, 2.25e-10);
        let price = Price::new(c, 1);
        let bytes = 4u64 << 20;
        let message = price.message(bytes);
        assert!((price.local(bytes) - message).abs() <= 1e-12 * message);
        assert!(price.local(bytes) < bytes as f64 * 2.25e-10 / 3.0);
        // Below: the least time per byte of any message (4 MiB's, 2.47e-11), without
        // the start-up, not the band's slope.
        let least = c.least_per_byte();
        assert!((least - (-8.4e-4 + 2.25e-10 * bytes as f64) / bytes as f64).abs() < 1e-24);
        assert_eq!(price.local(1024), 1024.0 * least);
    }

    /// A band's slope is no copy speed: where a band of small messages rises steeply
    /// (1.3e-9 s/B from 512 B, as the threads backend's calibration fitted here), a
    /// local copy of 600 B is still priced at the least time per byte of any message
    /// (32 KiB's here, 5.4e-11), over 20× less than the slope.
    #[test]
    fn a_local_copy_is_priced_at_the_least_time_per_byte_not_at_its_bands_slope() {
        let band = |from, beta, tau| crate::select::Band { from, beta, tau };
        let mut c = Calibration::line(2.5e-7, 3.4e-11);
        c.bands = crate::select::Bands::new(&[
            band(1, 2.2e-7, 3.4e-10),
            band(512, -2.7e-7, 1.3e-9),
            band(1024, 1e-6, 3e-12),
            band(16384, 3.5e-7, 4.3e-11),
        ])
        .unwrap();
        let price = Price::new(c, 1);
        let least = c.least_per_byte();
        assert!(least < 1e-10, "{least}");
        assert_eq!(price.local(600), 600.0 * least);
        assert!(price.local(600) * 20.0 < 600.0 * 1.3e-9);
    }

    /// The calibration's same-CPU pairs stay warm up to 512 B here (a message of
    /// 1 KiB costs 5× more within a CPU than across), so their CPU held 4 × 512 B warm
    /// and 4 × 1 KiB cold. A call whose CPU holds more than 4 KiB is cold: its messages
    /// of input across CPUs cost what fresh data does, unless the CPU holds no more than
    /// the 3n its n-byte calibration did. One that holds less is warm: a same-CPU
    /// message above 512 B costs the warm pairs' time per byte at 512 B.
    #[test]
    fn a_call_that_outgrows_the_warm_pairs_cache_is_priced_as_fresh_data() {
        let mut c = Calibration::line(1e-6, 1e-9);
        c.fresh = one_band(1, 3e-6, 3e-9);
        c.same_cpu = crate::select::Bands::new(&[
            crate::select::Band {
                from: 1,
                beta: 1e-7,
                tau: 1e-10,
            },
            crate::select::Band {
                from: 1024,
                beta: 0.0,
                tau: 1e-8,
            },
        ])
        .unwrap();
        assert_eq!(c.same_cpu_warm_bytes(), 512);
        let fibers = Execution {
            cpus: Some(2),
            fibers: true,
            ..Execution::default()
        };
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b;
        let (cross, fresh) = (|n: f64| 1e-6 + n * 1e-9, |n: f64| 3e-6 + n * 3e-9);
        let same = |n: f64| 1e-7 + n * 1e-10;
        // A ring all-gather (not in place): a CPU holds 2 × (m + 4m) and reads 3m
        // across, 104m bytes; each step one receive across and one within, the first
        // step's of input, then forwarded (fresh); each rank copies its own block.
        let ring = hypercomm::algorithms::find(OpKind::Allgather, "ring").unwrap();
        let ag = |m: u64| {
            let exe = fibers;
            predict(
                Collective::Allgather,
                4,
                m,
                8,
                ring,
                Packets::Count(1),
                None,
                c,
                false,
                exe,
            )
            .unwrap()
        };
        let own = |m: u64| 2.0 * (m * 8) as f64 * 1e-9;
        let n = 256.0; // m = 32: 3328 B held, warm
        let warm = (cross(n) + same(n)) + 2.0 * (fresh(n) + same(n)) + own(32);
        assert!(close(ag(32), warm), "{} vs {warm}", ag(32));
        let n = 512.0; // m = 64: 6656 B held, cold
        let cold = 3.0 * (fresh(n) + same(n)) + own(64);
        assert!(close(ag(64), cold), "{} vs {cold}", ag(64));
        // A binomial broadcast (in place): 0 → 2 across (input), then 0 → 1 and 2 → 3
        // within; a CPU holds 3m at most.
        let binomial = hypercomm::algorithms::find(OpKind::Broadcast, "binomial").unwrap();
        let b = Collective::Broadcast { root: 0 };
        let bc = |m: u64| {
            predict(
                b,
                4,
                m,
                8,
                binomial,
                Packets::Count(1),
                None,
                c,
                true,
                fibers,
            )
            .unwrap()
        };
        // m = 128: 3 KiB held, warm; its 1 KiB within a CPU at 512 B's time per byte.
        let want = cross(1024.0) + same(512.0) * 2.0;
        assert!(close(bc(128), want), "{} vs {want}", bc(128));
        // m = 256: 6 KiB held, cold, but 3 × 2 KiB is what the calibration's CPU held
        // at 2 KiB: across at the warm band; 2 KiB within a CPU at its own band.
        let want = cross(2048.0) + 2048.0 * 1e-8;
        assert!(close(bc(256), want), "{} vs {want}", bc(256));
    }

    /// With ranks sharing CPUs as fibers and a calibration without `same-cpu` bands
    /// (every file written before them, and MPI's), the prediction is what it was
    /// without fibers, bit for bit, for every algorithm that fits.
    #[test]
    fn without_same_cpu_bands_fibers_predict_bit_for_bit_as_before() {
        let mut c = Calibration::line(2.7e-7, 8.8e-11);
        c.fresh = one_band(1, 3e-7, 2e-10);
        c.bands = one_band(4096, 1e-6, 3e-11);
        let mut checked = 0;
        for col in collectives() {
            for k in [3u32, 4, 5, 8] {
                let Some(topology) = crate::topology_for(col.kind(), k) else {
                    continue;
                };
                for algo in hypercomm::algorithms::fitting(&topology, col.kind()) {
                    for len in [1u64, 3000] {
                        let [a, b] = [false, true].map(|fibers| {
                            let exe = Execution {
                                cpus: Some(2),
                                fibers,
                                ..Execution::default()
                            };
                            predict(col, k, len, 8, algo, Packets::Opt, None, c, false, exe)
                        });
                        assert_eq!(
                            a.map(f64::to_bits),
                            b.map(f64::to_bits),
                            "{col} {}",
                            algo.name
                        );
                        checked += a.is_some() as usize;
                    }
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    /// Where a combining receive is combined after it lands (MPI), the receiver pays
    /// one more pass over its bytes at τ per byte: a 4-rank all-reduce by rotated
    /// exchange costs a local pass more over each combining receive of a rank (every
    /// rank alike), a broadcast by SBT (no combining) the same.
    #[test]
    fn a_combine_after_the_receive_costs_one_pass_more() {
        let c = Calibration::line(1e-6, 1e-9);
        let after = Execution {
            combine_pass: true,
            ..Execution::default()
        };
        let ar = Collective::Allreduce;
        let rd = hypercomm::algorithms::find(OpKind::Allreduce, "rotated-exchange").unwrap();
        let [fused, pass] = [Execution::default(), after]
            .map(|e| predict(ar, 4, 1000, 8, rd, Packets::Opt, None, c, false, e).unwrap());
        let program = built(ar, "rotated-exchange", 4, 1000).program(0);
        let combining: u64 = program
            .steps
            .iter()
            .flat_map(|s| &s.ops)
            .filter(|op| {
                matches!(op, IrOp::Recv { action, .. } if *action != hypercomm::schedule::Action::Place)
            })
            .map(|op| op.message_len())
            .sum();
        assert!(combining > 0);
        // Every step an exchange (what a rank sends, it receives): the pass lengthens
        // each round by the step's combined bytes.
        let want = fused + combining as f64 * 8.0 * 1e-9;
        assert!((pass - want).abs() < 1e-12, "{pass} vs {want}");
        let b = Collective::Broadcast { root: 0 };
        let sbt = hypercomm::algorithms::find(OpKind::Broadcast, "sbt").unwrap();
        let [x, y] = [Execution::default(), after]
            .map(|e| predict(b, 4, 1000, 8, sbt, Packets::Opt, None, c, true, e).unwrap());
        assert_eq!(x, y);
    }
}

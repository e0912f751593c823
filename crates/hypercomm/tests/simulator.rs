//! The cost simulator on tiny hand-written schedules, each expected time worked out
//! from the rules `cost/mod.rs` documents (β + mτ per transfer, Saad & Schultz 1985
//! eq. 1.1; port, duplex and timing rules), never copied from the simulator's output.

use hypercomm::cost::model::{Duplex, Model, Ports, Timing};
use hypercomm::cost::{async_finish_times, simulate, simulate_programs};
use hypercomm::schedule::{Buf, Materialized, Op, Program, Region};
use hypercomm::topology::Topology;

const BETA: f64 = 1.0;
const TAU: f64 = 0.01;

fn model(ports: Ports, duplex: Duplex, timing: Timing) -> Model {
    Model {
        ports,
        duplex,
        timing,
        ..Model::new(BETA, TAU).unwrap()
    }
}

fn c(m: u64) -> f64 {
    BETA + m as f64 * TAU
}

fn time(topo: &str, progs: &[Program], m: &Model) -> f64 {
    let topo: Topology = topo.parse().unwrap();
    let steps = progs[0].steps.len();
    let s = Materialized {
        nodes: progs.len() as u32,
        steps,
        programs: progs.to_vec(),
    };
    let a = simulate(&topo, &s, m).time;
    let b = simulate_programs(&topo, progs, steps, m).time;
    assert!(
        (a - b).abs() < 1e-12,
        "simulate {a} vs simulate_programs {b}"
    );
    if m.timing == Timing::Async && topo.medium_kind().is_none() {
        // The clock shown by drawings ends where the simulator's does.
        let rows = async_finish_times(&topo, progs, steps, m);
        let last = rows
            .last()
            .map_or(0.0, |r| r.iter().copied().fold(0.0, f64::max));
        assert_eq!(last, b, "async_finish_times' last row vs simulate_programs");
    }
    a
}

fn assert_time(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.max(1.0),
        "{what}: simulated {got}, expected {want}"
    );
}

fn out(off: u64, len: u64) -> Region {
    Region::new(Buf::Out, off, len)
}

/// Hypercube:2, one step: node 0 multicasts 10 elements to 1 and 2, and sends 30
/// other elements to 1 in a second message; 1 and 2 receive.
fn multicast_and_second_message() -> Vec<Program> {
    let mut p: Vec<Program> = (0..4).map(|r| Program::new(r, 1)).collect();
    p[0].push(0, Op::multicast([1, 2], out(0, 10)));
    p[0].push(0, Op::send(1, out(10, 30)));
    p[1].push(0, Op::recv(0, out(0, 10)));
    p[1].push(0, Op::recv(0, out(10, 30)));
    p[2].push(0, Op::recv(0, out(0, 10)));
    p
}

#[test]
fn ports_all_serialise_per_link_and_multicast_costs_one_transfer_per_link() {
    let p = multicast_and_second_message();
    // Link 0→1 carries 10 then 30 elements; link 0→2 carries 10 at the same time.
    let want = c(10) + c(30);
    for timing in [Timing::Rounds, Timing::Async] {
        let t = time("hypercube:2", &p, &model(Ports::All, Duplex::Full, timing));
        assert_time(t, want, &format!("ports all, {timing}"));
    }
}

#[test]
fn ports_one_serialises_every_send_of_a_multicast() {
    let p = multicast_and_second_message();
    // The root's three transfers one after the other.
    let want = c(10) + c(10) + c(30);
    let t = time(
        "hypercube:2",
        &p,
        &model(Ports::One, Duplex::Full, Timing::Rounds),
    );
    assert_time(t, want, "ports one");
}

/// Hypercube:1, one step: both nodes send 10 elements to each other.
fn exchange() -> Vec<Program> {
    let mut p: Vec<Program> = (0..2).map(|r| Program::new(r, 1)).collect();
    for r in 0..2u32 {
        p[r as usize].push(0, Op::send(1 - r, out(0, 10)));
        p[r as usize].push(0, Op::recv(1 - r, out(10, 10)));
    }
    p
}

#[test]
fn duplex_full_overlaps_and_half_adds_the_two_sides() {
    let p = exchange();
    for ports in [Ports::All, Ports::One] {
        for timing in [Timing::Rounds, Timing::Async] {
            let full = time("hypercube:1", &p, &model(ports, Duplex::Full, timing));
            assert_time(full, c(10), &format!("{ports}, full, {timing}"));
            let half = time("hypercube:1", &p, &model(ports, Duplex::Half, timing));
            assert_time(half, 2.0 * c(10), &format!("{ports}, half, {timing}"));
        }
    }
}

/// Hypercube:2, two steps: 0 → 1 carries 100 elements in step 0 while 2 → 3 carries
/// 1; in step 1, 3 → 2 carries 1. Rounds: each round costs its slowest node. Async:
/// nodes 2 and 3 do not wait for the long transfer, so the total is the long one.
#[test]
fn async_lets_independent_nodes_run_ahead() {
    let mut p: Vec<Program> = (0..4).map(|r| Program::new(r, 2)).collect();
    p[0].push(0, Op::send(1, out(0, 100)));
    p[1].push(0, Op::recv(0, out(0, 100)));
    p[2].push(0, Op::send(3, out(0, 1)));
    p[3].push(0, Op::recv(2, out(0, 1)));
    p[3].push(1, Op::send(2, out(0, 1)));
    p[2].push(1, Op::recv(3, out(1, 1)));
    let rounds = time(
        "hypercube:2",
        &p,
        &model(Ports::All, Duplex::Full, Timing::Rounds),
    );
    assert_time(rounds, c(100) + c(1), "rounds");
    let asynch = time(
        "hypercube:2",
        &p,
        &model(Ports::All, Duplex::Full, Timing::Async),
    );
    assert_time(asynch, c(100).max(2.0 * c(1)), "async");
}

/// Hypercube:2, a relay 0 → 1 → 3 → 2 of 100, 1 and 100 elements in steps 0, 1, 2:
/// each transfer waits for its sender's previous step, so async = rounds =
/// 2·c(100) + c(1) although node 3 is idle in step 0.
#[test]
fn async_waits_for_the_peer_of_each_step() {
    let mut p: Vec<Program> = (0..4).map(|r| Program::new(r, 3)).collect();
    for (s, a, b, m) in [(0, 0, 1, 100), (1, 1, 3, 1), (2, 3, 2, 100)] {
        p[a as usize].push(s, Op::send(b, out(0, m)));
        p[b as usize].push(s, Op::recv(a, out(0, m)));
    }
    let want = 2.0 * c(100) + c(1);
    for timing in [Timing::Rounds, Timing::Async] {
        for ports in [Ports::All, Ports::One] {
            let t = time("hypercube:2", &p, &model(ports, Duplex::Full, timing));
            assert_time(t, want, &format!("{ports}, {timing}"));
        }
    }
}

/// Rounds in which only local copies happen cost nothing and are not counted.
#[test]
fn local_only_rounds_are_free() {
    let mut p: Vec<Program> = (0..2).map(|r| Program::new(r, 3)).collect();
    p[0].push(0, Op::copy(Region::new(Buf::In, 0, 5), out(0, 5)));
    p[0].push(1, Op::send(1, out(0, 5)));
    p[1].push(1, Op::recv(0, out(0, 5)));
    p[1].push(2, Op::copy(out(0, 5), out(0, 5)));
    let topo: Topology = "hypercube:1".parse().unwrap();
    let s = Materialized {
        nodes: 2,
        steps: 3,
        programs: p,
    };
    let r = simulate(&topo, &s, &model(Ports::All, Duplex::Full, Timing::Rounds));
    assert_time(r.time, c(5), "time");
    assert_eq!(
        (r.rounds, r.messages, r.volume, r.max_link_load),
        (1, 1, 5, 5)
    );
}

/// Async timing couples the two ends of a transfer (it was a bug that the receiving
/// end ignored the sender's port). Under `--ports one` node 0 sends 100 elements to
/// node 1 and then 1 element to node 2 (its port is busy until c(100) + c(1)), so
/// node 2's receive cannot finish before c(100) + c(1), and its forward to node 3 not
/// before c(100) + 2·c(1) = 4.02 (which is also the rounds time). The simulator said
/// max(c(100) + c(1), 2·c(1)) = 3.01, less than any real execution.
#[test]
fn async_receive_cannot_finish_before_the_sender_sends() {
    let mut p: Vec<Program> = (0..4).map(|r| Program::new(r, 2)).collect();
    p[0].push(0, Op::send(1, out(0, 100)));
    p[0].push(0, Op::send(2, out(0, 1)));
    p[1].push(0, Op::recv(0, out(0, 100)));
    p[2].push(0, Op::recv(0, out(0, 1)));
    p[2].push(1, Op::send(3, out(0, 1)));
    p[3].push(1, Op::recv(2, out(0, 1)));
    let causal = c(100) + 2.0 * c(1);
    let rounds = time(
        "hypercube:2",
        &p,
        &model(Ports::One, Duplex::Full, Timing::Rounds),
    );
    assert_time(rounds, causal, "rounds");
    let asynch = time(
        "hypercube:2",
        &p,
        &model(Ports::One, Duplex::Full, Timing::Async),
    );
    assert!(
        asynch >= causal - 1e-9,
        "async {asynch}: node 3 gets its element before node 0 has sent it to node 2 (earliest {causal})"
    );
    assert_time(asynch, causal, "async");
}

/// The receiving end occupies the sender too. Under `--ports one` nodes 1 and 2 both
/// send 10 elements to node 0 in step 0; node 0's one receive port takes node 1's
/// first (the lower sender), so node 2's send ends at 2·c(10), and its step-1 send of
/// 1 element to node 3 ends at 2·c(10) + c(1), as in rounds. Under `--ports all` the
/// two messages use different links: c(10) + c(1).
#[test]
fn async_sender_waits_for_the_receivers_port() {
    let mut p: Vec<Program> = (0..4).map(|r| Program::new(r, 2)).collect();
    for r in [1u32, 2] {
        p[r as usize].push(0, Op::send(0, out(0, 10)));
        p[0].push(0, Op::recv(r, out(10 * r as u64, 10)));
    }
    p[2].push(1, Op::send(3, out(0, 1)));
    p[3].push(1, Op::recv(2, out(0, 1)));
    for timing in [Timing::Rounds, Timing::Async] {
        let one = time("hypercube:2", &p, &model(Ports::One, Duplex::Full, timing));
        assert_time(one, 2.0 * c(10) + c(1), &format!("ports one, {timing}"));
        let all = time("hypercube:2", &p, &model(Ports::All, Duplex::Full, timing));
        assert_time(all, c(10) + c(1), &format!("ports all, {timing}"));
    }
}

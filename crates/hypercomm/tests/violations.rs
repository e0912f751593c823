//! Every `ViolationKind`, caught on a real schedule broken by hand, with the location
//! (step, rank, peer, region) of the first violation.
//!
//! The base schedule is the paper's broadcast (Saad & Schultz 1985, §2, the spanning
//! binomial tree, one dimension per step, dimension 0 first) on hypercube:3 from root
//! 0 with m = 4. Its programs, which `base_broadcast_is_the_papers_algorithm` checks:
//! step 0: 0 → 1; step 1: 0 → 2, 1 → 3; step 2: 0 → 4, 1 → 5, 2 → 6, 3 → 7; each a
//! send of the whole vector (`in` at the root, `out` elsewhere) matched by a receive
//! into `out[0..4]`, and the root copies `in` to `out` in step 0.
//!
//! Within a step the verifier checks, rank by rank, races and port/duplex rules, then
//! the sends (peers, bounds, held data); then the receives rank by rank (peer, bounds,
//! `in`, a message to match, its size, the combine); then unmatched sends; then local
//! operations. The expected locations below follow from that order.

use hypercomm::algorithms::{self, Params};
use hypercomm::collective::{Collective, OpKind};
use hypercomm::cost::model::{Duplex, Ports};
use hypercomm::error::Error;
use hypercomm::schedule::json::Document;
use hypercomm::schedule::{materialize, Action, Buf, Op, Program, Rank, Region, Step};
use hypercomm::topology::Topology;
use hypercomm::verify::{
    verify_programs, verify_programs_with, Options, Problem, Strictness, Violation, ViolationKind,
};

const M: u64 = 4;

fn cube(n: u32) -> Topology {
    format!("hypercube:{n}").parse().unwrap()
}

fn out(off: u64, len: u64) -> Region {
    Region::new(Buf::Out, off, len)
}

fn inp(off: u64, len: u64) -> Region {
    Region::new(Buf::In, off, len)
}

/// The programs of registry algorithm `name` for `collective` on `topo`.
fn programs(
    topo: &Topology,
    collective: Collective,
    m: u64,
    name: &str,
    packets: u64,
) -> (Vec<Program>, usize) {
    let algo = algorithms::find(collective.kind(), name).expect("registered");
    let problem = Problem {
        topology: topo,
        collective,
        len: m,
        commutative: true,
        counts: None,
    };
    let s = algo
        .build(&problem, &Params::packets(packets))
        .expect("builds");
    let mat = materialize(s.as_ref());
    (mat.programs, mat.steps)
}

/// The base: unpipelined sbt broadcast, hypercube:3, root 0, m = 4.
fn broadcast() -> (Topology, Collective, Vec<Program>, usize) {
    let topo = cube(3);
    let c = Collective::Broadcast { root: 0 };
    let (p, s) = programs(&topo, c, M, "sbt", 1);
    (topo, c, p, s)
}

fn check(
    topo: &Topology,
    collective: Collective,
    m: u64,
    commutative: bool,
    progs: &[Program],
    steps: usize,
    strict: Strictness,
) -> Result<(), Violation> {
    let problem = Problem {
        topology: topo,
        collective,
        len: m,
        commutative,
        counts: None,
    };
    let v = verify_programs(problem, progs, steps, strict);
    // Every step split between 2 and between 3 threads: the same verdict, the same
    // first violation.
    for threads in [2, 3] {
        let opts = Options::default().threads(threads).parallel_from(0);
        let w = verify_programs_with(problem, progs, steps, strict, opts);
        assert_eq!(v, w, "on {threads} threads");
    }
    v
}

/// Verify the broadcast `progs` with default strictness.
fn check_broadcast(
    topo: &Topology,
    c: Collective,
    progs: &[Program],
    steps: usize,
) -> Result<(), Violation> {
    check(topo, c, M, true, progs, steps, Strictness::default())
}

/// Assert the first violation's kind and location.
#[track_caller]
fn assert_violation(
    got: Result<(), Violation>,
    kind: ViolationKind,
    step: Option<usize>,
    rank: Rank,
    peer: Option<Rank>,
    region: Option<Region>,
) -> Violation {
    let v = got.expect_err("the broken schedule must be rejected");
    assert_eq!(
        (v.kind, v.step, v.rank, v.peer, v.region),
        (kind, step, rank, peer, region),
        "got: {v}"
    );
    assert!(!v.detail.is_empty());
    v
}

fn is_send_to(q: Rank) -> impl Fn(&Op) -> bool {
    move |op| matches!(op, Op::Send { to, .. } if to.contains(&q))
}

fn is_recv_from(q: Rank) -> impl Fn(&Op) -> bool {
    move |op| matches!(op, Op::Recv { from, .. } if *from == q)
}

fn is_local(op: &Op) -> bool {
    matches!(op, Op::Local { .. })
}

/// The one op of `rank` in `step` matching `pred` (panics if none or several).
fn op_mut(progs: &mut [Program], rank: Rank, step: usize, pred: impl Fn(&Op) -> bool) -> &mut Op {
    let ops = &mut progs[rank as usize].steps[step].ops;
    let mut hits = ops.iter_mut().filter(|o| pred(o));
    let op = hits
        .next()
        .unwrap_or_else(|| panic!("no such op at rank {rank}, step {step}"));
    assert!(
        hits.next().is_none(),
        "several such ops at rank {rank}, step {step}"
    );
    op
}

/// Remove and return that op.
fn take(progs: &mut [Program], rank: Rank, step: usize, pred: impl Fn(&Op) -> bool) -> Op {
    let ops = &mut progs[rank as usize].steps[step].ops;
    let i = ops
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no such op at rank {rank}, step {step}"));
    ops.remove(i)
}

// ---------------------------------------------------------------------------------
// The base schedules are right.

#[test]
fn base_broadcast_is_the_papers_algorithm() {
    let (topo, c, mut progs, steps) = broadcast();
    assert_eq!(steps, 3);
    check_broadcast(&topo, c, &progs, steps).unwrap();
    // (step, from, to) of the paper's algorithm: step j crosses dimension j.
    let edges = [
        (0, 0, 1),
        (1, 0, 2),
        (1, 1, 3),
        (2, 0, 4),
        (2, 1, 5),
        (2, 2, 6),
        (2, 3, 7),
    ];
    for (s, a, b) in edges {
        let src = if a == 0 { inp(0, M) } else { out(0, M) };
        assert_eq!(take(&mut progs, a, s, is_send_to(b)), Op::send(b, src));
        assert_eq!(
            take(&mut progs, b, s, is_recv_from(a)),
            Op::recv(a, out(0, M))
        );
    }
    assert_eq!(
        take(&mut progs, 0, 0, is_local),
        Op::copy(inp(0, M), out(0, M))
    );
    assert!(
        progs.iter().all(|p| p.steps.iter().all(Step::is_empty)),
        "extra ops: {progs:?}"
    );
}

// ---------------------------------------------------------------------------------
// One test per kind.

#[test]
fn no_link() {
    let (topo, c, mut progs, steps) = broadcast();
    *op_mut(&mut progs, 0, 0, is_send_to(1)) = Op::send(3, inp(0, M));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::NoLink,
        Some(0),
        0,
        Some(3),
        None,
    );
}

#[test]
fn peer_out_of_range_on_a_send() {
    let (topo, c, mut progs, steps) = broadcast();
    *op_mut(&mut progs, 0, 0, is_send_to(1)) = Op::send(8, inp(0, M));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::PeerOutOfRange,
        Some(0),
        0,
        Some(8),
        None,
    );
}

#[test]
fn peer_out_of_range_on_a_receive() {
    let (topo, c, mut progs, steps) = broadcast();
    *op_mut(&mut progs, 4, 2, is_recv_from(0)) = Op::recv(9, out(0, M));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::PeerOutOfRange,
        Some(2),
        4,
        Some(9),
        None,
    );
}

#[test]
fn out_of_bounds_send() {
    let (topo, c, mut progs, steps) = broadcast();
    *op_mut(&mut progs, 0, 0, is_send_to(1)) = Op::send(1, inp(2, M));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::OutOfBounds,
        Some(0),
        0,
        Some(1),
        Some(inp(2, M)),
    );
}

#[test]
fn out_of_bounds_receive() {
    let (topo, c, mut progs, steps) = broadcast();
    *op_mut(&mut progs, 4, 2, is_recv_from(0)) = Op::recv(0, out(1, M));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::OutOfBounds,
        Some(2),
        4,
        Some(0),
        Some(out(1, M)),
    );
}

#[test]
fn out_of_bounds_tmp_beyond_declared_length() {
    // Node 3 keeps what it forwards in tmp, but declares no tmp space.
    let (topo, c, mut progs, steps) = broadcast();
    let tmp = Region::new(Buf::Tmp, 0, M);
    *op_mut(&mut progs, 3, 1, is_recv_from(1)) = Op::recv(1, tmp);
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::OutOfBounds,
        Some(1),
        3,
        Some(1),
        Some(tmp),
    );
}

/// A receive into `in`: the root of a gather has an input of m elements, so the
/// region is in bounds and the only fault is writing the input. Sbt gather on
/// hypercube:3 from root 0: the root receives node 1's block in step 0.
#[test]
fn writes_input_by_a_receive() {
    let topo = cube(3);
    let c = Collective::Gather { root: 0 };
    let (mut progs, steps) = programs(&topo, c, M, "sbt", 1);
    check(&topo, c, M, true, &progs, steps, Strictness::default()).unwrap();
    let op = op_mut(&mut progs, 0, 0, is_recv_from(1));
    assert_eq!(*op, Op::recv(1, out(M, M)), "the root gets block 1 first");
    *op = Op::recv(1, inp(0, M));
    assert_violation(
        check(&topo, c, M, true, &progs, steps, Strictness::default()),
        ViolationKind::WritesInput,
        Some(0),
        0,
        Some(1),
        Some(inp(0, M)),
    );
}

#[test]
fn writes_input_by_a_local_op() {
    let (topo, c, mut progs, steps) = broadcast();
    *op_mut(&mut progs, 0, 0, is_local) = Op::copy(out(0, M), inp(0, M));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::WritesInput,
        Some(0),
        0,
        None,
        Some(inp(0, M)),
    );
}

/// Forwarding before receiving: node 3 receives in step 1 and forwards to 7 in step 2;
/// moved to step 0 it sends what it does not hold. (Moved one step earlier only, the
/// send would share step 1 with the receive of the same region: see `race_*`.)
#[test]
fn not_held() {
    let (topo, c, mut progs, steps) = broadcast();
    let send = take(&mut progs, 3, 2, is_send_to(7));
    progs[3].push(0, send);
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::NotHeld,
        Some(0),
        3,
        Some(7),
        Some(out(0, M)),
    );
}

#[test]
fn unmatched_send() {
    let (topo, c, mut progs, steps) = broadcast();
    take(&mut progs, 4, 2, is_recv_from(0));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::UnmatchedSend,
        Some(2),
        0,
        Some(4),
        None,
    );
}

#[test]
fn unmatched_recv() {
    let (topo, c, mut progs, steps) = broadcast();
    take(&mut progs, 0, 2, is_send_to(4));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::UnmatchedRecv,
        Some(2),
        4,
        Some(0),
        Some(out(0, M)),
    );
}

#[test]
fn size_mismatch_of_a_receive() {
    let (topo, c, mut progs, steps) = broadcast();
    *op_mut(&mut progs, 4, 2, is_recv_from(0)) = Op::recv(0, out(0, M - 1));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::SizeMismatch,
        Some(2),
        4,
        Some(0),
        Some(out(0, M - 1)),
    );
}

#[test]
fn size_mismatch_of_a_local_copy() {
    let (topo, c, mut progs, steps) = broadcast();
    *op_mut(&mut progs, 0, 0, is_local) = Op::copy(inp(0, M), out(0, M - 1));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::SizeMismatch,
        Some(0),
        0,
        None,
        Some(out(0, M - 1)),
    );
}

/// Node 2 receives in step 1 and forwards to 6 in step 2; moved one step earlier, its
/// send reads the region its receive of the same step writes.
fn send_moved_into_the_step_of_its_receive() -> Result<(), Violation> {
    let (topo, c, mut progs, steps) = broadcast();
    let send = take(&mut progs, 2, 2, is_send_to(6));
    progs[2].push(1, send);
    check_broadcast(&topo, c, &progs, steps)
}

#[test]
fn race_receive_overwrites_a_region_sent_in_the_same_step() {
    let v = send_moved_into_the_step_of_its_receive().expect_err("a race");
    assert_eq!(
        (v.kind, v.step, v.rank, v.region),
        (ViolationKind::Race, Some(1), 2, Some(out(0, M))),
        "got: {v}"
    );
}

/// A race names the receive's source whether the overlap is found at the receive or
/// at the send (it was a bug that a send sorting after the receive, same buffer and
/// offset, reported `peer: None`). Here node 2 receives out[0..4] from 0 and sends
/// out[0..4] to 6 in step 1: peer Some(0).
#[test]
fn race_names_the_peer_of_the_receive() {
    assert_violation(
        send_moved_into_the_step_of_its_receive(),
        ViolationKind::Race,
        Some(1),
        2,
        Some(0),
        Some(out(0, M)),
    );
}

/// The root's message to node 1 split in two; node 1 receives the halves into
/// out[0..2] and out[2..4] (fine), then the second into out[1..3], overlapping the
/// first receive of the same step.
fn two_messages_to_node_1() -> (Topology, Collective, Vec<Program>, usize) {
    let (topo, c, mut progs, steps) = broadcast();
    *op_mut(&mut progs, 0, 0, is_send_to(1)) = Op::send(1, inp(0, 2));
    progs[0].push(0, Op::send(1, inp(2, 2)));
    *op_mut(&mut progs, 1, 0, is_recv_from(0)) = Op::recv(0, out(0, 2));
    progs[1].push(0, Op::recv(0, out(2, 2)));
    check_broadcast(&topo, c, &progs, steps).unwrap();
    (topo, c, progs, steps)
}

#[test]
fn race_two_receives_into_one_region() {
    let (topo, c, mut progs, steps) = two_messages_to_node_1();
    *op_mut(&mut progs, 1, 0, |o| *o == Op::recv(0, out(2, 2))) = Op::recv(0, out(1, 2));
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::Race,
        Some(0),
        1,
        Some(0),
        Some(out(1, 2)),
    );
}

/// A combine in a collective that moves data without an operator.
#[test]
fn bad_combine_in_a_broadcast() {
    let (topo, c, mut progs, steps) = broadcast();
    if let Op::Recv { action, .. } = op_mut(&mut progs, 4, 2, is_recv_from(0)) {
        *action = Action::CombineLeft;
    }
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::BadCombine,
        Some(2),
        4,
        Some(0),
        Some(out(0, M)),
    );
}

// ---------------------------------------------------------------------------------
// Reductions, hand-written on hypercube:1 (2 nodes): step 0 each rank copies `in` to
// `out`; step 1 they exchange inputs and combine them into `out`.

const L: u64 = 3;

/// Two-node allreduce (or scan) with the given actions at ranks 0 and 1 in step 1; a
/// scan has rank 1 receive only.
fn two_nodes(c: Collective, act0: Action, act1: Action) -> Vec<Program> {
    let mut p0 = Program::new(0, 2);
    let mut p1 = Program::new(1, 2);
    p0.push(0, Op::copy(inp(0, L), out(0, L)));
    p1.push(0, Op::copy(inp(0, L), out(0, L)));
    p0.push(1, Op::send(1, inp(0, L)));
    p1.push(
        1,
        Op::Recv {
            from: 0,
            into: [out(0, L)].into_iter().collect(),
            action: act1,
        },
    );
    if c == Collective::Allreduce {
        p1.push(1, Op::send(0, inp(0, L)));
        p0.push(
            1,
            Op::Recv {
                from: 1,
                into: [out(0, L)].into_iter().collect(),
                action: act0,
            },
        );
    }
    vec![p0, p1]
}

fn check2(c: Collective, commutative: bool, progs: &[Program]) -> Result<(), Violation> {
    let steps = progs[0].steps.len();
    check(
        &cube(1),
        c,
        L,
        commutative,
        progs,
        steps,
        Strictness::default(),
    )
}

/// in_0 ⊕ in_1 at both ranks: rank 0 puts what it receives on the right, rank 1 on the
/// left. Right for a non-commutative operator.
#[test]
fn reduction_in_the_right_order_is_accepted_when_not_commutative() {
    let progs = two_nodes(
        Collective::Allreduce,
        Action::CombineRight,
        Action::CombineLeft,
    );
    check2(Collective::Allreduce, false, &progs).unwrap();
    check2(Collective::Allreduce, true, &progs).unwrap();
    let scan = two_nodes(Collective::Scan, Action::Place, Action::CombineLeft);
    check2(Collective::Scan, false, &scan).unwrap();
    check2(Collective::Scan, true, &scan).unwrap();
}

/// Rank 1 computes in_1 ⊕ in_0: wrong unless the operator commutes.
#[test]
fn reduction_in_the_wrong_order_is_a_post_condition_violation_unless_commutative() {
    let progs = two_nodes(
        Collective::Allreduce,
        Action::CombineRight,
        Action::CombineRight,
    );
    check2(Collective::Allreduce, true, &progs).unwrap();
    assert_violation(
        check2(Collective::Allreduce, false, &progs),
        ViolationKind::PostCondition,
        None,
        1,
        None,
        Some(out(0, L)),
    );
    // Rank 0 wrong instead (in_1 ⊕ in_0 by combining on the left).
    let progs = two_nodes(
        Collective::Allreduce,
        Action::CombineLeft,
        Action::CombineLeft,
    );
    check2(Collective::Allreduce, true, &progs).unwrap();
    assert_violation(
        check2(Collective::Allreduce, false, &progs),
        ViolationKind::PostCondition,
        None,
        0,
        None,
        Some(out(0, L)),
    );
    let scan = two_nodes(Collective::Scan, Action::Place, Action::CombineRight);
    check2(Collective::Scan, true, &scan).unwrap();
    assert_violation(
        check2(Collective::Scan, false, &scan),
        ViolationKind::PostCondition,
        None,
        1,
        None,
        Some(out(0, L)),
    );
}

/// Rank 1 sends its input again in a third step and rank 0 combines it a second time.
#[test]
fn bad_combine_same_contribution_twice() {
    let mut progs = two_nodes(
        Collective::Allreduce,
        Action::CombineRight,
        Action::CombineLeft,
    );
    for p in &mut progs {
        p.steps.push(Step::default());
    }
    progs[1].push(2, Op::send(0, inp(0, L)));
    progs[0].push(
        2,
        Op::Recv {
            from: 1,
            into: [out(0, L)].into_iter().collect(),
            action: Action::CombineRight,
        },
    );
    for commutative in [true, false] {
        let v = assert_violation(
            check2(Collective::Allreduce, commutative, &progs),
            ViolationKind::BadCombine,
            Some(2),
            0,
            Some(1),
            Some(out(0, L)),
        );
        assert!(v.detail.contains("twice"), "{v}");
    }
}

/// Element i of in_1 combined into element i − 1 of rank 0's vector.
#[test]
fn bad_combine_misaligned() {
    let mut progs = two_nodes(
        Collective::Allreduce,
        Action::CombineRight,
        Action::CombineLeft,
    );
    *op_mut(&mut progs, 1, 1, is_send_to(0)) = Op::send(0, inp(1, L - 1));
    *op_mut(&mut progs, 0, 1, is_recv_from(1)) = Op::Recv {
        from: 1,
        into: [out(0, L - 1)].into_iter().collect(),
        action: Action::CombineRight,
    };
    assert_violation(
        check2(Collective::Allreduce, true, &progs),
        ViolationKind::BadCombine,
        Some(1),
        0,
        Some(1),
        Some(out(0, L - 1)),
    );
}

/// Rank 0 combines into an `out` it never wrote (its copy of `in` removed).
#[test]
fn bad_combine_into_unset_data() {
    let mut progs = two_nodes(
        Collective::Allreduce,
        Action::CombineRight,
        Action::CombineLeft,
    );
    take(&mut progs, 0, 0, is_local);
    assert_violation(
        check2(Collective::Allreduce, true, &progs),
        ViolationKind::BadCombine,
        Some(1),
        0,
        Some(1),
        Some(out(0, L)),
    );
}

// ---------------------------------------------------------------------------------
// Port and duplex rules (only when asked for).

/// The pipelined sbt broadcast (ν = 2) on hypercube:3: the root multicasts packet 0 to
/// its children 1, 2, 4 in step 0 — three messages, fine under all ports, a violation
/// under one port.
#[test]
fn port_rule_single_port_forbids_the_multicast() {
    let topo = cube(3);
    let c = Collective::Broadcast { root: 0 };
    let (progs, steps) = programs(&topo, c, M, "sbt", 2);
    assert!(
        progs[0].steps[0]
            .ops
            .contains(&Op::multicast([1, 2, 4], inp(0, 2))),
        "{:?}",
        progs[0]
    );
    check_broadcast(&topo, c, &progs, steps).unwrap();
    let all = Strictness {
        ports: Some(Ports::All),
        duplex: None,
        host_ports: None,
    };
    check(&topo, c, M, true, &progs, steps, all).unwrap();
    let one = Strictness {
        ports: Some(Ports::One),
        duplex: None,
        host_ports: None,
    };
    assert_violation(
        check(&topo, c, M, true, &progs, steps, one),
        ViolationKind::PortRule,
        Some(0),
        0,
        Some(2),
        None,
    );
}

/// Two messages on the link 0 → 1 in one step break the all-ports rule.
#[test]
fn port_rule_all_ports_forbids_two_messages_on_one_link() {
    let (topo, c, progs, steps) = two_messages_to_node_1();
    let all = Strictness {
        ports: Some(Ports::All),
        duplex: None,
        host_ports: None,
    };
    assert_violation(
        check(&topo, c, M, true, &progs, steps, all),
        ViolationKind::PortRule,
        Some(0),
        0,
        Some(1),
        None,
    );
}

/// In the pipelined broadcast node 1 (depth 1) receives packet 1 from the root and
/// passes packet 0 on in step 1.
#[test]
fn duplex_rule_half_duplex_forbids_sending_while_receiving() {
    let topo = cube(3);
    let c = Collective::Broadcast { root: 0 };
    let (progs, steps) = programs(&topo, c, M, "sbt", 2);
    let half = Strictness {
        ports: None,
        duplex: Some(Duplex::Half),
        host_ports: None,
    };
    assert_violation(
        check(&topo, c, M, true, &progs, steps, half),
        ViolationKind::DuplexRule,
        Some(1),
        1,
        Some(0),
        None,
    );
}

/// The algorithm files claim the unpipelined sbt broadcast, the sbt scatter and gather
/// never send twice nor send and receive in one step ("under every port and duplex
/// rule"): they pass the strictest rules, every root, n ≤ 6.
#[test]
fn unpipelined_trees_obey_single_port_and_half_duplex() {
    let strict = Strictness {
        ports: Some(Ports::One),
        duplex: Some(Duplex::Half),
        host_ports: None,
    };
    for n in 0..=6 {
        let topo = cube(n);
        for root in 0..topo.nodes() {
            for op in [OpKind::Broadcast, OpKind::Scatter, OpKind::Gather] {
                let c = Collective::new(op, topo.nodes(), Some(root as u64), None, None).unwrap();
                let (progs, steps) = programs(&topo, c, 5, "sbt", 1);
                if let Err(v) = check(&topo, c, 5, true, &progs, steps, strict) {
                    panic!("{op} sbt on {topo} from {root}: {v}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Wrong final data.

/// Sbt scatter on hypercube:3 from root 0, m = 2: the root first sends node 4 the far
/// half (blocks 4..8 = in[8..16]). Swapping blocks 4 and 5 in that message gives node
/// 4 block 5 (and node 5 block 4); nodes 0..3 are right, so node 4 is the first wrong.
#[test]
fn post_condition_swapped_blocks_of_a_scatter() {
    let topo = cube(3);
    let c = Collective::Scatter { root: 0 };
    let m = 2;
    let (mut progs, steps) = programs(&topo, c, m, "sbt", 1);
    check(&topo, c, m, true, &progs, steps, Strictness::default()).unwrap();
    let send = op_mut(&mut progs, 0, 0, is_send_to(4));
    assert_eq!(
        *send,
        Op::send(4, inp(8, 8)),
        "the root sends the far half first"
    );
    *send = Op::Send {
        to: [4].into_iter().collect(),
        from: [inp(10, 2), inp(8, 2), inp(12, 4)].into_iter().collect(),
    };
    let v = assert_violation(
        check(&topo, c, m, true, &progs, steps, Strictness::default()),
        ViolationKind::PostCondition,
        None,
        4,
        None,
        Some(out(0, m)),
    );
    // out[0] of node 4 holds element 10 of the root's input (block 5) instead of 8.
    assert!(
        v.detail.contains("element 10") && v.detail.contains("element 8"),
        "{v}"
    );
}

#[test]
fn post_condition_root_drops_its_own_block() {
    let topo = cube(3);
    let c = Collective::Scatter { root: 0 };
    let (mut progs, steps) = programs(&topo, c, 2, "sbt", 1);
    take(&mut progs, 0, 0, is_local);
    let v = assert_violation(
        check(&topo, c, 2, true, &progs, steps, Strictness::default()),
        ViolationKind::PostCondition,
        None,
        0,
        None,
        Some(out(0, 2)),
    );
    assert!(v.detail.contains("never written"), "{v}");
}

// ---------------------------------------------------------------------------------
// Malformed programs.

#[test]
fn malformed_program_with_too_few_steps() {
    let (topo, c, mut progs, steps) = broadcast();
    progs[5].steps.pop();
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::MalformedProgram,
        None,
        5,
        None,
        None,
    );
}

#[test]
fn malformed_program_labelled_with_another_rank() {
    let (topo, c, mut progs, steps) = broadcast();
    progs.swap(2, 3);
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::MalformedProgram,
        None,
        2,
        None,
        None,
    );
}

#[test]
fn malformed_program_missing() {
    let (topo, c, mut progs, steps) = broadcast();
    progs.pop();
    assert_violation(
        check_broadcast(&topo, c, &progs, steps),
        ViolationKind::MalformedProgram,
        None,
        7,
        None,
        None,
    );
}

/// A malformed program is a fault of the whole program, found in the headers before
/// any step runs: its message names the program (it said "after the last step").
#[test]
fn malformed_program_messages_name_the_program() {
    let (topo, c, progs, steps) = broadcast();
    let message = |edit: &dyn Fn(&mut Vec<Program>)| {
        let mut p = progs.clone();
        edit(&mut p);
        check_broadcast(&topo, c, &p, steps)
            .expect_err("malformed")
            .to_string()
    };
    assert_eq!(
        message(&|p| drop(p[5].steps.pop())),
        "program 5: MalformedProgram: 2 steps, the schedule has 3"
    );
    assert_eq!(
        message(&|p| p.swap(2, 3)),
        "program 2: MalformedProgram: program 2 is labelled rank 3"
    );
    assert_eq!(
        message(&|p| drop(p.pop())),
        "program 7: MalformedProgram: 7 programs for 8 nodes"
    );
}

/// What does not parse is an error with the JSON path, not a violation.
#[test]
fn unparsable_document_names_the_json_path() {
    let (topo, c, progs, steps) = broadcast();
    let mat = hypercomm::schedule::Materialized {
        nodes: 8,
        steps,
        programs: progs,
    };
    let doc = Document::new(topo, c, M, Some("sbt"), true, &mat);
    let mut json: serde_json::Value = serde_json::from_str(&doc.to_json()).unwrap();
    json["programs"][1]["steps"][0][0]["recv"]["from"] = "zero".into();
    match Document::parse(&json.to_string()) {
        Err(Error::MalformedSchedule { path, .. }) => {
            assert_eq!(path, "programs[1].steps[0][0].recv.from")
        }
        other => panic!("{other:?}"),
    }
    // A peer out of range parses, and is the verifier's business.
    json["programs"][1]["steps"][0][0]["recv"]["from"] = 9.into();
    let doc = Document::parse(&json.to_string()).unwrap();
    let problem = Problem {
        topology: &doc.topology,
        collective: doc.collective,
        len: doc.len,
        commutative: doc.commutative,
        counts: None,
    };
    assert_violation(
        verify_programs(problem, &doc.programs, doc.steps, Strictness::default()),
        ViolationKind::PeerOutOfRange,
        Some(0),
        1,
        Some(9),
        None,
    );
}

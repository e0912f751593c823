//! The network layer (issue 16): every topology string parses and prints itself, its
//! distances and paths agree with a breadth-first search over its links, every
//! collective's fitting algorithms verify on it, the shared media are priced and (with
//! `--strict`) checked as resources, half-link duplex gives seed 000's three facts, and
//! the lower bounds never exceed a verified schedule.

use std::collections::VecDeque;

use hypercomm::algorithms::{self, Packets, Params};
use hypercomm::bounds::lower_bound;
use hypercomm::collective::{Collective, OpKind};
use hypercomm::cost::model::{Duplex, Model, Ports, Timing};
use hypercomm::cost::simulate;
use hypercomm::error::Error;
use hypercomm::schedule::{Buf, Op, Program, Region, Step};
use hypercomm::topology::Topology;
use hypercomm::verify::{verify, verify_programs, Problem, Strictness, ViolationKind};

/// Every family, small, with its node count.
const TOPOLOGIES: &[(&str, u32)] = &[
    ("ring:1", 1),
    ("ring:2", 2),
    ("ring:5", 5),
    ("ring:6", 6),
    ("path:4", 4),
    ("torus:3x4", 12),
    ("torus:2x2x2", 8),
    ("mesh:3x3", 9),
    ("ghc:3x4", 12),
    ("ring:5*complete:3", 15),
    ("torus:2x2*hypercube:2", 16),
    ("hypercube:3", 8),
    ("complete:5", 5),
    ("bus:6", 6),
    ("shm:6,2", 6),
    ("switch:5", 5),
    ("hypercube:3+host", 9),
    ("hypercube:3+host@0,5", 9),
    ("torus:3x3+host", 10),
    ("ring:6+host@2", 7),
    ("bus:4+host", 5),
];

fn topo(s: &str) -> Topology {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn bfs(t: &Topology, a: u32) -> Vec<u32> {
    let k = t.nodes();
    let mut dist = vec![u32::MAX; k as usize];
    dist[a as usize] = 0;
    let mut q = VecDeque::from([a]);
    while let Some(x) = q.pop_front() {
        for y in 0..k {
            if t.are_linked(x, y) && dist[y as usize] == u32::MAX {
                dist[y as usize] = dist[x as usize] + 1;
                q.push_back(y);
            }
        }
    }
    dist
}

#[test]
fn every_topology_parses_prints_and_counts_its_nodes() {
    for &(s, nodes) in TOPOLOGIES {
        let t = topo(s);
        assert_eq!(t.nodes(), nodes, "{s}");
        assert_eq!(t.to_string(), s, "{s} prints itself");
        assert_eq!(topo(&t.to_string()), t, "{s} round trip");
    }
    // Other spellings of the same machines print canonically.
    for (given, canonical) in [
        ("cube:2", "hypercube:2"),
        ("ring:3*ring:4", "torus:3x4"),
        ("complete:3*complete:4", "ghc:3x4"),
        ("path:3*path:3", "mesh:3x3"),
        (" torus:3X4 ", "torus:3x4"),
    ] {
        assert_eq!(topo(given).to_string(), canonical);
    }
    // Products whose factors are edges are hypercubes, with the labels' bits as
    // coordinates.
    assert_eq!(topo("torus:2x2x2").cube().map(|h| h.dim()), Some(3));
    assert_eq!(topo("ghc:4x2").cube().map(|h| h.dim()), Some(3));
    assert_eq!(topo("torus:4x4").cube(), None);
    assert_eq!(topo("hypercube:3+host").cube(), None);
}

#[test]
fn bad_topologies_are_errors_naming_the_problem() {
    for (s, says) in [
        ("ring:0", "no node"),
        ("torus:4", "two or more dimensions"),
        ("mesh:3x1", "one node"),
        ("shm:8,0", "1..=8"),
        ("shm:8,9", "1..=8"),
        ("shm:8", "shm needs K,S"),
        ("hypercube:3+host@9", "node 9, which does not exist"),
        ("hypercube:3+host@2,2", "twice"),
        ("torus:4096x4096x2", "at most 16777216"),
        ("ring:abc", "not a node count"),
        ("hypercube:25", "0..=24"),
        ("complete:0", "no node"),
        ("bus:0", "1..=16777216"),
    ] {
        let e = s.parse::<Topology>().unwrap_err();
        assert!(matches!(e, Error::TopologyOutOfRange { .. }), "{s}: {e:?}");
        assert!(
            e.to_string().contains(says),
            "{s}: `{e}` should say `{says}`"
        );
    }
    for s in ["foo:3", "ring", "ring:3+hots", "ring:3*bus:2"] {
        let e = s.parse::<Topology>().unwrap_err();
        assert!(
            e.to_string().contains("torus:AxB"),
            "{s}: `{e}` should list the valid forms"
        );
    }
}

/// Distances, eccentricities, the diameter, the total distance and every shortest path
/// agree with a breadth-first search over `are_linked`; the degree bounds the
/// neighbours, which are exactly the linked nodes.
#[test]
fn structure_matches_breadth_first_search() {
    for &(s, _) in TOPOLOGIES {
        let t = topo(s);
        let k = t.nodes();
        let mut diameter = 0;
        let mut total = 0u64;
        for a in 0..k {
            let d = bfs(&t, a);
            let linked: Vec<u32> = (0..k).filter(|&b| t.are_linked(a, b)).collect();
            assert_eq!(t.neighbors(a), linked, "{s}: neighbours of {a}");
            assert!(linked.len() as u32 <= t.degree(), "{s}: degree");
            for b in 0..k {
                assert_eq!(t.distance(a, b), d[b as usize], "{s}: d({a}, {b})");
                let p = t.shortest_path(a, b);
                assert_eq!(p.len() as u32, d[b as usize] + 1, "{s}: path {a}→{b} {p:?}");
                assert_eq!((p[0], *p.last().unwrap()), (a, b));
                assert!(p.windows(2).all(|w| t.are_linked(w[0], w[1])), "{s}: {p:?}");
                total += d[b as usize] as u64;
            }
            let ecc = *d.iter().max().unwrap();
            assert_eq!(t.eccentricity(a), ecc, "{s}: eccentricity of {a}");
            diameter = diameter.max(ecc);
            if let Some(st) = t.status(a) {
                assert_eq!(st, d.iter().map(|&x| x as u64).sum::<u64>(), "{s}: status");
            }
        }
        assert_eq!(t.diameter(), diameter, "{s}: diameter");
        assert_eq!(t.total_distance(), Some(total), "{s}: total distance");
    }
}

fn problem(t: &Topology, c: Collective, len: u64) -> Problem<'_> {
    Problem {
        topology: t,
        collective: c,
        len,
        commutative: true,
        counts: None,
    }
}

/// The collectives of `op` on `t`, one per root (or per source).
fn instances(t: &Topology, op: OpKind) -> Vec<Collective> {
    let k = t.nodes();
    match op {
        OpKind::P2p => (0..k)
            .flat_map(|a| [0, k - 1, (a + 3) % k].map(move |b| Collective::P2p { src: a, dst: b }))
            .collect(),
        _ if op.has_root() => (0..k)
            .map(|r| Collective::new(op, k, Some(r as u64), None, None).unwrap())
            .collect(),
        _ => vec![Collective::new(op, k, None, None, None).unwrap()],
    }
}

fn models() -> Vec<Model> {
    let base = Model::new(1.5, 0.03).unwrap();
    let mut v = Vec::new();
    for ports in [Ports::All, Ports::One, "2,1".parse().unwrap()] {
        for duplex in [Duplex::Full, Duplex::Half, Duplex::HalfLink] {
            v.push(Model {
                ports,
                duplex,
                ..base
            });
        }
    }
    v.push(Model {
        timing: Timing::Async,
        ..base
    });
    v
}

/// On every topology, every collective's fitting algorithms (`direct` everywhere, the
/// any-rank-count algorithms on the media, the cube's on products of edges) verify for
/// every root, and their time is at least the lower bound under every model; exact
/// closed forms equal the simulator.
#[test]
fn fitting_algorithms_verify_and_respect_the_bounds() {
    let mut runs = 0;
    for &(s, _) in TOPOLOGIES {
        let t = topo(s);
        for op in OpKind::ALL.iter().copied() {
            // SSA as published is meant to fail (the harness checks it is caught).
            for algo in algorithms::fitting(&t, op)
                .into_iter()
                .filter(|a| a.published_flaw().is_none())
            {
                for c in instances(&t, op) {
                    for len in [0, 1, 7] {
                        let p = problem(&t, c, len);
                        for model in models() {
                            let params = Params {
                                packets: Packets::Opt,
                                model,
                            };
                            let sched = match algo.build(&p, &params) {
                                Ok(sc) => sc,
                                Err(e) => panic!("{s} {op} {}: {e}", algo.name),
                            };
                            verify(p, sched.as_ref(), Strictness::default())
                                .unwrap_or_else(|v| panic!("{s} {op} {} {c:?}: {v}", algo.name));
                            let time = simulate(&t, sched.as_ref(), &model).time;
                            if let Some(lb) = lower_bound(&t, &c, len, &model) {
                                assert!(
                                    lb <= time + 1e-9 * time.max(1.0),
                                    "{s} {op} {} {c:?} m={len} {model:?}: bound {lb} > time {time}",
                                    algo.name
                                );
                            }
                            // Closed forms are stated for rounds timing (as the harness
                            // checks them).
                            let forms = if model.timing == Timing::Rounds {
                                algo.formulas(&p, &params)
                            } else {
                                vec![]
                            };
                            for f in forms {
                                assert!(
                                    f.holds_for(time),
                                    "{s} {op} {} {c:?} m={len} {model:?}: {} = {} vs {time}",
                                    algo.name,
                                    f.expr,
                                    f.value
                                );
                            }
                            runs += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(runs > 5000, "{runs} runs");
}

fn linear_broadcast(t: &Topology, len: u64) -> Box<dyn hypercomm::schedule::Schedule> {
    let c = Collective::Broadcast { root: 0 };
    algorithms::find(OpKind::Broadcast, "linear")
        .unwrap()
        .build(&problem(t, c, len), &Params::packets(1))
        .unwrap()
}

/// A bus carries one transfer at a time: the linear broadcast's k − 1 sends and the
/// binomial tree's k − 1 sends cost the same, k − 1 transfers; a shared memory of S
/// accesses takes a write and a read per move; a switch prices a node's messages one
/// after another whatever `--ports` says.
#[test]
fn media_are_priced_as_shared_resources() {
    let model = Model::new(1.0, 0.5).unwrap();
    let one = model.net.transfer(10);
    let bus = topo("bus:8");
    assert_eq!(
        simulate(&bus, linear_broadcast(&bus, 10).as_ref(), &model).time,
        7.0 * one
    );
    let c = Collective::Broadcast { root: 0 };
    let binomial = algorithms::find(OpKind::Broadcast, "binomial")
        .unwrap()
        .build(&problem(&bus, c, 10), &Params::packets(1))
        .unwrap();
    assert_eq!(simulate(&bus, binomial.as_ref(), &model).time, 7.0 * one);
    // Shared memory: each step of the linear broadcast is a write and then a read.
    let shm = topo("shm:8,2");
    assert_eq!(
        simulate(&shm, linear_broadcast(&shm, 10).as_ref(), &model).time,
        14.0 * one
    );
    // The binomial tree's last step has 4 writes and 4 reads: ⌈4/2⌉ rounds each, and
    // with S = 8 one each.
    let s = |t: &Topology| {
        let sched = algorithms::find(OpKind::Broadcast, "binomial")
            .unwrap()
            .build(&problem(t, c, 10), &Params::packets(1))
            .unwrap();
        simulate(t, sched.as_ref(), &model).time
    };
    assert_eq!(s(&shm), (2.0 + 2.0 + 4.0) * one);
    assert_eq!(s(&topo("shm:8,8")), 6.0 * one);
    // A switch: the linear all-to-all's single step sends k − 1 messages per node,
    // which a crossbar serialises even under --ports all.
    let sw = topo("switch:5");
    let a2a = algorithms::find(OpKind::Alltoall, "linear")
        .unwrap()
        .build(&problem(&sw, Collective::Alltoall, 10), &Params::packets(1))
        .unwrap();
    assert_eq!(simulate(&sw, a2a.as_ref(), &model).time, 4.0 * one);
    let k5 = topo("complete:5");
    let a2a_k = algorithms::find(OpKind::Alltoall, "linear")
        .unwrap()
        .build(&problem(&k5, Collective::Alltoall, 10), &Params::packets(1))
        .unwrap();
    assert_eq!(simulate(&k5, a2a_k.as_ref(), &model).time, one);
}

fn strict(model: &Model) -> Strictness {
    Strictness::of(model)
}

/// `--strict` names each broken capacity: two transfers on a bus, S + 1 accesses to a
/// shared memory, a processor's second access, a switch round that is not a partial
/// permutation, a node reading from both ring neighbours under the ring rule, and an
/// exchange across a half-link.
#[test]
fn strict_names_each_broken_capacity() {
    let model = Model::default();
    let c = Collective::Broadcast { root: 0 };
    let build = |t: &Topology, op: OpKind, name: &str, c: Collective| {
        algorithms::find(op, name)
            .unwrap()
            .build(&problem(t, c, 4), &Params::packets(1))
            .unwrap()
    };
    // Bus: the binomial tree's step 1 has two transfers.
    let bus = topo("bus:4");
    let v = verify(
        problem(&bus, c, 4),
        build(&bus, OpKind::Broadcast, "binomial", c).as_ref(),
        strict(&model),
    )
    .unwrap_err();
    assert_eq!((v.kind, v.step), (ViolationKind::Capacity, Some(1)), "{v}");
    assert!(v.detail.contains("bus"), "{v}");
    // The linear broadcast keeps to one transfer per step.
    verify(
        problem(&bus, c, 4),
        linear_broadcast(&bus, 4).as_ref(),
        strict(&model),
    )
    .unwrap();
    // Shared memory with S = 1: two writes in the binomial tree's step 1.
    let shm = topo("shm:4,1");
    let v = verify(
        problem(&shm, c, 4),
        build(&shm, OpKind::Broadcast, "binomial", c).as_ref(),
        strict(&model),
    )
    .unwrap_err();
    assert_eq!((v.kind, v.step), (ViolationKind::Capacity, Some(1)), "{v}");
    assert!(v.detail.contains("S = k* = 1"), "{v}");
    // With S = 2 it fits; the all-to-all's one step has 4 writes by each processor.
    let shm2 = topo("shm:4,2");
    verify(
        problem(&shm2, c, 4),
        build(&shm2, OpKind::Broadcast, "binomial", c).as_ref(),
        strict(&model),
    )
    .unwrap();
    let a = Collective::Alltoall;
    let v = verify(
        problem(&shm2, a, 4),
        build(&shm2, OpKind::Alltoall, "linear", a).as_ref(),
        strict(&model),
    )
    .unwrap_err();
    assert_eq!(v.kind, ViolationKind::Capacity, "{v}");
    assert!(v.detail.contains("one access"), "{v}");
    // Switch: a node sending three messages in one step, even under --ports all.
    let sw = topo("switch:4");
    let v = verify(
        problem(&sw, a, 4),
        build(&sw, OpKind::Alltoall, "linear", a).as_ref(),
        strict(&model),
    )
    .unwrap_err();
    assert_eq!(v.kind, ViolationKind::PortRule, "{v}");
    assert!(v.detail.contains("switch"), "{v}");
    // The ring rule (--ports 2,1): node 1 of ring:3 receives from both neighbours.
    let ring = topo("ring:3");
    let g = Collective::Gather { root: 1 };
    let m = 4;
    let out = |b: u64| Region::new(Buf::Out, b * m, m);
    let inp = Region::new(Buf::In, 0, m);
    let progs = vec![
        Program {
            rank: 0,
            tmp_len: 0,
            steps: vec![Step {
                ops: vec![Op::send(1, inp)],
            }],
        },
        Program {
            rank: 1,
            tmp_len: 0,
            steps: vec![Step {
                ops: vec![
                    Op::recv(0, out(0)),
                    Op::recv(2, out(2)),
                    Op::copy(inp, out(1)),
                ],
            }],
        },
        Program {
            rank: 2,
            tmp_len: 0,
            steps: vec![Step {
                ops: vec![Op::send(1, inp)],
            }],
        },
    ];
    verify_programs(problem(&ring, g, m), &progs, 1, Strictness::default()).unwrap();
    let ring_rule = Model {
        ports: "2,1".parse().unwrap(),
        ..model
    };
    let v = verify_programs(problem(&ring, g, m), &progs, 1, strict(&ring_rule)).unwrap_err();
    assert_eq!((v.kind, v.rank), (ViolationKind::PortRule, 1), "{v}");
    assert!(
        v.detail.contains("receives 2 messages") && v.detail.contains("--ports 2,1"),
        "{v}"
    );
    // Half-link duplex: the dimension exchange sends and receives on one link.
    let cube = topo("hypercube:2");
    let half_link = Model {
        duplex: Duplex::HalfLink,
        ..model
    };
    let ag = Collective::Allgather;
    let v = verify(
        problem(&cube, ag, 4),
        build(&cube, OpKind::Allgather, "dimension-exchange", ag).as_ref(),
        strict(&half_link),
    )
    .unwrap_err();
    assert_eq!(v.kind, ViolationKind::DuplexRule, "{v}");
    assert!(v.detail.contains("half-link"), "{v}");
    // The host's own rule (--host-ports): a host sending to both PEs of hypercube:1+host
    // in one step breaks the default one-port host even under --ports all, and fits
    // --host-ports all; a PE keeps the node rule.
    let hosted = topo("hypercube:1+host");
    let d = Collective::Download;
    let block = |b: u64| Region::new(Buf::In, b * m, m);
    let pe = |rank: u32| Program {
        rank,
        tmp_len: 0,
        steps: vec![Step {
            ops: vec![Op::recv(2, Region::new(Buf::Out, 0, m))],
        }],
    };
    let progs = vec![
        pe(0),
        pe(1),
        Program {
            rank: 2,
            tmp_len: 0,
            steps: vec![Step {
                ops: vec![Op::send(0, block(0)), Op::send(1, block(1))],
            }],
        },
    ];
    let all_ports = Model {
        ports: Ports::All,
        ..model
    };
    verify_programs(problem(&hosted, d, m), &progs, 1, Strictness::default()).unwrap();
    let v = verify_programs(problem(&hosted, d, m), &progs, 1, strict(&all_ports)).unwrap_err();
    assert_eq!((v.kind, v.rank), (ViolationKind::PortRule, 2), "{v}");
    assert!(v.detail.contains("--host-ports one"), "{v}");
    let all_host = Model {
        host_ports: Ports::All,
        ..all_ports
    };
    verify_programs(problem(&hosted, d, m), &progs, 1, strict(&all_host)).unwrap();
    // The PEs' one-port rule holds (each receives one message) with the host's all.
    let one_port = Model {
        ports: Ports::One,
        ..all_host
    };
    let v = verify_programs(problem(&hosted, d, m), &progs, 1, strict(&one_port));
    assert!(v.is_ok(), "each PE receives one message: {v:?}");
}

/// Seed 000 §4.3 under half-duplex links: the daisy chain costs (2^n − 1)(β + mτ) (each
/// link one way), a pipelined spanning-tree broadcast what it costs under full duplex,
/// and an exchange across one link two transfers.
#[test]
fn half_link_duplex_gives_the_three_hypercube_facts() {
    let full = Model::new(1.5, 0.25).unwrap();
    let half_link = Model {
        duplex: Duplex::HalfLink,
        ..full
    };
    for n in 2..=5 {
        let t = topo(&format!("hypercube:{n}"));
        let m = 12;
        let time = |op: OpKind, name: &str, c: Collective, packets: u64, model: &Model| {
            let s = algorithms::find(op, name)
                .unwrap()
                .build(&problem(&t, c, m), &Params::packets(packets))
                .unwrap();
            simulate(&t, s.as_ref(), model).time
        };
        let ag = Collective::Allgather;
        let one = full.net.transfer(m);
        assert_eq!(
            time(OpKind::Allgather, "daisy-chain", ag, 1, &half_link),
            ((1u64 << n) - 1) as f64 * one
        );
        let b = Collective::Broadcast { root: 1 };
        for packets in [1, 3, 4] {
            assert_eq!(
                time(OpKind::Broadcast, "sbt", b, packets, &half_link),
                time(OpKind::Broadcast, "sbt", b, packets, &full),
                "n = {n}, ν = {packets}"
            );
        }
        // The all-reduce's every step is an exchange of the whole vector.
        let ar = Collective::Allreduce;
        assert_eq!(
            time(OpKind::Allreduce, "dimension-exchange", ar, 1, &half_link),
            n as f64 * 2.0 * one
        );
        assert_eq!(
            time(OpKind::Allreduce, "dimension-exchange", ar, 1, &full),
            n as f64 * one
        );
    }
}

/// `--packets opt` picks the best ν under the model in force: the case, SBT on
/// hypercube:10 under one port, where the all-port formula's ν = 2 costs 2791.5 and
/// ν = 1 costs 486.
#[test]
fn packets_opt_minimises_the_time_under_the_model() {
    let t = topo("hypercube:10");
    let model = Model {
        ports: Ports::One,
        ..Model::new(37.5, 0.3).unwrap()
    };
    let c = Collective::Broadcast { root: 0 };
    let sbt = algorithms::find(OpKind::Broadcast, "sbt").unwrap();
    let p = problem(&t, c, 37);
    let opt = Params {
        packets: Packets::Opt,
        model,
    };
    let s = sbt.build(&p, &opt).unwrap();
    let best = simulate(&t, s.as_ref(), &model).time;
    for nu in 1..=37 {
        let s = sbt
            .build(
                &p,
                &Params {
                    packets: Packets::Count(nu),
                    model,
                },
            )
            .unwrap();
        assert!(
            best <= simulate(&t, s.as_ref(), &model).time,
            "ν = {nu} beats opt"
        );
    }
    assert!(best <= 486.0 + 1e-9, "{best}");
}

/// Node-disjoint paths where the topology knows them: each runs from a to b over links
/// without repeating a node, no two share an inner node, and there are as many as the
/// smaller degree (Menger's bound) wherever every factor is a cycle, a complete graph
/// or a cube (the single-factor case, or nodes differing in one coordinate); never more.
#[test]
fn disjoint_paths_are_disjoint_and_as_many_as_the_degree() {
    let mut checked = 0;
    for s in [
        "ring:2",
        "ring:5",
        "ring:6",
        "path:4",
        "complete:5",
        "hypercube:3",
        "torus:3x4",
        "torus:2x2x2",
        "mesh:3x3",
        "ghc:3x4",
        "ring:5*complete:3",
        "torus:2x2*hypercube:2",
    ] {
        let t = topo(s);
        let regular = !s.contains("path") && !s.contains("mesh");
        for a in 0..t.nodes() {
            for b in 0..t.nodes() {
                let Some(paths) = t.disjoint_paths(a, b) else {
                    let (ca, cb) = (t.coords(a), t.coords(b));
                    let differ = ca.iter().zip(&cb).filter(|(x, y)| x != y).count();
                    assert!(differ >= 2, "{s}: none for {a} → {b}");
                    continue;
                };
                if a == b {
                    assert_eq!(paths, vec![vec![a]], "{s}");
                    continue;
                }
                let mut inner = std::collections::HashSet::new();
                for p in &paths {
                    assert_eq!((p[0], *p.last().unwrap()), (a, b), "{s}: {p:?}");
                    assert!(
                        p.windows(2).all(|w| t.are_linked(w[0], w[1])),
                        "{s}: {p:?} leaves the links"
                    );
                    for &x in &p[1..p.len() - 1] {
                        assert!(inner.insert(x), "{s}: {a} → {b}: {x} twice in {paths:?}");
                    }
                    assert!(!inner.contains(&a) && !inner.contains(&b), "{s}: {p:?}");
                }
                let most = t.neighbors(a).len().min(t.neighbors(b).len());
                assert!(paths.len() <= most, "{s}: {a} → {b}: {paths:?}");
                if regular {
                    assert_eq!(paths.len(), most, "{s}: {a} → {b}: {paths:?}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 400, "{checked}");
}

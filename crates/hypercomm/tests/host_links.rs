//! The IR and the cost model with a host processor (seed 003, Gichev §2): links of the
//! host class are priced with β_h, τ_h, the others with β, τ.

use hypercomm::cost::model::LinkCost;
use hypercomm::prelude::*;
use hypercomm::schedule::{Materialized, Program};

/// Gichev §3.1, Sequential Loading: the host sends every PE its block, one per step.
fn sequential_loading(topo: &Topology, m: u64) -> Materialized {
    let host = topo.host().unwrap();
    let k = host; // PEs are 0..k
    let mut programs: Vec<Program> = (0..=host).map(|r| Program::new(r, k as usize)).collect();
    for pe in 0..k {
        programs[host as usize].push(
            pe as usize,
            Op::send(pe, Region::new(Buf::In, pe as u64 * m, m)),
        );
        programs[pe as usize].push(pe as usize, Op::recv(host, Region::new(Buf::Out, 0, m)));
    }
    programs[host as usize].push(
        0,
        Op::copy(
            Region::new(Buf::In, k as u64 * m, m),
            Region::new(Buf::Out, 0, m),
        ),
    );
    Materialized {
        nodes: host + 1,
        steps: k as usize,
        programs,
    }
}

#[test]
fn host_topology_parses_and_links_the_host_to_every_pe() {
    let topo: Topology = "hypercube:3+host".parse().unwrap();
    assert_eq!(topo.nodes(), 9);
    assert_eq!(topo.host(), Some(8));
    assert_eq!(topo.to_string(), "hypercube:3+host");
    for pe in 0..8 {
        assert!(topo.are_linked(8, pe) && topo.are_linked(pe, 8));
        assert_eq!(topo.link_class(8, pe), hypercomm::topology::LinkClass::Host);
    }
    assert!(topo.are_linked(0, 1) && !topo.are_linked(0, 3));
    assert_eq!(topo.link_class(0, 1), hypercomm::topology::LinkClass::Net);
}

#[test]
fn sequential_loading_verifies_and_is_priced_with_host_parameters() {
    let topo: Topology = "hypercube:3+host".parse().unwrap();
    let m = 10;
    let s = sequential_loading(&topo, m);
    let problem = Problem {
        topology: &topo,
        collective: Collective::Scatter { root: 8 },
        len: m,
        commutative: true,
        counts: None,
    };
    verify(
        problem,
        &s,
        Strictness {
            ports: Some(Ports::One),
            duplex: None,
            host_ports: None,
        },
    )
    .unwrap();
    let mut model = Model::new(1.0, 0.01).unwrap();
    model.host = LinkCost {
        beta: 6.5,
        tau: 0.008,
    }; // Gichev eq. (2.3), ms
    model.ports = Ports::One;
    let rep = simulate(&topo, &s, &model);
    // Gichev §3.1: T_d = k(β_h + (N/k)τ_h) with N/k = m.
    let expect = 8.0 * (6.5 + m as f64 * 0.008);
    assert!((rep.time - expect).abs() < 1e-9, "{} vs {expect}", rep.time);
    // The same schedule over PE-class links would cost k(β + mτ): the class matters.
    model.host = model.net;
    assert!((simulate(&topo, &s, &model).time - 8.0 * (1.0 + m as f64 * 0.01)).abs() < 1e-9);
}

#[test]
fn pe_algorithms_refuse_a_host_topology_with_a_reason() {
    let topo: Topology = "hypercube:2+host".parse().unwrap();
    let problem = Problem {
        topology: &topo,
        collective: Collective::Broadcast { root: 0 },
        len: 4,
        commutative: true,
        counts: None,
    };
    let err = hypercomm::algorithms::find(OpKind::Broadcast, "sbt")
        .unwrap()
        .build(&problem, &Params::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("host"), "{err}");
}

#[test]
fn complete_topology_runs_hypercube_algorithms_only_on_powers_of_two() {
    let topo: Topology = "complete:8".parse().unwrap();
    assert_eq!(topo.nodes(), 8);
    assert!(topo.are_linked(0, 7) && !topo.are_linked(3, 3));
    let problem = Problem {
        topology: &topo,
        collective: Collective::Scatter { root: 5 },
        len: 3,
        commutative: true,
        counts: None,
    };
    let s = hypercomm::algorithms::find(OpKind::Scatter, "sbt")
        .unwrap()
        .build(&problem, &Params::default())
        .unwrap();
    verify(problem, s.as_ref(), Strictness::default()).unwrap();
    let odd: Topology = "complete:6".parse().unwrap();
    let problem = Problem {
        topology: &odd,
        collective: Collective::Scatter { root: 0 },
        len: 3,
        commutative: true,
        counts: None,
    };
    let err = hypercomm::algorithms::find(OpKind::Scatter, "sbt")
        .unwrap()
        .build(&problem, &Params::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("power of two"), "{err}");
    assert!("complete:0".parse::<Topology>().is_err());
}

use hypercomm::algorithms::{self, Packets, Params};
use hypercomm::prelude::*;

#[test]
fn smoke_all_algorithms_small() {
    for n in 0..=4u32 {
        let topo: Topology = format!("hypercube:{n}").parse().unwrap();
        let k = topo.nodes();
        for a in algorithms::all() {
            for root in 0..k {
                for &m in &[0u64, 1, 7, 20] {
                    for packets in [
                        Packets::Count(1),
                        Packets::Count(3.min(m.max(1))),
                        Packets::Opt,
                    ] {
                        let c = Collective::new(
                            a.op,
                            k,
                            Some(root as u64),
                            Some(root as u64),
                            Some((k - 1 - root) as u64),
                        )
                        .unwrap();
                        let problem = Problem {
                            topology: &topo,
                            collective: c,
                            len: m,
                            commutative: true,
                        };
                        let params = Params {
                            packets: if a.pipelined {
                                packets
                            } else {
                                Packets::Count(1)
                            },
                            model: Model::default(),
                        };
                        let s = match a.build(&problem, &params) {
                            Ok(s) => s,
                            Err(Error::InvalidParameter {
                                what: "--packets", ..
                            }) => continue,
                            Err(e) => panic!("{e}"),
                        };
                        if let Err(v) = verify(problem, s.as_ref(), Strictness::default()) {
                            panic!("{a:?} n={n} root={root} m={m} {packets:?}: {v}");
                        }
                        let rep = simulate(&topo, s.as_ref(), &params.model);
                        for f in a.formulas(&problem, &params).iter().filter(|f| f.exact) {
                            assert!((f.value - rep.time).abs() < 1e-6 * f.value.max(1.0), "{a:?} n={n} root={root} m={m} {packets:?}: formula {} = {} vs sim {}", f.expr, f.value, rep.time);
                        }
                    }
                }
            }
        }
    }
}

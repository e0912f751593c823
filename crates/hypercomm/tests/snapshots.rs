//! Snapshots of small schedules' JSON documents and of violation messages. The
//! schedules were checked by hand against the papers (see the comment of each test);
//! a change to them must be deliberate (`cargo insta review`).

use hypercomm::algorithms::{self, Packets, Params};
use hypercomm::collective::Collective;
use hypercomm::cost::model::{Duplex, Model, Ports};
use hypercomm::schedule::json::Document;
use hypercomm::schedule::{materialize, Buf, Op, Program, Region};
use hypercomm::topology::Topology;
use hypercomm::verify::{verify, verify_programs, Problem, Strictness};

fn document(topo: &str, collective: Collective, len: u64, name: &str, packets: u64) -> Document {
    let topo: Topology = topo.parse().unwrap();
    let algo = algorithms::find(collective.kind(), name).unwrap();
    let problem = Problem {
        topology: &topo,
        collective,
        len,
        commutative: true,
        counts: None,
    };
    let params = Params {
        packets: Packets::Count(packets),
        model: Model::default(),
    };
    let s = algo.build(&problem, &params).unwrap();
    verify(problem, s.as_ref(), Strictness::default()).unwrap();
    Document::new(topo, collective, len, Some(name), true, s.as_ref())
}

/// Saad & Schultz §5 scatter from root 1 on the 2-cube, m = 2 (root's `in` = blocks
/// 0..4, 2 elements each). The tree crosses dimension 1 first (the far half): in step 0
/// root 1 sends blocks 2, 3 (`in[4..8]`) to node 3, which keeps them in `tmp` and copies
/// its own block 3 (`tmp[2..4]`) to `out`; in step 1 root 1 sends block 0 (`in[0..2]`)
/// to node 0 and node 3 sends block 2 (`tmp[0..2]`) to node 2; the root copies its own
/// block 1 (`in[2..4]`) in step 0.
#[test]
fn scatter_sbt_hypercube2_root1_len2() {
    let doc = document("hypercube:2", Collective::Scatter { root: 1 }, 2, "sbt", 1);
    insta::assert_snapshot!(doc.to_json());
}

/// Saad & Schultz §2 pipelined broadcast (Prop. 2.2) on the 2-cube, m = 5 in ν = 2
/// packets (3 + 2 elements): 3 steps. Root 0 multicasts packet 0 (`in[0..3]`) to its
/// children 1 and 2 in step 0 and packet 1 (`in[3..5]`) in step 1; node 1 (whose
/// child is 3) forwards packet 0 (`out[0..3]`) in step 1 and packet 1 (`out[3..5]`) in
/// step 2, when node 3 receives them; node 2 is a leaf.
#[test]
fn broadcast_sbt_pipelined_hypercube2_len5_packets2() {
    let doc = document(
        "hypercube:2",
        Collective::Broadcast { root: 0 },
        5,
        "sbt",
        2,
    );
    insta::assert_snapshot!(doc.to_json());
}

/// The messages of a few violations, on the unpipelined sbt broadcast of the 3-cube
/// from root 0 (m = 4) broken by hand, and of two port/duplex rules on the pipelined
/// one (ν = 2).
#[test]
fn violation_messages() {
    let topo: Topology = "hypercube:3".parse().unwrap();
    let c = Collective::Broadcast { root: 0 };
    let problem = Problem {
        topology: &topo,
        collective: c,
        len: 4,
        commutative: true,
        counts: None,
    };
    let algo = algorithms::find(c.kind(), "sbt").unwrap();
    let base = materialize(algo.build(&problem, &Params::packets(1)).unwrap().as_ref());
    let piped = materialize(algo.build(&problem, &Params::packets(2)).unwrap().as_ref());
    let out = |off, len| Region::new(Buf::Out, off, len);
    let edit = |f: &dyn Fn(&mut Vec<Program>)| {
        let mut p = base.programs.clone();
        f(&mut p);
        p
    };
    let cases: Vec<(&str, Vec<Program>, usize, Strictness)> = vec![
        (
            "no link: root sends to 3 instead of 1",
            edit(&|p| {
                for op in &mut p[0].steps[0].ops {
                    if matches!(op, Op::Send { .. }) {
                        *op = Op::send(3, Region::new(Buf::In, 0, 4));
                    }
                }
            }),
            base.steps,
            Strictness::default(),
        ),
        (
            "unmatched send: node 4 posts no receive",
            edit(&|p| p[4].steps[2].ops.clear()),
            base.steps,
            Strictness::default(),
        ),
        (
            "size mismatch: node 4 receives 3 elements",
            edit(&|p| p[4].steps[2].ops[0] = Op::recv(0, out(0, 3))),
            base.steps,
            Strictness::default(),
        ),
        (
            "post-condition: node 6 never receives (nor does 2 send to it)",
            edit(&|p| {
                p[6].steps[2].ops.clear();
                p[2].steps[2].ops.clear();
            }),
            base.steps,
            Strictness::default(),
        ),
        (
            "malformed: node 5 has two steps",
            edit(&|p| {
                p[5].steps.pop();
            }),
            base.steps,
            Strictness::default(),
        ),
        (
            "port rule: the pipelined root multicasts under --ports one",
            piped.programs.clone(),
            piped.steps,
            Strictness {
                ports: Some(Ports::One),
                duplex: None,
                host_ports: None,
            },
        ),
        (
            "duplex rule: node 1 forwards while receiving under --duplex half",
            piped.programs.clone(),
            piped.steps,
            Strictness {
                ports: None,
                duplex: Some(Duplex::Half),
                host_ports: None,
            },
        ),
    ];
    let mut text = String::new();
    for (what, progs, steps, strict) in cases {
        let v = verify_programs(problem, &progs, steps, strict).expect_err(what);
        text.push_str(&format!("{what}\n  {v}\n"));
    }
    insta::assert_snapshot!(text);
}

/// The example of `schedule/json.rs`'s documentation parses, with the documented
/// defaults (`commutative` true, `action` place), and verifies.
#[test]
fn documented_json_example_parses_with_its_defaults() {
    let text = r#"{
      "format": "hypercomm-schedule/1",
      "topology": "hypercube:1",
      "collective": {"kind": "broadcast", "root": 0},
      "len": 4,
      "steps": 1,
      "programs": [
        {"rank": 0, "steps": [[
          {"send": {"to": [1], "from": [{"buf": "in", "off": 0, "len": 4}]}},
          {"local": {"from": {"buf": "in", "off": 0, "len": 4}, "into": {"buf": "out", "off": 0, "len": 4}}}
        ]]},
        {"rank": 1, "tmp_len": 0, "steps": [[
          {"recv": {"from": 0, "into": [{"buf": "out", "off": 0, "len": 4}]}}
        ]]}
      ]
    }"#;
    let doc = Document::parse(text).unwrap();
    assert!(doc.commutative, "commutative defaults to true");
    assert_eq!(doc.algo, None);
    assert_eq!(doc.programs[0].tmp_len, 0);
    assert_eq!(
        doc.programs[1].steps[0].ops[0],
        Op::recv(0, Region::new(Buf::Out, 0, 4))
    );
    let problem = Problem {
        topology: &doc.topology,
        collective: doc.collective,
        len: doc.len,
        commutative: doc.commutative,
        counts: None,
    };
    verify_programs(problem, &doc.programs, doc.steps, Strictness::default()).unwrap();
    // Written back, the defaults are explicit or omitted as documented, and it reads
    // back the same.
    assert_eq!(Document::parse(&doc.to_json()).unwrap(), doc);
    assert!(
        !doc.to_json().contains("\"action\""),
        "place is the default and omitted"
    );
}

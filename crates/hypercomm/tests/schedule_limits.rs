//! Issue 21: a schedule file's declared work is bounded before the verifier expands
//! it. Each test is built from an input that hung or aborted the verifier: a strided
//! region of 2^40 segments (over 60 s), two interleaved strided regions of 2^27 segments
//! each (an abort: "memory allocation of 6442450944 bytes failed").

use hypercomm::collective::Collective;
use hypercomm::error::Error;
use hypercomm::schedule::json::{Document, MAX_DOCUMENT_SEGMENTS, MAX_STEP_SEGMENTS};
use hypercomm::schedule::{Buf, Op, Program, Region, Step, MAX_SEGMENTS};
use hypercomm::topology::Topology;
use hypercomm::verify::{verify_programs, Problem, Strictness, ViolationKind};

/// An all-gather on hypercube:1 of `len` elements per rank: rank 0 sends `from` (regions
/// of its `in`) to rank 1, which receives into `into` (regions of its `out`); rank 1
/// sends its `in` whole into rank 0's `out[len..]`, and each rank copies its own block.
fn doc(len: u64, from: &str, into: &str) -> String {
    format!(
        r#"{{"format": "hypercomm-schedule/1", "topology": "hypercube:1",
 "collective": {{"kind": "allgather"}}, "len": {len}, "steps": 1,
 "programs": [
  {{"rank": 0, "steps": [[
    {{"send": {{"to": [1], "from": {from}}}}},
    {{"recv": {{"from": 1, "into": [{{"buf": "out", "off": {len}, "len": {len}}}]}}}},
    {{"local": {{"from": {{"buf": "in", "off": 0, "len": {len}}}, "into": {{"buf": "out", "off": 0, "len": {len}}}}}}}
  ]]}},
  {{"rank": 1, "steps": [[
    {{"send": {{"to": [0], "from": [{{"buf": "in", "off": 0, "len": {len}}}]}}}},
    {{"recv": {{"from": 0, "into": {into}}}}},
    {{"local": {{"from": {{"buf": "in", "off": 0, "len": {len}}}, "into": {{"buf": "out", "off": {len}, "len": {len}}}}}}}
  ]]}}
 ]}}"#
    )
}

/// The even and the odd elements of `buf[0..2·count]`: two interleaved strided regions
/// of `count` one-element segments each.
fn interleaved(buf: &str, count: u64) -> String {
    interleaved_from(buf, count, 0)
}

/// [`interleaved`], the elements at offset `first` (0 or 1) first.
fn interleaved_from(buf: &str, count: u64, first: u64) -> String {
    let r = |off: u64| {
        format!(
            r#"{{"buf": "{buf}", "off": {off}, "len": {count}, "stride": 2, "count": {count}}}"#
        )
    };
    format!("[{}, {}]", r(first), r(1 - first))
}

fn whole(buf: &str, len: u64) -> String {
    format!(r#"[{{"buf": "{buf}", "off": 0, "len": {len}}}]"#)
}

fn malformed(text: &str) -> (String, String) {
    match Document::parse(text) {
        Err(Error::MalformedSchedule { path, reason }) => (path, reason),
        other => panic!("not refused as malformed: {other:?}"),
    }
}

/// The hang: one strided region of 2^40 segments (one element each, stride 2), in
/// bounds of a buffer of 2^41 elements. Refused when read, naming the limit.
#[test]
fn a_region_of_2_pow_40_segments_is_refused_naming_the_limit() {
    let len = 1u64 << 41;
    let region = format!(
        r#"[{{"buf": "in", "off": 0, "len": {}, "stride": 2, "count": {}}}]"#,
        1u64 << 40,
        1u64 << 40
    );
    let text = doc(len, &region, &whole("out", 1 << 40));
    let (path, reason) = malformed(&text);
    assert_eq!(path, "programs[0].steps[0][0].send.from[0]");
    assert!(reason.contains("1099511627776"), "{reason}");
    assert!(reason.contains(&MAX_SEGMENTS.to_string()), "{reason}");
    assert!(reason.contains("2^20"), "{reason}");
}

/// The abort: two interleaved strided regions of 2^27 segments each.
#[test]
fn two_interleaved_regions_of_2_pow_27_segments_are_refused() {
    let count = 1u64 << 27;
    let text = doc(
        2 * count,
        &interleaved("in", count),
        &interleaved("out", count),
    );
    let (path, reason) = malformed(&text);
    assert!(
        path.starts_with("programs[0].steps[0][0].send.from"),
        "{path}"
    );
    assert!(reason.contains("2^20"), "{reason}");
}

/// At the limit, the same interleaving verifies (the verifier walks every segment:
/// the message is the even elements then the odd ones, placed back in place).
#[test]
fn two_interleaved_regions_at_the_limit_verify() {
    let count = MAX_SEGMENTS / 2;
    let text = doc(
        2 * count,
        &interleaved("in", count),
        &interleaved("out", count),
    );
    let d = Document::parse(&text).expect("within the limits");
    let problem = Problem {
        topology: &d.topology,
        collective: d.collective,
        len: d.len,
        commutative: true,
        counts: None,
    };
    verify_programs(problem, &d.programs, d.steps, Strictness::default()).expect("verified");
    // Received out of order, it is caught.
    let swapped = interleaved_from("out", count, 1);
    let d = Document::parse(&doc(2 * count, &interleaved("in", count), &swapped)).unwrap();
    let v = verify_programs(problem, &d.programs, d.steps, Strictness::default()).unwrap_err();
    assert_eq!(v.kind, ViolationKind::PostCondition, "{v}");
}

/// A step of one program naming more than 2^22 segments in all (five regions of 2^20)
/// is refused, naming the step and the limit.
#[test]
fn a_step_naming_too_many_segments_is_refused() {
    let count = MAX_SEGMENTS;
    let regions: Vec<String> = (0..5)
        .map(|i| {
            format!(
                r#"{{"buf": "in", "off": {}, "len": {count}, "stride": 2, "count": {count}}}"#,
                i * 2 * count
            )
        })
        .collect();
    let len = 10 * count;
    let text = doc(
        len,
        &format!("[{}]", regions.join(", ")),
        &whole("out", 5 * count),
    );
    let (path, reason) = malformed(&text);
    assert_eq!(path, "programs[0].steps[0]");
    assert!(reason.contains(&MAX_STEP_SEGMENTS.to_string()), "{reason}");
}

/// A document naming more than 2^26 segments over its steps is refused.
#[test]
fn a_document_naming_too_many_segments_is_refused() {
    let count = MAX_SEGMENTS;
    let region = |off: u64| {
        format!(r#"{{"buf": "in", "off": {off}, "len": {count}, "stride": 2, "count": {count}}}"#)
    };
    // 4 regions of 2^20 per step (2^22, the most a step may name), 17 steps: 2^26 + 2^22.
    let step = format!(
        r#"[{{"send": {{"to": [1], "from": [{}]}}}}]"#,
        (0..4)
            .map(|i| region(i * 2 * count))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let steps = vec![step; 17].join(", ");
    let text = format!(
        r#"{{"format": "hypercomm-schedule/1", "topology": "hypercube:1",
 "collective": {{"kind": "allgather"}}, "len": {}, "steps": 17,
 "programs": [{{"rank": 0, "steps": [{steps}]}}, {{"rank": 1, "steps": []}}]}}"#,
        8 * count
    );
    let (path, reason) = malformed(&text);
    assert_eq!(path, "programs[0].steps[16]");
    assert!(
        reason.contains(&MAX_DOCUMENT_SEGMENTS.to_string()),
        "{reason}"
    );
}

/// Programs built in memory (not parsed) meet the same limit in the verifier: a
/// malformed program, at once.
#[test]
fn the_verifier_refuses_a_region_beyond_the_limit() {
    let big = Region {
        buf: Buf::In,
        off: 0,
        len: 1 << 40,
        stride: 2,
        count: 1 << 40,
    };
    assert!(big.check().unwrap_err().contains("2^20"));
    let topology: Topology = "hypercube:1".parse().unwrap();
    let len = 1u64 << 41;
    let progs = vec![
        Program {
            rank: 0,
            tmp_len: 0,
            steps: vec![Step {
                ops: vec![Op::Send {
                    to: [1].into_iter().collect(),
                    from: [big].into_iter().collect(),
                }],
            }],
        },
        Program {
            rank: 1,
            tmp_len: 0,
            steps: vec![Step {
                ops: vec![Op::Recv {
                    from: 0,
                    into: [Region::new(Buf::Out, 0, 1 << 40)].into_iter().collect(),
                    action: Default::default(),
                }],
            }],
        },
    ];
    let problem = Problem {
        topology: &topology,
        collective: Collective::Allgather,
        len,
        commutative: true,
        counts: None,
    };
    let v = verify_programs(problem, &progs, 1, Strictness::default()).unwrap_err();
    assert_eq!(v.kind, ViolationKind::MalformedProgram, "{v}");
    assert!(v.detail.contains("2^20"), "{v}");
}

/// A field the collective's kind does not take is malformed, named with the valid
/// ones: `{"kind": "allgather", "root": 1}` read as an all-gather, the root silently
/// dropped, and a misspelt `rooot` of a broadcast was refused only because `root` was
/// then missing. The valid form still parses.
#[test]
fn a_collective_field_its_kind_does_not_take_is_malformed() {
    let ok = doc(1, &whole("in", 1), &whole("out", 1));
    let parsed = Document::parse(&ok).expect("the valid document parses");
    assert_eq!(parsed.collective, Collective::Allgather);
    for (extra, needles) in [
        (r#""root": 1"#, ["`root`", "allgather", "valid: `kind`"]),
        (r#""src": 0"#, ["`src`", "allgather", "valid: `kind`"]),
    ] {
        let text = ok.replace(
            r#"{"kind": "allgather"}"#,
            &format!(r#"{{"kind": "allgather", {extra}}}"#),
        );
        assert_ne!(text, ok);
        let (path, reason) = malformed(&text);
        assert_eq!(path, "collective", "{reason}");
        for n in needles {
            assert!(reason.contains(n), "no {n} in {reason}");
        }
    }
    let bcast = ok.replace(
        r#"{"kind": "allgather"}"#,
        r#"{"kind": "broadcast", "root": 0, "rooot": 1}"#,
    );
    let (path, reason) = malformed(&bcast);
    assert_eq!(path, "collective", "{reason}");
    assert!(reason.contains("rooot"), "{reason}");
}

//! The simulator's figures on every hypercube and complete topology are those of the
//! code before the network layer (issue 16), bit for bit: `pinned-times.json` was
//! written by `scripts/pin-times.py` with the binary of commit 2ac55c1, and every
//! problem in it is run again here through `compare`, which verifies and times every
//! fitting algorithm. A new algorithm may appear; none may change or vanish. Lower
//! bounds may only grow (and stay below every time).

use std::process::Command;

use serde_json::Value;

#[test]
fn hypercube_and_complete_times_are_unchanged() {
    let pinned: Vec<Value> =
        serde_json::from_str(include_str!("pinned-times.json")).expect("the pin file is JSON");
    assert!(pinned.len() > 1000, "the pin file lost cases");
    let mut checked = 0;
    for case in &pinned {
        let args: Vec<&str> = case[0].as_str().unwrap().split(' ').collect();
        let out = Command::new(env!("CARGO_BIN_EXE_hypercomm"))
            .arg("compare")
            .args(&args)
            .args(["--format", "json"])
            .output()
            .expect("the binary starts");
        assert!(
            out.status.success(),
            "compare {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        // Lower bounds may only have grown (the all-port and average-status bounds
        // came later), and never past a time.
        let (lb, old) = (rows[0]["lower_bound"].as_f64(), case[1].as_f64());
        if let (Some(lb), Some(old)) = (lb, old) {
            assert!(
                lb >= old - 1e-9 * old.abs().max(1.0),
                "lower bound of {args:?}: {lb} < {old}"
            );
        }
        for want in case[2].as_array().unwrap() {
            let algo = want[0].as_str().unwrap();
            let row = rows
                .iter()
                .find(|r| r["algo"] == algo)
                .unwrap_or_else(|| panic!("{algo} vanished from {args:?}"));
            let got = [
                &row["time"],
                &row["rounds"],
                &row["messages"],
                &row["volume"],
                &row["max_link_load"],
            ];
            let want: Vec<&Value> = want.as_array().unwrap()[1..].iter().collect();
            assert_eq!(
                got.to_vec(),
                want,
                "{algo} on {args:?}: [time, rounds, messages, volume, max_link_load]"
            );
            assert_eq!(row["verified"], true, "{algo} on {args:?}");
            if let (Some(lb), Some(t)) = (lb, row["time"].as_f64()) {
                assert!(
                    lb <= t * (1.0 + 1e-9),
                    "{algo} on {args:?}: bound {lb} > time {t}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 2000, "only {checked} algorithm runs checked");
}

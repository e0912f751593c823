//! README.md's commands, run as written (issue 21: its own MPI command reported a wrong
//! result, which showed that no one ran them). Every line of a fenced `sh` block that
//! invokes `hypercomm` runs through `sh` with `hypercomm` on the `PATH` as the binary
//! under test, one after the other in one scratch directory (so `schedule > s.json`
//! feeds the next line's `verify --schedule s.json`), holding the repository files the
//! commands read (`docs/examples/`) and an empty `docs/` to write into; each must exit
//! 0. `cargo run … -p hypercomm-cli -- ARGS` runs as `hypercomm ARGS`; `bash
//! scripts/test.sh` and the runtime's examples (`cargo run -p hypercomm-rt --example`,
//! which `cargo test -p hypercomm-rt` runs) are checked to exist; the MPI lines are left
//! to the MPI crate's tests. Only exit codes are checked: the outputs vary (times).

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The command lines of README.md's fenced `sh` blocks: continuation lines (`\`)
/// joined, comment-only lines dropped.
fn sh_lines(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in readme.lines() {
        let t = line.trim();
        if let Some(lang) = t.strip_prefix("```") {
            in_sh = !in_sh && lang.trim() == "sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(t);
        let cmd = std::mem::take(&mut pending);
        if !cmd.is_empty() && !cmd.starts_with('#') {
            out.push(cmd);
        }
    }
    out
}

/// What the test does with one line.
#[derive(Debug, PartialEq)]
enum Kind {
    /// `hypercomm …`: run it.
    Cli,
    /// `cargo run … -p hypercomm-cli -- ARGS`: run `hypercomm ARGS`.
    CargoCli(String),
    /// `cargo run … -p hypercomm-rt --example NAME …`: the example must exist.
    Example(String),
    /// `bash scripts/test.sh`: the script must exist.
    Script(String),
    /// MPI: installing it, building the MPI crate, `mpirun`.
    Mpi,
}

fn kind(cmd: &str) -> Kind {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    match words.as_slice() {
        ["hypercomm", ..] => Kind::Cli,
        ["cargo", "run", rest @ ..] if rest.contains(&"hypercomm-cli") => {
            let args = cmd.split_once(" -- ").map_or("", |(_, a)| a);
            Kind::CargoCli(format!("hypercomm {args}"))
        }
        ["cargo", "run", rest @ ..] if rest.contains(&"--example") => {
            let i = rest.iter().position(|w| *w == "--example").unwrap();
            Kind::Example(rest[i + 1].to_string())
        }
        ["bash", script, ..] => Kind::Script(script.to_string()),
        _ if cmd.contains("mpirun")
            || cmd.contains("hypercomm-mpi")
            || cmd.starts_with("sudo apt-get")
            || cmd.starts_with("E=")
            // A hostfile for the mpirun lines that follow (the MPI test runs them).
            || (cmd.starts_with("printf ") && cmd.contains("slots=")) =>
        {
            Kind::Mpi
        }
        _ => panic!("README.md: a shell line this test does not know how to run: {cmd}"),
    }
}

#[test]
fn the_lines_are_classified() {
    assert_eq!(kind("hypercomm algorithms   # x"), Kind::Cli);
    assert_eq!(
        kind("cargo run --release -p hypercomm-cli -- run --ranks 8"),
        Kind::CargoCli("hypercomm run --ranks 8".into())
    );
    assert_eq!(
        kind("cargo run --release -p hypercomm-rt --example nbody -- 3 bruck # y"),
        Kind::Example("nbody".into())
    );
    assert_eq!(kind("mpirun -n 4 $B check"), Kind::Mpi);
    let lines =
        sh_lines("```sh\nhypercomm a \\\n   --b 1   # c\n# only a comment\n```\n```text\nx\n```\n");
    assert_eq!(lines, vec!["hypercomm a  --b 1   # c"]);
}

/// A scratch directory with the files README's commands read.
fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("docs/examples")).unwrap();
    std::fs::create_dir_all(dir.join("docs/pictures")).unwrap();
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    for entry in std::fs::read_dir(repo().join("docs/examples")).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, dir.join("docs/examples").join(p.file_name().unwrap())).unwrap();
    }
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_hypercomm"), dir.join("bin/hypercomm")).unwrap();
    dir
}

#[test]
fn every_readme_command_runs_as_written() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = sh_lines(&readme);
    let dir = scratch();
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (mut ran, mut script, mut cargo_cli) = (0, false, false);
    for line in &lines {
        let cmd = match kind(line) {
            Kind::Cli => line.clone(),
            Kind::CargoCli(cmd) => {
                cargo_cli = true;
                cmd
            }
            Kind::Example(name) => {
                let file = repo()
                    .join("crates/hypercomm-rt/examples")
                    .join(format!("{name}.rs"));
                assert!(file.exists(), "README.md runs a missing example: {line}");
                continue;
            }
            Kind::Script(s) => {
                assert!(
                    repo().join(&s).exists(),
                    "README.md runs a missing script: {line}"
                );
                script |= s == "scripts/test.sh";
                continue;
            }
            Kind::Mpi => continue,
        };
        let o = Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .current_dir(&dir)
            .env("PATH", &path)
            .env_remove("HYPERCOMM_CALIBRATION")
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "README.md's `{line}` failed ({}):\n{}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        ran += 1;
    }
    assert!(script, "README.md no longer runs `bash scripts/test.sh`");
    assert!(
        cargo_cli,
        "README.md no longer shows `cargo run … -p hypercomm-cli`"
    );
    assert!(ran >= 15, "only {ran} commands ran");
    // What the commands wrote is there.
    for f in [
        "s.json",
        "chart.svg",
        "docs/sweep-allgather.svg",
        "config/hypercomm/calibration.conf",
    ] {
        assert!(dir.join(f).exists(), "{f} was not written");
    }
}

//! Bad input of `check`, `vs-native` and `fault`, refused before the command starts: the
//! same verdict on every rank (the arguments and the agreed memory limit are the same
//! everywhere), printed by rank 0, exit 2, instead of a panic, an abort, a row per
//! collective saying the algorithm does not exist, or `checked 0 cases` with exit 0.

use hypercomm::algorithms;
use hypercomm::collective::OpKind;
use hypercomm::topology::Topology;
use hypercomm_cli::config::{self, MemoryLimit};

/// The most bytes one message or buffer of ours or MPI's may have: MPI's count is a C
/// `int`, and the native calls count bytes.
const MPI_COUNT_BYTES: u64 = i32::MAX as u64;

/// The collectives of `names` among `valid` (case-insensitive), or the error naming the
/// first that is not one and the valid names; `what` is the command and option.
pub fn ops(names: &[String], valid: &[OpKind], what: &str) -> Result<Vec<OpKind>, String> {
    names
        .iter()
        .map(|name| {
            valid
                .iter()
                .copied()
                .find(|o| o.name().eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| {
                    let v: Vec<&str> = valid.iter().map(|o| o.name()).collect();
                    format!("invalid {what}: `{name}`; valid: {}", v.join(", "))
                })
        })
        .collect()
}

/// The largest buffer of `elements` u64 on every rank (times `buffers` of them) fits the
/// memory each rank may take and MPI's count, else the error naming `option`.
pub fn buffers(
    elements: u64,
    buffers: u64,
    limit: MemoryLimit,
    option: &'static str,
) -> Result<(), String> {
    let bytes = elements.saturating_mul(8);
    if bytes > MPI_COUNT_BYTES {
        return Err(format!(
            "invalid {option}: a buffer of {bytes} bytes; valid: at most {MPI_COUNT_BYTES} \
             bytes per buffer (MPI's count is a C int)"
        ));
    }
    let what = format!("the {buffers} buffers of the largest case");
    config::check_rt_bytes(bytes.saturating_mul(buffers), &what, limit, option)
        .map_err(|e| e.to_string())
}

/// `check --lengths`: every case's buffers fit (the largest holds `k` blocks of the
/// length, and a case holds four: the input, ours, native's and the reference).
pub fn check(lengths: &[usize], k: u32, limit: MemoryLimit) -> Result<(), String> {
    let most = lengths.iter().copied().max().unwrap_or(0) as u64;
    buffers(most.saturating_mul(u64::from(k)), 4, limit, "--lengths")
}

/// `vs-native`'s arguments: its collectives, a largest size of at least 8 bytes whose
/// buffers fit (`k` blocks of it in, `k` out), at least one timed turn, and an algorithm
/// that exists for one of its collectives on `k` ranks (`auto`, `native` or a registry
/// name that fits one of them: the others' rows say why it does not fit).
pub fn vs_native(
    names: &[String],
    fixed: &[OpKind],
    algo: &str,
    max_bytes: usize,
    iters: Option<u32>,
    k: u32,
    limit: MemoryLimit,
) -> Result<Vec<OpKind>, String> {
    let ops = ops(names, fixed, "--ops").map_err(|e| {
        format!(
            "{e} (vs-native times the fixed-count collectives; the variable-count ones: \
             `bench --op alltoallv --algo all`, which includes native)"
        )
    })?;
    if max_bytes < 8 {
        return Err(format!(
            "invalid --max-bytes: {max_bytes}; valid: 8 or more (sizes are powers of two from 8 B)"
        ));
    }
    let elements = (max_bytes as u64 / 8).saturating_mul(u64::from(k));
    buffers(elements, 2, limit, "--max-bytes")?;
    if iters == Some(0) {
        return Err("invalid --iters: 0; valid: 1 or more timed turns".into());
    }
    algorithm(algo, &ops, k, "--algo")?;
    Ok(ops)
}

/// `fault`'s failing rank is a rank of the job, and its all-reduces' algorithm exists.
pub fn fault(rank: u32, algo: &str, k: u32) -> Result<(), String> {
    if rank >= k {
        return Err(format!(
            "invalid --rank: {rank}; the job has {k} ranks (valid: 0..={})",
            k.saturating_sub(1)
        ));
    }
    algorithm(algo, &[OpKind::Allreduce], k, "--algo")
}

/// `algo` is `auto`, `native`, or a registry name that fits one of `ops` on `k` ranks.
fn algorithm(algo: &str, ops: &[OpKind], k: u32, option: &str) -> Result<(), String> {
    let name = algo.trim();
    if ["auto", hypercomm_rt::NATIVE]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
    {
        return Ok(());
    }
    let topology = Topology::complete(k);
    let mut fitting: Vec<String> = Vec::new();
    for &op in ops {
        let names: Vec<&str> = algorithms::fitting(&topology, op)
            .into_iter()
            .map(|a| a.name)
            .collect();
        if names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return Ok(());
        }
        fitting.push(format!("{}: {}", op.name(), names.join(", ")));
    }
    Err(format!(
        "invalid {option}: no algorithm `{algo}` fits {} on complete:{k}; valid: auto, native, \
         or one that fits ({})",
        ops.iter().map(|o| o.name()).collect::<Vec<_>>().join(", "),
        fitting.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: MemoryLimit = MemoryLimit {
        bytes: 1 << 30,
        available: true,
        source: "in the test",
    };

    /// Unknown collectives, sizes past memory or MPI's count, zero turns, an algorithm
    /// that fits none of the collectives and a rank past the job are refused, naming the
    /// option; what is valid passes.
    #[test]
    fn bad_arguments_are_refused_with_the_option_named() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let fixed = [OpKind::Broadcast, OpKind::Allreduce];
        let ok = vs_native(&names(&["broadcast"]), &fixed, "auto", 64, None, 2, LIMIT);
        assert_eq!(ok, Ok(vec![OpKind::Broadcast]));
        let bcast = names(&["broadcast"]);
        for (ops, algo, max_bytes, iters, says) in [
            (
                names(&["foo"]),
                "auto",
                64,
                None,
                &["`foo`", "broadcast, allreduce"][..],
            ),
            (bcast.clone(), "auto", 4, None, &["--max-bytes: 4"][..]),
            (
                bcast.clone(),
                "auto",
                usize::MAX,
                None,
                &["--max-bytes", "C int"][..],
            ),
            (
                bcast.clone(),
                "auto",
                1 << 29,
                None,
                &["--max-bytes", "in the test"][..],
            ),
            (bcast.clone(), "auto", 64, Some(0), &["--iters: 0"][..]),
            (bcast.clone(), "foo", 64, None, &["`foo`", "binomial"][..]),
        ] {
            let e = vs_native(&ops, &fixed, algo, max_bytes, iters, 2, LIMIT).unwrap_err();
            assert!(
                says.iter().all(|s| e.contains(s)),
                "{ops:?} {algo} {max_bytes}: {e}"
            );
        }
        // `ring` is an all-reduce, not a broadcast: it fits one of the two.
        let both = names(&["broadcast", "allreduce"]);
        assert!(vs_native(&both, &fixed, "ring", 64, None, 2, LIMIT).is_ok());
        assert!(vs_native(&bcast, &fixed, "ring", 64, None, 2, LIMIT).is_err());
        assert!(check(&[0, 1, 1000], 4, LIMIT).is_ok());
        let e = check(&[usize::MAX], 2, LIMIT).unwrap_err();
        assert!(e.contains("--lengths"), "{e}");
        let e = check(&[1 << 25], 2, LIMIT).unwrap_err();
        assert!(e.contains("--lengths") && e.contains("in the test"), "{e}");
        assert!(fault(1, "auto", 2).is_ok());
        let e = fault(2, "auto", 2).unwrap_err();
        assert!(e.contains("--rank: 2") && e.contains("0..=1"), "{e}");
        let e = fault(1, "foo", 2).unwrap_err();
        assert!(e.contains("`foo`"), "{e}");
        let e = ops(&names(&["bcast"]), &fixed, "--ops").unwrap_err();
        assert!(e.contains("`bcast`"), "{e}");
    }
}

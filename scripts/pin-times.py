#!/usr/bin/env python3
"""Writes crates/hypercomm-cli/tests/pinned-times.json: the simulator's figures for
every registry algorithm on the hypercube and complete topologies, as a given
`hypercomm` binary computes them (the network layer's rewrite, issue 16, was checked
against the binary of commit 2ac55c1, its parent). Usage:
    python3 scripts/pin-times.py path/to/hypercomm > crates/hypercomm-cli/tests/pinned-times.json
The test crates/hypercomm-cli/tests/pinned.rs rebuilds each case through the library and
requires the same figures bit for bit."""
import json, subprocess, sys

binary = sys.argv[1]
topologies = ["hypercube:0", "hypercube:1", "hypercube:2", "hypercube:3", "hypercube:4",
              "hypercube:3+host", "complete:1", "complete:3", "complete:5", "complete:8"]
ops = ["p2p", "broadcast", "scatter", "gather", "allgather", "alltoall", "reduce",
       "allreduce", "scan", "exscan", "reduce-scatter"]
models = [("all", "full", "rounds"), ("one", "full", "rounds"), ("all", "half", "rounds"),
          ("one", "half", "async"), ("all", "full", "async")]
cases = []
for topo in topologies:
    fam, n = topo.split(":")
    nodes = (2 ** int(n.split("+")[0]) + ("+host" in n)) if fam == "hypercube" else int(n)
    for op in ops:
        for (ports, duplex, timing) in models:
            for (length, packets) in [(1000, "1"), (1000, "3"), (1, "1")]:
                extra = []
                if op == "p2p":
                    extra = ["--src", "0", "--dst", str(nodes - 1 if nodes > 1 else 0)]
                elif op in ("broadcast", "scatter", "gather", "reduce"):
                    extra = ["--root", str(nodes // 2)]
                args = ["--topology", topo, "--op", op, "--len", str(length), "--packets",
                        packets, "--beta", "1.5", "--tau", "0.03", "--ports", ports,
                        "--duplex", duplex, "--timing", timing] + extra
                out = subprocess.run([binary, "compare", *args, "--format", "json"],
                                     capture_output=True, text=True)
                if out.returncode != 0:
                    continue
                rows = [[row["algo"], row["time"], row["rounds"], row["messages"],
                         row["volume"], row["max_link_load"]]
                        for row in json.loads(out.stdout) if row["time"] is not None]
                if rows:
                    cases.append([" ".join(args), json.loads(out.stdout)[0]["lower_bound"], rows])
# One problem a line: [arguments, lower_bound, [[algorithm, time, rounds, messages,
# volume, max_link_load], …]].
print("[\n" + ",\n".join(json.dumps(c, separators=(",", ":")) for c in cases) + "\n]")

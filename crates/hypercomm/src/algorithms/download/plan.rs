//! The schedule shared by every download algorithm of seed 003: the host sends, one
//! message a step, the blocks of an aligned subcube to its lowest PE, which scatters
//! them over its subcube by Data Scattering (DS) from the next step on.
//!
//! Reference: Gichev 1992 (seed 003), §3.3 (DS: "at the i-th step … split the data,
//! received at the previous step, into two halves and then send one of these halves to
//! their neighbours"), §4 (SSA: DS in one subcube, sequential loading in another) and
//! §5 (the new algorithm: step i sends N/2^i to the root of an (n − i)-dimensional
//! subcube while the earlier subcubes run DS). All of them are a [`Plan`]: a sequence
//! of [`Piece`]s, piece j sent by the host in step j.
//!
//! A piece is the aligned subcube of PEs `base .. base + 2^d` (its `d` low bits free);
//! its root `base` receives the 2^d blocks in step j and runs DS over the subcube:
//! in step j + t (t = 1..d) it and the t − 1 PEs reached before cross dimension d − t,
//! each sending the upper half of what it holds. So a PE at relative label r ≠ 0 whose
//! lowest set bit is l is reached in step j + d − l, from r − 2^l, with the blocks
//! r .. r + 2^l, and forwards 2^{l'} of them across each dimension l' < l in step
//! j + d − l'. Every message is one contiguous region; a PE that forwards keeps the
//! blocks in `tmp` and copies its own to `out` in the step it receives.
//!
//! Cost (rounds): every node makes at most one transfer a step (the host sends one
//! message, a PE receives once and then sends one message a step), so the port and
//! duplex rules never add anything and step s costs the largest of its transfers:
//! the host's β_h + 2^{d_s}mτ_h (while s < number of pieces) and the DS messages
//! β + 2^{d_j − (s − j)}mτ of every piece j < s still scattering (s − j ≤ d_j). The
//! total is [`rounds_time`]; it is exact under every port and duplex rule with
//! `--timing rounds`. m = 0: no step.

use crate::algorithms::Formula;
use crate::collective::Collective;
use crate::cost::model::{LinkCost, Model};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};

use crate::verify::Problem;

/// The aligned subcube of PEs `base .. base + 2^dim`, sent whole to `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Its lowest PE, the root of its DS (a multiple of 2^dim).
    pub base: u32,
    /// Its dimension d: 2^d blocks.
    pub dim: u32,
}

/// A download schedule: piece j sent by the host in step ⌊j/p⌋ (p = 1 but for a host
/// with several send ports, [`Plan::with_host_sends`]), then scattered by DS.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Dimension of the cube (2^n PEs; the host is rank 2^n).
    n: u32,
    /// Elements per block.
    m: u64,
    /// The pieces in the order the host sends them.
    pieces: Vec<Piece>,
    /// Pieces the host sends per step (≥ 1), each to another PE over its own link.
    per_step: usize,
    /// Indices of `pieces` by ascending base, to find a PE's piece.
    by_base: Vec<u32>,
}

/// The cube's dimension n when `problem` is a download on `hypercube:N+host` (the
/// host is rank 2^n); an error naming `algo` otherwise.
pub fn setup(problem: &Problem<'_>, algo: &str) -> Result<u32, Error> {
    is_download(problem, algo)?;
    hosted_cube(problem.topology).map_err(|why| Error::InvalidParameter {
        what: "--topology",
        reason: format!("{algo} does not fit {}: {why}", problem.topology),
    })
}

/// `Ok` when `problem` is a download of equal blocks; an error naming `algo`
/// otherwise (unequal portions, `--counts`, are RP's alone: [`super::rp`]).
pub fn is_download(problem: &Problem<'_>, algo: &str) -> Result<(), Error> {
    if problem.collective != Collective::Download {
        return Err(Error::InvalidParameter {
            what: "--op",
            reason: format!("{algo} performs download, not {}", problem.collective),
        });
    }
    if problem.counts.is_some() && algo != "rp" {
        return Err(Error::BadCounts(format!(
            "{algo} downloads equal blocks of --len; unequal portions (--counts) are rp's \
             (Ratioed Partitioning, Gichev 1992, §3.2)"
        )));
    }
    Ok(())
}

/// The cube's dimension n of seed 003's machine, `hypercube:N+host`, or why `t` is not
/// it. A host linked to some PEs only (`+host@…`) is refused: every plan sends each
/// subcube's blocks straight to its lowest PE (SL to every PE, DS to PE 0, Gichev's to
/// PEs 0, 2^{n−1}, 2^{n−1} + 2^{n−2}, …), over a host link that must exist.
pub fn hosted_cube(t: &crate::topology::Topology) -> Result<u32, String> {
    use crate::topology::HostLinks;
    if let Some(h) = t.hosted_cube() {
        return Ok(h.dim());
    }
    match (t.as_hypercube(), t.host_links()) {
        (Some(_), Some(HostLinks::Nodes(linked))) => {
            let list: Vec<String> = linked.iter().map(|r| r.to_string()).collect();
            Err(format!(
                "its host is linked to PE {} only, and seed 003's downloads send each \
                 subcube's blocks from the host straight to its lowest PE (SL to every PE), \
                 so they need the host linked to every PE: hypercube:N+host",
                list.join(", ")
            ))
        }
        _ => Err(
            "it downloads from a host linked to every node of a cube: it needs hypercube:N+host"
                .into(),
        ),
    }
}

impl Plan {
    /// The plan of `pieces` on the n-cube with blocks of `m` elements. Pieces must be
    /// aligned subcubes of the cube and pairwise disjoint (they need not cover it: SSA's
    /// do not, and the verifier says which PEs are left without data).
    pub fn new(n: u32, m: u64, pieces: Vec<Piece>) -> Plan {
        let k = 1u64 << n;
        for p in &pieces {
            debug_assert!(p.dim <= n && (p.base as u64) + (1u64 << p.dim) <= k);
            debug_assert!(p.base % (1u32 << p.dim) == 0, "{p:?} is not aligned");
        }
        let mut by_base: Vec<u32> = (0..pieces.len() as u32).collect();
        by_base.sort_by_key(|&i| pieces[i as usize].base);
        debug_assert!(by_base.windows(2).all(|w| {
            let (a, b) = (pieces[w[0] as usize], pieces[w[1] as usize]);
            a.base + (1 << a.dim) <= b.base
        }));
        Plan {
            n,
            m,
            pieces,
            per_step: 1,
            by_base,
        }
    }
    /// The plan of `pieces` with the host sending `per_step` of them a step (in order,
    /// each to its root over its own host link; a host of that many send ports,
    /// `--host-ports`): piece j goes in step ⌊j/per_step⌋.
    pub fn with_host_sends(n: u32, m: u64, pieces: Vec<Piece>, per_step: usize) -> Plan {
        Plan {
            per_step: per_step.max(1),
            ..Plan::new(n, m, pieces)
        }
    }
    /// The step in which the host sends piece `j`.
    fn sent(&self, j: usize) -> usize {
        j / self.per_step
    }
    /// The pieces in the order the host sends them.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }
    /// The dimensions of the pieces, in sending order.
    pub fn dims(&self) -> Vec<u32> {
        self.pieces.iter().map(|p| p.dim).collect()
    }
    fn host(&self) -> Rank {
        1 << self.n
    }
    /// The piece holding PE `pe`, with its index (its host step).
    fn piece_of(&self, pe: Rank) -> Option<(usize, Piece)> {
        let i = self
            .by_base
            .partition_point(|&i| self.pieces[i as usize].base <= pe);
        let j = *self.by_base.get(i.checked_sub(1)?)? as usize;
        let p = self.pieces[j];
        (pe < p.base + (1 << p.dim)).then_some((j, p))
    }
}

impl Schedule for Plan {
    fn nodes(&self) -> u32 {
        (1 << self.n) + 1
    }
    fn steps(&self) -> usize {
        if self.m == 0 {
            return 0;
        }
        self.pieces
            .iter()
            .enumerate()
            .map(|(j, p)| self.sent(j) + 1 + p.dim as usize)
            .max()
            .unwrap_or(0)
    }
    fn program(&self, rank: Rank) -> Program {
        let mut prog = Program::new(rank, self.steps());
        let m = self.m;
        if m == 0 {
            return prog;
        }
        if rank == self.host() {
            // Piece j's blocks, one region of the host's `in`, to its root.
            for (j, p) in self.pieces.iter().enumerate() {
                let at = Region::new(Buf::In, p.base as u64 * m, (1u64 << p.dim) * m);
                prog.push(self.sent(j), Op::send(p.base, at));
            }
            return prog;
        }
        let Some((j, p)) = self.piece_of(rank) else {
            return prog; // left out of every piece (SSA)
        };
        let j = self.sent(j);
        let r = rank - p.base;
        // Reached across dimension l (the root: from the host, "l = d").
        let l = if r == 0 { p.dim } else { r.trailing_zeros() };
        let size = 1u64 << l;
        let arrive = j + (p.dim - l) as usize;
        let from = if r == 0 { self.host() } else { rank - (1 << l) };
        let own = Region::new(Buf::Out, 0, m);
        if size == 1 {
            prog.push(arrive, Op::recv(from, own));
            return prog;
        }
        prog.tmp_len = size * m;
        prog.push(arrive, Op::recv(from, Region::new(Buf::Tmp, 0, size * m)));
        prog.push(arrive, Op::copy(Region::new(Buf::Tmp, 0, m), own));
        // Then the upper half of what is held, across dimensions l − 1, …, 0.
        for lp in (0..l).rev() {
            let half = 1u64 << lp;
            let at = Region::new(Buf::Tmp, half * m, half * m);
            prog.push(j + (p.dim - lp) as usize, Op::send(rank + (1 << lp), at));
        }
        prog
    }
}

/// The rounds time of a plan whose pieces have dimensions `dims` (in sending order),
/// blocks of `m` elements: Σ over steps s of the largest transfer of the step, the
/// host's β_h + 2^{d_s}mτ_h and each scattering piece j's β + 2^{d_j − (s − j)}mτ.
pub fn rounds_time(dims: &[u32], m: u64, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let steps = dims
        .iter()
        .enumerate()
        .map(|(j, &d)| j + 1 + d as usize)
        .max()
        .unwrap_or(0);
    (0..steps)
        .map(|s| step_cost(dims, s, m, model))
        .sum::<f64>()
}

/// The cost of step `s` of a plan of pieces of dimensions `dims`.
fn step_cost(dims: &[u32], s: usize, m: u64, model: &Model) -> f64 {
    let blocks = |link: LinkCost, d: u32| link.transfer((1u64 << d) * m);
    let host = dims.get(s).map_or(0.0, |&d| blocks(model.host, d));
    let cube = dims[..s.min(dims.len())]
        .iter()
        .enumerate()
        .filter(|&(j, &d)| s - j <= d as usize)
        .map(|(j, &d)| blocks(model.net, d - (s - j) as u32))
        .fold(0.0, f64::max);
    host.max(cube)
}

/// The async time (`--timing async`: each transfer as soon as its two ends are free)
/// of a plan whose pieces have dimensions `dims`: the host sends without a pause, so
/// piece j reaches its root at H_j = Σ_{i ≤ j}(β_h + 2^{d_i}mτ_h), and its DS then
/// needs d_jβ + (2^{d_j} − 1)mτ, every PE forwarding as soon as it has received:
/// T = max_j [H_j + d_jβ + (2^{d_j} − 1)mτ]. Exact under every port and duplex rule
/// (one transfer per node and step).
pub fn async_time(dims: &[u32], m: u64, model: &Model) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let mut host = 0.0;
    let mut end = 0.0f64;
    for &d in dims {
        host += model.host.transfer((1u64 << d) * m);
        let ds = d as f64 * model.net.beta + ((1u64 << d) - 1) as f64 * m as f64 * model.net.tau;
        end = end.max(host + ds);
    }
    end
}

/// [`async_time`] as an exact formula, for the formulas of every download algorithm
/// under `--timing async`.
pub fn async_formula(dims: &[u32], m: u64, model: &Model, reference: &'static str) -> Formula {
    Formula::exact(
        "max_j [Σ_{i ≤ j}(β_h + 2^{d_i}mτ_h) + d_jβ + (2^{d_j} − 1)mτ] (async: host sends back to back, each piece's DS as soon as possible)",
        reference,
        async_time(dims, m, model),
    )
}

/// The dimensions of `pieces`, in order.
pub fn dims_of(pieces: &[Piece]) -> Vec<u32> {
    pieces.iter().map(|p| p.dim).collect()
}

/// Whether the host's links cost what the cube's do (β_h = β, τ_h = τ: Gichev's
/// (2.3)), where the paper's own forms hold.
pub(crate) fn equal_links(model: &Model) -> bool {
    model.host == model.net
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cost::model::{Duplex, Ports, Timing};
    use crate::cost::simulate;
    use crate::verify::{verify, Strictness};

    /// hypercube:n+host.
    pub fn hosted(n: u32) -> crate::topology::Topology {
        format!("hypercube:{n}+host").parse().unwrap()
    }

    /// A model with host links β_h, τ_h and PE links β, τ.
    pub fn model(hb: f64, ht: f64, b: f64, t: f64) -> Model {
        let mut model = Model::new(b, t).unwrap();
        model.host = LinkCost { beta: hb, tau: ht };
        model
    }

    /// Parameter sets: equal, the paper's (µs), a slow host, a fast host, τ ≫ β.
    pub fn models() -> Vec<Model> {
        vec![
            model(1.0, 0.01, 1.0, 0.01),
            model(6500.0, 8.0, 6500.0, 8.0),
            model(6500.0, 80.0, 650.0, 8.0),
            model(650.0, 0.8, 6500.0, 8.0),
            model(0.5, 2.0, 0.5, 2.0),
            model(3.0, 0.1, 1.0, 0.5),
        ]
    }

    /// Verify the plan on hypercube:n+host, and check that the simulator's rounds time
    /// equals [`rounds_time`] under every port and duplex rule, and every host port
    /// rule (the host sends one message a step, so more host ports change nothing).
    pub fn check_plan(n: u32, m: u64, pieces: Vec<Piece>, model: &Model) -> f64 {
        let topo = hosted(n);
        let plan = Plan::new(n, m, pieces);
        let problem = Problem {
            topology: &topo,
            collective: Collective::Download,
            len: m,
            commutative: true,
            counts: None,
        };
        let strict = Strictness {
            ports: Some(Ports::One),
            duplex: Some(Duplex::Half),
            host_ports: None,
        };
        verify(problem, &plan, strict).unwrap_or_else(|v| panic!("n = {n}, m = {m}: {v}"));
        let want = rounds_time(&plan.dims(), m, model);
        let want_async = async_time(&plan.dims(), m, model);
        let host_ports = [Ports::One, Ports::All, Ports::Split { send: 2, recv: 1 }];
        for (ports, host_ports) in [Ports::One, Ports::All]
            .into_iter()
            .flat_map(|p| host_ports.map(|h| (p, h)))
        {
            for duplex in [Duplex::Full, Duplex::Half] {
                let md = Model {
                    ports,
                    duplex,
                    host_ports,
                    timing: Timing::Async,
                    ..*model
                };
                let t = simulate(&topo, &plan, &md).time;
                assert!(
                    (t - want_async).abs() <= 1e-9 * want_async.max(1.0),
                    "n = {n}, m = {m}, {ports}/{duplex}, async: simulated {t}, formula {want_async}"
                );
                let md = Model {
                    ports,
                    duplex,
                    host_ports,
                    timing: Timing::Rounds,
                    ..*model
                };
                let t = simulate(&topo, &plan, &md).time;
                assert!(
                    (t - want).abs() <= 1e-9 * want.max(1.0),
                    "n = {n}, m = {m}, {ports}/{duplex}, host {host_ports}: simulated {t}, formula {want}"
                );
            }
        }
        want
    }

    #[test]
    fn every_tiling_of_small_cubes_verifies_and_times_exactly() {
        // Every sequence of aligned pieces tiling hypercube:3 in ascending base order,
        // sent in that order and reversed.
        fn tilings(from: u32, k: u32, out: &mut Vec<Vec<Piece>>, cur: &mut Vec<Piece>) {
            if from == k {
                out.push(cur.clone());
                return;
            }
            for dim in 0..=k.trailing_zeros() {
                let size = 1 << dim;
                if from % size == 0 && from + size <= k {
                    cur.push(Piece { base: from, dim });
                    tilings(from + size, k, out, cur);
                    cur.pop();
                }
            }
        }
        for n in 0..=3 {
            let mut all = Vec::new();
            tilings(0, 1 << n, &mut all, &mut Vec::new());
            for pieces in all {
                for model in models() {
                    for m in [0, 1, 5] {
                        check_plan(n, m, pieces.clone(), &model);
                        let rev: Vec<Piece> = pieces.iter().rev().copied().collect();
                        check_plan(n, m, rev, &model);
                    }
                }
            }
        }
    }
}

//! Pipelining: splitting a message of m elements into ν packets that follow each other
//! along a path or a tree (Saad & Schultz 1985, §2 and §3, after Ipsen, Saad & Schultz
//! 1984). A pipeline of `depth` hops with ν packets takes ν + depth − 1 lock-step rounds,
//! each costing β + ⌈m/ν⌉τ.

use std::collections::HashMap;

use crate::algorithms::{Packets, Params};
use crate::error::Error;
use crate::schedule::{Buf, Op, Program, Rank, Region, Schedule};

/// The `p`-th of `nu` packets of a message of `m` elements: (offset, length). The first
/// `m mod ν` packets hold ⌈m/ν⌉ elements, the others ⌊m/ν⌋.
pub fn packet(m: u64, nu: u64, p: u64) -> (u64, u64) {
    let (q, r) = (m / nu, m % nu);
    let off = p * q + p.min(r);
    (off, q + u64::from(p < r))
}

/// Exact rounds-model time of a pipeline of `depth` hops carrying `m` elements in `nu`
/// packets (our derivation from Saad & Schultz 1985, §2–3).
///
/// With q = ⌊m/ν⌋ and r = m mod ν, packets 0..r hold q + 1 elements and the rest q.
/// Step s carries packets max(0, s − depth + 1)..=s, the largest being the first of
/// them, so the r + depth − 1 first steps move a (q + 1)-packet and the others a
/// q-packet: T = (ν + depth − 1)(β + qτ) + \[r > 0\](r + depth − 1)τ. When ν divides m
/// this is the papers' (ν + depth − 1)(β + (m/ν)τ). 0 when m = 0 or depth = 0.
pub fn time(m: u64, depth: u64, nu: u64, beta: f64, tau: f64) -> f64 {
    if m == 0 || depth == 0 {
        return 0.0;
    }
    let (q, r) = (m / nu, m % nu);
    let bigger = if r > 0 { r + depth - 1 } else { 0 };
    (nu + depth - 1) as f64 * (beta + q as f64 * tau) + bigger as f64 * tau
}

/// The continuous optimum (√(mτ) + √((depth − 1)β))² of Saad & Schultz eq. (2.2)/(3.1),
/// a lower estimate of [`best`]'s time.
pub fn continuous_optimum(m: u64, depth: u64, beta: f64, tau: f64) -> f64 {
    if m == 0 || depth == 0 {
        return 0.0;
    }
    ((m as f64 * tau).sqrt() + ((depth - 1) as f64 * beta).sqrt()).powi(2)
}

/// The packet count ν ∈ 1..=m minimising [`time`]. The continuous optimum is
/// ν* = √((depth − 1) m τ / β) (our derivation; seed 000 prints √(iτ/β), see
/// docs/errata.md); the discrete one is searched around it.
pub fn best(m: u64, depth: u64, beta: f64, tau: f64) -> u64 {
    if m <= 1 || depth <= 1 {
        // One hop (or nothing to split): more packets only add start-ups.
        return 1;
    }
    if beta == 0.0 {
        return m;
    }
    // τ/β first: with β and τ both near f64::MAX the product would overflow to
    // infinity (and `as u64` saturate, so the + 2 must too).
    let star = (((depth - 1) as f64) * m as f64 * (tau / beta)).sqrt();
    let lo = ((star / 2.0).floor() as u64).clamp(1, m);
    let hi = ((star * 2.0).ceil() as u64).saturating_add(2).clamp(1, m);
    (lo..=hi)
        .min_by(|&a, &b| time(m, depth, a, beta, tau).total_cmp(&time(m, depth, b, beta, tau)))
        .unwrap_or(1)
}

/// Resolve `params.packets` for a pipeline of `depth` hops carrying `m` elements,
/// checking that an explicit count is within 1..=max(m, 1).
pub fn resolve(params: &Params, m: u64, depth: u64) -> Result<u64, Error> {
    match params.packets {
        Packets::Opt => Ok(best(m, depth, params.model.beta(), params.model.tau())),
        Packets::Count(n) if n >= 1 && n <= m.max(1) => Ok(n),
        Packets::Count(n) => Err(Error::InvalidParameter {
            what: "--packets",
            reason: format!("{n} packets for {m} elements; valid: 1..={} (each packet needs an element) or `opt`", m.max(1)),
        }),
    }
}

/// One pipeline among several that run side by side ([`streams_time`]): `len` elements
/// in `nu` packets ([`packet`]) over `depth` hops, packet p crossing hop h in step
/// t0 + p + h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream {
    /// The step its first packet leaves.
    pub t0: u64,
    /// Hops.
    pub depth: u64,
    /// Elements.
    pub len: u64,
    /// Packets.
    pub nu: u64,
}

/// Exact rounds-model time of pipelines side by side on disjoint links, each link one
/// packet a step (all ports): Σ_t (β + s_t τ) over the steps in which a packet is in
/// flight, s_t the largest packet in flight in step t. A stream's packets in flight in
/// step t are those p with t0 + p ≤ t ≤ t0 + p + depth − 1; the lowest of them is the
/// largest (packets shrink with p). Streams without elements or hops take no step.
pub fn streams_time(streams: &[Stream], beta: f64, tau: f64) -> f64 {
    let live: Vec<&Stream> = streams
        .iter()
        .filter(|s| s.len > 0 && s.depth > 0 && s.nu > 0)
        .collect();
    let end = live
        .iter()
        .map(|s| s.t0 + s.nu + s.depth - 1)
        .max()
        .unwrap_or(0);
    let mut total = 0.0;
    for t in 0..end {
        let mut size = None;
        for s in live.iter().filter(|s| s.t0 <= t) {
            let lo = (t - s.t0 + 1).saturating_sub(s.depth);
            if lo < s.nu && lo <= t - s.t0 {
                size = Some(size.unwrap_or(0).max(packet(s.len, s.nu, lo).1));
            }
        }
        if let Some(z) = size {
            total += beta + z as f64 * tau;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_tile_the_message() {
        for m in 0..40u64 {
            for nu in 1..=m.max(1) {
                let mut next = 0;
                for p in 0..nu {
                    let (off, len) = packet(m, nu, p);
                    assert_eq!(off, next);
                    assert!(len == m / nu || len == m.div_ceil(nu));
                    next += len;
                }
                assert_eq!(next, m);
            }
        }
    }

    /// One stream is [`time`]; two equal ones side by side too; a stream that starts
    /// when another ends adds its own time.
    #[test]
    fn streams_time_agrees_with_one_pipeline() {
        for (m, d, nu) in [(1000u64, 5u64, 7u64), (37, 3, 5), (7, 1, 3), (5, 4, 5)] {
            let one = Stream {
                t0: 0,
                depth: d,
                len: m,
                nu,
            };
            let t = time(m, d, nu, 1.0, 0.01);
            assert!((streams_time(&[one], 1.0, 0.01) - t).abs() < 1e-9);
            assert!((streams_time(&[one, one], 1.0, 0.01) - t).abs() < 1e-9);
            let later = Stream {
                t0: nu + d - 1,
                ..one
            };
            assert!((streams_time(&[one, later], 1.0, 0.01) - 2.0 * t).abs() < 1e-9);
        }
    }

    #[test]
    fn best_is_the_discrete_minimum() {
        for &(m, depth, beta, tau) in &[
            (1000u64, 5u64, 1.0, 0.01),
            (37, 3, 0.5, 0.2),
            (5000, 11, 10.0, 0.001),
            (64, 2, 1.0, 1.0),
        ] {
            let b = best(m, depth, beta, tau);
            let tb = time(m, depth, b, beta, tau);
            for nu in 1..=m {
                assert!(
                    tb <= time(m, depth, nu, beta, tau) + 1e-9,
                    "m={m} depth={depth}: ν={nu} beats ν={b}"
                );
            }
            assert!(continuous_optimum(m, depth, beta, tau) <= tb + 1e-9);
        }
    }
}

/// A point-to-point transfer along node-disjoint paths, each carrying its share of the
/// message in pipelined packets: the schedule of `ecube` (one path), `multipath` (n
/// paths of the cube, or a product's disjoint paths) and `direct`. Packet p crosses
/// hop h of its path in step p + h.
#[derive(Clone, Debug)]
pub struct PathPipeline {
    src: Rank,
    dst: Rank,
    nodes: u32,
    m: u64,
    /// The ν reported ([`Schedule::packets`]).
    nu: u64,
    /// Each path (src ..= dst) with the offset, length and packet count of its share.
    paths: Vec<Share>,
    /// Interior node → (path, hop index).
    interior: HashMap<Rank, (usize, usize)>,
    steps: usize,
}

/// One path's share of a [`PathPipeline`].
#[derive(Clone, Debug)]
struct Share {
    path: Vec<Rank>,
    off: u64,
    len: u64,
    nu: u64,
}

impl PathPipeline {
    /// Split `m` elements evenly over `paths` (the first `m mod paths` get one more) and
    /// pipeline each in `nu` packets. Paths must be node-disjoint but for their ends.
    pub fn new(nodes: u32, src: Rank, dst: Rank, m: u64, nu: u64, paths: Vec<Vec<Rank>>) -> Self {
        let count = paths.len().max(1) as u64;
        let shares = paths
            .into_iter()
            .enumerate()
            .map(|(j, p)| (p, packet(m, count, j as u64).1, nu))
            .collect();
        let mut pp = Self::split(nodes, src, dst, m, nu, shares);
        // Every path is counted as ν packets long, even one whose share has fewer
        // elements (as before the split was generalised).
        pp.steps = if m == 0 {
            0
        } else if src == dst {
            1
        } else {
            (nu + pp.depth() - 1) as usize
        };
        pp
    }

    /// Pipeline path j's `len_j` elements in `nu_j` packets ([`packet`]), the shares
    /// laid out one after another in path order; paths without elements are dropped.
    /// `nu` is the count reported as the schedule's ν. Paths must be node-disjoint but
    /// for their ends, and the lengths must sum to `m` (unless src = dst: then the
    /// schedule is one local copy, whatever the shares).
    pub fn split(
        nodes: u32,
        src: Rank,
        dst: Rank,
        m: u64,
        nu: u64,
        shares: Vec<(Vec<Rank>, u64, u64)>,
    ) -> Self {
        let mut off = 0;
        let mut paths = Vec::with_capacity(shares.len());
        for (path, len, nu) in shares {
            if len > 0 && nu > 0 {
                paths.push(Share { path, off, len, nu });
            }
            off += len;
        }
        debug_assert!(src == dst || off == m, "the shares cover the message");
        let mut interior = HashMap::new();
        for (j, s) in paths.iter().enumerate() {
            let p = &s.path;
            for (h, &x) in p.iter().enumerate().take(p.len().saturating_sub(1)).skip(1) {
                interior.insert(x, (j, h));
            }
        }
        let steps = if m == 0 {
            0
        } else if src == dst {
            1
        } else {
            paths
                .iter()
                .map(|s| s.nu.min(s.len) + s.path.len() as u64 - 2)
                .max()
                .unwrap_or(0) as usize
        };
        PathPipeline {
            src,
            dst,
            nodes,
            m,
            nu,
            paths,
            interior,
            steps,
        }
    }

    /// The longest path's hop count.
    pub fn depth(&self) -> u64 {
        self.paths
            .iter()
            .map(|s| s.path.len() as u64 - 1)
            .max()
            .unwrap_or(0)
    }

    /// Emit the ops of hop `h` of path `j` that involve `rank` (sender or receiver).
    fn hop(&self, prog: &mut Program, j: usize, h: usize) {
        let Share {
            path, off, len, nu, ..
        } = &self.paths[j];
        let buf = |i: usize| {
            if i == 0 {
                Buf::In
            } else if i + 1 == path.len() {
                Buf::Out
            } else {
                Buf::Tmp
            }
        };
        for p in 0..*nu {
            let (po, pl) = packet(*len, *nu, p);
            if pl == 0 {
                continue;
            }
            let s = (p as usize) + h;
            if path[h] == prog.rank {
                prog.push(s, Op::send(path[h + 1], Region::new(buf(h), off + po, pl)));
            }
            if path[h + 1] == prog.rank {
                prog.push(s, Op::recv(path[h], Region::new(buf(h + 1), off + po, pl)));
            }
        }
    }
}

impl Schedule for PathPipeline {
    fn nodes(&self) -> u32 {
        self.nodes
    }
    fn steps(&self) -> usize {
        self.steps
    }
    fn packets(&self) -> Option<u64> {
        Some(self.nu)
    }
    fn program(&self, rank: Rank) -> Program {
        let mut prog = Program::new(rank, self.steps);
        if self.steps == 0 {
            return prog;
        }
        if self.src == self.dst {
            if rank == self.src {
                prog.push(
                    0,
                    Op::copy(
                        Region::new(Buf::In, 0, self.m),
                        Region::new(Buf::Out, 0, self.m),
                    ),
                );
            }
            return prog;
        }
        if rank == self.src || rank == self.dst {
            for (j, s) in self.paths.iter().enumerate() {
                let h = if rank == self.src {
                    0
                } else {
                    s.path.len() - 2
                };
                self.hop(&mut prog, j, h);
            }
        } else if let Some(&(j, h)) = self.interior.get(&rank) {
            prog.tmp_len = self.m;
            self.hop(&mut prog, j, h - 1);
            self.hop(&mut prog, j, h);
        }
        prog
    }
}

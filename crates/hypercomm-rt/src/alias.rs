//! Memory checks of a program: races within a step, and whether it may run in place.
//!
//! Regions are compared as memory: with `in` placed inside `out` at `in_off` (an
//! in-place call), `in[a..b]` is `out[in_off + a..in_off + b]`.

use hypercomm::schedule::{Action, Buf, Op, Program, Region, Step};

/// A region as memory: (buffer, start, end), `in` mapped into `out` when aliased.
type Span = (Buf, u64, u64);

fn span(r: &Region, alias: Option<usize>) -> Span {
    match (r.buf, alias) {
        (Buf::In, Some(off)) => (Buf::Out, r.off + off as u64, r.end() + off as u64),
        _ => (r.buf, r.off, r.end()),
    }
}

/// Why a receive of `step` overlaps one of its sends or another of its receives, if it
/// does (a peer would read memory being written, or two writes would race).
pub(crate) fn race(step: &Step, alias: Option<usize>) -> Option<String> {
    let mut all: Vec<(Span, bool)> = Vec::new();
    for op in &step.ops {
        let (regions, is_recv) = match op {
            Op::Send { from, .. } => (from, false),
            Op::Recv { into, .. } => (into, true),
            Op::Local { .. } => continue,
        };
        let live = regions.iter().filter(|r| r.len > 0);
        all.extend(live.map(|r| (span(r, alias), is_recv)));
    }
    all.sort_unstable_by_key(|&((b, start, _), _)| (b, start));
    // Furthest end reached so far by a send and by a receive, in the current buffer.
    let (mut buf, mut send_end, mut recv_end) = (None, 0u64, 0u64);
    for &((b, start, end), is_recv) in &all {
        if buf != Some(b) {
            (buf, send_end, recv_end) = (Some(b), 0, 0);
        }
        let clash = recv_end > start || (is_recv && send_end > start);
        if clash {
            return Some(format!(
                "{}[{start}..{end}] overlaps a region the step also {}",
                b.name(),
                if is_recv {
                    "sends or receives"
                } else {
                    "receives"
                }
            ));
        }
        if is_recv {
            recv_end = recv_end.max(end);
        } else {
            send_end = send_end.max(end);
        }
    }
    None
}

/// Whether `program` computes the same with `in` = `out[in_off..]` as with separate
/// buffers: no race between the two names, and `in` never read after `out` overwrote
/// it (a local copy of `in` onto itself is a no-op and writes nothing).
pub(crate) fn safe(program: &Program, lens: [usize; 3], in_off: usize) -> bool {
    if in_off + lens[Buf::In.index()] > lens[Buf::Out.index()] {
        return false;
    }
    let alias = Some(in_off);
    let mut dirty = Dirty::default();
    for step in &program.steps {
        if race(step, alias).is_some() {
            return false;
        }
        for op in &step.ops {
            if let Op::Send { from, .. } = op {
                if from.iter().any(|r| dirty.reads(r, in_off)) {
                    return false;
                }
            }
        }
        for op in &step.ops {
            if let Op::Recv { into, .. } = op {
                into.iter().for_each(|r| dirty.write(r));
            }
        }
        for op in &step.ops {
            if let Op::Local { from, into, action } = op {
                if dirty.reads(from, in_off) {
                    return false;
                }
                let noop = *action == Action::Place && span(from, alias) == span(into, alias);
                if !noop {
                    dirty.write(into);
                }
            }
        }
    }
    true
}

/// Ranges of `out` written so far: sorted, disjoint, merged.
#[derive(Default)]
struct Dirty(Vec<(u64, u64)>);

impl Dirty {
    fn write(&mut self, r: &Region) {
        if r.buf != Buf::Out || r.len == 0 {
            return;
        }
        let (mut lo, mut hi) = (r.off, r.end());
        let i = self.0.partition_point(|&(_, y)| y < lo);
        let mut j = i;
        while j < self.0.len() && self.0[j].0 <= hi {
            lo = lo.min(self.0[j].0);
            hi = hi.max(self.0[j].1);
            j += 1;
        }
        self.0.splice(i..j, [(lo, hi)]);
    }

    /// Whether reading `r` reads `in` where `out` was written.
    fn reads(&self, r: &Region, in_off: usize) -> bool {
        if r.buf != Buf::In || r.len == 0 {
            return false;
        }
        let (_, a, b) = span(r, Some(in_off));
        let i = self.0.partition_point(|&(_, y)| y <= a);
        i < self.0.len() && self.0[i].0 < b
    }
}

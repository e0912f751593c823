//! Copies of large messages with streaming (non-temporal) stores.
//!
//! A copy with ordinary stores first reads every destination line into the cache (the
//! read for ownership), then writes it: three bytes of memory traffic per byte copied.
//! Streaming stores write whole lines without reading them: two. Once a copy runs from
//! memory rather than from the caches, that is up to 1.5× the bandwidth; while the
//! data fits in the caches, streaming is slower (it bypasses them, and the receiver then
//! reads its result from memory). Measured on the machine of record (BENCHMARKS.md,
//! "Streaming stores for large copies"), two threads copying at once, GB/s per thread,
//! ordinary / streaming: 1 MiB 26.1 / 21.3, 1.5 MiB 15.8 / 20.9, 2 MiB 14.3 / 19.9,
//! 4 MiB 14.1 / 16.3, 16 MiB 14.0 / 16.8 (the core's 2 MiB L2 holds a copy's source and
//! destination up to 1 MiB). In the collectives a 1 MiB threshold made a 2-rank
//! broadcast of 1 MiB, still served from the caches, 1.4× slower, so the threshold,
//! [`STREAM_FROM`], is 2 MiB: from there the 2-rank all-to-all, all-gather and
//! broadcast and the 4-rank all-to-all take 12–31 % less time, and nothing measured
//! took more. MPI libraries' shared-memory transports stream large copies too; glibc's
//! `memcpy` streams only beyond ¾ of the shared cache per thread, which a virtual
//! machine may report far larger than what a core gets (260 MiB here).
//!
//! Ordering: streaming stores are weakly ordered, so every streaming copy ends with a
//! store fence (`sfence`): the stores that follow it, among them the `Release` stores
//! that tell other threads the copy is done, are seen after the data.

/// Messages of at least this many bytes are copied with streaming stores.
pub const STREAM_FROM: usize = 2 << 20;

/// Copy `len` bytes from `src` to `dst`, part of a message of `whole` bytes: with
/// streaming stores (then a store fence) when `whole ≥ STREAM_FROM`, else `memcpy`.
///
/// # Safety
/// As [`std::ptr::copy_nonoverlapping`]: `src` readable and `dst` writable for `len`
/// bytes, not overlapping.
#[inline]
pub(crate) unsafe fn copy(src: *const u8, dst: *mut u8, len: usize, whole: usize) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if whole >= STREAM_FROM {
        // SAFETY: forwarded.
        unsafe { stream(src, dst, len) };
        return;
    }
    let _ = whole;
    // SAFETY: forwarded.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
}

/// The streaming copy: ordinary stores up to `dst`'s first 64-byte boundary, then whole
/// lines with `movntdq` (SSE2, present on every x86-64), the tail with ordinary
/// stores, and a store fence.
#[cfg(all(target_arch = "x86_64", not(miri)))]
unsafe fn stream(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    let head = ((64 - (dst as usize & 63)) & 63).min(len);
    // SAFETY: the caller's contract covers `len` bytes; every offset below is < len.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut at = head;
        while at + 64 <= len {
            let (s, d) = (src.add(at).cast::<__m128i>(), dst.add(at).cast::<__m128i>());
            let (a, b) = (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)));
            let (c, e) = (_mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
            // `d` is 64-byte aligned: each store is to a 16-byte-aligned address.
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
            at += 64;
        }
        std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), len - at);
        _mm_sfence();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length and misalignment around the line size and the threshold copies
    /// exactly the bytes asked for, and nothing past them.
    #[test]
    fn streaming_copies_are_exact() {
        let n = 4096 + 256;
        let src: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
        for (s_off, d_off) in [(0, 0), (1, 0), (0, 1), (13, 29), (63, 1), (64, 63)] {
            for len in [0, 1, 15, 16, 63, 64, 65, 127, 128, 1000, 4096] {
                let mut dst = vec![0xAAu8; n + 128];
                // A whole of STREAM_FROM takes the streaming path whatever `len` is.
                // SAFETY: in bounds of both vectors, which do not overlap.
                unsafe {
                    copy(
                        src.as_ptr().add(s_off),
                        dst.as_mut_ptr().add(d_off),
                        len,
                        STREAM_FROM,
                    )
                };
                assert_eq!(&dst[d_off..d_off + len], &src[s_off..s_off + len]);
                assert!(dst[..d_off].iter().all(|&b| b == 0xAA), "before, len {len}");
                assert!(
                    dst[d_off + len..].iter().all(|&b| b == 0xAA),
                    "after, len {len}"
                );
            }
        }
    }
}

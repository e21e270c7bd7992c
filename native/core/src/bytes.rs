//! Appending large byte runs without glibc's `rep movsb`.
//!
//! glibc (2.36, Debian 12) copies more than `x86_rep_movsb_threshold`
//! bytes (2,112 on this project's AMD EPYC machines) with `rep movsb`. On
//! those CPUs under KVM that instruction runs at about 2 GB/s when source
//! and destination differ in their alignment, against 35-40 GB/s for the
//! vector loop glibc uses below the threshold (bench/tools/memcpy-alignment.c;
//! docs/design.md, "Copies that start at an odd address"). Body bytes
//! are such copies: a DATA frame's payload follows its header at any
//! offset, and an event's bytes follow the event's header. Copying in
//! pieces below the threshold keeps every piece on the vector loop; where
//! glibc never picks `rep movsb` the pieces cost one call each per 2 KiB.

/// Below every default `x86_rep_movsb_threshold` of glibc: 2,112 on CPUs
/// with fast short `rep movsb` (FSRM), else 2,048 x the vector size / 16.
const PIECE: usize = 2048;

/// `dst.extend_from_slice(src)`, copied in pieces of at most 2 KiB.
#[inline]
pub fn append(dst: &mut Vec<u8>, src: &[u8]) {
    if src.len() <= PIECE {
        dst.extend_from_slice(src);
        return;
    }
    dst.reserve(src.len());
    for piece in src.chunks(PIECE) {
        dst.extend_from_slice(piece);
    }
}

/// `dst.copy_from_slice(src)`, in pieces of at most 2 KiB.
#[inline]
pub fn copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "bytes::copy: lengths differ");
    for (d, s) in dst.chunks_mut(PIECE).zip(src.chunks(PIECE)) {
        d.copy_from_slice(s);
    }
}

/// A copy of `src` in a new `Vec`, made in pieces of at most 2 KiB.
#[inline]
pub fn to_vec(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    append(&mut out, src);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_every_byte_in_order_whatever_the_length() {
        for len in [0, 1, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 17] {
            let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut dst = vec![9u8; 5];
            append(&mut dst, &src);
            assert_eq!(&dst[..5], &[9u8; 5]);
            assert_eq!(&dst[5..], &src[..], "length {len}");
            assert_eq!(to_vec(&src), src);
            let mut same = vec![0u8; len];
            copy(&mut same, &src);
            assert_eq!(same, src);
        }
    }
}

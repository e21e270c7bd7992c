//! The addon's allocator: mimalloc for every Rust allocation of the addon
//! (the protocol core's and quiche's on the I/O thread, the boundary's on
//! both threads); Node's own heap stays glibc's. Why, with the evidence:
//! docs/design.md, "The addon's allocator".

use std::alloc::{GlobalAlloc, Layout};
use std::os::raw::c_void;
use std::sync::Once;

use libmimalloc_sys as mi;

#[global_allocator]
static GLOBAL: Mimalloc = Mimalloc;

/// The alignment every mimalloc block has whatever its size: block sizes
/// are whole machine words, in pages that start aligned.
const WORD_ALIGN: usize = std::mem::size_of::<usize>();

/// mimalloc, called through its plain entry points when the layout's
/// alignment is at most a word (nearly every Rust allocation: byte
/// buffers, strings, structs of integers and pointers). The `mimalloc`
/// crate's allocator calls the aligned entry points for every layout;
/// callgrind counted ~90 instructions per allocation through
/// `mi_malloc_aligned` under W1 (32 allocations per request), and the plain
/// path skips its alignment checks and fallbacks.
struct Mimalloc;

// SAFETY: every path returns memory from mimalloc with at least the
// layout's alignment (word-aligned blocks for align <= WORD_ALIGN, the
// aligned entry points otherwise), and frees with mi_free, which takes any
// pointer mimalloc returned.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD_ALIGN {
            mi::mi_malloc(layout.size()) as *mut u8
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD_ALIGN {
            mi::mi_zalloc(layout.size()) as *mut u8
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr as *mut c_void);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD_ALIGN {
            mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
        } else {
            mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

/// `mi_option_purge_delay`'s place in `mi_option_e` of the mimalloc 3
/// bundled with libmimalloc-sys 0.1.49 (pinned in Cargo.toml); the crate's
/// own constants follow mimalloc 2's enum, which has no such entry.
const MI_OPTION_PURGE_DELAY: mi::mi_option_t = 15;
/// mimalloc 3's default for it, in milliseconds: how the index is checked.
const MIMALLOC3_DEFAULT_PURGE_DELAY: std::os::raw::c_long = 1000;
/// With mimalloc 3's second, pages the handshakes freed were still
/// resident when W5 read RSS a second after opening 1,000 idle connections:
/// 50-60 KiB per connection against glibc's 39; with mimalloc 2's 10 ms,
/// 39-40, and with 100 ms the same (40.6-40.9 KiB against 40.9-44.2). The
/// 100 ms keep the pages of quiche's per-frame copies in a 250 MB/s upload
/// from being purged and faulted in again between uses: W8's upload 4 %
/// cheaper in server CPU (docs/design.md, "The addon's allocator").
const PURGE_DELAY_MS: std::os::raw::c_long = 100;

/// Sets the options the defaults do not suit; once per process, before the
/// first server starts. The option is set only if its slot holds mimalloc
/// 3's default, so a different bundled mimalloc leaves it alone rather than
/// change another option (allocator's test fails then).
pub fn tune() {
    static TUNED: Once = Once::new();
    TUNED.call_once(|| {
        // SAFETY: plain integer getters and setters of mimalloc's option table.
        unsafe {
            if mi::mi_option_get(MI_OPTION_PURGE_DELAY) == MIMALLOC3_DEFAULT_PURGE_DELAY {
                mi::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
            }
        }
    });
}

/// Returns this thread's free pages to the system now (the I/O thread
/// purges its own as it runs, after the purge delay).
pub fn collect() {
    // SAFETY: mi_collect takes no pointers and acts on the calling thread's heap.
    unsafe { mi::mi_collect(true) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_gets_its_alignment_and_keeps_its_bytes() {
        let a = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 7, 8, 9, 15, 16, 17, 24, 40, 100, 1000, 5000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; each block freed once with its layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null() && (p as usize).is_multiple_of(align), "size {size} align {align}: {p:p}");
                    p.write_bytes(0xab, size);
                    let z = a.alloc_zeroed(layout);
                    assert!(
                        (z as usize).is_multiple_of(align) && (0..size).all(|i| *z.add(i) == 0),
                        "zeroed size {size} align {align}"
                    );
                    let q = a.realloc(p, layout, size * 3);
                    assert!((q as usize).is_multiple_of(align), "realloc size {size} align {align}");
                    assert!((0..size).all(|i| *q.add(i) == 0xab), "realloc kept the bytes");
                    a.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    a.dealloc(z, layout);
                }
            }
        }
    }

    #[test]
    fn the_purge_delay_is_set_where_mimalloc_keeps_it() {
        tune();
        // SAFETY: as in tune.
        let now = unsafe { mi::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(now, PURGE_DELAY_MS, "index {MI_OPTION_PURGE_DELAY} did not hold mimalloc 3's purge delay");
    }
}

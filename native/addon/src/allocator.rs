//! The addon's allocator: mimalloc for every Rust allocation of the addon
//! (the protocol core's and quiche's on the I/O thread, the boundary's on
//! both threads); Node's own heap stays glibc's. Why, with the evidence:
//! docs/design.md, "The addon's allocator".

use std::sync::Once;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay`'s place in `mi_option_e` of the mimalloc 3
/// bundled with libmimalloc-sys 0.1.49 (pinned in Cargo.toml); the crate's
/// own constants follow mimalloc 2's enum, which has no such entry.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// mimalloc 3's default for it, in milliseconds: how the index is checked.
const MIMALLOC3_DEFAULT_PURGE_DELAY: std::os::raw::c_long = 1000;
/// mimalloc 2's default. With mimalloc 3's second, pages the handshakes
/// freed were still resident when W5 read RSS a second after opening 1,000
/// idle connections: 50-60 KiB per connection against glibc's 39; with
/// 10 ms, 39-40.
const PURGE_DELAY_MS: std::os::raw::c_long = 10;

/// Sets the options the defaults do not suit; once per process, before the
/// first server starts. The option is set only if its slot holds mimalloc
/// 3's default, so a different bundled mimalloc leaves it alone rather than
/// change another option (allocator's test fails then).
pub fn tune() {
    static TUNED: Once = Once::new();
    TUNED.call_once(|| {
        // SAFETY: plain integer getters and setters of mimalloc's option table.
        unsafe {
            if libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) == MIMALLOC3_DEFAULT_PURGE_DELAY {
                libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
            }
        }
    });
}

/// Returns this thread's free pages to the system now (the I/O thread
/// purges its own as it runs, after the purge delay).
pub fn collect() {
    // SAFETY: mi_collect takes no pointers and acts on the calling thread's heap.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_is_set_where_mimalloc_keeps_it() {
        tune();
        // SAFETY: as in tune.
        let now = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(now, PURGE_DELAY_MS, "index {MI_OPTION_PURGE_DELAY} did not hold mimalloc 3's purge delay");
    }
}

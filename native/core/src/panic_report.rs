//! Panic reporting for the I/O thread. The loop catches panics per
//! connection and reports them through a LOG event, so TypeScript's logger
//! formats them like every other diagnostic (one line, or one JSON object
//! with `--log-format json`). The default hook would print a backtrace to
//! stderr instead; this hook only records the message and its location for
//! the catcher to pick up. Other threads (other addons in the same process)
//! keep the previous hook.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

const IO_THREAD: &str = "h3-io";

thread_local! {
    /// The last panic on this thread not yet reported: "at FILE:LINE: MESSAGE".
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() != Some(IO_THREAD) {
                return previous(info);
            }
            let at = info.location().map(|l| format!("at {}:{}: ", l.file(), l.line())).unwrap_or_default();
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            // The hook may run while LAST is borrowed only if the panic came
            // from take_last itself; then keep the first message.
            let _ = LAST.try_with(|l| l.try_borrow_mut().map(|mut l| *l = Some(format!("{at}{msg}"))));
        }));
    });
}

/// The recorded panic of this thread, if any, cleared.
pub fn take_last() -> Option<String> {
    LAST.try_with(|l| l.try_borrow_mut().ok().and_then(|mut l| l.take())).ok().flatten()
}

/// Runs the I/O loop. A panic that escapes every per-connection catch ends
/// the thread; nothing is left to emit a LOG event then, so it is printed
/// to stderr as plain text, the last resort.
pub fn run_reporting_escapes(run: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(run)).is_err() {
        let what = take_last().unwrap_or_else(|| "unknown panic".into());
        eprintln!("h3core: panic on the I/O thread escaped the event loop, {what}");
    }
}

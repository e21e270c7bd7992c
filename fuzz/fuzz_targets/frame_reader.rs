//! The incremental HTTP/3 frame reader (native/src/h3/frame.rs), fed the
//! input in pieces whose sizes the input also chooses, on a request or a
//! control stream. Checks, besides "no panic": a DATA payload never yields
//! more bytes than its frame declared, a buffered frame never exceeds the
//! reader's cap, and the same bytes give the same events however they are
//! split.
#![no_main]

use h3core::h3::frame::{Context, FrameEvent, FrameReader};
use libfuzzer_sys::fuzz_target;


#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Whole(u64, Vec<u8>),
    DataStart(u64),
    Data(Vec<u8>),
    Oversized(u64, u64),
    Error(u64, bool),
}

fn run(context: Context, cap: usize, data: &[u8], splits: &[u8]) -> Vec<Seen> {
    let mut reader = FrameReader::new(context, cap);
    let mut seen = Vec::new();
    let mut data_left: u64 = 0;
    let mut rest = data;
    let mut split = splits.iter().cycle();
    while !rest.is_empty() {
        let n = if splits.is_empty() { rest.len() } else { (*split.next().unwrap() as usize % 17 + 1).min(rest.len()) };
        let (piece, tail) = rest.split_at(n);
        rest = tail;
        let result = reader.feed(piece, &mut |ev| {
            match ev {
                FrameEvent::Whole { ty, payload } => {
                    assert!(payload.len() <= cap, "buffered frame over the cap");
                    seen.push(Seen::Whole(ty, payload));
                }
                FrameEvent::DataStart { len } => {
                    assert_eq!(data_left, 0, "DATA started inside another DATA payload");
                    data_left = len;
                    seen.push(Seen::DataStart(len));
                }
                FrameEvent::Data(d) => {
                    assert!(d.len() as u64 <= data_left, "more DATA bytes than declared");
                    data_left -= d.len() as u64;
                    // Merge consecutive pieces so the split does not matter.
                    if let Some(Seen::Data(prev)) = seen.last_mut() {
                        prev.extend_from_slice(d);
                    } else {
                        seen.push(Seen::Data(d.to_vec()));
                    }
                }
                FrameEvent::Oversized { ty, len } => {
                    assert!(len > cap as u64);
                    seen.push(Seen::Oversized(ty, len));
                }
            }
            Ok(())
        });
        if let Err(e) = result {
            seen.push(Seen::Error(e.code, e.connection));
            return seen;
        }
    }
    let _ = reader.at_boundary();
    seen
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let context = if input[0] & 1 == 0 { Context::Request } else { Context::Control };
    let cap = 1 + input[1] as usize * 4;
    let split_len = (input[2] as usize % 8).min(input.len() - 3);
    let (splits, data) = input[3..].split_at(split_len);
    let whole = run(context, cap, data, &[]);
    let pieces = run(context, cap, data, splits);
    assert_eq!(whole, pieces, "events depend on how the bytes were split");
});

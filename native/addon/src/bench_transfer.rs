//! BENCHMARK-ONLY: W8's two routes answered inside the I/O thread, with no
//! JavaScript: `POST /upload` counts the body and gives its credit back as
//! each chunk arrives, `GET /file` reads the file in 64 KiB pieces (what
//! `fs.createReadStream` reads) and keeps at most 256 KiB (createSecureServer's
//! `sendHighWater`) queued beyond what QUIC has taken. It runs on the same
//! core options createSecureServer gives (body credit, windows), so its W8
//! row is the most any JavaScript API on this core could reach: the floor
//! that issue 12's W8 targets are measured against (bench/README.md, "What
//! sets W8's pace"). Every other request goes on to JavaScript.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use h3core::app::{Action, Response};
use h3core::h3::request::RequestHead;
use h3core::ids::{ConnId, StreamId};

/// fs.createReadStream's default highWaterMark.
const READ_CHUNK: usize = 64 * 1024;
/// createSecureServer's sendHighWater (src/lib/native-stream.ts).
const SEND_HIGH_WATER: u64 = 256 * 1024;
const TEXT: (&[u8], &[u8]) = (b"content-type", b"text/plain");

enum Transfer {
    Upload { count: u64 },
    Download { file: File, size: u64, queued: u64, sent: u64, ended: bool },
}

/// An action held until the loop's next turn takes it.
enum Owned {
    Head { content_length: Vec<u8> },
    Data { data: Vec<u8>, fin: bool },
    Consumed(u64),
    Answer { status: u16, body: Vec<u8> },
}

pub struct Transfers {
    file: PathBuf,
    streams: HashMap<(ConnId, StreamId), Transfer>,
    queued: Queued,
}

/// Actions for the loop's next turn.
#[derive(Default)]
struct Queued {
    actions: Vec<(ConnId, StreamId, Owned)>,
    /// When the first of them was queued.
    due: Option<Instant>,
}

impl Queued {
    fn push(&mut self, action: (ConnId, StreamId, Owned)) {
        self.due.get_or_insert_with(Instant::now);
        self.actions.push(action);
    }
}

impl Transfers {
    pub fn new(file: PathBuf) -> Self {
        Transfers { file, streams: HashMap::new(), queued: Queued::default() }
    }

    /// Takes the request when it is one of W8's routes (true), else leaves
    /// it for JavaScript.
    pub fn on_request(&mut self, conn: ConnId, stream: StreamId, head: &RequestHead, ended: bool, body: Option<&[u8]>) -> bool {
        let path = head.path().unwrap_or(b"");
        match (head.method(), path) {
            (b"POST", b"/upload") => {
                let count = body.map_or(0, |b| b.len() as u64);
                if ended {
                    self.answer_count(conn, stream, count);
                } else {
                    self.streams.insert((conn, stream), Transfer::Upload { count });
                }
                true
            }
            (b"GET", b"/file") => {
                let opened = File::open(&self.file).and_then(|f| Ok((f.metadata()?.len(), f)));
                match opened {
                    Ok((size, file)) => {
                        self.queued.push((conn, stream, Owned::Head { content_length: size.to_string().into_bytes() }));
                        self.streams.insert((conn, stream), Transfer::Download { file, size, queued: 0, sent: 0, ended: false });
                        self.fill(conn, stream);
                    }
                    Err(e) => {
                        self.queued.push((conn, stream, Owned::Answer { status: 500, body: format!("{e}\n").into_bytes() }))
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// Body bytes of a request this took: counted (an upload) or ignored,
    /// their credit returned at once. False when the stream is not one of these.
    pub fn on_body(&mut self, conn: ConnId, stream: StreamId, data: &[u8], fin: bool) -> bool {
        let Some(t) = self.streams.get_mut(&(conn, stream)) else { return false };
        if !data.is_empty() {
            self.queued.push((conn, stream, Owned::Consumed(data.len() as u64)));
        }
        if let Transfer::Upload { count } = t {
            *count += data.len() as u64;
            if fin {
                let count = *count;
                self.streams.remove(&(conn, stream));
                self.answer_count(conn, stream, count);
            }
        }
        true
    }

    /// QUIC took `total` bytes of a download's body: read on up to the high-water mark.
    pub fn on_sent(&mut self, conn: ConnId, stream: StreamId, total: u64) -> bool {
        let Some(Transfer::Download { sent, .. }) = self.streams.get_mut(&(conn, stream)) else { return false };
        *sent = total;
        self.fill(conn, stream);
        true
    }

    /// The stream ended without a normal finish: false when it was not one of these.
    pub fn forget(&mut self, conn: ConnId, stream: StreamId) -> bool {
        self.streams.remove(&(conn, stream)).is_some()
    }

    pub fn forget_connection(&mut self, conn: ConnId) {
        self.streams.retain(|(c, _), _| *c != conn);
        self.queued.actions.retain(|(c, _, _)| *c != conn);
    }

    /// When the loop is due to take the queued actions (None: nothing is
    /// queued): when the first was
    /// queued (a time already past, so the loop polls without blocking; a
    /// time "now" read later would be a little ahead, and epoll would round
    /// the wait up to a millisecond).
    pub fn due(&self) -> Option<Instant> {
        self.queued.due
    }

    pub fn take_actions(&mut self, apply: &mut impl FnMut(ConnId, StreamId, Action<'_>)) {
        self.queued.due = None;
        for (conn, stream, owned) in self.queued.actions.drain(..) {
            match &owned {
                Owned::Head { content_length } => {
                    let fields: [(&[u8], &[u8]); 2] =
                        [(b"content-type", b"application/octet-stream"), (b"content-length", content_length)];
                    apply(conn, stream, Action::Headers { status: 200, fields: &fields, fin: false });
                }
                Owned::Data { data, fin } => apply(conn, stream, Action::Data { data, fin: *fin }),
                Owned::Consumed(n) => apply(conn, stream, Action::Consumed(*n)),
                Owned::Answer { status, body } => {
                    // content-length as createSecureServer's res.end(text) sends it.
                    let length = body.len().to_string();
                    let fields: [(&[u8], &[u8]); 2] = [TEXT, (b"content-length", length.as_bytes())];
                    apply(conn, stream, Action::Respond(Response { status: *status, fields: &fields, body }));
                }
            }
        }
    }

    fn answer_count(&mut self, conn: ConnId, stream: StreamId, count: u64) {
        self.queued.push((conn, stream, Owned::Answer { status: 200, body: format!("{count}\n").into_bytes() }));
    }

    /// Queues file pieces while less than the high-water mark waits unsent;
    /// the last piece carries the FIN. The stream stays known after that, so
    /// its later `on_sent` reports do not reach JavaScript.
    fn fill(&mut self, conn: ConnId, stream: StreamId) {
        let Some(Transfer::Download { file, size, queued, sent, ended }) = self.streams.get_mut(&(conn, stream)) else { return };
        while !*ended && *queued - *sent < SEND_HIGH_WATER {
            let want = READ_CHUNK.min((*size - *queued) as usize);
            // Read into uninitialised capacity, as Node's fs streams read into
            // Buffer.allocUnsafeSlow: zeroing each piece first cost a memset of
            // every byte sent (10 % of this answerer's instructions per GiB).
            let mut data = Vec::with_capacity(want);
            let n = file.by_ref().take(want as u64).read_to_end(&mut data).unwrap_or(0);
            data.truncate(n);
            *queued += n as u64;
            // A file that shrank or failed under the transfer ends it short.
            *ended = n == 0 || *queued == *size;
            self.queued.push((conn, stream, Owned::Data { data, fin: *ended }));
        }
    }
}

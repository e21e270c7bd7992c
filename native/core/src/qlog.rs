//! One qlog file per connection (`--qlog-dir`), written by quiche's own
//! qlog support in JSON-SEQ (`.sqlog`, which qvis reads). The file is named
//! after the server's connection ID, the `cid=` of the diagnostics, so a log
//! line leads to its trace.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::PathBuf;

/// A connection's qlog file could not be created.
#[derive(Debug)]
pub struct QlogFileError {
    path: PathBuf,
    cause: io::Error,
}

impl fmt::Display for QlogFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot create qlog file {}: {}", self.path.display(), self.cause)
    }
}

pub struct QlogDir {
    dir: PathBuf,
}

impl QlogDir {
    pub fn new(dir: &str) -> Result<QlogDir, crate::error::ListenError> {
        std::fs::create_dir_all(dir).map_err(|cause| crate::error::ListenError::QlogDir { dir: dir.to_string(), cause })?;
        Ok(QlogDir { dir: PathBuf::from(dir) })
    }

    /// Starts the trace of a newly accepted connection. A file that cannot
    /// be created costs that connection its trace, not its service; the
    /// error is returned for a diagnostic line.
    #[inline]
    pub fn attach(&self, quic: &mut quiche::Connection, cid_hex: &str, peer: &str) -> Result<(), QlogFileError> {
        let path = self.dir.join(format!("{cid_hex}.sqlog"));
        let file = match File::create(&path) {
            Ok(f) => f,
            Err(cause) => return Err(QlogFileError { path, cause }),
        };
        // Buffered: quiche writes a record per event; the buffer is flushed
        // when the connection (and with it quiche's streamer) is dropped.
        quic.set_qlog(
            Box::new(BufWriter::with_capacity(64 * 1024, file)),
            format!("h3-node connection {cid_hex}"),
            format!("server side, peer {peer}"),
        );
        Ok(())
    }
}

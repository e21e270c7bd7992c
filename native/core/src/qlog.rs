//! One qlog file per connection (`--qlog-dir`), written by quiche's own
//! qlog support in JSON-SEQ (`.sqlog`, which qvis reads). The file is named
//! after the server's connection ID, the `cid=` of the diagnostics, so a log
//! line leads to its trace.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

pub struct QlogDir {
    dir: PathBuf,
}

impl QlogDir {
    pub fn new(dir: &str) -> Result<QlogDir, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the qlog directory {dir}: {e}"))?;
        Ok(QlogDir { dir: PathBuf::from(dir) })
    }

    /// Starts the trace of a newly accepted connection. A file that cannot
    /// be created costs that connection its trace, not its service; the
    /// error is returned for a diagnostic line.
    #[inline]
    pub fn attach(&self, quic: &mut quiche::Connection, cid_hex: &str, peer: &str) -> Result<(), String> {
        let path = self.dir.join(format!("{cid_hex}.sqlog"));
        let file = File::create(&path).map_err(|e| format!("cannot create qlog file {}: {e}", path.display()))?;
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

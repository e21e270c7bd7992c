//! TLS key log (NSS key log format) for `SSLKEYLOGFILE`, the convention
//! curl, Chromium and quic-go follow, so Wireshark/tshark can decrypt a
//! capture of this server's traffic.
//!
//! One file is shared by every connection. quiche's key-log callback hands
//! over one complete line per `write_all` (tls/mod.rs, `keylog`), so each
//! write is appended under a lock, in one `write(2)` on an O_APPEND file:
//! lines of different connections, or of other processes logging to the
//! same file, never interleave.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct KeyLog {
    file: Arc<Mutex<File>>,
}

impl KeyLog {
    pub fn open(path: &str) -> Result<KeyLog, crate::error::ListenError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|cause| crate::error::ListenError::KeyLog { path: path.to_string(), cause })?;
        Ok(KeyLog { file: Arc::new(Mutex::new(file)) })
    }

    /// A writer for one connection (`quiche::Connection::set_keylog`).
    pub fn writer(&self) -> Box<dyn Write + Send + Sync> {
        Box::new(self.clone())
    }
}

impl Write for KeyLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_whole_lines_from_several_writers() {
        let path = std::env::temp_dir().join(format!("h3core-keylog-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let log = KeyLog::open(path.to_str().unwrap()).unwrap();
        let mut a = log.writer();
        let mut b = log.writer();
        a.write_all(b"CLIENT_RANDOM aa 11\n").unwrap();
        b.write_all(b"CLIENT_RANDOM bb 22\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "CLIENT_RANDOM aa 11\nCLIENT_RANDOM bb 22\n");
        let _ = std::fs::remove_file(&path);
    }
}

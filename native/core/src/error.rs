//! Why a server could not start. Each variant's Display is the one-line
//! message `listen()` throws and the CLI prints (test/cli tests check these
//! texts), so wording changes here are behaviour changes.

use std::fmt;
use std::io;
use std::net::SocketAddr;

#[derive(Debug)]
pub enum ListenError {
    /// quiche refused its configuration.
    Quiche(quiche::Error),
    /// The certificate chain is not PEM X.509 certificates.
    Certificate,
    /// The private key is neither PKCS#8 DER nor PEM.
    PrivateKey,
    /// The private key is not the leaf certificate's.
    KeyMismatch,
    Alpn(quiche::Error),
    KeyLog {
        path: String,
        cause: io::Error,
    },
    QlogDir {
        dir: String,
        cause: io::Error,
    },
    InvalidHost {
        host: String,
    },
    PortInUse {
        port: u16,
        host: String,
    },
    Bind {
        addr: SocketAddr,
        cause: io::Error,
    },
    /// Setting the socket up for the loop (non-blocking, poll registration).
    Socket(io::Error),
    /// quinn-udp could not take the socket over (GSO/GRO probing).
    UdpSetup(io::Error),
    /// No congestion controller by that name in quiche.
    CongestionControl {
        name: String,
    },
    /// A worker could not join its group (workers.rs).
    Workers(String),
    /// The client-certificate CAs are not PEM X.509 certificates.
    Ca,
    /// A server name in the identity table that is not a host name or a
    /// one-label wildcard (`*.example.com`).
    ServerName {
        name: String,
    },
}

impl fmt::Display for ListenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenError::Quiche(e) => write!(f, "quiche config: {e}"),
            ListenError::Certificate => write!(f, "the certificate chain is not PEM X.509 certificates"),
            ListenError::PrivateKey => write!(f, "the private key is not a PKCS#8 or PEM private key"),
            ListenError::KeyMismatch => write!(f, "the private key does not match the certificate"),
            ListenError::Alpn(e) => write!(f, "alpn: {e}"),
            ListenError::KeyLog { path, cause } => {
                write!(f, "cannot open the TLS key log file {path} (SSLKEYLOGFILE): {cause}")
            }
            ListenError::QlogDir { dir, cause } => write!(f, "cannot create the qlog directory {dir}: {cause}"),
            ListenError::InvalidHost { host } => write!(f, "invalid host address: {host}"),
            ListenError::CongestionControl { name } => {
                write!(f, "unknown congestion control {name:?} (cubic, reno or bbr2)")
            }
            ListenError::PortInUse { port, host } => write!(f, "UDP port {port} on {host} is already in use"),
            ListenError::Bind { addr, cause } => write!(f, "cannot bind UDP {addr}: {cause}"),
            ListenError::Socket(e) => write!(f, "{e}"),
            ListenError::UdpSetup(e) => write!(f, "UDP socket setup: {e}"),
            ListenError::Workers(e) => write!(f, "workers: {e}"),
            ListenError::Ca => write!(f, "the CA certificates are not PEM X.509 certificates"),
            ListenError::ServerName { name } => {
                write!(f, "{name:?} is not a server name (a host name, or *. and a host name)")
            }
        }
    }
}

impl std::error::Error for ListenError {}

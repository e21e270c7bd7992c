//! Which identity each handshake presents, and whether it asks the client
//! for a certificate: chosen per connection in BoringSSL's
//! select-certificate callback, from the client's server name (SNI).
//!
//! The server's identities are one immutable `Identities` value behind an
//! `IdentityStore`; replacing it (setSecureContext) changes what new
//! handshakes get, while connections past their ClientHello keep what they
//! were given (BoringSSL holds the certificate per connection). The
//! callback sets the chosen certificate, chain and key on the connection's
//! own `SSL`, so the context quiche configured (ALPN, tickets, key log,
//! early data) stays the one every handshake runs on.
//!
//! A name the static table does not know can be handed to the application
//! (SNICallback): the callback records the question in the connection's
//! `HandshakeTls` and answers "retry", which pauses the handshake (quiche
//! reads it as nothing to do yet); the loop reports the question, and once
//! the application answers it marks the connection, whose next send runs
//! the handshake, and so this callback, again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use boring::ssl::{ClientHello, NameType, SelectCertError, Ssl, SslContextBuilder, SslRef, SslVerifyMode};
use boring::x509::store::{X509Store, X509StoreBuilder};
use boring::x509::X509;

use crate::error::ListenError;
use crate::tls::Identity;

/// Client certificates (node:tls's `requestCert`, `ca`, `rejectUnauthorized`).
pub struct ClientAuth {
    /// The CAs a client certificate must chain to (an empty store: none
    /// verifies, so every client is unauthorized).
    store: X509Store,
    /// Refuse the handshake of a client without a certificate the store verifies.
    reject_unauthorized: bool,
}

impl ClientAuth {
    /// `ca_pem`: one or more PEM certificates.
    pub fn new(ca_pem: Option<&[u8]>, reject_unauthorized: bool) -> Result<ClientAuth, ListenError> {
        let mut builder = X509StoreBuilder::new().map_err(|_| ListenError::Ca)?;
        if let Some(pem) = ca_pem {
            let certs = X509::stack_from_pem(pem).map_err(|_| ListenError::Ca)?;
            if certs.is_empty() {
                return Err(ListenError::Ca);
            }
            for c in certs {
                builder.add_cert(c).map_err(|_| ListenError::Ca)?;
            }
        }
        Ok(ClientAuth { store: builder.build(), reject_unauthorized })
    }
}

/// Every identity the server can present, and how it chooses.
#[derive(Default)]
pub struct Identities {
    /// For a client that names nothing the table knows (or no name): with
    /// none, such a handshake fails with a TLS alert.
    pub default: Option<Arc<Identity>>,
    exact: HashMap<String, Arc<Identity>>,
    /// `*.example.com` is kept as `example.com`: it matches one label
    /// to the left (`a.example.com`, not `example.com` or `a.b.example.com`).
    wildcard: HashMap<String, Arc<Identity>>,
    /// Names the table does not know go to the application.
    pub ask_application: bool,
    pub client_auth: Option<Arc<ClientAuth>>,
}

impl Identities {
    pub fn new(
        default: Option<Identity>,
        named: Vec<(String, Identity)>,
        ask_application: bool,
        client_auth: Option<ClientAuth>,
    ) -> Result<Identities, ListenError> {
        let mut out = Identities {
            default: default.map(Arc::new),
            ask_application,
            client_auth: client_auth.map(Arc::new),
            ..Identities::default()
        };
        for (name, identity) in named {
            let name = name.to_ascii_lowercase();
            let valid = |s: &str| !s.is_empty() && s.split('.').all(|l| !l.is_empty() && !l.contains('*'));
            let identity = Arc::new(identity);
            match name.strip_prefix("*.") {
                Some(rest) if valid(rest) => out.wildcard.insert(rest.to_string(), identity),
                None if valid(&name) => out.exact.insert(name, identity),
                _ => return Err(ListenError::ServerName { name }),
            };
        }
        Ok(out)
    }

    /// The identity the table names for `server_name` (exact first, then
    /// a wildcard one label up).
    pub fn lookup(&self, server_name: &str) -> Option<&Arc<Identity>> {
        let name = server_name.to_ascii_lowercase();
        if let Some(id) = self.exact.get(&name) {
            return Some(id);
        }
        let (_, parent) = name.split_once('.')?;
        self.wildcard.get(parent)
    }

    /// Names in the table (exact and wildcard).
    pub fn names(&self) -> usize {
        self.exact.len() + self.wildcard.len()
    }
}

/// The identities in force; new handshakes read them, a swap replaces them.
pub struct IdentityStore {
    current: RwLock<Arc<Identities>>,
}

impl IdentityStore {
    pub fn new(identities: Identities) -> IdentityStore {
        IdentityStore { current: RwLock::new(Arc::new(identities)) }
    }

    /// One identity for every handshake, no client certificates.
    pub fn single(identity: Identity) -> Arc<IdentityStore> {
        Arc::new(IdentityStore::new(Identities { default: Some(Arc::new(identity)), ..Identities::default() }))
    }

    pub fn current(&self) -> Arc<Identities> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// New handshakes from now on get `identities`.
    pub fn replace(&self, identities: Identities) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(identities);
    }
}

// Never print key material: names and counts only.
impl std::fmt::Debug for IdentityStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.current();
        f.debug_struct("IdentityStore")
            .field("default", &c.default.is_some())
            .field("names", &c.names())
            .field("ask_application", &c.ask_application)
            .field("client_auth", &c.client_auth.is_some())
            .finish()
    }
}

/// What the application answered for a name.
pub enum Answer {
    Identity(Arc<Identity>),
    /// Fail this handshake (the callback threw, or answered an error).
    Refuse,
}

#[derive(Default)]
struct HandshakeState {
    server_name: Option<String>,
    /// The application was asked (and the loop has yet to report it, or did).
    asked: bool,
    reported: bool,
    answer: Option<Answer>,
    client_cert_requested: bool,
    /// The first verification error of the client's chain (X509_V_ERR_*).
    verify_error: Option<i32>,
}

/// One handshake's TLS choices, shared by BoringSSL's callbacks (on the
/// I/O thread, inside quiche's recv and send) and the loop.
#[derive(Default)]
pub struct HandshakeTls {
    state: Mutex<HandshakeState>,
}

impl HandshakeTls {
    fn lock(&self) -> std::sync::MutexGuard<'_, HandshakeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The name to ask the application about, once.
    pub fn take_question(&self) -> Option<String> {
        let mut s = self.lock();
        if s.asked && !s.reported {
            s.reported = true;
            return Some(s.server_name.clone().unwrap_or_default());
        }
        None
    }

    pub fn answer(&self, answer: Answer) {
        self.lock().answer = Some(answer);
    }

    /// Whether a client certificate was asked for, and if so the first
    /// error verifying it (None: verified, or none was asked for).
    pub fn client_verification(&self) -> Option<Option<i32>> {
        let s = self.lock();
        s.client_cert_requested.then_some(s.verify_error)
    }
}

/// Handshakes the callback saw for the first time since the loop last
/// looked: each belongs to the connection whose packet is being processed.
pub type NewHandshakes = Arc<Mutex<Vec<Arc<HandshakeTls>>>>;

fn handshake_index() -> boring::ex_data::Index<Ssl, Arc<HandshakeTls>> {
    static INDEX: OnceLock<boring::ex_data::Index<Ssl, Arc<HandshakeTls>>> = OnceLock::new();
    *INDEX.get_or_init(|| Ssl::new_ex_index().expect("BoringSSL ex_data index"))
}

/// X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT: what node:tls reports for a
/// client that sent no certificate.
pub const NO_CLIENT_CERTIFICATE: i32 = 2;

/// Makes every handshake on `builder` choose its identity from `store`.
pub fn install_selector(builder: &mut SslContextBuilder, store: Arc<IdentityStore>, new: NewHandshakes) {
    builder.set_select_certificate_callback(move |mut hello: ClientHello<'_>| {
        let ssl = hello.ssl_mut();
        let tls = match ssl.ex_data(handshake_index()) {
            Some(t) => t.clone(),
            None => {
                let t = Arc::new(HandshakeTls::default());
                t.lock().server_name = ssl.servername(NameType::HOST_NAME).map(str::to_string);
                ssl.set_ex_data(handshake_index(), t.clone());
                new.lock().unwrap_or_else(|e| e.into_inner()).push(t.clone());
                t
            }
        };
        let set = store.current();
        let chosen = {
            let mut s = tls.lock();
            match &s.answer {
                Some(Answer::Identity(id)) => id.clone(),
                Some(Answer::Refuse) => return Err(SelectCertError::ERROR),
                None => {
                    let named = s.server_name.as_deref().and_then(|n| set.lookup(n)).cloned();
                    match named {
                        Some(id) => id,
                        None if set.ask_application && s.server_name.is_some() => {
                            s.asked = true;
                            return Err(SelectCertError::RETRY);
                        }
                        None => set.default.clone().ok_or(SelectCertError::ERROR)?,
                    }
                }
            }
        };
        chosen.apply(ssl).map_err(|_| SelectCertError::ERROR)?;
        if let Some(auth) = &set.client_auth {
            request_client_certificate(ssl, auth, &tls);
        }
        Ok(())
    });
}

/// CertificateRequest in this handshake; the verdict is kept for the
/// application (`authorized`, `authorizationError`) and, with
/// `reject_unauthorized`, enforced: the handshake fails with a TLS alert.
fn request_client_certificate(ssl: &mut SslRef, auth: &ClientAuth, tls: &Arc<HandshakeTls>) {
    {
        let mut s = tls.lock();
        s.client_cert_requested = true;
        // Until a certificate arrives and is checked: none was sent.
        s.verify_error = Some(NO_CLIENT_CERTIFICATE);
    }
    let _ = ssl.set_verify_cert_store(auth.store.to_owned());
    let mode =
        if auth.reject_unauthorized { SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT } else { SslVerifyMode::PEER };
    let reject = auth.reject_unauthorized;
    let record = tls.clone();
    // Called for each certificate of the chain, root first, and once more
    // for the leaf: the first failure is the one node:tls reports.
    ssl.set_verify_callback(mode, move |ok, ctx| {
        let mut s = record.lock();
        if s.verify_error == Some(NO_CLIENT_CERTIFICATE) {
            s.verify_error = None;
        }
        if !ok && s.verify_error.is_none() {
            s.verify_error = Some(ctx.verify_result().err().map_or(0, |e| e.as_raw()));
        }
        ok || !reject
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Identity {
        crate::testing::demo_identity()
    }

    #[test]
    fn exact_names_win_over_wildcards_and_wildcards_match_one_label() {
        let ids =
            Identities::new(None, vec![("*.example.com".into(), demo()), ("A.example.com".into(), demo())], false, None).unwrap();
        assert!(Arc::ptr_eq(ids.lookup("a.EXAMPLE.com").unwrap(), &ids.exact["a.example.com"]));
        assert!(ids.lookup("b.example.com").is_some());
        assert!(ids.lookup("example.com").is_none());
        assert!(ids.lookup("x.b.example.com").is_none());
        assert_eq!(ids.names(), 2);
    }

    #[test]
    fn malformed_names_are_refused_by_name() {
        for bad in ["", "*", "a.*.com", "*.", "a..b", "*.*.com"] {
            match Identities::new(None, vec![(bad.into(), demo())], false, None) {
                Err(ListenError::ServerName { name }) => assert_eq!(name, bad),
                other => panic!("{bad:?}: {:?}", other.err()),
            }
        }
    }

    #[test]
    fn a_ca_that_is_not_pem_is_refused() {
        assert!(matches!(ClientAuth::new(Some(b"junk"), true), Err(ListenError::Ca)));
        assert!(ClientAuth::new(None, false).is_ok());
    }
}

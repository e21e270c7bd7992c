//! The loop's half of choosing identities (certificates.rs has BoringSSL's):
//! each handshake's TLS state is tied to its connection as the ClientHello
//! is processed, a name the application must choose for becomes a
//! question to it, and its answer resumes the paused handshake. Once a
//! handshake that asked for a client certificate completes, the
//! application hears the verdict and the chain.

use std::collections::HashMap;

use super::Server;
use crate::app::{Application, LogLevel};
use crate::certificates::{Answer, NewHandshakes};
use crate::ids::ConnId;

/// Identity questions asked and not yet answered.
pub(super) struct TlsQuestions {
    new_handshakes: NewHandshakes,
    open: HashMap<u32, ConnId>,
    next: u32,
}

impl TlsQuestions {
    pub(super) fn new(new_handshakes: NewHandshakes) -> TlsQuestions {
        TlsQuestions { new_handshakes, open: HashMap::new(), next: 1 }
    }
}

impl super::Shared {
    /// The application's answer to identity question `request`; the loop
    /// applies it on its next turn (an unknown or stale number is ignored).
    pub fn answer_identity(&self, request: u32, answer: Answer) {
        self.identity_answers.lock().unwrap_or_else(|e| e.into_inner()).push((request, answer));
        let _ = self.waker.wake();
    }
}

impl<A: Application> Server<A> {
    /// After a packet of a connection still in its handshake: the TLS
    /// state its ClientHello made is the connection's, and a question it
    /// raised goes to the application (once).
    pub(super) fn adopt_handshake(&mut self, id: ConnId) {
        let fresh: Vec<_> = std::mem::take(&mut *self.tls.new_handshakes.lock().unwrap_or_else(|e| e.into_inner()));
        let Some(conn) = self.table.get_mut(id) else { return };
        // The callback runs inside this connection's recv, so whatever it
        // left belongs to this connection (at most one: one ClientHello).
        if let Some(tls) = fresh.into_iter().last() {
            conn.tls = Some(tls);
        }
        let Some(name) = conn.tls.as_ref().and_then(|t| t.take_question()) else { return };
        let request = self.tls.next;
        self.tls.next = self.tls.next.wrapping_add(1).max(1);
        self.tls.open.insert(request, id);
        conn.identity_question = Some(request);
        self.app.on_identity_wanted(id, request, &name);
    }

    /// The application's answers: each resumes its handshake, whose next
    /// send runs BoringSSL's callback again.
    pub(super) fn apply_identity_answers(&mut self) {
        let answers = std::mem::take(&mut *self.shared.identity_answers.lock().unwrap_or_else(|e| e.into_inner()));
        for (request, answer) in answers {
            let Some(id) = self.tls.open.remove(&request) else { continue };
            let Some(conn) = self.table.get_mut(id) else { continue };
            conn.identity_question = None;
            if let Some(tls) = &conn.tls {
                tls.answer(answer);
            }
            self.mark_dirty(id);
        }
    }

    /// A connection leaves the table: its question, if any, with it.
    pub(super) fn forget_identity_question(&mut self, request: Option<u32>) {
        if let Some(r) = request {
            self.tls.open.remove(&r);
        }
    }

    /// The handshake is done: a client certificate's verdict, if one was asked for.
    pub(super) fn handshake_completed(&mut self, id: ConnId) {
        let Some(conn) = self.table.get_mut(id) else { return };
        let Some(verdict) = conn.tls.as_ref().and_then(|t| t.client_verification()) else { return };
        let chain = conn.quic.peer_cert_chain().unwrap_or_default();
        self.app.on_client_certificate(id, verdict, &chain);
        if let Some(code) = verdict {
            self.app
                .on_log(LogLevel::Debug, &format!("connection {}: client certificate not verified (X509 error {code})", id.0));
        }
    }
}

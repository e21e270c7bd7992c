//! The TLS identities JavaScript hands the core: the default certificate,
//! the names with their own, whether the application chooses for other
//! names (SNICallback), and client certificates; at listen, and again at
//! setSecureContext. Key material arrives as bytes (PEM chain, PKCS#8 DER
//! key) and is parsed here into BoringSSL's objects (h3core::tls).

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use h3core::certificates::{Answer, ClientAuth, Identities, IdentityStore};
use h3core::tls::Identity;

use crate::NativeServer;

#[napi(object)]
pub struct NativeTls {
    /// The default identity's chain (PEM, leaf first) and key (PKCS#8 DER
    /// or PEM); absent: a name nothing matches fails its handshake.
    pub cert_chain: Option<Buffer>,
    pub private_key: Option<Buffer>,
    /// Server names (`*.` wildcards allowed) with their own identity, in
    /// step with `name_cert_chains` and `name_private_keys`.
    pub names: Option<Vec<String>>,
    pub name_cert_chains: Option<Vec<Buffer>>,
    pub name_private_keys: Option<Vec<Buffer>>,
    /// Names not in the table go to the application (identity questions).
    pub ask_application: Option<bool>,
    /// Ask every client for a certificate, verified against `ca`.
    pub request_cert: Option<bool>,
    pub ca: Option<Buffer>,
    /// With `request_cert`: refuse a client without a verified certificate.
    pub reject_unauthorized: Option<bool>,
}

fn identity(chain: &[u8], key: &[u8], what: &str) -> Result<Identity> {
    Identity::from_memory(chain, key).map_err(|e| Error::from_reason(format!("{what}: {e}")))
}

/// The core's identity table for `tls`; errors name what is wrong.
pub fn identities(tls: &NativeTls) -> Result<Identities> {
    let default = match (&tls.cert_chain, &tls.private_key) {
        (Some(c), Some(k)) => Some(identity(c, k, "default identity")?),
        (None, None) => None,
        _ => return Err(Error::from_reason("certChain and privateKey go together")),
    };
    let names = tls.names.as_deref().unwrap_or_default();
    let chains = tls.name_cert_chains.as_deref().unwrap_or_default();
    let keys = tls.name_private_keys.as_deref().unwrap_or_default();
    if names.len() != chains.len() || names.len() != keys.len() {
        return Err(Error::from_reason("names, nameCertChains and namePrivateKeys must be of one length"));
    }
    let mut named = Vec::with_capacity(names.len());
    for ((name, chain), key) in names.iter().zip(chains).zip(keys) {
        named.push((name.clone(), identity(chain, key, name)?));
    }
    let client_auth = if tls.request_cert.unwrap_or(false) {
        let auth = ClientAuth::new(tls.ca.as_deref(), tls.reject_unauthorized.unwrap_or(true))
            .map_err(|e| Error::from_reason(e.to_string()))?;
        Some(auth)
    } else {
        None
    };
    Identities::new(default, named, tls.ask_application.unwrap_or(false), client_auth)
        .map_err(|e| Error::from_reason(e.to_string()))
}

/// One identity parsed once (a SecureContext's, say) and handed to any
/// number of handshakes.
#[napi]
pub struct NativeIdentity {
    inner: Arc<Identity>,
}

#[napi]
impl NativeIdentity {
    /// Fails when the chain or the key does not parse, or the key is not the leaf's.
    #[napi(constructor, catch_unwind)]
    pub fn new(cert_chain: Buffer, private_key: Buffer) -> Result<Self> {
        Ok(NativeIdentity { inner: Arc::new(identity(&cert_chain, &private_key, "identity")?) })
    }
}

#[napi]
impl NativeServer {
    /// New handshakes choose from `tls` from now on (every worker's, in a
    /// group); connections already open keep their identity. Nothing
    /// changes when `tls` does not parse.
    #[napi(catch_unwind)]
    pub fn set_identities(&self, tls: NativeTls) -> Result<()> {
        let identities = identities(&tls)?;
        self.identity_store()?.replace(identities);
        Ok(())
    }

    /// Answers identity question `request`: that handshake presents `identity`.
    #[napi(catch_unwind)]
    pub fn answer_identity(&self, request: u32, identity: &NativeIdentity) {
        self.shared.answer_identity(request, Answer::Identity(identity.inner.clone()));
    }

    /// Answers identity question `request` with a refusal: that handshake
    /// fails with a TLS alert (handshake_failure).
    #[napi(catch_unwind)]
    pub fn refuse_identity(&self, request: u32) {
        self.shared.answer_identity(request, Answer::Refuse);
    }
}

impl NativeServer {
    fn identity_store(&self) -> Result<&Arc<IdentityStore>> {
        self.shared.identities.as_ref().ok_or_else(|| Error::from_reason("this server has no identities"))
    }
}

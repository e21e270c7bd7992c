//! The server's TLS identity, held in memory: a certificate chain and its
//! private key, parsed by BoringSSL from bytes JavaScript hands over (Node
//! reads any files and decrypts a passphrase-protected key), then installed
//! into the `SslContextBuilder` quiche's configuration is built on. Nothing
//! of a key is ever written anywhere: quiche's own loaders take file paths
//! only, which is why this module exists.
//!
//! An `Identity` is a value (BoringSSL reference-counts the certificate and
//! key objects): certificates.rs holds several, chooses one per handshake
//! by SNI, and swaps them for new handshakes.

use std::fmt;

use boring::error::ErrorStack;
use boring::pkey::{PKey, Private};
use boring::ssl::{SslContextBuilder, SslRef};
use boring::x509::X509;

use crate::error::ListenError;

/// A certificate chain (leaf first) and the private key of its leaf.
#[derive(Clone)]
pub struct Identity {
    chain: Vec<X509>,
    key: PKey<Private>,
}

impl Identity {
    /// `cert_chain_pem`: one or more PEM certificates, leaf first.
    /// `private_key`: PKCS#8 DER (what the TypeScript side passes) or PEM.
    /// Fails when either does not parse, or the key is not the leaf's.
    pub fn from_memory(cert_chain_pem: &[u8], private_key: &[u8]) -> Result<Identity, ListenError> {
        let chain = X509::stack_from_pem(cert_chain_pem).map_err(|_| ListenError::Certificate)?;
        if chain.is_empty() {
            return Err(ListenError::Certificate);
        }
        let key = if private_key.windows(11).any(|w| w == b"-----BEGIN ") {
            PKey::private_key_from_pem(private_key)
        } else {
            PKey::private_key_from_pkcs8(private_key)
        }
        .map_err(|_| ListenError::PrivateKey)?;
        let leaf_key = chain[0].public_key().map_err(|_| ListenError::Certificate)?;
        if !leaf_key.public_eq(&key) {
            return Err(ListenError::KeyMismatch);
        }
        Ok(Identity { chain, key })
    }

    /// Makes `builder` present this identity: the leaf, the rest of the
    /// chain, and the key.
    pub fn install(&self, builder: &mut SslContextBuilder) -> Result<(), ListenError> {
        builder.set_certificate(&self.chain[0]).map_err(|_| ListenError::Certificate)?;
        for extra in &self.chain[1..] {
            builder.add_extra_chain_cert(extra.clone()).map_err(|_| ListenError::Certificate)?;
        }
        builder.set_private_key(&self.key).map_err(|_| ListenError::PrivateKey)?;
        builder.check_private_key().map_err(|_| ListenError::KeyMismatch)
    }

    /// Makes one handshake present this identity (certificates.rs chooses
    /// it per connection; the connection starts with none of its own).
    pub fn apply(&self, ssl: &mut SslRef) -> Result<(), ErrorStack> {
        ssl.set_certificate(&self.chain[0])?;
        for extra in &self.chain[1..] {
            ssl.add_chain_cert(extra)?;
        }
        ssl.set_private_key(&self.key)
    }

    /// Certificates in the chain, the leaf included.
    pub fn chain_len(&self) -> usize {
        self.chain.len()
    }
}

// Never print key material, not even in a debug dump of the options.
impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity").field("certificates", &self.chain.len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CERT: &[u8] = include_bytes!("../../../certs/demo-cert.pem");
    const KEY: &[u8] = include_bytes!("../../../certs/demo-key.pem");

    #[test]
    fn pem_pair_parses_and_installs() {
        let id = Identity::from_memory(CERT, KEY).unwrap();
        assert_eq!(id.chain_len(), 1);
        let mut b = SslContextBuilder::new(boring::ssl::SslMethod::tls()).unwrap();
        id.install(&mut b).unwrap();
        assert!(format!("{id:?}").starts_with("Identity { certificates: 1"));
    }

    #[test]
    fn pkcs8_der_key_parses() {
        let der = PKey::private_key_from_pem(KEY).unwrap().private_key_to_der_pkcs8().unwrap();
        Identity::from_memory(CERT, &der).unwrap();
    }

    #[test]
    fn bad_inputs_name_what_is_wrong() {
        assert!(matches!(Identity::from_memory(b"junk", KEY), Err(ListenError::Certificate)));
        assert!(matches!(Identity::from_memory(CERT, b"junk"), Err(ListenError::PrivateKey)));
        let other = PKey::generate(boring::pkey::Id::ED25519).unwrap().private_key_to_der_pkcs8().unwrap();
        assert!(matches!(Identity::from_memory(CERT, &other), Err(ListenError::KeyMismatch)));
    }
}

//! TLS: the certificate and key a TLS listener serves (`cairn serve --tls-port`), read
//! from PEM files into a rustls server configuration.
//!
//! rustls with the `ring` crypto provider: it builds with a C compiler alone (no cmake,
//! no Go, no NASM), and TLS 1.2 and 1.3 with rustls's safe defaults are offered. Clients
//! are not asked for certificates; use AUTH (and a users file) to tell clients apart.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{Error, Result};

/// A TLS listener: its port (0: any free one) and the PEM files of its certificate
/// chain and private key (PKCS#8, PKCS#1 or SEC1).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tls {
    /// Port of the TLS listener (on the same address as the plain one).
    pub port: u16,
    /// The certificate chain, leaf first, in PEM.
    pub cert: PathBuf,
    /// The private key, in PEM.
    pub key: PathBuf,
}

impl Tls {
    /// A TLS listener on `port` serving `cert` with `key`.
    pub fn new(port: u16, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Tls {
        Tls {
            port,
            cert: cert.into(),
            key: key.into(),
        }
    }

    /// Reads the files into a rustls server configuration.
    ///
    /// # Errors
    /// `Config` naming the file that cannot be read or holds no usable certificate or
    /// key, or a key that does not match the certificate.
    pub(crate) fn server_config(&self) -> Result<Arc<rustls::ServerConfig>> {
        let certs = CertificateDer::pem_file_iter(&self.cert)
            .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
            .map_err(|e| Error::Config(format!("TLS certificate {}: {e}", self.cert.display())))?;
        if certs.is_empty() {
            return Err(Error::Config(format!(
                "TLS certificate {}: no certificate in the file",
                self.cert.display()
            )));
        }
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|e| Error::Config(format!("TLS key {}: {e}", self.key.display())))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Config(format!("TLS: {e}")))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| Error::Config(format!("TLS certificate and key: {e}")))?;
        Ok(Arc::new(config))
    }
}

//! TLS: the certificate and key a TLS listener serves (`cairn serve --tls-port`), read
//! from PEM files into a rustls server configuration.
//!
//! rustls with the `ring` crypto provider: it builds with a C compiler alone (no cmake,
//! no Go, no NASM), and TLS 1.2 and 1.3 with rustls's safe defaults are offered.
//!
//! Client certificates ([`ClientCerts`], Redis's `tls-ca-cert-file` and
//! `tls-auth-clients`): not asked for by default; given a file of CA certificates, a
//! client must present a certificate chaining to one of them (or, when optional, may
//! present none), checked by rustls's WebPKI verifier (validity period, key usage,
//! signature chain) during the handshake, so a client refused there never reaches a
//! command. A certificate proves who may connect, not which user it is: AUTH (and a
//! users file) still tells users apart.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

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
    /// Whether clients must present a certificate, and the CAs it must chain to.
    pub client_certs: ClientCerts,
}

/// What a TLS listener asks of its clients' certificates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientCerts {
    /// None is asked for (the default).
    #[default]
    NotAsked,
    /// Every client must present a certificate that chains to a CA certificate in this
    /// PEM file.
    Required(PathBuf),
    /// A client may present none; one it presents must chain to a CA certificate in this
    /// PEM file.
    Optional(PathBuf),
}

impl Tls {
    /// A TLS listener on `port` serving `cert` with `key`.
    pub fn new(port: u16, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Tls {
        Tls {
            port,
            cert: cert.into(),
            key: key.into(),
            client_certs: ClientCerts::NotAsked,
        }
    }

    /// The same listener, asking its clients for certificates as `client_certs` says.
    #[must_use]
    pub fn with_client_certs(mut self, client_certs: ClientCerts) -> Tls {
        self.client_certs = client_certs;
        self
    }

    /// Reads the files into a rustls server configuration.
    ///
    /// # Errors
    /// `Config` naming the file that cannot be read or holds no usable certificate or
    /// key, a key that does not match the certificate, or a CA file for client
    /// certificates that holds no usable CA certificate.
    pub(crate) fn server_config(&self) -> Result<Arc<rustls::ServerConfig>> {
        let certs = read_certs(&self.cert, "TLS certificate")?;
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|e| Error::Config(format!("TLS key {}: {e}", self.key.display())))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Config(format!("TLS: {e}")))?;
        let builder = match &self.client_certs {
            ClientCerts::NotAsked => builder.with_no_client_auth(),
            ClientCerts::Required(ca) => {
                builder.with_client_cert_verifier(client_verifier(ca, false, provider)?)
            }
            ClientCerts::Optional(ca) => {
                builder.with_client_cert_verifier(client_verifier(ca, true, provider)?)
            }
        };
        let config = builder
            .with_single_cert(certs, key)
            .map_err(|e| Error::Config(format!("TLS certificate and key: {e}")))?;
        Ok(Arc::new(config))
    }
}

/// A verifier of client certificates that chain to a CA certificate in the PEM file `ca`
/// (a client may present none if `optional`).
///
/// # Errors
/// `Config` naming `ca` if it cannot be read or holds no certificate rustls accepts as a
/// trust anchor.
fn client_verifier(
    ca: &std::path::Path,
    optional: bool,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>> {
    const WHAT: &str = "TLS client CA certificates";
    let what = |e: &dyn std::fmt::Display| Error::Config(format!("{WHAT} {}: {e}", ca.display()));
    let mut roots = rustls::RootCertStore::empty();
    for cert in read_certs(ca, WHAT)? {
        roots.add(cert).map_err(|e| what(&e))?;
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = if optional {
        builder.allow_unauthenticated()
    } else {
        builder
    };
    builder.build().map_err(|e| what(&e))
}

/// The certificates of the PEM file at `path`, at least one.
///
/// # Errors
/// `Config` starting with `what` and naming `path` if it cannot be read or holds none.
fn read_certs(path: &std::path::Path, what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| Error::Config(format!("{what} {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(Error::Config(format!(
            "{what} {}: no certificate in the file",
            path.display()
        )));
    }
    Ok(certs)
}

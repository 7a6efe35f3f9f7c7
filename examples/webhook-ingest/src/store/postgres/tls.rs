//! TLS to PostgreSQL through rustls, with libpq's `sslmode` meanings.
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | never | no |
//! | `prefer` (the default) | when the server offers TLS | no |
//! | `require` | always, or no connection | no |
//! | `verify-full` | always, or no connection | chain to a trusted root, and the host name |
//!
//! The trusted roots are the system's (`rustls-native-certs`: the operating system's store,
//! so a CA an operator installs there, or a container image ships, counts without a rebuild)
//! plus the PEM certificates of `--db-ca`, which is how a managed database's own CA is given.
//! `verify-ca` (the chain without the host name) and `allow` are refused at start-up rather
//! than quietly read as something else.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode as PgSslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// What `sslmode` asks of the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyFull,
}

/// Why TLS to the database could not be set up; the message never carries the URL.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("sslmode `{0}` is not supported; use disable, prefer, require or verify-full")]
    UnsupportedMode(String),
    #[error("reading the database CA file `{path}` failed: {reason}")]
    CaFile { path: String, reason: String },
    #[error("no trusted root to verify the database's certificate: the system has none and no --db-ca was given")]
    NoRoots,
    #[error("setting up TLS failed: {0}")]
    Config(#[from] rustls::Error),
}

impl SslMode {
    /// The mode a `postgres://` URL asks for (`?sslmode=`, libpq's default `prefer` when
    /// absent), and the URL as tokio-postgres reads it: `verify-full` becomes `require`,
    /// with the verification done by the connector this mode builds.
    pub fn from_url(url: &str) -> Result<(SslMode, String), TlsError> {
        let Some((head, query)) = url.split_once('?') else {
            return Ok((SslMode::Prefer, url.to_owned()));
        };
        let mut mode = SslMode::Prefer;
        let mut pairs = Vec::new();
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("sslmode", value)) => {
                    mode = match value {
                        "disable" => SslMode::Disable,
                        "prefer" => SslMode::Prefer,
                        "require" => SslMode::Require,
                        "verify-full" => SslMode::VerifyFull,
                        other => return Err(TlsError::UnsupportedMode(other.to_owned())),
                    };
                }
                _ => pairs.push(pair),
            }
        }
        let rest = if pairs.is_empty() {
            head.to_owned()
        } else {
            format!("{head}?{}", pairs.join("&"))
        };
        Ok((mode, rest))
    }

    /// The mode as tokio-postgres's configuration names it.
    pub fn for_config(self) -> PgSslMode {
        match self {
            SslMode::Disable => PgSslMode::Disable,
            SslMode::Prefer => PgSslMode::Prefer,
            SslMode::Require | SslMode::VerifyFull => PgSslMode::Require,
        }
    }
}

/// The rustls connector for `mode`, trusting the system's roots and those in `ca` for
/// `verify-full`.
pub fn connector(mode: SslMode, ca: Option<&Path>) -> Result<MakeRustlsConnect, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let config = if mode == SslMode::VerifyFull {
        builder
            .with_root_certificates(roots(ca)?)
            .with_no_client_auth()
    } else {
        // libpq's `prefer` and `require` encrypt without checking who answers.
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
            .with_no_client_auth()
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The system's trusted roots and the certificates of the PEM file `ca`.
fn roots(ca: Option<&Path>) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    // Certificates the system store holds but rustls cannot parse are skipped, as are errors
    // reading parts of the store: the roots that load still count.
    let system = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(system.certs);
    if let Some(path) = ca {
        let failed = |reason: String| TlsError::CaFile {
            path: path.display().to_string(),
            reason,
        };
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| failed(e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed(e.to_string()))?;
        if certs.is_empty() {
            return Err(failed("it holds no PEM certificate".into()));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| failed(e.to_string()))?;
        }
    }
    if roots.is_empty() {
        return Err(TlsError::NoRoots);
    }
    Ok(roots)
}

/// Accepts any certificate, as libpq's `require` does, while still checking that the server
/// holds the key of the certificate it sent.
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests;

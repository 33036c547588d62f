//! Building rustls configurations on the ring provider, and reading PEM
//! files into them.

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// The crypto provider of every configuration this crate builds: ring's.
///
/// ring, not rustls's default aws-lc, because aws-lc needs cmake and a C
/// toolchain for each target, and ring builds with `cc` alone.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server configuration presenting `chain` (the server's certificate
/// first, then its intermediates) signed by `key`, with no client
/// authentication, TLS 1.2 and 1.3, on the ring [`provider`].
///
/// # Errors
///
/// `InvalidInput` if the key does not suit the certificate or is of a
/// kind ring cannot use.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> io::Result<ServerConfig> {
    ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// A client configuration trusting the certificate authorities in `roots`,
/// with no client certificate, TLS 1.2 and 1.3, on the ring [`provider`].
pub fn client_config(roots: RootCertStore) -> ClientConfig {
    ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// Every certificate in a PEM file, in order.
///
/// # Errors
///
/// Reading the file; `InvalidInput`, naming the file, if it holds no
/// certificate or a malformed one.
pub fn load_certs(path: impl AsRef<Path>) -> io::Result<Vec<CertificateDer<'static>>> {
    let path = path.as_ref();
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| pem_error(path, e))?;
    if certs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: no certificate in it", path.display()),
        ));
    }
    Ok(certs)
}

/// The first private key in a PEM file (PKCS#8, PKCS#1 or SEC1).
///
/// # Errors
///
/// Reading the file; `InvalidInput`, naming the file, if it holds no key.
pub fn load_key(path: impl AsRef<Path>) -> io::Result<PrivateKeyDer<'static>> {
    let path = path.as_ref();
    PrivateKeyDer::from_pem_file(path).map_err(|e| pem_error(path, e))
}

/// A root store holding every certificate of a PEM file.
///
/// # Errors
///
/// As for [`load_certs`]; `InvalidInput` if a certificate cannot serve as
/// a trust anchor.
pub fn load_roots(path: impl AsRef<Path>) -> io::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(path)? {
        roots
            .add(cert)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    }
    Ok(roots)
}

fn pem_error(path: &Path, e: rustls::pki_types::pem::Error) -> io::Error {
    match e {
        rustls::pki_types::pem::Error::Io(e) => {
            io::Error::new(e.kind(), format!("{}: {e}", path.display()))
        }
        e => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: {e}", path.display()),
        ),
    }
}

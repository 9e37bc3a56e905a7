//! Loading `ca_file`: the PEM CA certificates trusted for the provider origin,
//! set per peer (`peer.options.ca`) so the process keeps the system roots.

use pingora_core::protocols::tls::CaType;
use pingora_core::tls::RootCertStore;
use pingora_core::utils::tls::{parse_x509, WrappedX509};
use pingora_error::{Error, ErrorType, OrErr};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use std::path::Path;
use std::sync::Arc;

/// Every certificate of the PEM file at `path`, checked and wrapped for Pingora.
///
/// # Errors
///
/// `FileReadError` when the file cannot be read, `InvalidCert` when it holds no
/// certificate or one that does not parse.
pub fn load_ca_file(path: &Path) -> pingora_error::Result<Arc<CaType>> {
    let pem = std::fs::read(path).or_err_with(ErrorType::FileReadError, || {
        format!("reading ca_file {}", path.display())
    })?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .or_err(ErrorType::InvalidCert, "ca_file is not valid PEM")?;
    if certs.is_empty() {
        return Error::e_explain(ErrorType::InvalidCert, "ca_file holds no certificate");
    }
    // rustls parses each certificate here, so the x509 parsing below (which
    // panics on bad DER) only ever sees certificates that parse.
    let mut store = RootCertStore::empty();
    for cert in &certs {
        store.add(cert.clone()).or_err(
            ErrorType::InvalidCert,
            "ca_file holds an unusable certificate",
        )?;
    }
    let wrapped: Vec<WrappedX509> = certs
        .into_iter()
        .map(|c| std::panic::catch_unwind(|| WrappedX509::new(c.to_vec(), parse_x509)))
        .collect::<Result<_, _>>()
        .or_else(|_| {
            Error::e_explain(ErrorType::InvalidCert, "ca_file certificate does not parse")
        })?;
    Ok(Arc::from(wrapped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_garbage_files_are_errors() {
        let err = load_ca_file(Path::new("/nonexistent/ca.pem")).unwrap_err();
        assert_eq!(err.etype(), &ErrorType::FileReadError);
        let dir = std::env::temp_dir().join(format!("sba-ca-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        assert_eq!(
            load_ca_file(&empty).unwrap_err().etype(),
            &ErrorType::InvalidCert
        );
        let bad = dir.join("bad.pem");
        std::fs::write(
            &bad,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        assert_eq!(
            load_ca_file(&bad).unwrap_err().etype(),
            &ErrorType::InvalidCert
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn loads_a_real_certificate() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/demo/fixtures/scenarios/tls/test-ca.pem");
        let ca = load_ca_file(&path).unwrap();
        assert_eq!(ca.len(), 1);
    }
}

//! TLS material (the HTTPS acceptor is `crate::serve::https`): certificates given as PEM files
//! ([`TlsMaterial::from_pem_files`]) or made and kept by the server itself
//! ([`TlsMaterial::self_signed`], `tableq serve --tls self-signed`).
//!
//! A self-signed setup is two certificates in one directory (the keys directory of
//! `tableq serve`, see docs/https-and-tokens.md):
//!
//! | file | what |
//! |---|---|
//! | `ca.pem` | a local certificate authority — what clients trust (`REQUESTS_CA_BUNDLE`, `NODE_EXTRA_CA_CERTS`) |
//! | `ca-key.pem` | its private key (mode 0600) |
//! | `server.pem` | the server's certificate, signed by the CA, for the names asked for (`127.0.0.1`, `localhost`, `<account>.table.core.windows.net`, …) |
//! | `server-key.pem` | its private key (mode 0600) |
//!
//! They are reused on restart: the CA while it is readable and valid for at least another
//! day, the server certificate while it is too and names every name asked for — otherwise
//! it is made again, signed by the kept CA (so a client that trusts the CA keeps trusting
//! the server). A CA that cannot be used is replaced, and with it the server certificate.
//!
//! Private keys are read and written here only: they never appear in a log line, an error
//! message or a response (errors name files, never their content).
//!
//! ```no_run
//! use tableq_server::tls::TlsMaterial;
//! let names = ["127.0.0.1".to_owned(), "localhost".to_owned()];
//! let material = TlsMaterial::self_signed(std::path::Path::new("tableq-data/keys"), &names)?;
//! println!("trust {}", material.ca_file().unwrap().display());
//! # Ok::<(), tableq_server::tls::TlsError>(())
//! ```

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How long a certificate made here is valid.
const VALIDITY_DAYS: i64 = 825;
/// A kept certificate with less than this left is made again.
const RENEW_BEFORE_DAYS: i64 = 1;

/// Why TLS material could not be read, made or used. Messages name files, never what
/// they hold.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A PEM file holds no usable certificate or key.
    #[error("{}: {what}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// A certificate could not be made.
    #[error("cannot make a certificate: {0}")]
    Generate(String),
    /// rustls refused the certificate and key (e.g. the key does not match).
    #[error("the certificate and key cannot be used for TLS: {0}")]
    Config(String),
    /// A private key, secret or keys directory that others may read or write.
    #[error(
        "{}: permissions {mode:04o} are too open — others may read or change it, so it is \
         not used (as ssh refuses such keys); `chmod {fix} {}` mends it",
        path.display(),
        path.display()
    )]
    Unprotected {
        /// The file or directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// The mode that mends it (`600`, `700`).
        fix: String,
    },
}

/// A server certificate chain and its key, ready to serve HTTPS, and (for a self-signed
/// setup) the CA file clients should trust.
pub struct TlsMaterial {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    ca_file: Option<PathBuf>,
    regenerated: bool,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("TlsMaterial")
            .field("certificates", &self.chain.len())
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

impl TlsMaterial {
    /// A certificate chain (PEM, the server's certificate first) and its private key (PEM:
    /// PKCS#8, PKCS#1 or SEC1), as `--tls-cert` / `--tls-key` give them.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<TlsMaterial, TlsError> {
        let cert_text = read(cert)?;
        let chain = CertificateDer::pem_slice_iter(&cert_text)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| pem_error(cert, format!("not a PEM certificate file ({e})")))?;
        if chain.is_empty() {
            return Err(pem_error(cert, "holds no `BEGIN CERTIFICATE` block".into()));
        }
        check_private_file(key)?;
        let key_text = read(key)?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_text)
            .map_err(|_| pem_error(key, "holds no PEM private key".into()))?;
        let material = TlsMaterial {
            chain,
            key: key_der,
            ca_file: None,
            regenerated: false,
        };
        material.server_config()?;
        Ok(material)
    }

    /// The self-signed setup kept in `dir` (see the module docs), made or renewed as
    /// needed, with a server certificate for `names` (IP addresses or DNS names).
    pub fn self_signed(dir: &Path, names: &[String]) -> Result<TlsMaterial, TlsError> {
        create_private_dir(dir)?;
        let ca_path = dir.join("ca.pem");
        let ca_key_path = dir.join("ca-key.pem");
        let server_path = dir.join("server.pem");
        let server_key_path = dir.join("server-key.pem");
        for key in [&ca_key_path, &server_key_path] {
            if key.exists() {
                check_private_file(key)?;
            }
        }
        let mut regenerated = false;
        let ca = match load_kept(&ca_path, &ca_key_path, &[]) {
            Some(kept) => kept,
            None => {
                regenerated = true;
                let key = KeyPair::generate().map_err(generate_error)?;
                let cert = ca_params()?.self_signed(&key).map_err(generate_error)?;
                write_private(&ca_key_path, key.serialize_pem().as_bytes())?;
                write_public(&ca_path, cert.pem().as_bytes())?;
                (cert.pem(), key)
            }
        };
        let server = if regenerated {
            None
        } else {
            load_kept(&server_path, &server_key_path, names)
        };
        let (server_pem, server_key) = match server {
            Some(kept) => kept,
            None => {
                regenerated = true;
                let (ca_pem, ca_key) = ca;
                let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key).map_err(generate_error)?;
                let key = KeyPair::generate().map_err(generate_error)?;
                let cert = server_params(names)?
                    .signed_by(&key, &issuer)
                    .map_err(generate_error)?;
                write_private(&server_key_path, key.serialize_pem().as_bytes())?;
                write_public(&server_path, cert.pem().as_bytes())?;
                (cert.pem(), key)
            }
        };
        let chain = CertificateDer::pem_slice_iter(server_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| pem_error(&server_path, format!("not a PEM certificate ({e})")))?;
        let key = PrivateKeyDer::try_from(server_key.serialize_der())
            .map_err(|e| pem_error(&server_key_path, e.to_string()))?;
        let material = TlsMaterial {
            chain,
            key,
            ca_file: Some(ca_path),
            regenerated,
        };
        material.server_config()?;
        Ok(material)
    }

    /// The CA certificate clients should trust (self-signed setups only).
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca_file.as_deref()
    }

    /// Whether [`TlsMaterial::self_signed`] made new certificates (rather than reusing
    /// kept ones).
    pub fn regenerated(&self) -> bool {
        self.regenerated
    }

    /// The rustls configuration: TLS 1.2 and 1.3 on the ring provider, HTTP/1.1.
    pub(crate) fn server_config(&self) -> Result<rustls::ServerConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Io {
        path: path.to_owned(),
        source,
    })
}

fn pem_error(path: &Path, what: String) -> TlsError {
    TlsError::Pem {
        path: path.to_owned(),
        what,
    }
}

fn generate_error(e: rcgen::Error) -> TlsError {
    TlsError::Generate(e.to_string())
}

/// A kept certificate and key, if both are readable, belong together, stay valid for at
/// least [`RENEW_BEFORE_DAYS`] and name every one of `names`.
fn load_kept(cert: &Path, key: &Path, names: &[String]) -> Option<(String, KeyPair)> {
    let cert_pem = std::fs::read_to_string(cert).ok()?;
    let key_pair = KeyPair::from_pem(&std::fs::read_to_string(key).ok()?).ok()?;
    let der = CertificateDer::from_pem_slice(cert_pem.as_bytes()).ok()?;
    let (_, parsed) = x509_parser::parse_x509_certificate(&der).ok()?;
    if parsed.public_key().subject_public_key.data.as_ref() != key_pair.public_key_raw() {
        return None;
    }
    let renew_at = chrono::Utc::now() + chrono::Duration::days(RENEW_BEFORE_DAYS);
    if parsed.validity().not_after.timestamp() < renew_at.timestamp() {
        return None;
    }
    if !names.is_empty() {
        let alt = parsed.subject_alternative_name().ok()??;
        let covered: Vec<String> = alt
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
                x509_parser::extensions::GeneralName::IPAddress(ip) => match ip.len() {
                    4 => <[u8; 4]>::try_from(*ip)
                        .ok()
                        .map(|b| std::net::IpAddr::from(b).to_string()),
                    16 => <[u8; 16]>::try_from(*ip)
                        .ok()
                        .map(|b| std::net::IpAddr::from(b).to_string()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        if !names
            .iter()
            .all(|n| covered.iter().any(|c| c.eq_ignore_ascii_case(n)))
        {
            return None;
        }
    }
    Some((cert_pem, key_pair))
}

fn validity(params: &mut CertificateParams) {
    let now = chrono::Utc::now();
    let ymd = |t: chrono::DateTime<chrono::Utc>| {
        use chrono::Datelike;
        rcgen::date_time_ymd(t.year(), t.month() as u8, t.day() as u8)
    };
    params.not_before = ymd(now - chrono::Duration::days(1));
    params.not_after = ymd(now + chrono::Duration::days(VALIDITY_DAYS));
}

fn ca_params() -> Result<CertificateParams, TlsError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(generate_error)?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, "tableq local CA");
    name.push(DnType::OrganizationName, "tableq");
    params.distinguished_name = name;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params);
    Ok(params)
}

fn server_params(names: &[String]) -> Result<CertificateParams, TlsError> {
    let mut params = CertificateParams::new(names.to_vec()).map_err(generate_error)?;
    let mut name = DistinguishedName::new();
    name.push(
        DnType::CommonName,
        names.first().map_or("tableq", String::as_str),
    );
    params.distinguished_name = name;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params);
    Ok(params)
}

/// Creates `dir` (and its parents); a directory made here is private (0700). A directory
/// that is already there must be private enough ([`check_private_dir`]).
pub(crate) fn create_private_dir(dir: &Path) -> Result<(), TlsError> {
    let io = |source| TlsError::Io {
        path: dir.to_owned(),
        source,
    };
    if dir.is_dir() {
        return check_private_dir(dir);
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(io)
}

/// Refuses, as `ssh` does, a keys directory that others may write to or look into (any
/// group-write or other bit: `chmod 700` mends it): whoever can write there can swap the
/// keys, and whoever can list it learns what it holds.
pub fn check_private_dir(dir: &Path) -> Result<(), TlsError> {
    check_mode(dir, 0o027, "700")
}

/// Refuses, as `ssh` does, a private key (or secret) file that group or others may read or
/// write (`chmod 600` mends it): a key others can read is no longer private.
pub fn check_private_file(path: &Path) -> Result<(), TlsError> {
    check_mode(path, 0o077, "600")
}

#[cfg(unix)]
fn check_mode(path: &Path, forbidden: u32, fix: &str) -> Result<(), TlsError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|source| TlsError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & forbidden != 0 {
        return Err(TlsError::Unprotected {
            path: path.to_owned(),
            mode,
            fix: fix.to_owned(),
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_mode(_: &Path, _: u32, _: &str) -> Result<(), TlsError> {
    Ok(())
}

/// Writes a file only its owner can read (0600), replacing it atomically.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    write_file(path, bytes, 0o600)
}

fn write_public(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    write_file(path, bytes, 0o644)
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    let io = |source| TlsError::Io {
        path: path.to_owned(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(&tmp).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["127.0.0.1".into(), "localhost".into()]
    }

    #[test]
    fn self_signed_material_is_kept_and_renewed_when_unusable() {
        let dir = std::env::temp_dir().join(format!("tableq-tls-{}", uuid::Uuid::new_v4()));
        let first = TlsMaterial::self_signed(&dir, &names()).unwrap();
        assert!(first.regenerated());
        let ca = std::fs::read(dir.join("ca.pem")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for key in ["ca-key.pem", "server-key.pem"] {
                let mode = std::fs::metadata(dir.join(key))
                    .unwrap()
                    .permissions()
                    .mode();
                assert_eq!(mode & 0o777, 0o600, "{key}");
            }
        }
        // Reused as they are.
        let again = TlsMaterial::self_signed(&dir, &names()).unwrap();
        assert!(!again.regenerated());
        assert_eq!(again.chain, first.chain);
        // A new name: a new server certificate from the same CA.
        let more = [names(), vec!["acct.table.core.windows.net".into()]].concat();
        let renamed = TlsMaterial::self_signed(&dir, &more).unwrap();
        assert!(renamed.regenerated());
        assert_ne!(renamed.chain, first.chain);
        assert_eq!(std::fs::read(dir.join("ca.pem")).unwrap(), ca);
        // An unreadable server key: made again, CA kept.
        std::fs::write(dir.join("server-key.pem"), "garbage").unwrap();
        let repaired = TlsMaterial::self_signed(&dir, &more).unwrap();
        assert!(repaired.regenerated());
        assert_eq!(std::fs::read(dir.join("ca.pem")).unwrap(), ca);
        // A broken CA: everything is made again.
        std::fs::write(dir.join("ca.pem"), "garbage").unwrap();
        TlsMaterial::self_signed(&dir, &more).unwrap();
        assert_ne!(std::fs::read(dir.join("ca.pem")).unwrap(), ca);
        // The files load as --tls-cert/--tls-key too.
        TlsMaterial::from_pem_files(&dir.join("server.pem"), &dir.join("server-key.pem")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_pem_files_are_errors_that_name_the_file_not_its_content() {
        let dir = std::env::temp_dir().join(format!("tableq-tls-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let cert = dir.join("c.pem");
        let key = dir.join("k.pem");
        std::fs::write(&cert, "secret-looking text").unwrap();
        std::fs::write(&key, "secret-looking text").unwrap();
        let e = TlsMaterial::from_pem_files(&cert, &key).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("c.pem"), "{text}");
        assert!(!text.contains("secret-looking"), "{text}");
        let e = TlsMaterial::from_pem_files(&dir.join("missing.pem"), &key).unwrap_err();
        assert!(matches!(e, TlsError::Io { .. }), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

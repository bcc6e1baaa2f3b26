//! `tableq serve`'s HTTPS and bearer-token flags (README, "HTTPS and tokens"):
//!
//! ```text
//! --tls self-signed | --tls-cert PEM --tls-key PEM   serve HTTPS
//! --https-port PORT                                  HTTPS there, HTTP stays on --port
//! --keys DIR                                         certificates and the signing key
//! --trust-issuer URL|JWKS-FILE                       trust another issuer (instead of the local one)
//! --role-assignments FILE                            principal → table role
//! ```
//!
//! With HTTPS on, the server accepts `Authorization: Bearer` tokens there and runs the
//! local issuer (unless `--trust-issuer` names other issuers). The keys directory is
//! `DIR/keys` of the data directory (`./tableq-data/keys` by default — also with
//! `--in-memory` and `--store`, so that the CA clients trust and the signing key
//! `tableq token` reads survive restarts); `--keys` moves it.

use clap::Args as ClapArgs;
use std::path::{Path, PathBuf};
use tableq_server::Server;
use tableq_server::tls::TlsMaterial;
use tableq_server::token::{Bearer, LocalIssuer, RoleAssignments, TrustedKeys};

/// The HTTPS and token flags of `tableq serve`.
#[derive(Debug, Clone, ClapArgs)]
pub struct TlsArgs {
    /// Serve HTTPS with a certificate made and kept here: `self-signed` (a local CA and a
    /// server certificate for 127.0.0.1, localhost and the accounts'
    /// `<account>.table.core.windows.net` names, in the keys directory; trust its ca.pem).
    #[arg(long, value_name = "self-signed", value_parser = ["self-signed"], conflicts_with_all = ["tls_cert", "tls_key"])]
    tls: Option<String>,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve HTTPS on this port and keep plain HTTP on --port [default: HTTPS on --port,
    /// no HTTP].
    #[arg(long, value_name = "PORT")]
    https_port: Option<u16>,
    /// Where the self-signed certificates and the token signing key are kept [default: the
    /// `keys` directory of --data, also with --in-memory and --store].
    #[arg(long, value_name = "DIR")]
    keys: Option<PathBuf>,
    /// Trust bearer tokens of another issuer instead of the local one; repeatable. An
    /// https:// URL is an OpenID issuer (e.g. https://login.microsoftonline.com/TENANT/v2.0):
    /// its discovery document and keys are fetched at start-up. Anything else is a JWKS file
    /// (with an optional "issuer" member naming their `iss`; else Entra ID's for the token's
    /// tenant), read offline. Needs HTTPS.
    #[arg(long, value_name = "URL|JWKS-FILE")]
    trust_issuer: Vec<String>,
    /// Role assignments for bearer tokens: JSON `[{"principalId": "...", "role": "Storage
    /// Table Data Reader"|"Storage Table Data Contributor", "scope": "..."}]`, or
    /// `{"default": "none", "assignments": [...]}` (README, "HTTPS and tokens").
    #[arg(long, value_name = "FILE")]
    role_assignments: Option<PathBuf>,
}

impl TlsArgs {
    /// Whether HTTPS is asked for.
    fn wanted(&self) -> bool {
        self.tls.is_some() || self.tls_cert.is_some()
    }

    /// The keys directory (see the module docs).
    pub fn keys_dir(&self, data: &Path) -> PathBuf {
        self.keys.clone().unwrap_or_else(|| data.join("keys"))
    }
}

/// The host names the self-signed certificate covers.
fn certificate_names(host: &str, accounts: &[String]) -> Vec<String> {
    let mut names = vec![
        "127.0.0.1".to_owned(),
        "localhost".to_owned(),
        "::1".to_owned(),
    ];
    let host = host.trim_matches(['[', ']']);
    if !host.is_empty()
        && host != "0.0.0.0"
        && host != "::"
        && !names.iter().any(|n| n.eq_ignore_ascii_case(host))
    {
        names.push(host.to_owned());
    }
    for account in accounts {
        names.push(format!("{account}.table.core.windows.net"));
        names.push(format!("{account}-secondary.table.core.windows.net"));
    }
    names
}

/// Sets HTTPS and tokens up on `server` as `args` say (blocking: may make keys); returns
/// the banner lines. `host` is `--host`, `accounts` the hosted account names.
pub async fn setup(
    args: &TlsArgs,
    data: &Path,
    host: &str,
    bind_host: std::net::IpAddr,
    accounts: &[String],
    server: &mut Server,
) -> Result<String, String> {
    if !args.wanted() {
        if !args.trust_issuer.is_empty() || args.role_assignments.is_some() {
            return Err(
                "--trust-issuer and --role-assignments need HTTPS (--tls self-signed or \
                 --tls-cert/--tls-key): bearer tokens are accepted over HTTPS only"
                    .into(),
            );
        }
        return Ok(String::new());
    }
    let keys = args.keys_dir(data);
    let names = certificate_names(host, accounts);
    let mut fetched = Vec::new();
    for url in args.trust_issuer.iter().filter(|t| is_url(t)) {
        fetched.push(fetch_issuer(url).await?);
    }
    let (material, issuer, trusted, assignments) = {
        let (args, keys, names) = (args.clone(), keys.clone(), names.clone());
        tokio::task::spawn_blocking(move || load(&args, &keys, &names, fetched))
            .await
            .map_err(|e| format!("preparing HTTPS failed: {e}"))??
    };
    let addr = args
        .https_port
        .map(|port| std::net::SocketAddr::new(bind_host, port));
    server
        .enable_https(&material, addr)
        .await
        .map_err(|e| e.to_string())?;
    let local = issuer.is_some();
    server
        .enable_tokens(
            Bearer {
                local: issuer,
                trusted,
                assignments,
            },
            &names,
        )
        .map_err(|e| e.to_string())?;
    let mut banner = String::new();
    // When HTTPS took --port, the banner's first lines already name it.
    if let (true, Some(endpoint), Some(connection)) = (
        server.serves_http(),
        server.https_table_endpoint(),
        server.https_connection_string(),
    ) {
        banner.push_str(&format!("https: {endpoint}\n"));
        banner.push_str(&format!("connection string (https): {connection}\n"));
    }
    let ca = material
        .ca_file()
        .map(|ca| std::fs::canonicalize(ca).unwrap_or_else(|_| ca.to_owned()));
    match ca {
        Some(ca) => banner.push_str(&format!(
            "certificate: self-signed, {}; clients trust it with REQUESTS_CA_BUNDLE={} (Python) \
             or NODE_EXTRA_CA_CERTS={} (Node.js)\n",
            if material.regenerated() {
                "made now"
            } else {
                "reused"
            },
            ca.display(),
            ca.display()
        )),
        None => banner.push_str("certificate: from --tls-cert/--tls-key\n"),
    }
    let origin = server
        .https_addr()
        .map(|a| format!("https://{a}"))
        .unwrap_or_default();
    if local {
        banner.push_str(&format!(
            "tokens: Bearer over HTTPS; local issuer {origin}/<tenant> (ClientSecretCredential: \
             authority {origin}, instance discovery off, any tenant, client id and secret); \
             `tableq token --keys {} --endpoint {origin} --role reader|contributor` prints one\n",
            std::fs::canonicalize(&keys).unwrap_or(keys).display()
        ));
    } else {
        banner.push_str(&format!(
            "tokens: Bearer over HTTPS, from the issuers of {}\n",
            args.trust_issuer.join(", ")
        ));
    }
    Ok(banner)
}

type Loaded = (
    TlsMaterial,
    Option<LocalIssuer>,
    Vec<TrustedKeys>,
    RoleAssignments,
);

/// Whether a `--trust-issuer` value is a URL (else a file).
fn is_url(text: &str) -> bool {
    text.starts_with("https://") || text.starts_with("http://")
}

/// An error and its causes, `: `-separated (reqwest's own text leaves the cause out).
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// An OpenID issuer's keys: `{url}/.well-known/openid-configuration` names the issuer and
/// `jwks_uri` (fetched once, at start-up; certificates checked against the system's roots,
/// or `SSL_CERT_FILE`).
async fn fetch_issuer(url: &str) -> Result<TrustedKeys, String> {
    let base = url.trim_end_matches('/');
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(15))
        .build()
        .map_err(|e| format!("--trust-issuer {url}: {e}"))?;
    let get = |target: String| {
        let client = client.clone();
        async move {
            let reply = client
                .get(&target)
                .send()
                .await
                .and_then(|r| r.error_for_status())
                .map_err(|e| format!("--trust-issuer: GET {target}: {}", causes(&e)))?;
            let body = reply
                .bytes()
                .await
                .map_err(|e| format!("--trust-issuer: GET {target}: {}", causes(&e)))?;
            String::from_utf8(body.to_vec())
                .map_err(|_| format!("--trust-issuer: GET {target}: the answer is not UTF-8"))
        }
    };
    let discovery_url = format!("{base}/.well-known/openid-configuration");
    let discovery: serde_json::Value = serde_json::from_str(&get(discovery_url.clone()).await?)
        .map_err(|e| format!("--trust-issuer: {discovery_url} is not JSON ({e})"))?;
    let field = |name: &str| {
        discovery
            .get(name)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| format!("--trust-issuer: {discovery_url} names no `{name}`"))
    };
    let (issuer, jwks_uri) = (field("issuer")?, field("jwks_uri")?);
    let jwks = get(jwks_uri.clone()).await?;
    TrustedKeys::from_jwks(Some(issuer), &jwks, &jwks_uri)
        .map_err(|e| format!("--trust-issuer: {jwks_uri}: {e}"))
}

fn load(
    args: &TlsArgs,
    keys: &Path,
    names: &[String],
    fetched: Vec<TrustedKeys>,
) -> Result<Loaded, String> {
    let material = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            TlsMaterial::from_pem_files(cert, key).map_err(|e| format!("--tls-cert: {e}"))?
        }
        _ => TlsMaterial::self_signed(keys, names).map_err(|e| format!("--tls: {e}"))?,
    };
    let mut trusted = fetched;
    for file in args.trust_issuer.iter().filter(|t| !is_url(t)) {
        trusted.push(
            TrustedKeys::from_file(Path::new(file)).map_err(|e| format!("--trust-issuer: {e}"))?,
        );
    }
    let issuer = if trusted.is_empty() {
        Some(LocalIssuer::open(keys).map_err(|e| format!("the token signing key: {e}"))?)
    } else {
        None
    };
    let assignments = match &args.role_assignments {
        Some(path) => {
            RoleAssignments::from_file(path).map_err(|e| format!("--role-assignments: {e}"))?
        }
        None => RoleAssignments::default(),
    };
    Ok((material, issuer, trusted, assignments))
}

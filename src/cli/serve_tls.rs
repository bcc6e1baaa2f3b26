//! `tableq serve`'s HTTPS and bearer-token flags (docs/https-and-tokens.md):
//!
//! ```text
//! --tls self-signed | --tls-cert PEM --tls-key PEM   serve HTTPS
//! --https-port PORT                                  HTTPS there, HTTP stays on --port
//! --keys DIR                                         certificates, the signing key, the client
//! --local-issuer                                     run the local token issuer
//! --trust-issuer URL|JWKS-FILE                       trust another issuer's tokens
//! --role-assignments FILE                            principal → table role (and client secret)
//! --public-url https://HOST[:PORT]                   the origin the issuer names itself by
//! ```
//!
//! With HTTPS on, the server takes SharedKey, SharedKeyLite and SAS there as over HTTP, and
//! `Authorization: Bearer` tokens only from the issuers it trusts: its own with
//! `--local-issuer` (opt-in: the issuer gives tokens to registered clients whose secret
//! matches — the role-assignments file's `clientSecret`s, or, without a file, one client
//! generated on the first start and printed in the banner), and each `--trust-issuer`
//! (https, or http on a loopback address; pinned to one tenant). Without either, no token
//! is accepted. The keys directory is `DIR/keys` of the data directory
//! (`./tableq-data/keys` by default — also with `--in-memory` and `--store`, so that the CA
//! clients trust, the signing key `tableq token` reads and the generated client survive
//! restarts); `--keys` moves it. Keys, the client file and the directory must be private
//! (0600 / 0700), as ssh requires of its keys.
//!
//! Everything is made and read ([`prepare`]) before the server opens its port, so a client
//! that connects as soon as the port answers finds the CA, the signing key and the client
//! in place.

use clap::Args as ClapArgs;
use std::path::{Path, PathBuf};
use tableq_server::Server;
use tableq_server::tls::TlsMaterial;
use tableq_server::token::{
    Bearer, GeneratedClient, ISSUER_ORIGIN_FILE, LocalIssuer, Role, RoleAssignments, TrustedKeys,
};

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
    /// Run the local token issuer (OpenID discovery, keys and the client-credentials token
    /// endpoint under /{tenant}/) and accept its tokens. It gives tokens only to registered
    /// clients whose secret matches: the --role-assignments file's `clientSecret`s, else one
    /// client generated on the first start (kept in the keys directory, printed in the
    /// banner). Needs HTTPS.
    #[arg(long)]
    local_issuer: bool,
    /// Trust bearer tokens of another issuer; repeatable. An https:// URL is an OpenID
    /// issuer of one tenant (e.g. https://login.microsoftonline.com/TENANT-ID/v2.0): its
    /// discovery document and keys are fetched at start-up (http:// only for a loopback
    /// address). Anything else is a JWKS file with an "issuer" member naming the `iss` its
    /// tokens carry, read offline. Needs HTTPS.
    #[arg(long, value_name = "URL|JWKS-FILE")]
    trust_issuer: Vec<String>,
    /// Role assignments for bearer tokens of every issuer: JSON `[{"principalId": "...",
    /// "role": "Storage Table Data Reader"|"Storage Table Data Contributor", "scope": "...",
    /// "clientSecret": "..."}]`, or `{"default": "none", "assignments": [...]}`
    /// (docs/https-and-tokens.md).
    #[arg(long, value_name = "FILE")]
    role_assignments: Option<PathBuf>,
    /// The HTTPS origin clients reach this server by, when it is not the bound address
    /// (e.g. behind a proxy): the local issuer names itself by it [default: the bound
    /// HTTPS address].
    #[arg(long, value_name = "https://HOST[:PORT]")]
    public_url: Option<String>,
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

/// HTTPS and tokens as the flags ask for them, made and read before the port opens
/// ([`prepare`]), applied to the bound server by [`Prepared::apply`].
pub struct Prepared {
    material: TlsMaterial,
    https_port: Option<u16>,
    bearer: Bearer,
    client: Option<GeneratedClient>,
    keys: PathBuf,
    names: Vec<String>,
    public_url: Option<String>,
    /// How each trusted issuer is reached, for the banner.
    trusted: Vec<String>,
}

/// Checks the flags and makes or reads everything HTTPS and tokens need (certificates, the
/// signing key, the generated client, other issuers' keys, the assignments); `None` when
/// HTTPS is not asked for. `host` is `--host`, `accounts` the hosted account names.
pub async fn prepare(
    args: &TlsArgs,
    data: &Path,
    host: &str,
    accounts: &[String],
) -> Result<Option<Prepared>, String> {
    if !args.wanted() {
        let token_flag = [
            (args.local_issuer, "--local-issuer"),
            (!args.trust_issuer.is_empty(), "--trust-issuer"),
            (args.role_assignments.is_some(), "--role-assignments"),
            (args.public_url.is_some(), "--public-url"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag));
        if let Some(flag) = token_flag {
            return Err(format!(
                "{flag} needs HTTPS (--tls self-signed or --tls-cert/--tls-key): bearer tokens \
                 are accepted over HTTPS only"
            ));
        }
        return Ok(None);
    }
    if args.role_assignments.is_some() && !args.local_issuer && args.trust_issuer.is_empty() {
        return Err(
            "--role-assignments gives roles to token principals, but no issuer is trusted: \
             add --local-issuer (the server's own) or --trust-issuer"
                .into(),
        );
    }
    let public_url = args.public_url.as_deref().map(public_origin).transpose()?;
    let mut names = certificate_names(host, accounts);
    if let Some(public) = &public_url
        && let Some(host) = url_host(public)
        && !names.iter().any(|n| n.eq_ignore_ascii_case(&host))
    {
        names.push(host);
    }
    let keys = args.keys_dir(data);
    let mut fetched = Vec::new();
    for url in args.trust_issuer.iter().filter(|t| is_url(t)) {
        check_issuer_url("--trust-issuer", url)?;
        fetched.push(fetch_issuer(url).await?);
    }
    let (material, issuer, client, trusted, assignments) = {
        let (args, keys, names) = (args.clone(), keys.clone(), names.clone());
        tokio::task::spawn_blocking(move || load(&args, &keys, &names, fetched))
            .await
            .map_err(|e| format!("preparing HTTPS failed: {e}"))??
    };
    let sources = args
        .trust_issuer
        .iter()
        .map(|t| describe_trusted(t))
        .collect();
    Ok(Some(Prepared {
        material,
        https_port: args.https_port,
        bearer: Bearer {
            local: issuer,
            trusted,
            assignments,
        },
        client,
        keys,
        names,
        public_url,
        trusted: sources,
    }))
}

impl Prepared {
    /// Serves HTTPS and accepts tokens on `server`; returns the banner lines.
    pub async fn apply(
        self,
        server: &mut Server,
        bind_host: std::net::IpAddr,
    ) -> Result<String, String> {
        let addr = self
            .https_port
            .map(|port| std::net::SocketAddr::new(bind_host, port));
        server
            .enable_https(&self.material, addr)
            .await
            .map_err(|e| e.to_string())?;
        let local = self.bearer.local.is_some();
        let registered = self.bearer.assignments.clients().count();
        let any_issuer = local || !self.bearer.trusted.is_empty();
        if any_issuer {
            server
                .enable_tokens(self.bearer, &self.names, self.public_url.as_deref())
                .map_err(|e| e.to_string())?;
        }
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
        let ca = self
            .material
            .ca_file()
            .map(|ca| std::fs::canonicalize(ca).unwrap_or_else(|_| ca.to_owned()));
        match ca {
            Some(ca) => banner.push_str(&format!(
                "certificate: self-signed, {}; clients trust it with REQUESTS_CA_BUNDLE={} \
                 (Python) or NODE_EXTRA_CA_CERTS={} (Node.js)\n",
                if self.material.regenerated() {
                    "made now"
                } else {
                    "reused"
                },
                ca.display(),
                ca.display()
            )),
            None => banner.push_str("certificate: from --tls-cert/--tls-key\n"),
        }
        let origin = match &self.public_url {
            Some(public) => public.clone(),
            None => server
                .https_addr()
                .map(|a| format!("https://{a}"))
                .unwrap_or_default(),
        };
        if !any_issuer {
            banner.push_str(
                "tokens: none accepted (no issuer: --local-issuer runs one, --trust-issuer \
                 trusts another); HTTPS takes SharedKey, SharedKeyLite and SAS\n",
            );
        }
        if local {
            // `tableq token` reads the origin tokens must name from here.
            let origin_file = self.keys.join(ISSUER_ORIGIN_FILE);
            if let Err(e) = std::fs::write(&origin_file, format!("{origin}\n")) {
                tracing::warn!(
                    "cannot write {}: {e} (tableq token then needs --endpoint {origin})",
                    origin_file.display()
                );
            }
            let keys = std::fs::canonicalize(&self.keys).unwrap_or(self.keys);
            banner.push_str(&format!(
                "tokens: Bearer over HTTPS; local issuer {origin}/<tenant> \
                 (ClientSecretCredential: authority {origin}, instance discovery off, any \
                 tenant); `tableq token --keys {} --role reader|contributor` prints one\n",
                keys.display()
            ));
            match &self.client {
                Some(client) => banner.push_str(&format!(
                    "local issuer client: id {} secret {} (Storage Table Data Contributor; {} \
                     {})\n",
                    client.id,
                    client.secret,
                    if client.made_now {
                        "made now, kept in"
                    } else {
                        "kept in"
                    },
                    client.path.display()
                )),
                None if registered == 0 => banner.push_str(
                    "local issuer clients: none (no principal of --role-assignments has a \
                     clientSecret): the token endpoint gives no token; `tableq token` does\n",
                ),
                None => banner.push_str(&format!(
                    "local issuer clients: the {registered} principal(s) with a clientSecret in \
                     --role-assignments\n"
                )),
            }
        }
        if !self.trusted.is_empty() {
            banner.push_str(&format!(
                "tokens: Bearer over HTTPS, from the issuers of {}\n",
                self.trusted.join(", ")
            ));
        }
        Ok(banner)
    }
}

/// How a trusted issuer is named in the banner: as given, with a note for plain HTTP.
fn describe_trusted(source: &str) -> String {
    if source.starts_with("http://") {
        format!("{source} (plain HTTP: loopback only)")
    } else {
        source.to_owned()
    }
}

/// `--public-url`: an `https://host[:port]` origin, without a path.
fn public_origin(url: &str) -> Result<String, String> {
    let origin = url.trim_end_matches('/');
    let Some(rest) = origin.strip_prefix("https://") else {
        return Err(format!(
            "--public-url {url}: want the https:// origin clients reach the server by"
        ));
    };
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return Err(format!(
            "--public-url {url}: want an origin only (https://host[:port], no path)"
        ));
    }
    Ok(origin.to_ascii_lowercase())
}

/// The host of an `http(s)://host[:port]/…` URL (brackets of an IPv6 address removed).
fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Refuses an issuer URL over plain HTTP unless it names a loopback address (`localhost`,
/// `127.0.0.0/8`, `[::1]`): keys fetched over plain HTTP from elsewhere could be anyone's.
fn check_issuer_url(flag: &str, url: &str) -> Result<(), String> {
    if url.starts_with("https://") {
        return Ok(());
    }
    let loopback = url_host(url).is_some_and(|host| {
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    if url.starts_with("http://") && loopback {
        return Ok(());
    }
    Err(format!(
        "{flag} {url}: an issuer's keys are fetched over https:// only (plain http:// is \
         accepted for a loopback address alone: localhost, 127.0.0.1, [::1])"
    ))
}

type Loaded = (
    TlsMaterial,
    Option<LocalIssuer>,
    Option<GeneratedClient>,
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
    check_issuer_url(&format!("--trust-issuer {url}: jwks_uri"), &jwks_uri)?;
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
    let mut assignments = match &args.role_assignments {
        Some(path) => {
            RoleAssignments::from_file(path).map_err(|e| format!("--role-assignments: {e}"))?
        }
        None => RoleAssignments::default(),
    };
    let mut client = None;
    let issuer = if args.local_issuer {
        let issuer = LocalIssuer::open(keys).map_err(|e| format!("the token signing key: {e}"))?;
        if args.role_assignments.is_none() {
            let generated = GeneratedClient::open(keys)
                .map_err(|e| format!("the local issuer's client: {e}"))?;
            assignments =
                assignments.with_client(&generated.id, &generated.secret, Role::Contributor);
            client = Some(generated);
        }
        Some(issuer)
    } else {
        None
    };
    Ok((material, issuer, client, trusted, assignments))
}

//! HTTPS and bearer tokens over raw HTTP/1.1: a server in this process with HTTP on one
//! free port and HTTPS (a self-signed CA in a temporary keys directory) on another, and its
//! local issuer. Every refusal is checked for its status, error code and `WWW-Authenticate`
//! hint; the token endpoint, discovery and JWKS as the SDKs use them; SharedKey over HTTPS.

use crate::server_support;

use base64::Engine;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use tableq_server::tls::TlsMaterial;
use tableq_server::token::{Bearer, LocalIssuer, Role, RoleAssignments, TokenRequest};
use tableq_server::{Server, ServerConfig};
use tableq_store::MemoryBackend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
/// The secret of the registered clients of [`start`].
const SECRET: &str = "s3cret";

struct Tls {
    http: u16,
    https: u16,
    keys: PathBuf,
    connector: tokio_rustls::TlsConnector,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Tls {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = std::fs::remove_dir_all(&self.keys);
    }
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// Status, `x-ms-error-code` and the bearer hint of a refusal.
    fn refused(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}{}", self.head, self.body);
        assert_eq!(
            self.header("x-ms-error-code").as_deref(),
            Some(code),
            "{}",
            self.body
        );
        assert_eq!(self.json()["odata.error"]["code"], code);
        let hint = self
            .header("www-authenticate")
            .expect("a WWW-Authenticate hint");
        assert!(
            hint.starts_with("Bearer authorization_uri=https://")
                && hint.ends_with(", resource_id=https://storage.azure.com"),
            "{hint}"
        );
    }
}

async fn start(assignments: &str) -> Tls {
    let keys = std::env::temp_dir().join(format!("tableq-tokens-{}", uuid::Uuid::new_v4()));
    let material = TlsMaterial::self_signed(&keys, &["127.0.0.1".into(), "localhost".into()])
        .expect("self-signed material");
    let mut server = Server::bind(
        "127.0.0.1:0".parse().unwrap(),
        Arc::new(MemoryBackend::new()),
        ServerConfig::default(),
    )
    .await
    .unwrap();
    server
        .enable_https(&material, Some("127.0.0.1:0".parse().unwrap()))
        .await
        .unwrap();
    // The registered clients of the local issuer: every `client_token` client.
    let assignments = RoleAssignments::from_json(assignments)
        .unwrap()
        .with_client("app-1", SECRET, Role::Contributor)
        .with_client("app-url", SECRET, Role::Contributor);
    let bearer = Bearer {
        local: Some(LocalIssuer::open(&keys).unwrap()),
        trusted: Vec::new(),
        assignments,
    };
    server.enable_tokens(bearer, &[], None).unwrap();
    let http = server.local_addr().port();
    let https = server.https_addr().unwrap().port();
    assert!(server.serves_http());
    assert_eq!(
        server.https_table_endpoint().unwrap(),
        format!("https://127.0.0.1:{https}/devstoreaccount1")
    );
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    Tls {
        http,
        https,
        keys,
        connector: connector(material.ca_file().unwrap()),
        stop: Some(stop),
    }
}

/// A TLS client that trusts the CA in `ca` (PEM) only.
fn connector(ca: &std::path::Path) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read(ca).unwrap();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&ca) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// Sends `request` (a raw HTTP/1.1 request; `Host`, `Connection: close` and
/// `Content-Length` are added) to `port`, over TLS with `tls`, and reads the whole reply.
async fn exchange(tls: Option<&tokio_rustls::TlsConnector>, port: u16, request: &str) -> Reply {
    let (head, body) = request.split_once("\r\n\r\n").unwrap_or((request, ""));
    let text = format!(
        "{head}\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut raw = Vec::new();
    match tls {
        Some(connector) => {
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
            let mut tls = connector.connect(name, tcp).await.expect("TLS handshake");
            tls.write_all(text.as_bytes()).await.unwrap();
            let _ = tls.read_to_end(&mut raw).await;
        }
        None => {
            let mut tcp = tcp;
            tcp.write_all(text.as_bytes()).await.unwrap();
            let _ = tcp.read_to_end(&mut raw).await;
        }
    }
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

use rustls::pki_types::pem::PemObject;

impl Tls {
    /// Sends `request` (a raw HTTP/1.1 request; `Connection: close` is added) over HTTPS
    /// (`secure`) or HTTP, and reads the whole reply.
    async fn send(&self, secure: bool, request: &str) -> Reply {
        if secure {
            exchange(Some(&self.connector), self.https, request).await
        } else {
            exchange(None, self.http, request).await
        }
    }

    /// `GET /devstoreaccount1/Tables` with `Authorization: Bearer {token}`.
    async fn list_tables(&self, secure: bool, token: &str, version: &str) -> Reply {
        self.send(
            secure,
            &format!(
                "GET /devstoreaccount1/Tables HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
                 x-ms-version: {version}\r\nAccept: application/json;odata=nometadata"
            ),
        )
        .await
    }

    /// The token endpoint's answer to a client-credentials grant of `client` with `secret`.
    async fn grant(&self, client: &str, secret: &str) -> Reply {
        let form = format!(
            "grant_type=client_credentials&client_id={client}&client_secret={secret}&\
             scope=https%3A%2F%2Fstorage.azure.com%2F.default"
        );
        self.send(
            true,
            &format!(
                "POST /{TENANT}/oauth2/v2.0/token HTTP/1.1\r\n\
                 Content-Type: application/x-www-form-urlencoded\r\n\r\n{form}"
            ),
        )
        .await
    }

    /// A token from the token endpoint (client credentials) for the registered `client`.
    async fn client_token(&self, client: &str) -> String {
        let reply = self.grant(client, SECRET).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let json = reply.json();
        assert_eq!(json["token_type"], "Bearer");
        assert_eq!(json["expires_in"], 3599);
        json["access_token"].as_str().unwrap().to_owned()
    }

    fn issuer(&self) -> LocalIssuer {
        LocalIssuer::open(&self.keys).unwrap()
    }

    fn request(&self) -> TokenRequest {
        TokenRequest {
            origin: format!("https://127.0.0.1:{}", self.https),
            tenant: TENANT.into(),
            principal: "app".into(),
            role: Some(Role::Contributor),
            audience: "https://storage.azure.com".into(),
            lifetime_seconds: 600,
        }
    }
}

#[tokio::test]
async fn discovery_jwks_and_the_token_endpoint_serve_the_sdks() {
    let tls = start("[]").await;
    let origin = format!("https://127.0.0.1:{}", tls.https);
    let discovery = tls
        .send(
            true,
            &format!("GET /{TENANT}/v2.0/.well-known/openid-configuration HTTP/1.1"),
        )
        .await;
    assert_eq!(discovery.status, 200, "{}", discovery.body);
    let doc = discovery.json();
    // The origin the client used (its Host).
    assert_eq!(doc["issuer"], format!("{origin}/{TENANT}/v2.0"));
    assert_eq!(
        doc["jwks_uri"],
        format!("{origin}/{TENANT}/discovery/v2.0/keys")
    );
    assert!(
        doc["token_endpoint"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/{TENANT}/oauth2/v2.0/token"))
    );
    let keys = tls
        .send(true, &format!("GET /{TENANT}/discovery/v2.0/keys HTTP/1.1"))
        .await
        .json();
    assert_eq!(keys["keys"][0]["kty"], "RSA");
    assert!(
        keys["keys"][0].get("d").is_none(),
        "the private key stays home"
    );
    // The endpoint's token works over HTTPS when its issuer names the HTTPS origin.
    let token = tls.client_token("app-1").await;
    let claims: Value = {
        let body = token.split('.').nth(1).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(body)
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(claims["oid"], "app-1");
    assert_eq!(claims["tid"], TENANT);
    assert_eq!(claims["roles"][0], "Storage Table Data Contributor");
    assert_eq!(claims["aud"], "https://storage.azure.com");
    assert_eq!(claims["iss"], format!("{origin}/{TENANT}/v2.0"));
    let ok = tls.list_tables(true, &token, "2019-02-02").await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.header("www-authenticate").is_none());
    // The issuer is HTTPS only, and refuses what is not a client-credentials grant.
    let plain = tls
        .send(
            false,
            &format!("GET /{TENANT}/discovery/v2.0/keys HTTP/1.1"),
        )
        .await;
    assert_eq!(plain.status, 403);
    let wrong_grant = tls
        .send(
            true,
            &format!(
                "POST /{TENANT}/oauth2/v2.0/token HTTP/1.1\r\nContent-Type: \
                 application/x-www-form-urlencoded\r\n\r\ngrant_type=password&client_id=a"
            ),
        )
        .await;
    assert_eq!(wrong_grant.status, 400);
    assert_eq!(wrong_grant.json()["error"], "unsupported_grant_type");
    let no_scope = tls
        .send(
            true,
            &format!(
                "POST /{TENANT}/oauth2/v2.0/token HTTP/1.1\r\nContent-Type: \
                 application/x-www-form-urlencoded\r\n\r\n\
                 grant_type=client_credentials&client_id=app-1&client_secret={SECRET}"
            ),
        )
        .await;
    assert_eq!(no_scope.json()["error"], "invalid_scope");
}

/// The attack of issue 28: a stranger (any client id, any secret) or a registered client
/// with a made-up secret asked the token endpoint and got a Contributor token. Only a
/// registered client with its own secret gets one; the others get Entra ID's 401
/// `invalid_client` (AADSTS7000215), the same answer whether the client exists or not.
#[tokio::test]
async fn the_token_endpoint_gives_tokens_to_registered_clients_with_their_secret_only() {
    let tls = start(
        r#"[{"principalId": "reader-app", "clientSecret": "r-secret",
             "role": "Storage Table Data Reader"},
            {"principalId": "no-secret", "role": "Storage Table Data Contributor"}]"#,
    )
    .await;
    for (client, secret) in [
        ("random-stranger", "x"),
        ("app-1", "made-up"),
        ("app-1", "s3cre"),
        ("app-1", "s3cret2"),
        ("reader-app", SECRET),
        ("no-secret", "anything"),
    ] {
        let reply = tls.grant(client, secret).await;
        assert_eq!(reply.status, 401, "{client}/{secret}: {}", reply.body);
        let json = reply.json();
        assert_eq!(json["error"], "invalid_client", "{}", reply.body);
        assert!(
            json["error_description"]
                .as_str()
                .unwrap()
                .starts_with("AADSTS7000215: Invalid client secret provided."),
            "{}",
            reply.body
        );
        assert_eq!(json["error_codes"][0], 7000215);
        assert!(json.get("access_token").is_none());
    }
    // A missing secret, and a certificate assertion the issuer cannot check: 401 too.
    let missing = tls
        .send(
            true,
            &format!(
                "POST /{TENANT}/oauth2/v2.0/token HTTP/1.1\r\nContent-Type: \
                 application/x-www-form-urlencoded\r\n\r\n\
                 grant_type=client_credentials&client_id=app-1&client_assertion=eyJ&\
                 scope=https%3A%2F%2Fstorage.azure.com%2F.default"
            ),
        )
        .await;
    assert_eq!(missing.status, 401, "{}", missing.body);
    assert_eq!(missing.json()["error"], "invalid_client");
    // The registered reader gets a token with its own role, and may read, not write.
    let reader = tls.grant("reader-app", "r-secret").await;
    assert_eq!(reader.status, 200, "{}", reader.body);
    let token = reader.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(
        tls.list_tables(true, &token, "2019-02-02").await.status,
        200
    );
    let create = format!(
        "POST /devstoreaccount1/Tables HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
         x-ms-version: 2019-02-02\r\nContent-Type: application/json\r\n\
         Accept: application/json;odata=nometadata\r\n\r\n{{\"TableName\":\"stolen\"}}"
    );
    tls.send(true, &create)
        .await
        .refused(403, "AuthorizationPermissionMismatch");
}

/// The issuer's URL comes from the server's configuration: a `Host` that is not one of the
/// server's own names is never copied into the discovery document, a token or a hint.
#[tokio::test]
async fn a_foreign_host_header_is_never_reflected() {
    let tls = start("[]").await;
    let origin = format!("https://127.0.0.1:{}", tls.https);
    // `exchange` adds the real Host; a second, foreign one is what an attacker controls when
    // it is the only one — send it alone through a raw request.
    let foreign = |path: &str, method: &str, body: &str| {
        format!(
            "{method} {path} HTTP/1.1\r\nHost: evil.example:443\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let raw = |text: String| {
        let connector = tls.connector.clone();
        let port = tls.https;
        async move {
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
            let mut stream = connector.connect(name, tcp).await.unwrap();
            stream.write_all(text.as_bytes()).await.unwrap();
            let mut out = Vec::new();
            let _ = stream.read_to_end(&mut out).await;
            String::from_utf8_lossy(&out).into_owned()
        }
    };
    let discovery = raw(foreign(
        &format!("/{TENANT}/v2.0/.well-known/openid-configuration"),
        "GET",
        "",
    ))
    .await;
    assert!(!discovery.contains("evil.example"), "{discovery}");
    assert!(
        discovery.contains(&format!("\"issuer\":\"{origin}/{TENANT}/v2.0\"")),
        "{discovery}"
    );
    let form = format!(
        "grant_type=client_credentials&client_id=app-1&client_secret={SECRET}&\
         scope=https%3A%2F%2Fstorage.azure.com%2F.default"
    );
    let token_reply = raw(foreign(
        &format!("/{TENANT}/oauth2/v2.0/token"),
        "POST",
        &form,
    ))
    .await;
    let body = token_reply.split_once("\r\n\r\n").unwrap().1;
    let token = serde_json::from_str::<Value>(body).unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["iss"], format!("{origin}/{TENANT}/v2.0"));
    // The refusal's hint names the configured origin too.
    let refused = raw(
        "GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\
         Authorization: Bearer garbage\r\nx-ms-version: 2019-02-02\r\n\r\n"
            .to_owned(),
    )
    .await;
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    assert!(!refused.contains("evil.example"), "{refused}");
    assert!(
        refused.contains(&format!(
            "authorization_uri={origin}/{TENANT}/oauth2/authorize"
        )) || refused.contains(&format!(
            "authorization_uri={origin}/common/oauth2/authorize"
        )),
        "{refused}"
    );
}

#[tokio::test]
async fn every_bad_token_is_refused_with_status_code_and_hint() {
    let tls = start(r#"[{"principalId": "reader", "role": "Storage Table Data Reader"}]"#).await;
    let issuer = tls.issuer();
    let good = issuer.issue(&tls.request()).unwrap();
    // Over plain HTTP: 403 AuthenticationFailed.
    tls.list_tables(false, &good, "2019-02-02")
        .await
        .refused(403, "AuthenticationFailed");
    // An x-ms-version before bearer tokens: 403 AuthenticationFailed.
    tls.list_tables(true, &good, "2018-03-28")
        .await
        .refused(403, "AuthenticationFailed");
    // Wrong audience, wrong issuer: 401 InvalidAuthenticationInfo.
    let aud = issuer
        .issue(&TokenRequest {
            audience: "https://vault.azure.net".into(),
            ..tls.request()
        })
        .unwrap();
    let reply = tls.list_tables(true, &aud, "2019-02-02").await;
    reply.refused(401, "InvalidAuthenticationInfo");
    assert!(reply.body.contains("audience"), "{}", reply.body);
    let iss = issuer
        .issue(&TokenRequest {
            origin: "https://login.microsoftonline.com".into(),
            ..tls.request()
        })
        .unwrap();
    tls.list_tables(true, &iss, "2019-02-02")
        .await
        .refused(401, "InvalidAuthenticationInfo");
    // Signed by a key this server does not trust.
    let stranger_dir = tls.keys.join("stranger");
    let stranger = LocalIssuer::open(&stranger_dir).unwrap();
    let foreign = stranger.issue(&tls.request()).unwrap();
    tls.list_tables(true, &foreign, "2019-02-02")
        .await
        .refused(401, "InvalidAuthenticationInfo");
    // Expired beyond the skew (signed with the server's own key, read from the keys dir).
    let pem = std::fs::read(tls.keys.join("signing-key.pem")).unwrap();
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(&pem).unwrap();
    let now = jsonwebtoken::get_current_timestamp();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some(issuer.key_id().to_owned());
    let claims = |exp: u64| {
        serde_json::json!({
            "aud": "https://storage.azure.com",
            "iss": format!("https://127.0.0.1:{}/{TENANT}/v2.0", tls.https),
            "exp": exp, "nbf": exp - 3600, "tid": TENANT, "oid": "app",
            "roles": ["Storage Table Data Contributor"],
        })
    };
    let expired = jsonwebtoken::encode(&header, &claims(now - 600), &key).unwrap();
    let reply = tls.list_tables(true, &expired, "2019-02-02").await;
    reply.refused(401, "InvalidAuthenticationInfo");
    assert!(reply.body.contains("expired"), "{}", reply.body);
    // alg none, with the same claims and no signature.
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let none = format!(
        "{}.{}.",
        b64.encode(r#"{"alg":"none","typ":"JWT"}"#),
        b64.encode(claims(now + 600).to_string())
    );
    tls.list_tables(true, &none, "2019-02-02")
        .await
        .refused(401, "InvalidAuthenticationInfo");
    // HS256 with the public key's bytes as the secret (the classic confusion attack).
    let hs = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims(now + 600),
        &jsonwebtoken::EncodingKey::from_secret(b"public key bytes"),
    )
    .unwrap();
    tls.list_tables(true, &hs, "2019-02-02")
        .await
        .refused(401, "InvalidAuthenticationInfo");
    tls.list_tables(true, "garbage", "2019-02-02")
        .await
        .refused(401, "InvalidAuthenticationInfo");
    // A reader may read, not write: 403 AuthorizationPermissionMismatch.
    let reader = issuer
        .issue(&TokenRequest {
            principal: "reader".into(),
            ..tls.request()
        })
        .unwrap();
    assert_eq!(
        tls.list_tables(true, &reader, "2019-02-02").await.status,
        200
    );
    let create = |token: &str| {
        format!(
            "POST /devstoreaccount1/Tables HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
             x-ms-version: 2019-02-02\r\nContent-Type: application/json\r\n\
             Accept: application/json;odata=nometadata\r\n\r\n{{\"TableName\":\"tok\"}}"
        )
    };
    tls.send(true, &create(&reader))
        .await
        .refused(403, "AuthorizationPermissionMismatch");
    // A token without any role, likewise.
    let roleless = issuer
        .issue(&TokenRequest {
            role: None,
            principal: "nobody".into(),
            ..tls.request()
        })
        .unwrap();
    tls.list_tables(true, &roleless, "2019-02-02")
        .await
        .refused(403, "AuthorizationPermissionMismatch");
    // The contributor creates the table.
    assert_eq!(tls.send(true, &create(&good)).await.status, 201);
}

#[tokio::test]
async fn shared_key_works_over_https_too() {
    let tls = start("[]").await;
    let signed = server_support::sign_raw(
        "GET /devstoreaccount1/Tables HTTP/1.1\r\nAccept: application/json;odata=nometadata\r\n\r\n",
    );
    let reply = tls.send(true, signed.trim_end()).await;
    assert_eq!(reply.status, 200, "{}{}", reply.head, reply.body);
    let unsigned = tls
        .send(true, "GET /devstoreaccount1/Tables HTTP/1.1")
        .await;
    assert_eq!(unsigned.status, 403);
}

/// The binary: `tableq serve --tls self-signed` (HTTPS on --port), its banner, `tableq token`
/// with the key it made, and a restart that reuses the certificates.
#[tokio::test]
async fn serve_and_token_commands_work_together() {
    let bin = env!("CARGO_BIN_EXE_tableq");
    let keys = std::env::temp_dir().join(format!("tableq-cli-tls-{}", uuid::Uuid::new_v4()));
    let roles = keys.with_extension("roles.json");
    std::fs::write(
        &roles,
        r#"{"default": "none", "assignments": [
            {"principalId": "cli", "role": "Storage Table Data Reader"},
            {"principalId": "tableq-cli", "role": "Storage Table Data Contributor"}]}"#,
    )
    .unwrap();
    let roles_arg = roles.to_str().unwrap().to_owned();
    let serve = || serve_tls(&keys, &["--local-issuer", "--role-assignments", &roles_arg]);
    let served = serve();
    let banner = served.banner.clone();
    let endpoint = format!("{}/devstoreaccount1", served.origin());
    assert!(endpoint.starts_with("https://127.0.0.1:"), "{banner}");
    assert!(
        banner.contains("DefaultEndpointsProtocol=https;"),
        "{banner}"
    );
    assert!(
        banner.contains("certificate: self-signed, made now"),
        "{banner}"
    );
    assert!(banner.contains("REQUESTS_CA_BUNDLE="), "{banner}");
    let origin = endpoint.trim_end_matches("/devstoreaccount1").to_owned();
    let port: u16 = origin.rsplit(':').next().unwrap().parse().unwrap();
    let token = |role: &str| {
        let out = std::process::Command::new(bin)
            .args([
                "token",
                "--role",
                role,
                "--principal",
                "cli",
                "--endpoint",
                &origin,
                "--keys",
            ])
            .arg(&keys)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let tls = connector(&keys.join("ca.pem"));
    let list = |token: String| list_tables_at(tls.clone(), port, token);
    // The file's assignment decides: `cli` reads, whatever role its token claims.
    let reply = list(token("reader")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply = list(token("contributor")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // Under `"default": "none"` a principal the file does not name has no role, whatever
    // its token's `roles` claim says.
    let stranger = {
        let out = std::process::Command::new(bin)
            .args([
                "token",
                "--role",
                "contributor",
                "--principal",
                "stranger",
                "--endpoint",
                &origin,
                "--keys",
            ])
            .arg(&keys)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let reply = list(stranger).await;
    assert_eq!(reply.status, 403, "{}", reply.body);
    assert!(
        reply.head.contains("AuthorizationPermissionMismatch"),
        "{}",
        reply.head
    );
    let ca = std::fs::read(keys.join("ca.pem")).unwrap();
    drop(served);
    // Restarted: the same CA, so the same client trusts it; the same signing key.
    let served = serve();
    let banner = &served.banner;
    assert!(
        banner.contains("certificate: self-signed, reused"),
        "{banner}"
    );
    assert_eq!(std::fs::read(keys.join("ca.pem")).unwrap(), ca);
    let endpoint = format!("{}/devstoreaccount1", served.origin());
    let port2 = served.port();
    let reply = exchange(
        Some(&tls),
        port2,
        &format!(
            "GET /devstoreaccount1/Tables HTTP/1.1\r\nAuthorization: Bearer {}\r\n\
             x-ms-version: 2019-02-02\r\nAccept: application/json;odata=nometadata",
            {
                // No --endpoint: the origin the restarted server wrote into the keys
                // directory (its new port), so the token names the issuer it trusts.
                let origin2 = endpoint.trim_end_matches("/devstoreaccount1").to_owned();
                assert_eq!(
                    std::fs::read_to_string(keys.join("local-issuer-origin"))
                        .unwrap()
                        .trim(),
                    origin2
                );
                let out = std::process::Command::new(bin)
                    .args(["token", "--role", "contributor", "--keys"])
                    .arg(&keys)
                    .output()
                    .unwrap();
                String::from_utf8(out.stdout).unwrap().trim().to_owned()
            }
        ),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    drop(served);
    // No key, no token.
    let missing = std::process::Command::new(bin)
        .args(["token", "--role", "reader", "--keys"])
        .arg(keys.join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&keys);
    let _ = std::fs::remove_file(&roles);
}

/// `--trust-issuer URL`: a second server (the binary) trusts this test's server as an OpenID
/// issuer — discovery and keys fetched over HTTPS at its start (the issuer's CA given by
/// `SSL_CERT_FILE`) — and accepts its tokens, refusing its own local issuer's.
// Multi-threaded: the test reads the child's banner with blocking I/O while the child
// fetches from the issuer running on this runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_server_trusts_this_issuer_by_url() {
    let issuer = start("[]").await;
    let token = issuer.client_token("app-url").await;
    let keys = std::env::temp_dir().join(format!("tableq-trust-url-{}", uuid::Uuid::new_v4()));
    let url = format!("https://127.0.0.1:{}/{TENANT}/v2.0", issuer.https);
    let ca = issuer.keys.join("ca.pem");
    let served = serve_tls_with(
        &keys,
        &["--trust-issuer", &url],
        &[("SSL_CERT_FILE", ca.as_os_str())],
    );
    let banner = &served.banner;
    let endpoint = format!("{}/devstoreaccount1", served.origin());
    assert!(
        banner.contains(&format!("from the issuers of {url}")),
        "{banner}"
    );
    let port = served.port();
    let tls = connector(&keys.join("ca.pem"));
    let list = |token: String| list_tables_at(tls.clone(), port, token);
    let reply = list(token).await;
    let own = std::process::Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args([
            "token",
            "--role",
            "contributor",
            "--endpoint",
            endpoint.trim_end_matches("/devstoreaccount1"),
            "--keys",
        ])
        .arg(&keys)
        .output()
        .unwrap();
    drop(served);
    assert_eq!(reply.status, 200, "{}", reply.body);
    // The second server runs no issuer of its own: `tableq token` finds no key there.
    assert_eq!(own.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&keys);
}

/// `GET /devstoreaccount1/Tables` over HTTPS to `port` with `Authorization: Bearer {token}`.
async fn list_tables_at(tls: tokio_rustls::TlsConnector, port: u16, token: String) -> Reply {
    exchange(
        Some(&tls),
        port,
        &format!(
            "GET /devstoreaccount1/Tables HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
             x-ms-version: 2019-02-02\r\nAccept: application/json;odata=nometadata"
        ),
    )
    .await
}

/// A `tableq serve` child and the banner it printed (up to its `explorer:` line).
struct Served {
    child: std::process::Child,
    banner: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// The HTTPS origin the banner names.
    fn origin(&self) -> String {
        self.banner
            .lines()
            .find_map(|l| l.strip_prefix("tableq serve: Table service emulator on "))
            .unwrap_or_else(|| panic!("{}", self.banner))
            .trim_end_matches("/devstoreaccount1")
            .to_owned()
    }

    fn port(&self) -> u16 {
        self.origin().rsplit(':').next().unwrap().parse().unwrap()
    }
}

/// `tableq serve --in-memory --port 0 --tls self-signed --keys KEYS ARGS…`.
fn serve_tls(keys: &std::path::Path, args: &[&str]) -> Served {
    serve_tls_with(keys, args, &[])
}

/// [`serve_tls`] with more environment variables.
fn serve_tls_with(
    keys: &std::path::Path,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> Served {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args([
            "serve",
            "--in-memory",
            "--port",
            "0",
            "--tls",
            "self-signed",
        ])
        .arg("--keys")
        .arg(keys)
        .args(args)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut banner = String::new();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut out, &mut line).unwrap() == 0 {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
            panic!("tableq serve stopped: {banner}{err}");
        }
        banner.push_str(&line);
        if line.starts_with("explorer:") {
            break;
        }
    }
    Served { child, banner }
}

/// Runs `tableq serve …` that must refuse to start: its exit code and stderr.
fn serve_refused(args: &[&str], extra: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(["serve", "--in-memory", "--port", "0"])
        .args(args)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
            return (status.code(), err);
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tableq serve {args:?} started instead of refusing");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn temp_keys(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tableq-{what}-{}", uuid::Uuid::new_v4()))
}

/// The attack of issue 28, item 1: `serve --tls self-signed` and nothing else handed a
/// Contributor token to anyone who asked. Now HTTPS alone runs no issuer: the token
/// endpoint is not there, no signing key is made, and no token is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_alone_runs_no_issuer_and_accepts_no_token() {
    let keys = temp_keys("no-issuer");
    let served = serve_tls(&keys, &[]);
    assert!(
        served.banner.contains("tokens: none accepted"),
        "{}",
        served.banner
    );
    assert!(
        served.banner.contains("authorization: on"),
        "{}",
        served.banner
    );
    let tls = connector(&keys.join("ca.pem"));
    let port = served.port();
    let stolen = exchange(
        Some(&tls),
        port,
        "POST /anyone/oauth2/v2.0/token HTTP/1.1\r\nContent-Type: \
         application/x-www-form-urlencoded\r\n\r\ngrant_type=client_credentials&\
         client_id=random-stranger&client_secret=x&\
         scope=https%3A%2F%2Fstorage.azure.com%2F.default",
    )
    .await;
    assert_ne!(stolen.status, 200, "{}", stolen.body);
    assert!(!stolen.body.contains("access_token"), "{}", stolen.body);
    assert!(!keys.join("signing-key.pem").exists());
    assert!(!keys.join("local-client.json").exists());
    // A token signed with some key is refused: no issuer is trusted.
    let other = LocalIssuer::open(&keys.join("elsewhere")).unwrap();
    let token = other
        .issue(&TokenRequest {
            origin: served.origin(),
            tenant: TENANT.into(),
            principal: "x".into(),
            role: Some(Role::Contributor),
            audience: "https://storage.azure.com".into(),
            lifetime_seconds: 600,
        })
        .unwrap();
    let reply = exchange(
        Some(&tls),
        port,
        &format!(
            "POST /devstoreaccount1/Tables HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
             x-ms-version: 2019-02-02\r\nContent-Type: application/json\r\n\r\n\
             {{\"TableName\":\"stolen\"}}"
        ),
    )
    .await;
    assert_eq!(reply.status, 403, "{}", reply.body);
    drop(served);
    let _ = std::fs::remove_dir_all(&keys);
}

/// `--local-issuer` without a role file: one client is generated on the first start, kept
/// 0600 in the keys directory, printed in the banner, and the same after a restart; it
/// gets tokens, strangers do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_client_is_private_printed_and_kept() {
    let keys = temp_keys("client");
    let served = serve_tls(&keys, &["--local-issuer"]);
    let line = served
        .banner
        .lines()
        .find(|l| l.starts_with("local issuer client: id "))
        .unwrap_or_else(|| panic!("{}", served.banner))
        .to_owned();
    assert!(line.contains("made now"), "{line}");
    let words: Vec<&str> = line.split_whitespace().collect();
    let (id, secret) = (words[4].to_owned(), words[6].to_owned());
    let file = keys.join("local-client.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let stored: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(stored["clientId"], id.as_str());
    assert_eq!(stored["clientSecret"], secret.as_str());
    let tls = connector(&keys.join("ca.pem"));
    let port = served.port();
    let grant = |client: String, secret: String| {
        let tls = tls.clone();
        async move {
            exchange(
                Some(&tls),
                port,
                &format!(
                    "POST /{TENANT}/oauth2/v2.0/token HTTP/1.1\r\nContent-Type: \
                     application/x-www-form-urlencoded\r\n\r\ngrant_type=client_credentials&\
                     client_id={client}&client_secret={secret}&\
                     scope=https%3A%2F%2Fstorage.azure.com%2F.default"
                ),
            )
            .await
        }
    };
    let stranger = grant("random-stranger".into(), "x".into()).await;
    assert_eq!(stranger.status, 401, "{}", stranger.body);
    assert_eq!(stranger.json()["error"], "invalid_client");
    let wrong = grant(id.clone(), "made-up".into()).await;
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    let ok = grant(id.clone(), secret.clone()).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    let token = ok.json()["access_token"].as_str().unwrap().to_owned();
    let create = exchange(
        Some(&tls),
        port,
        &format!(
            "POST /devstoreaccount1/Tables HTTP/1.1\r\nAuthorization: Bearer {token}\r\n\
             x-ms-version: 2019-02-02\r\nContent-Type: application/json\r\n\
             Accept: application/json;odata=nometadata\r\n\r\n{{\"TableName\":\"gen\"}}"
        ),
    )
    .await;
    assert_eq!(create.status, 201, "{}", create.body);
    drop(served);
    let again = serve_tls(&keys, &["--local-issuer"]);
    assert!(
        again
            .banner
            .contains(&format!("local issuer client: id {id} secret {secret} ")),
        "{}",
        again.banner
    );
    assert!(!again.banner.contains("made now, kept"), "{}", again.banner);
    drop(again);
    let _ = std::fs::remove_dir_all(&keys);
}

/// Keys, the client file and the keys directory that others may read or write are refused,
/// as ssh refuses such keys, with the `chmod` that mends them.
#[cfg(unix)]
#[test]
fn keys_open_to_others_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let keys = temp_keys("perms");
    drop(serve_tls(&keys, &["--local-issuer"]));
    let chmod = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    for (file, mode, fix) in [
        ("signing-key.pem", 0o644, "chmod 600"),
        ("local-client.json", 0o640, "chmod 600"),
        ("ca-key.pem", 0o604, "chmod 600"),
        ("server-key.pem", 0o660, "chmod 600"),
    ] {
        let path = keys.join(file);
        chmod(&path, mode);
        let (code, err) = serve_refused(
            &["--tls", "self-signed", "--local-issuer", "--keys"],
            &[keys.as_os_str()],
        );
        assert_eq!(code, Some(2), "{file}: {err}");
        assert!(err.contains("too open"), "{file}: {err}");
        assert!(err.contains(fix) && err.contains(file), "{file}: {err}");
        chmod(&path, 0o600);
    }
    for mode in [0o777, 0o770, 0o755] {
        chmod(&keys, mode);
        let (code, err) = serve_refused(
            &["--tls", "self-signed", "--local-issuer", "--keys"],
            &[keys.as_os_str()],
        );
        assert_eq!(code, Some(2), "{mode:o}: {err}");
        assert!(err.contains("chmod 700"), "{mode:o}: {err}");
    }
    chmod(&keys, 0o700);
    // `tableq token` refuses an open signing key too.
    chmod(&keys.join("signing-key.pem"), 0o644);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args(["token", "--role", "reader", "--keys"])
        .arg(&keys)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("too open"));
    let _ = std::fs::remove_dir_all(&keys);
}

/// The port opens only once the CA, the signing key and the client exist: a client that
/// connects as soon as the port answers (a test harness, `tableq token` in a script) finds
/// them.
#[test]
fn the_port_opens_only_when_the_keys_exist() {
    let keys = temp_keys("ready");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tableq"))
        .args([
            "serve",
            "--in-memory",
            "--tls",
            "self-signed",
            "--local-issuer",
        ])
        .args(["--port", &port.to_string(), "--keys"])
        .arg(&keys)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let connected = loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break true;
        }
        if started.elapsed() > std::time::Duration::from_secs(60)
            || child.try_wait().unwrap().is_some()
        {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let present: Vec<bool> = [
        "ca.pem",
        "server-key.pem",
        "signing-key.pem",
        "local-client.json",
    ]
    .iter()
    .map(|f| keys.join(f).is_file())
    .collect();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&keys);
    assert!(connected, "the server never opened port {port}");
    assert_eq!(
        present, [true; 4],
        "the port opened before the keys existed"
    );
}

/// `--trust-issuer` trusts one tenant over HTTPS: plain HTTP (but for loopback), a JWKS file
/// that names no issuer, and a multi-tenant issuer are refused at start.
#[test]
fn trusted_issuers_must_be_https_and_pinned_to_a_tenant() {
    let keys = temp_keys("trust");
    let jwks = LocalIssuer::open(&keys.join("other")).unwrap().jwks();
    let write = |name: &str, issuer: Option<&str>| {
        let mut doc = jwks.clone();
        if let Some(issuer) = issuer {
            doc["issuer"] = serde_json::json!(issuer);
        }
        let path = keys.join(name);
        std::fs::write(&path, doc.to_string()).unwrap();
        path
    };
    let cases: Vec<(std::ffi::OsString, &str)> = vec![
        (
            "http://login.example.com/tenant/v2.0".into(),
            "https:// only",
        ),
        (write("no-issuer.json", None).into(), "names no \"issuer\""),
        (
            write(
                "any-tenant.json",
                Some("https://login.microsoftonline.com/{tenantid}/v2.0"),
            )
            .into(),
            "any tenant",
        ),
        (
            write(
                "common.json",
                Some("https://login.microsoftonline.com/common/v2.0"),
            )
            .into(),
            "multi-tenant",
        ),
    ];
    for (value, expected) in cases {
        let (code, err) = serve_refused(
            &["--tls", "self-signed", "--trust-issuer"],
            &[value.as_os_str(), "--keys".as_ref(), keys.as_os_str()],
        );
        assert_eq!(code, Some(2), "{value:?}: {err}");
        assert!(err.contains(expected), "{value:?}: {err}");
    }
    // One tenant's issuer in a file is trusted.
    let pinned = write(
        "pinned.json",
        Some("https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0"),
    );
    let served = serve_tls(&keys, &["--trust-issuer", pinned.to_str().unwrap()]);
    assert!(
        served.banner.contains("from the issuers of"),
        "{}",
        served.banner
    );
    drop(served);
    let _ = std::fs::remove_dir_all(&keys);
}

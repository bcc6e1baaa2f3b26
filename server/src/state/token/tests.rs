//! Token checks against tokens made here: the local issuer's, and ones signed by another
//! key, with other algorithms, audiences, issuers and lifetimes.

use super::*;
use base64::Engine;
use std::path::PathBuf;
use std::sync::OnceLock;

const ORIGIN: &str = "https://127.0.0.1:10443";
const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";

/// One issuer for the whole module (RSA key generation is slow in debug builds), with the
/// text of its key file. Statics never drop, so the directory it was made in is removed as
/// soon as the key is read: a test run leaves no private key behind.
fn issuer_and_key() -> &'static (LocalIssuer, Vec<u8>) {
    static ISSUER: OnceLock<(LocalIssuer, Vec<u8>)> = OnceLock::new();
    ISSUER.get_or_init(|| fresh_issuer(|issuer| std::fs::read(issuer.key_file()).unwrap()))
}

/// A new issuer, with what `keep` takes from its files before their directory is removed.
fn fresh_issuer<T>(keep: impl FnOnce(&LocalIssuer) -> T) -> (LocalIssuer, T) {
    let scratch = tempfile::tempdir().unwrap();
    // The issuer makes its own directory, 0700 (it refuses one others may read).
    let issuer = LocalIssuer::open(&scratch.path().join("keys")).unwrap();
    let kept = keep(&issuer);
    (issuer, kept)
}

fn issuer() -> &'static LocalIssuer {
    &issuer_and_key().0
}

/// Another key, with the text of its JWKS (under another issuer's name).
fn stranger() -> &'static (LocalIssuer, String) {
    static STRANGER: OnceLock<(LocalIssuer, String)> = OnceLock::new();
    STRANGER.get_or_init(|| {
        fresh_issuer(|issuer| {
            let mut jwks = issuer.jwks();
            jwks["issuer"] = serde_json::json!("https://idp.example/tenant/");
            jwks.to_string()
        })
    })
}

/// The stranger's JWKS as a file, in a directory removed when the guard drops.
fn stranger_jwks_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, &stranger().1).unwrap();
    (dir, path)
}

fn request(role: Option<Role>) -> TokenRequest {
    TokenRequest {
        origin: ORIGIN.into(),
        tenant: TENANT.into(),
        principal: "app-1".into(),
        role,
        audience: STORAGE_AUDIENCE.into(),
        lifetime_seconds: 600,
    }
}

/// A bearer whose local issuer opens the module issuer's key file, written anew as the
/// issuer writes it (a 0700 directory, a 0600 file: it refuses anything more open).
fn local_bearer() -> Bearer {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("keys");
    let file = dir.join(issuer().key_file().file_name().unwrap());
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(&file, &issuer_and_key().1).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    Bearer {
        local: Some(LocalIssuer::open(&dir).unwrap()),
        ..Bearer::default()
    }
}

fn verify(bearer: &Bearer, token: &str) -> Result<Principal, TokenError> {
    bearer.verify(token, "devstoreaccount1", &[ORIGIN.to_owned()])
}

/// A token with `claims` signed by `key` under `header`.
fn forged(header: serde_json::Value, claims: serde_json::Value, sign: bool) -> String {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let head = b64.encode(header.to_string());
    let body = b64.encode(claims.to_string());
    if !sign {
        return format!("{head}.{body}.");
    }
    let key = jsonwebtoken::EncodingKey::from_secret(b"a shared secret");
    let h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    jsonwebtoken::encode(&h, &claims, &key).unwrap()
}

fn claims(now: u64) -> serde_json::Value {
    serde_json::json!({
        "aud": STORAGE_AUDIENCE, "iss": format!("{ORIGIN}/{TENANT}/v2.0"),
        "exp": now + 600, "nbf": now, "tid": TENANT, "oid": "app-1",
    })
}

#[test]
fn the_local_issuers_tokens_verify_and_carry_their_role() {
    let bearer = local_bearer();
    let token = issuer().issue(&request(Some(Role::Reader))).unwrap();
    let principal = verify(&bearer, &token).unwrap();
    assert_eq!(principal.id, "app-1");
    assert_eq!(principal.tenant, TENANT);
    assert_eq!(
        bearer.role(&principal, "devstoreaccount1", Some("t")),
        Some(Role::Reader)
    );
    // The key is kept: a second open reads the same key.
    assert_eq!(local_bearer().local.unwrap().key_id(), issuer().key_id());
    // Audiences: storage's with and without the slash, and the account's endpoints.
    for aud in [
        "https://storage.azure.com/",
        "https://devstoreaccount1.table.core.windows.net",
        "https://127.0.0.1:10443/devstoreaccount1",
    ] {
        let token = issuer()
            .issue(&TokenRequest {
                audience: aud.into(),
                ..request(None)
            })
            .unwrap();
        verify(&bearer, &token).unwrap_or_else(|e| panic!("{aud}: {e}"));
    }
}

#[test]
fn bad_tokens_are_refused_with_their_reason() {
    let bearer = local_bearer();
    let issue = |r: TokenRequest| issuer().issue(&r).unwrap();
    let wrong_aud = issue(TokenRequest {
        audience: "https://vault.azure.net".into(),
        ..request(None)
    });
    assert!(matches!(
        verify(&bearer, &wrong_aud),
        Err(TokenError::Audience(_))
    ));
    let other_account = bearer.verify(
        &issue(TokenRequest {
            audience: "https://other.table.core.windows.net".into(),
            ..request(None)
        }),
        "devstoreaccount1",
        &[ORIGIN.to_owned()],
    );
    assert!(matches!(other_account, Err(TokenError::Audience(_))));
    let wrong_iss = issue(TokenRequest {
        origin: "https://login.microsoftonline.com".into(),
        ..request(None)
    });
    let refused = verify(&bearer, &wrong_iss).unwrap_err();
    assert!(matches!(refused, TokenError::Issuer(..)));
    // The refusal says which issuer the server trusts for that key.
    assert!(
        refused
            .to_string()
            .contains(&format!("the local issuer {ORIGIN}/{TENANT}/v2.0")),
        "{refused}"
    );
    // Expired beyond the five minutes of skew; within them it still passes.
    let now = jsonwebtoken::get_current_timestamp();
    let stale = |seconds: u64| {
        let mut c = claims(now);
        c["exp"] = serde_json::json!(now - seconds);
        c["nbf"] = serde_json::json!(now - seconds - 600);
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        h.kid = Some(issuer().key_id().to_owned());
        jsonwebtoken::encode(&h, &c, &issuer().encoding).unwrap()
    };
    assert!(matches!(
        verify(&bearer, &stale(400)),
        Err(TokenError::Expired(_))
    ));
    verify(&bearer, &stale(200)).unwrap();
    let mut early = claims(now);
    early["nbf"] = serde_json::json!(now + 3600);
    early["exp"] = serde_json::json!(now + 7200);
    let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    h.kid = Some(issuer().key_id().to_owned());
    let early = jsonwebtoken::encode(&h, &early, &issuer().encoding).unwrap();
    assert!(matches!(
        verify(&bearer, &early),
        Err(TokenError::NotYetValid(_))
    ));
    // No tenant.
    let mut no_tid = claims(now);
    no_tid.as_object_mut().unwrap().remove("tid");
    let no_tid = jsonwebtoken::encode(&h, &no_tid, &issuer().encoding).unwrap();
    assert_eq!(
        verify(&bearer, &no_tid),
        Err(TokenError::MissingClaim("tid"))
    );
    // alg none, HS256, garbage.
    let none = forged(
        serde_json::json!({"alg": "none", "typ": "JWT"}),
        claims(now),
        false,
    );
    assert!(matches!(verify(&bearer, &none), Err(TokenError::Algorithm(a)) if a == "none"));
    let hs = forged(serde_json::json!({}), claims(now), true);
    assert!(matches!(
        verify(&bearer, &hs),
        Err(TokenError::Algorithm(_))
    ));
    assert!(matches!(
        verify(&bearer, "not.a.jwt"),
        Err(TokenError::Malformed(_))
    ));
    assert!(matches!(verify(&bearer, ""), Err(TokenError::Malformed(_))));
    // Signed by a key nobody trusts (same kid, to get past key selection).
    let (stranger, _) = stranger();
    let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    h.kid = Some(issuer().key_id().to_owned());
    let foreign = jsonwebtoken::encode(&h, &claims(now), &stranger.encoding).unwrap();
    assert!(matches!(
        verify(&bearer, &foreign),
        Err(TokenError::Signature(_))
    ));
    // A token with its payload changed after signing.
    let good = issue(request(Some(Role::Reader)));
    let mut parts: Vec<&str> = good.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut c = claims(now);
    c["roles"] = serde_json::json!(["Storage Table Data Contributor"]);
    let tampered_body = b64.encode(c.to_string());
    parts[1] = &tampered_body;
    let tampered = parts.join(".");
    assert!(matches!(
        verify(&bearer, &tampered),
        Err(TokenError::Signature(_))
    ));
}

#[test]
fn a_jwks_file_trusts_another_issuer_offline() {
    let (stranger, _) = stranger();
    let (_dir, jwks) = stranger_jwks_file();
    let bearer = Bearer {
        trusted: vec![TrustedKeys::from_file(&jwks).unwrap()],
        ..Bearer::default()
    };
    let now = jsonwebtoken::get_current_timestamp();
    let mut c = claims(now);
    c["iss"] = serde_json::json!("https://idp.example/tenant/");
    c["roles"] = serde_json::json!(["Storage Table Data Contributor"]);
    let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    h.kid = Some(stranger.key_id().to_owned());
    let token = jsonwebtoken::encode(&h, &c, &stranger.encoding).unwrap();
    let principal = verify(&bearer, &token).unwrap();
    assert_eq!(
        bearer.role(&principal, "devstoreaccount1", None),
        Some(Role::Contributor)
    );
    // Its issuer only.
    c["iss"] = serde_json::json!("https://elsewhere.example/");
    let token = jsonwebtoken::encode(&h, &c, &stranger.encoding).unwrap();
    assert!(matches!(
        verify(&bearer, &token),
        Err(TokenError::Issuer(..))
    ));
    // The local issuer's tokens are not trusted by this server.
    let local = issuer().issue(&request(Some(Role::Contributor))).unwrap();
    assert!(matches!(
        verify(&bearer, &local),
        Err(TokenError::Signature(_))
    ));
    // An assignment overrides the claim.
    let assigned = Bearer {
        assignments: RoleAssignments::from_json(
            r#"[{"principalId": "app-1", "role": "Storage Table Data Reader"}]"#,
        )
        .unwrap(),
        ..Bearer::default()
    };
    assert_eq!(
        assigned.role(&principal, "devstoreaccount1", None),
        Some(Role::Reader)
    );
    // Files that are not JWKS.
    let dir = jwks.parent().unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"keys": []}"#).unwrap();
    assert!(TrustedKeys::from_file(&bad).is_err());
    assert!(TrustedKeys::from_file(&dir.join("missing.json")).is_err());
}

#[test]
fn issuer_routes_never_name_table_resources() {
    use issuer::{Route, route};
    assert_eq!(
        route("/t/v2.0/.well-known/openid-configuration"),
        Some(("t", Route::Discovery))
    );
    assert_eq!(
        route("/devstoreaccount1/oauth2/v2.0/token"),
        Some(("devstoreaccount1", Route::Token))
    );
    assert_eq!(route("/x/discovery/v2.0/keys"), Some(("x", Route::Keys)));
    for table_path in [
        "/devstoreaccount1/Tables",
        "/devstoreaccount1/oauth2",
        "/oauth2/v2.0/token",
        "//oauth2/v2.0/token",
    ] {
        assert_eq!(route(table_path), None, "{table_path}");
    }
}

#[test]
fn entra_issuers_accept_their_storage_tokens_for_the_tokens_own_tenant() {
    let jwks = issuer().jwks().to_string();
    // Entra ID signs every tenant's tokens with the same keys: an issuer that stands for
    // any tenant would let every tenant's applications in, so it is refused.
    for multi in [
        "https://login.microsoftonline.com/{tenantid}/v2.0",
        "https://login.microsoftonline.com/common/v2.0",
        "https://login.microsoftonline.com/organizations/v2.0",
        "https://sts.windows.net/common/",
    ] {
        let e = TrustedKeys::from_jwks(Some(multi.into()), &jwks, "x").unwrap_err();
        assert!(e.contains("tenant"), "{multi}: {e}");
    }
    // A JWKS that names no issuer is refused too.
    let e = TrustedKeys::from_jwks(None, &jwks, "x").unwrap_err();
    assert!(e.contains("names no"), "{e}");
    let one = TrustedKeys::from_jwks(
        Some("https://login.microsoftonline.com/t1/v2.0".into()),
        &jwks,
        "x",
    )
    .unwrap();
    assert!(one.accepts_issuer("https://sts.windows.net/t1/", "t1"));
    assert!(!one.accepts_issuer("https://sts.windows.net/t2/", "t2"));
    let other = TrustedKeys::from_jwks(Some("https://idp.example/".into()), &jwks, "x").unwrap();
    assert!(!other.accepts_issuer("https://sts.windows.net/t1/", "t1"));
    assert!(TrustedKeys::from_jwks(None, "{}", "x").is_err());
}

/// `"default": "none"` holds for every issuer: a foreign token's `roles` claim grants
/// nothing to a principal the file does not name; an assignment decides for those it names.
#[test]
fn the_role_file_applies_to_every_issuer() {
    let (stranger, _) = stranger();
    let (_dir, jwks) = stranger_jwks_file();
    let none = RoleAssignments::from_json(
        r#"{"default": "none", "assignments": [
            {"principalId": "reader", "role": "Storage Table Data Reader"}]}"#,
    )
    .unwrap();
    let bearer = Bearer {
        trusted: vec![TrustedKeys::from_file(&jwks).unwrap()],
        assignments: none,
        ..Bearer::default()
    };
    let now = jsonwebtoken::get_current_timestamp();
    let token = |principal: &str| {
        let mut c = claims(now);
        c["iss"] = serde_json::json!("https://idp.example/tenant/");
        c["oid"] = serde_json::json!(principal);
        c["roles"] = serde_json::json!(["Storage Table Data Contributor"]);
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        h.kid = Some(stranger.key_id().to_owned());
        jsonwebtoken::encode(&h, &c, &stranger.encoding).unwrap()
    };
    let foreign = verify(&bearer, &token("app-9")).unwrap();
    assert_eq!(foreign.claimed, vec![Role::Contributor]);
    assert_eq!(bearer.role(&foreign, "devstoreaccount1", Some("t")), None);
    let reader = verify(&bearer, &token("reader")).unwrap();
    assert_eq!(
        bearer.role(&reader, "devstoreaccount1", Some("t")),
        Some(Role::Reader)
    );
    // A default role is every unnamed principal's; without a default the claim decides.
    let default_reader =
        RoleAssignments::from_json(r#"{"default": "reader", "assignments": []}"#).unwrap();
    assert_eq!(
        default_reader.decide("x", &[Role::Contributor], "a", None),
        Some(Role::Reader)
    );
    let unset = RoleAssignments::from_json("[]").unwrap();
    assert_eq!(
        unset.decide("x", &[Role::Reader], "a", None),
        Some(Role::Reader)
    );
    assert_eq!(unset.decide("x", &[], "a", None), None);
}

/// Only registered clients with their own secret match; a secret is registered once.
#[test]
fn client_secrets_match_exactly() {
    let file = RoleAssignments::from_json(
        r#"[{"principalId": "a", "clientSecret": "sec-a", "role": "reader"},
            {"principalId": "a", "clientSecret": "sec-a", "role": "contributor",
             "scope": "acct/t"},
            {"principalId": "b", "role": "reader"}]"#,
    )
    .unwrap();
    assert!(file.client_matches("a", "sec-a"));
    for (client, secret) in [
        ("a", "sec-b"),
        ("a", "sec-"),
        ("a", ""),
        ("b", ""),
        ("c", "sec-a"),
    ] {
        assert!(!file.client_matches(client, secret), "{client}/{secret}");
    }
    assert_eq!(file.clients().collect::<Vec<_>>(), vec![("a", "sec-a")]);
    for bad in [
        r#"[{"principalId": "a", "clientSecret": "", "role": "reader"}]"#,
        r#"[{"principalId": "a", "clientSecret": "x", "role": "reader"},
            {"principalId": "a", "clientSecret": "y", "role": "reader"}]"#,
    ] {
        assert!(RoleAssignments::from_json(bad).is_err(), "{bad}");
    }
    let generated = RoleAssignments::default().with_client("g", "s", Role::Contributor);
    assert!(generated.client_matches("g", "s"));
    assert_eq!(generated.issued_role("g"), Some(Role::Contributor));
}

/// The generated client is made once, 0600, and read back the same; a damaged or open
/// file is an error, never silently replaced.
#[test]
fn the_generated_client_is_kept() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("tokens");
    let first = GeneratedClient::open(&dir).unwrap();
    assert!(first.made_now);
    assert!(uuid::Uuid::parse_str(&first.id).is_ok());
    assert!(first.secret.len() >= 40);
    assert!(!format!("{first:?}").contains(&first.secret));
    let again = GeneratedClient::open(&dir).unwrap();
    assert!(!again.made_now);
    assert_eq!(
        (again.id.as_str(), again.secret.as_str()),
        (first.id.as_str(), first.secret.as_str())
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(CLIENT_FILE);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = GeneratedClient::open(&dir).unwrap_err().to_string();
        assert!(e.contains("too open"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "not json").unwrap();
        assert!(GeneratedClient::open(&dir).is_err());
    }
}

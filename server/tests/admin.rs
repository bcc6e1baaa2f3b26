//! The administration operations over raw HTTP (issue 16): service properties (XML, a Set
//! replaces only what it names, the service's error codes), service stats on the secondary
//! endpoint and reads there, table ACLs, and stored access policies resolved on every
//! request — with the exact status, error code and headers.

use crate::server_support;

use serde_json::json;
use server_support::{MINIMAL, Reply, TestServer};
use tableq_client::sign::{AccountKey, SasBuilder};

const PROPERTIES: &str = "?restype=service&comp=properties";

fn full_properties() -> String {
    "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties>\
     <Logging><Version>1.0</Version><Delete>true</Delete><Read>true</Read><Write>false</Write>\
     <RetentionPolicy><Enabled>true</Enabled><Days>3</Days></RetentionPolicy></Logging>\
     <HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs>\
     <RetentionPolicy><Enabled>true</Enabled><Days>10</Days></RetentionPolicy></HourMetrics>\
     <MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled>\
     <RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics>\
     <Cors><CorsRule><AllowedOrigins>http://app.example</AllowedOrigins>\
     <AllowedMethods>GET,PUT</AllowedMethods><MaxAgeInSeconds>60</MaxAgeInSeconds>\
     <ExposedHeaders>x-ms-*</ExposedHeaders><AllowedHeaders>x-ms-*,content-type</AllowedHeaders>\
     </CorsRule></Cors></StorageServiceProperties>"
        .to_owned()
}

async fn get_properties(s: &TestServer) -> Reply {
    let r = s
        .send("GET", PROPERTIES, &[("Accept", "application/xml")], None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("content-type"), Some("application/xml"));
    r
}

async fn set_properties(s: &TestServer, body: &str) -> Reply {
    s.send(
        "PUT",
        PROPERTIES,
        &[("Content-Type", "application/xml")],
        Some(body),
    )
    .await
}

#[tokio::test]
async fn service_properties_default_set_and_partial_set() {
    let s = TestServer::start().await;
    let r = get_properties(&s).await;
    assert!(r.body.starts_with("<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Logging><Version>1.0</Version><Delete>false</Delete>"), "{}", r.body);
    assert!(!r.body.contains("<CorsRule>"), "{}", r.body);

    let r = set_properties(&s, &full_properties()).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(r.body.is_empty());
    assert!(r.header("x-ms-request-id").is_some());
    let r = get_properties(&s).await;
    for part in [
        "<Delete>true</Delete><Read>true</Read><Write>false</Write><RetentionPolicy><Enabled>true</Enabled><Days>3</Days></RetentionPolicy>",
        "<HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs>",
        "<AllowedOrigins>http://app.example</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods><MaxAgeInSeconds>60</MaxAgeInSeconds>",
    ] {
        assert!(r.body.contains(part), "{part} in {}", r.body);
    }

    // A Set that names only Cors keeps Logging and the metrics.
    let r = set_properties(
        &s,
        "<StorageServiceProperties><Cors/></StorageServiceProperties>",
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let r = get_properties(&s).await;
    assert!(!r.body.contains("<CorsRule>"), "{}", r.body);
    assert!(r.body.contains("<Days>3</Days>"), "{}", r.body);

    // Also at the account path without the trailing `/`.
    let r = s
        .send_url(
            "GET",
            &format!("{}/devstoreaccount1{PROPERTIES}", s.origin),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn service_properties_errors_change_nothing() {
    let s = TestServer::start().await;
    assert_eq!(set_properties(&s, &full_properties()).await.status, 202);
    let before = get_properties(&s).await.body;
    let rule = |methods: &str| {
        format!(
            "<CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>{methods}</AllowedMethods>\
             <MaxAgeInSeconds>1</MaxAgeInSeconds><ExposedHeaders/><AllowedHeaders/></CorsRule>"
        )
    };
    let cases = [
        (
            "<StorageServiceProperties><Cors>",
            400,
            "InvalidXmlDocument",
        ),
        ("this is not xml", 400, "InvalidXmlDocument"),
        (
            &format!(
                "<StorageServiceProperties><Cors>{}</Cors></StorageServiceProperties>",
                rule("GET").repeat(6)
            ),
            400,
            "InvalidXmlDocument",
        ),
        (
            &format!(
                "<StorageServiceProperties><Cors>{}</Cors></StorageServiceProperties>",
                rule("GET,FETCH")
            ),
            400,
            "InvalidXmlNodeValue",
        ),
        (
            "<StorageServiceProperties><Logging><Version>1.0</Version><Delete>false</Delete>\
             <Read>false</Read><Write>false</Write><RetentionPolicy><Enabled>true</Enabled>\
             <Days>-1</Days></RetentionPolicy></Logging></StorageServiceProperties>",
            400,
            "InvalidXmlNodeValue",
        ),
    ];
    for (body, status, code) in cases {
        let r = set_properties(&s, body).await;
        r.expect_error(status, code);
    }
    assert_eq!(get_properties(&s).await.body, before);
    // Only GET and PUT.
    let r = s.send("DELETE", PROPERTIES, &[], None).await;
    r.expect_error(405, "MethodNotAllowed");
}

#[tokio::test]
async fn stats_on_the_secondary_and_reads_only_there() {
    let s = TestServer::start().await;
    s.create_table("Seen").await;
    s.insert("Seen", &json!({"PartitionKey": "p", "RowKey": "r", "A": 1}))
        .await;
    let secondary = format!("{}/devstoreaccount1-secondary", s.origin);

    let r = s
        .send_url(
            "GET",
            &format!("{secondary}/?restype=service&comp=stats"),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("content-type"), Some("application/xml"));
    assert!(
        r.body.starts_with("<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>"),
        "{}",
        r.body
    );
    let sync = r
        .body
        .split("<LastSyncTime>")
        .nth(1)
        .and_then(|t| t.split('<').next())
        .unwrap();
    // An RFC 1123 date, e.g. `Wed, 25 Nov 2026 12:00:00 GMT`.
    assert!(
        sync.ends_with(" GMT") && sync.len() == 29 && &sync[3..5] == ", ",
        "{sync}"
    );

    // What the Python SDK sends for a path-style endpoint: `/{acct}-secondary/{acct}/…`,
    // signed over the primary path.
    let signed = server_support::dev_signer().headers(
        "GET",
        "/devstoreaccount1/?restype=service&comp=stats",
        None,
    );
    let headers: Vec<(&str, &str)> = signed.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = s
        .exchange(
            "GET",
            &format!("{secondary}/devstoreaccount1/?restype=service&comp=stats"),
            &headers,
            None,
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("<Status>live</Status>"), "{}", r.body);
    // …and `/{acct}-secondary/…` signed over the primary path (the JS SDK's order of
    // signing and rerouting).
    let r = s
        .exchange(
            "GET",
            &format!("{secondary}/?restype=service&comp=stats"),
            &headers,
            None,
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // A signature over another path is still refused.
    let r = s
        .exchange(
            "GET",
            &format!("{secondary}/Tables?restype=service&comp=stats"),
            &headers,
            None,
            None,
        )
        .await;
    r.expect_error(403, "AuthenticationFailed");

    // On the primary: 400 InvalidQueryParameterValue.
    let r = s
        .send("GET", "?restype=service&comp=stats", &[], None)
        .await;
    r.expect_error(400, "InvalidQueryParameterValue");

    // The secondary serves reads of the account's data, never writes.
    let r = s
        .send_url(
            "GET",
            &format!("{secondary}/Seen()"),
            &[("Accept", MINIMAL)],
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["value"][0]["A"], 1);
    let r = s
        .send_url(
            "POST",
            &format!("{secondary}/Seen"),
            &[("Content-Type", "application/json")],
            Some(r#"{"PartitionKey":"p","RowKey":"s"}"#),
        )
        .await;
    r.expect_error(403, "AuthorizationFailure");
}

fn acl_body(ids: &[(&str, &str, &str)]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers>");
    for (id, permission, expiry) in ids {
        out.push_str(&format!(
            "<SignedIdentifier><Id>{id}</Id><AccessPolicy><Expiry>{expiry}</Expiry>\
             <Permission>{permission}</Permission></AccessPolicy></SignedIdentifier>"
        ));
    }
    out.push_str("</SignedIdentifiers>");
    out
}

async fn set_acl(s: &TestServer, table: &str, body: &str) -> Reply {
    s.send(
        "PUT",
        &format!("{table}?comp=acl"),
        &[("Content-Type", "application/xml")],
        Some(body),
    )
    .await
}

async fn get_acl(s: &TestServer, table: &str) -> Reply {
    s.send("GET", &format!("{table}?comp=acl"), &[], None).await
}

#[tokio::test]
async fn table_acls_round_trip_limits_and_go_with_the_table() {
    let s = TestServer::start().await;
    s.create_table("Guarded").await;
    let r = get_acl(&s, "Guarded").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("content-type"), Some("application/xml"));
    assert!(!r.body.contains("<SignedIdentifier>"), "{}", r.body);

    let body = acl_body(&[
        ("readers", "r", "2030-01-01T00:00:00Z"),
        (&"x".repeat(64), "raud", "2031-05-06T07:08:09.5Z"),
    ]);
    let r = set_acl(&s, "guarded", &body).await;
    assert_eq!(r.status, 204, "{}", r.body);
    let r = get_acl(&s, "Guarded").await;
    assert!(
        r.body.contains(
            "<SignedIdentifier><Id>readers</Id><AccessPolicy><Expiry>2030-01-01T00:00:00.0000000Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier>"
        ),
        "{}",
        r.body
    );
    assert!(
        r.body
            .contains("<Expiry>2031-05-06T07:08:09.5000000Z</Expiry>")
    );

    let six: Vec<(String, &str, &str)> = (0..6)
        .map(|i| (format!("p{i}"), "r", "2030-01-01T00:00:00Z"))
        .collect();
    let six: Vec<(&str, &str, &str)> = six.iter().map(|(a, b, c)| (a.as_str(), *b, *c)).collect();
    set_acl(&s, "Guarded", &acl_body(&six))
        .await
        .expect_error(400, "InvalidXmlDocument");
    set_acl(
        &s,
        "Guarded",
        &acl_body(&[(&"x".repeat(65), "r", "2030-01-01T00:00:00Z")]),
    )
    .await
    .expect_error(400, "InvalidXmlNodeValue");
    set_acl(&s, "Guarded", "<SignedIdentifiers>")
        .await
        .expect_error(400, "InvalidXmlDocument");
    set_acl(&s, "NoSuch", &body)
        .await
        .expect_error(404, "ResourceNotFound");
    get_acl(&s, "NoSuch")
        .await
        .expect_error(404, "ResourceNotFound");
    assert!(get_acl(&s, "Guarded").await.body.contains("readers"));

    // Gone with its table.
    let r = s.send("DELETE", "Tables('Guarded')", &[], None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    s.create_table("Guarded").await;
    assert!(
        !get_acl(&s, "Guarded")
            .await
            .body
            .contains("<SignedIdentifier>")
    );
}

fn sas_url(s: &TestServer, path: &str, token: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{}{sep}{token}", s.url(path))
}

async fn with_sas(
    s: &TestServer,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> Reply {
    let headers: &[(&str, &str)] = if body.is_some() {
        &[("Content-Type", "application/json"), ("Accept", MINIMAL)]
    } else {
        &[("Accept", MINIMAL)]
    };
    s.exchange(method, &sas_url(s, path, token), headers, body, None)
        .await
}

fn hours_from_now(h: i64) -> String {
    let now = tableq_model::DateTime::now();
    tableq_model::DateTime::from_ticks(now.ticks() + h * 3600 * 10_000_000)
        .expect("in range")
        .to_string()
}

#[tokio::test]
async fn stored_policies_take_effect_at_once() {
    let s = TestServer::start().await;
    s.create_table("Policed").await;
    s.insert("Policed", &json!({"PartitionKey": "p", "RowKey": "r"}))
        .await;
    let key = AccountKey::development();
    let later = hours_from_now(1);
    let token = SasBuilder::table("policed").policy("team").sign(&key);

    // No such policy yet: 403 AuthenticationFailed.
    with_sas(&s, "GET", "Policed()", &token, None)
        .await
        .expect_error(403, "AuthenticationFailed");

    assert_eq!(
        set_acl(&s, "Policed", &acl_body(&[("team", "r", &later)]))
            .await
            .status,
        204
    );
    let r = with_sas(&s, "GET", "Policed()", &token, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let insert = r#"{"PartitionKey":"p","RowKey":"new"}"#;
    with_sas(&s, "POST", "Policed", &token, Some(insert))
        .await
        .expect_error(403, "AuthorizationPermissionMismatch");

    // Changing the policy changes every token that names it.
    set_acl(&s, "Policed", &acl_body(&[("team", "ra", &later)])).await;
    let r = with_sas(&s, "POST", "Policed", &token, Some(insert)).await;
    assert_eq!(r.status, 201, "{}", r.body);

    // An expired policy, then a removed one, revoke it.
    set_acl(
        &s,
        "Policed",
        &acl_body(&[("team", "ra", &hours_from_now(-1))]),
    )
    .await;
    with_sas(&s, "GET", "Policed()", &token, None)
        .await
        .expect_error(403, "AuthenticationFailed");
    set_acl(&s, "Policed", &acl_body(&[])).await;
    with_sas(&s, "GET", "Policed()", &token, None)
        .await
        .expect_error(403, "AuthenticationFailed");

    // A field given both in the token and in the policy: 403.
    set_acl(&s, "Policed", &acl_body(&[("team", "r", &later)])).await;
    let both = SasBuilder::table("policed")
        .policy("team")
        .permissions("r")
        .sign(&key);
    with_sas(&s, "GET", "Policed()", &both, None)
        .await
        .expect_error(403, "AuthenticationFailed");
    // The token's own expiry with the policy's permissions is fine... when the policy
    // leaves the expiry out.
    let no_expiry = "<SignedIdentifiers><SignedIdentifier><Id>team</Id><AccessPolicy>\
                     <Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
    set_acl(&s, "Policed", no_expiry).await;
    let own_expiry = SasBuilder::table("policed")
        .policy("team")
        .expiry(&later)
        .sign(&key);
    let r = with_sas(&s, "GET", "Policed()", &own_expiry, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // No SAS reaches the ACL itself.
    let admin = SasBuilder::table("policed")
        .permissions("raud")
        .expiry(&later)
        .sign(&key);
    with_sas(&s, "GET", "Policed?comp=acl", &admin, None)
        .await
        .expect_error(403, "AuthorizationFailure");
}

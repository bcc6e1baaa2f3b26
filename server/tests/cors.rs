//! CORS over raw HTTP (issue 16): preflights need no authorization and are answered from
//! the account's stored rules (403 `CorsPreflightFailure` without a match); actual requests
//! with a matching `Origin` get `Access-Control-Allow-Origin`, `-Expose-Headers`,
//! `-Allow-Credentials` and `Vary: Origin`, errors included; requests without `Origin` get
//! none of them.

use crate::server_support;

use server_support::{MINIMAL, Reply, TestServer};

const RULES: &str = "<StorageServiceProperties><Cors>\
    <CorsRule><AllowedOrigins>http://app.example,http://other.example</AllowedOrigins>\
    <AllowedMethods>GET,PUT,MERGE</AllowedMethods><MaxAgeInSeconds>60</MaxAgeInSeconds>\
    <ExposedHeaders>x-ms-*,etag</ExposedHeaders><AllowedHeaders>x-ms-*,content-type</AllowedHeaders></CorsRule>\
    <CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods>\
    <MaxAgeInSeconds>5</MaxAgeInSeconds><ExposedHeaders></ExposedHeaders><AllowedHeaders></AllowedHeaders></CorsRule>\
    </Cors></StorageServiceProperties>";

async fn preflight(s: &TestServer, path: &str, headers: &[(&str, &str)]) -> Reply {
    s.send_unsigned("OPTIONS", path, headers, None).await
}

#[tokio::test]
async fn preflights_follow_the_stored_rules() {
    let s = TestServer::start().await;
    let ask = [
        ("Origin", "http://app.example"),
        ("Access-Control-Request-Method", "PUT"),
        (
            "Access-Control-Request-Headers",
            "x-ms-version, Content-Type",
        ),
    ];
    // No rules yet.
    preflight(&s, "Tables", &ask)
        .await
        .expect_error(403, "CorsPreflightFailure");

    let r = s
        .send(
            "PUT",
            "?restype=service&comp=properties",
            &[("Content-Type", "application/xml")],
            Some(RULES),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);

    // Any path, no credentials.
    for path in [
        "Tables",
        "t(PartitionKey='a',RowKey='b')",
        "$batch",
        "nosuch/x/y",
    ] {
        let r = preflight(&s, path, &ask).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some("http://app.example")
        );
        assert_eq!(r.header("access-control-allow-methods"), Some("PUT"));
        assert_eq!(
            r.header("access-control-allow-headers"),
            Some("x-ms-version,Content-Type")
        );
        assert_eq!(r.header("access-control-max-age"), Some("60"));
        assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
        assert!(r.header("x-ms-request-id").is_some());
    }
    // The `*` rule: any origin, GET, no extra headers.
    let r = preflight(
        &s,
        "Tables",
        &[
            ("Origin", "http://elsewhere.example"),
            ("Access-Control-Request-Method", "GET"),
        ],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(r.header("access-control-max-age"), Some("5"));
    assert_eq!(r.header("access-control-allow-credentials"), None);
    // No rule matches: a method, a header, a missing Origin.
    for headers in [
        vec![
            ("Origin", "http://elsewhere.example"),
            ("Access-Control-Request-Method", "PUT"),
        ],
        vec![
            ("Origin", "http://app.example"),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Headers", "x-custom"),
        ],
        vec![("Access-Control-Request-Method", "GET")],
        vec![("Origin", "http://app.example")],
    ] {
        let r = preflight(&s, "Tables", &headers).await;
        r.expect_error(403, "CorsPreflightFailure");
    }
    // An account that is not hosted is no different from no match.
    let r = s
        .exchange(
            "OPTIONS",
            &format!("{}/nosuchaccount/Tables", s.origin),
            &ask,
            None,
            None,
        )
        .await;
    r.expect_error(403, "CorsPreflightFailure");
}

#[tokio::test]
async fn actual_requests_get_the_headers_of_the_first_matching_rule() {
    let s = TestServer::start().await;
    let r = s
        .send(
            "PUT",
            "?restype=service&comp=properties",
            &[("Content-Type", "application/xml")],
            Some(RULES),
        )
        .await;
    assert_eq!(r.status, 202);
    s.create_table("Shown").await;

    // Without Origin: nothing.
    let r = s.get("Shown()").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), None);
    assert_eq!(r.header("vary"), None);

    let r = s
        .send(
            "GET",
            "Shown()",
            &[("Accept", MINIMAL), ("Origin", "http://app.example")],
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("http://app.example")
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(r.header("vary"), Some("Origin"));
    let exposed = r.header("access-control-expose-headers").unwrap();
    for name in ["x-ms-request-id", "x-ms-version"] {
        assert!(exposed.split(',').any(|h| h == name), "{name} in {exposed}");
    }
    assert!(!exposed.contains("content-type"), "{exposed}");

    // Errors carry them too (a browser page must be able to read the error).
    let r = s
        .send(
            "GET",
            "NoSuch()",
            &[("Accept", MINIMAL), ("Origin", "http://app.example")],
            None,
        )
        .await;
    r.expect_error(404, "TableNotFound");
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("http://app.example")
    );

    // The `*` rule: any origin, no credentials.
    let r = s
        .send(
            "GET",
            "Shown()",
            &[("Accept", MINIMAL), ("Origin", "http://elsewhere.example")],
            None,
        )
        .await;
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    assert_eq!(r.header("access-control-allow-credentials"), None);
    // No rule allows DELETE from there: served without CORS headers.
    let r = s
        .send(
            "DELETE",
            "Tables('Shown')",
            &[("Origin", "http://elsewhere.example")],
            None,
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(r.header("access-control-allow-origin"), None);

    // Removing the rules takes effect at once.
    let r = s
        .send(
            "PUT",
            "?restype=service&comp=properties",
            &[("Content-Type", "application/xml")],
            Some("<StorageServiceProperties><Cors/></StorageServiceProperties>"),
        )
        .await;
    assert_eq!(r.status, 202);
    let r = s
        .send(
            "GET",
            "Tables",
            &[("Accept", MINIMAL), ("Origin", "http://app.example")],
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), None);
}

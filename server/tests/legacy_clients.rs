//! The exact bytes of the clients tableq once refused (issue 27, item 1), sent raw so that
//! no client library normalises them: the legacy Rust `azure_data_tables` 0.21 crate (no
//! `Server` header → every call failed; a batch ended by `--batch_<id>` without `--`), the
//! legacy Node `azure-storage` 2.10.7 SDK (a `$batch` whose outer `Accept` is Atom), the
//! legacy Python `azure-cosmosdb-table` 1.0.6 / `azure-storage` 0.36 SDKs (batch request
//! lines without the account, LF line ends, `True`/`False` in service properties), the
//! third-party `azure-table-node` client (a table SAS with `sv=2013-08-15`), and hand-signed
//! REST (a signature over `/…/Tables` sent to `/…/Tables/`; a service SAS with `si=` and no
//! `tn`).
//!
//! Behaviours that touch storage (batches, service properties, stored access policies) run
//! on every store engine (`server_support/stores.rs`: in memory, durable, PostgreSQL where it
//! is installed).

use crate::server_support;
use crate::stores;

use server_support::sign_raw;
use stores::{RawReply, StoreServer, in_memory, on_every_store, request};
use tableq_client::sign::{AccountKey, SasBuilder};

const ACCOUNT: &str = "devstoreaccount1";

/// What every response must carry.
fn server_header() -> String {
    format!("tableq/{}", env!("CARGO_PKG_VERSION"))
}

/// Creates table `name` (signed, asserting success).
async fn create_table(s: &StoreServer, name: &str) {
    let body = format!(r#"{{"TableName":"{name}"}}"#);
    let r = s
        .raw(&sign_raw(&request(
            "POST",
            &format!("/{ACCOUNT}/Tables"),
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json;odata=nometadata"),
            ],
            &body,
        )))
        .await;
    assert_eq!(r.status, 201, "{}: create {name}: {}", s.store, r.body);
}

/// A signed GET with minimal metadata.
async fn get(s: &StoreServer, target: &str) -> RawReply {
    s.raw(&sign_raw(&request(
        "GET",
        target,
        &[("Accept", "application/json;odata=minimalmetadata")],
        "",
    )))
    .await
}

#[tokio::test]
async fn every_response_carries_the_server_header() {
    let s = in_memory().await;
    let want = server_header();
    create_table(&s, "Served").await;
    let batch_body = "--batch_e\r\nContent-Type: multipart/mixed; boundary=changeset_e\r\n\r\n\
                      --changeset_e\r\nContent-Type: application/http\r\n\
                      Content-Transfer-Encoding: binary\r\n\r\n\
                      POST http://127.0.0.1/devstoreaccount1/Served HTTP/1.1\r\n\
                      Content-Type: application/json\r\n\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}\r\n\
                      --changeset_e--\r\n--batch_e--\r\n";
    let cases = [
        // success, a query, an error, an unsigned request, a batch, the operator endpoints,
        // the explorer, a preflight (no CORS rules: 403), an XML operation.
        (
            "GET Tables",
            sign_raw(&request("GET", "/devstoreaccount1/Tables", &[], "")),
            200,
        ),
        (
            "missing entity",
            sign_raw(&request(
                "GET",
                "/devstoreaccount1/Served(PartitionKey='x',RowKey='y')",
                &[],
                "",
            )),
            404,
        ),
        (
            "unsigned",
            request("GET", "/devstoreaccount1/Tables", &[], ""),
            403,
        ),
        (
            "batch",
            sign_raw(&request(
                "POST",
                "/devstoreaccount1/$batch",
                &[("Content-Type", "multipart/mixed; boundary=batch_e")],
                batch_body,
            )),
            202,
        ),
        ("health", request("GET", "/health", &[], ""), 200),
        ("metrics", request("GET", "/metrics", &[], ""), 200),
        ("explorer", request("GET", "/_explorer/", &[], ""), 200),
        (
            "preflight",
            request(
                "OPTIONS",
                "/devstoreaccount1/Tables",
                &[
                    ("Origin", "http://example.com"),
                    ("Access-Control-Request-Method", "GET"),
                ],
                "",
            ),
            403,
        ),
        (
            "service properties",
            sign_raw(&request(
                "GET",
                "/devstoreaccount1/?restype=service&comp=properties",
                &[],
                "",
            )),
            200,
        ),
    ];
    for (what, text, status) in cases {
        let r = s.raw(&text).await;
        assert_eq!(r.status, status, "{what}: {}", r.body);
        assert_eq!(r.header("server"), Some(want.as_str()), "{what}: {r:?}");
    }
}

/// A legacy Node `azure-storage` 2.10.7 batch: the outer request asks for Atom, the
/// sub-requests for JSON (one without a body answer, one with).
#[tokio::test]
async fn a_batch_with_an_atom_accept_on_the_outer_request() {
    for s in on_every_store("a_batch_with_an_atom_accept_on_the_outer_request").await {
        create_table(&s, "nodecompat").await;
        let body = "--batch_a1\r\n\
            Content-Type: multipart/mixed; boundary=changeset_c1\r\n\r\n\
            --changeset_c1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
            POST http://127.0.0.1:10002/devstoreaccount1/nodecompat HTTP/1.1\r\n\
            Content-ID: 1\r\nContent-Type: application/json\r\n\
            Accept: application/json;odata=minimalmetadata\r\nPrefer: return-no-content\r\n\
            DataServiceVersion: 3.0;\r\n\r\n\
            {\"PartitionKey\":\"n\",\"RowKey\":\"1\",\"V\":1}\r\n\
            --changeset_c1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
            POST http://127.0.0.1:10002/devstoreaccount1/nodecompat HTTP/1.1\r\n\
            Content-ID: 2\r\nContent-Type: application/json\r\n\
            Accept: application/json;odata=fullmetadata\r\nDataServiceVersion: 3.0;\r\n\r\n\
            {\"PartitionKey\":\"n\",\"RowKey\":\"2\",\"V\":2}\r\n\
            --changeset_c1--\r\n--batch_a1--\r\n";
        let r = s
            .raw(&sign_raw(&request(
                "POST",
                "/devstoreaccount1/$batch",
                &[
                    (
                        "Content-Type",
                        "multipart/mixed; charset=\"utf-8\"; boundary=batch_a1",
                    ),
                    ("Accept", "application/atom+xml,application/xml"),
                    ("DataServiceVersion", "3.0;"),
                    ("MaxDataServiceVersion", "3.0;NetFx"),
                    ("x-ms-version", "2018-03-28"),
                ],
                body,
            )))
            .await;
        assert_eq!(r.status, 202, "{}: {}", s.store, r.body);
        assert!(
            r.header("content-type")
                .is_some_and(|t| t.starts_with("multipart/mixed; boundary=batchresponse_")),
            "{}: {r:?}",
            s.store
        );
        assert!(r.body.contains("HTTP/1.1 204 No Content"), "{}", r.body);
        // The second part follows its own Accept (full metadata).
        assert!(r.body.contains("HTTP/1.1 201 Created"), "{}", r.body);
        assert!(
            r.body
                .contains("\"odata.type\":\"devstoreaccount1.nodecompat\"")
        );
        let r = get(&s, "/devstoreaccount1/nodecompat()").await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body.matches("\"RowKey\"").count(), 2, "{}", r.body);
    }
}

/// A legacy Python `azure-cosmosdb-table` 1.0.6 batch on a path-style endpoint: LF line
/// ends, request lines without the account, `Content-ID` inside the embedded request, the
/// outer `Accept` Atom.
#[tokio::test]
async fn a_batch_with_request_lines_without_the_account() {
    for s in on_every_store("a_batch_with_request_lines_without_the_account").await {
        create_table(&s, "pycompat").await;
        let body = "--batch_p1\n\
            Content-Type: multipart/mixed; boundary=changeset_p1\n\n\
            --changeset_p1\n\
            Content-Type: application/http\n\
            Content-Transfer-Encoding: binary\n\n\
            POST /pycompat HTTP/1.1\n\
            Content-ID: 1\n\
            Content-Type: application/json\n\
            Prefer: return-no-content\n\
            Content-Length: 47\n\n\
            {\"PartitionKey\": \"b\", \"RowKey\": \"c1\", \"n\": 1}\n\
            --changeset_p1\n\
            Content-Type: application/http\n\
            Content-Transfer-Encoding: binary\n\n\
            PUT /pycompat(PartitionKey='b',RowKey='c2') HTTP/1.1\n\
            Content-ID: 2\n\
            Content-Type: application/json\n\
            Content-Length: 47\n\n\
            {\"PartitionKey\": \"b\", \"RowKey\": \"c2\", \"n\": 2}\n\
            --changeset_p1--\n\
            --batch_p1--\n";
        let r = s
            .raw(&sign_raw(&request(
                "POST",
                "/devstoreaccount1/$batch",
                &[
                    ("Content-Type", "multipart/mixed; boundary=batch_p1"),
                    ("Accept", "application/atom+xml,application/xml"),
                    ("Accept-Charset", "UTF-8"),
                    ("x-ms-version", "2017-04-17"),
                ],
                body,
            )))
            .await;
        assert_eq!(r.status, 202, "{}: {}", s.store, r.body);
        assert_eq!(r.body.matches("HTTP/1.1 204").count(), 2, "{}", r.body);
        assert!(!r.body.contains("InvalidUri"), "{}", r.body);
        let r = get(&s, "/devstoreaccount1/pycompat()").await;
        assert!(
            r.body.contains("\"c1\"") && r.body.contains("\"c2\""),
            "{}",
            r.body
        );
        // Another account's path is still refused, naming both accounts.
        let other = body.replace("POST /pycompat", "POST /someoneelse/pycompat");
        let r = s
            .raw(&sign_raw(&request(
                "POST",
                "/devstoreaccount1/$batch",
                &[("Content-Type", "multipart/mixed; boundary=batch_p1")],
                &other,
            )))
            .await;
        assert_eq!(r.status, 202, "{}", r.body);
        assert!(
            r.body.contains("0:") && r.body.contains("someoneelse"),
            "{}",
            r.body
        );
    }
}

/// A legacy Rust `azure_data_tables` 0.21 batch: the body ends with `--batch_<id>` and a
/// line end instead of `--batch_<id>--`.
#[tokio::test]
async fn a_batch_that_ends_without_the_closing_delimiter() {
    for s in on_every_store("a_batch_that_ends_without_the_closing_delimiter").await {
        create_table(&s, "rustcompat").await;
        let changeset = "--batch_r1\r\n\
            Content-Type: multipart/mixed; boundary=changeset_r1\r\n\r\n\
            --changeset_r1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
            POST http://127.0.0.1:10002/devstoreaccount1/rustcompat HTTP/1.1\r\n\
            Accept: application/json;odata=fullmetadata\r\nContent-Type: application/json\r\n\
            Prefer: return-no-content\r\n\r\n\
            {\"PartitionKey\":\"r\",\"RowKey\":\"1\"}\r\n\
            --changeset_r1--\r\n";
        let sent = |body: String| {
            sign_raw(&request(
                "POST",
                "/devstoreaccount1/$batch",
                &[("Content-Type", "multipart/mixed; boundary=batch_r1")],
                &body,
            ))
        };
        let r = s.raw(&sent(format!("{changeset}--batch_r1\r\n"))).await;
        assert_eq!(r.status, 202, "{}: {}", s.store, r.body);
        assert!(r.body.contains("HTTP/1.1 204"), "{}", r.body);
        let r = get(
            &s,
            "/devstoreaccount1/rustcompat(PartitionKey='r',RowKey='1')",
        )
        .await;
        assert_eq!(r.status, 200, "{}: {}", s.store, r.body);
        // A body cut inside a part after such a line is still refused.
        let r = s
            .raw(&sent(format!(
                "{changeset}--batch_r1\r\nContent-Type: mult"
            )))
            .await;
        assert_eq!(r.status, 400, "{}", r.body);
        assert!(r.body.contains("InvalidBatchRequest"), "{}", r.body);
    }
}

/// Service properties as the legacy Python SDKs write them: booleans as `True` / `False`.
#[tokio::test]
async fn service_properties_with_python_booleans() {
    for s in on_every_store("service_properties_with_python_booleans").await {
        let body = "<?xml version='1.0' encoding='utf-8'?>\n<StorageServiceProperties>\
            <Logging><Version>1.0</Version><Delete>True</Delete><Read>False</Read>\
            <Write>True</Write><RetentionPolicy><Enabled>True</Enabled><Days>5</Days>\
            </RetentionPolicy></Logging><HourMetrics><Version>1.0</Version><Enabled>True</Enabled>\
            <IncludeAPIs>False</IncludeAPIs><RetentionPolicy><Enabled>False</Enabled>\
            </RetentionPolicy></HourMetrics></StorageServiceProperties>";
        let r = s
            .raw(&sign_raw(&request(
                "PUT",
                "/devstoreaccount1/?restype=service&comp=properties",
                &[("Content-Type", "application/xml")],
                body,
            )))
            .await;
        assert_eq!(r.status, 202, "{}: {}", s.store, r.body);
        let r = s
            .raw(&sign_raw(&request(
                "GET",
                "/devstoreaccount1/?restype=service&comp=properties",
                &[],
                "",
            )))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        for part in [
            "<Delete>true</Delete><Read>false</Read><Write>true</Write>",
            "<RetentionPolicy><Enabled>true</Enabled><Days>5</Days></RetentionPolicy>",
            "<Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs>",
        ] {
            assert!(r.body.contains(part), "{}: {part} in {}", s.store, r.body);
        }
    }
}

/// A table SAS as `azure-table-node` signs it: `sv=2013-08-15`, whose string to sign is
/// `sp, st, se, /{acct}/{table}, si, sv, spk, srk, epk, erk` (no `/table`, no `sip`/`spr`).
#[tokio::test]
async fn a_table_sas_of_version_2013_08_15() {
    let s = in_memory().await;
    create_table(&s, "OldSas").await;
    // Signed independently of `SasBuilder`: the pre-2015 string to sign.
    let key = AccountKey::development();
    let signature =
        key.sign("raud\n\n2099-01-01T00:00:00Z\n/devstoreaccount1/oldsas\n\n2013-08-15\n\n\n\n");
    let token = format!(
        "sv=2013-08-15&sp=raud&se=2099-01-01T00%3A00%3A00Z&tn=OldSas&sig={}",
        server_support::encode(&signature)
    );
    // The builder signs the same.
    let built = SasBuilder::table("OldSas")
        .permissions("raud")
        .expiry("2099-01-01T00:00:00Z")
        .version("2013-08-15")
        .sign(&key);
    assert!(
        built.ends_with(&format!("sig={}", server_support::encode(&signature))),
        "{built}"
    );
    let body = r#"{"PartitionKey":"p","RowKey":"r"}"#;
    let r = s
        .raw(&request(
            "POST",
            &format!("/devstoreaccount1/OldSas?{token}"),
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json;odata=nometadata"),
                ("x-ms-version", "2013-08-15"),
            ],
            body,
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = s
        .raw(&request(
            "GET",
            &format!("/devstoreaccount1/OldSas()?{token}"),
            &[("Accept", "application/json;odata=nometadata")],
            "",
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("\"RowKey\":\"r\""), "{}", r.body);
    // Signed the modern way with the old version: refused.
    let modern = key.sign(
        "raud\n\n2099-01-01T00:00:00Z\n/table/devstoreaccount1/oldsas\n\n\n\n2013-08-15\n\n\n\n",
    );
    let forged = format!(
        "sv=2013-08-15&sp=raud&se=2099-01-01T00%3A00%3A00Z&tn=OldSas&sig={}",
        server_support::encode(&modern)
    );
    let r = s
        .raw(&request(
            "GET",
            &format!("/devstoreaccount1/OldSas()?{forged}"),
            &[("Accept", "application/json;odata=nometadata")],
            "",
        ))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
}

/// Hand-signed REST: SharedKeyLite over `/{acct}/{acct}/Tables`, sent to `/{acct}/Tables/`.
#[tokio::test]
async fn a_signature_over_the_path_without_its_trailing_slash() {
    let s = in_memory().await;
    create_table(&s, "Slashed").await;
    let date = tableq_client::sign::http_date(chrono::Utc::now());
    let key = AccountKey::development();
    for (signed, sent, status) in [
        ("/devstoreaccount1/Tables", "/devstoreaccount1/Tables/", 200),
        ("/devstoreaccount1/Tables", "/devstoreaccount1/Tables", 200),
        // Only that way round.
        ("/devstoreaccount1/Tables/", "/devstoreaccount1/Tables", 403),
    ] {
        let signature = key.sign(&format!("{date}\n/devstoreaccount1{signed}"));
        let authorization = format!("SharedKeyLite devstoreaccount1:{signature}");
        let r = s
            .raw(&request(
                "GET",
                sent,
                &[
                    ("x-ms-date", date.as_str()),
                    ("x-ms-version", "2019-02-02"),
                    ("Accept", "application/json;odata=nometadata"),
                    ("Authorization", authorization.as_str()),
                ],
                "",
            ))
            .await;
        assert_eq!(r.status, status, "signed {signed}, sent {sent}: {}", r.body);
        if status == 200 {
            assert!(r.body.contains("Slashed"), "{}", r.body);
        }
    }
}

/// A service SAS that names a stored access policy (`si=`) but no table (`tn`): checked
/// against the table its URL names, and bound to it by its signature.
#[tokio::test]
async fn a_service_sas_with_a_policy_and_no_table_name() {
    for s in on_every_store("a_service_sas_with_a_policy_and_no_table_name").await {
        create_table(&s, "Policied").await;
        create_table(&s, "Elsewhere").await;
        let acl = "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier>\
            <Id>readers</Id><AccessPolicy><Start>2020-01-01T00:00:00Z</Start>\
            <Expiry>2099-01-01T00:00:00Z</Expiry><Permission>ra</Permission></AccessPolicy>\
            </SignedIdentifier></SignedIdentifiers>";
        for table in ["Policied", "Elsewhere"] {
            let r = s
                .raw(&sign_raw(&request(
                    "PUT",
                    &format!("/devstoreaccount1/{table}?comp=acl"),
                    &[("Content-Type", "application/xml")],
                    acl,
                )))
                .await;
            assert_eq!(r.status, 204, "{}: {}", s.store, r.body);
        }
        // Signed as Azurite and the service sign a table SAS, with the URL's table.
        let key = AccountKey::development();
        let signature =
            key.sign("\n\n\n/table/devstoreaccount1/policied\nreaders\n\n\n2019-02-02\n\n\n\n");
        let token = format!(
            "sv=2019-02-02&si=readers&sig={}",
            server_support::encode(&signature)
        );
        let insert = |table: &str| {
            request(
                "POST",
                &format!("/devstoreaccount1/{table}?{token}"),
                &[
                    ("Content-Type", "application/json"),
                    ("Accept", "application/json;odata=nometadata"),
                ],
                r#"{"PartitionKey":"p","RowKey":"r"}"#,
            )
        };
        let r = s.raw(&insert("Policied")).await;
        assert_eq!(r.status, 201, "{}: {}", s.store, r.body);
        // The signature binds the table: the same token on another table fails.
        let r = s.raw(&insert("Elsewhere")).await;
        assert_eq!(r.status, 403, "{}: {}", s.store, r.body);
        // The policy's permissions apply: no `d`.
        let r = s
            .raw(&request(
                "DELETE",
                &format!("/devstoreaccount1/Policied(PartitionKey='p',RowKey='r')?{token}"),
                &[("If-Match", "*")],
                "",
            ))
            .await;
        assert_eq!(r.status, 403, "{}: {}", s.store, r.body);
    }
}

//! What the real Table service answers, where tableq once answered otherwise (issue 27,
//! items 2–4), from the service's own replies recorded by the public SDK test suites (the
//! docs/rest.md's protocol notes cite the recordings): XML error bodies for the XML operations,
//! full-metadata annotations, `odata.metadata` that repeats `$select`, the codes of the XML
//! operations' refusals, the front end's answer to a failed signature, and an empty
//! changeset. Raw HTTP, so that the bytes are the ones a client sends and receives.
//!
//! Behaviours that touch storage run on every store engine (`server_support/stores.rs`).

use crate::server_support;
use crate::stores;

use server_support::sign_raw;
use stores::{RawReply, StoreServer, in_memory, on_every_store, request};

const XML_DECLARATION: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>";

async fn signed(
    s: &StoreServer,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> RawReply {
    s.raw(&sign_raw(&request(method, target, headers, body)))
        .await
}

async fn create_table(s: &StoreServer, name: &str) {
    let r = signed(
        s,
        "POST",
        "/devstoreaccount1/Tables",
        &[("Content-Type", "application/json")],
        &format!(r#"{{"TableName":"{name}"}}"#),
    )
    .await;
    assert_eq!(r.status, 201, "{}: {}", s.store, r.body);
}

/// Asserts an XML error as the service writes it: status, `x-ms-error-code`,
/// `application/xml`, `<?xml …?><Error><Code>…</Code><Message>sentence\n…RequestId:…\nTime:…`.
fn assert_xml_error(r: &RawReply, status: u16, code: &str, sentence: &str) {
    assert_eq!(r.status, status, "{r:?}");
    assert_eq!(r.header("x-ms-error-code"), Some(code), "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/xml"), "{r:?}");
    let head = format!("{XML_DECLARATION}<Error><Code>{code}</Code><Message>{sentence}\n");
    assert!(r.body.starts_with(&head), "{r:?}");
    assert!(r.body.ends_with("</Message></Error>"), "{r:?}");
    let request_id = r.header("x-ms-request-id").expect("a request id");
    assert!(
        r.body.contains(&format!("\nRequestId:{request_id}\nTime:")),
        "{r:?}"
    );
}

/// Item 2: the XML operations answer their errors in XML; the OData operations in JSON.
#[tokio::test]
async fn errors_of_the_xml_operations_are_xml() {
    let s = in_memory().await;
    let properties = "/devstoreaccount1/?restype=service&comp=properties";
    let r = signed(
        &s,
        "PUT",
        properties,
        &[("Content-Type", "application/xml")],
        "<StorageServiceProperties><Logging>",
    )
    .await;
    assert_xml_error(
        &r,
        400,
        "InvalidXmlDocument",
        "XML specified is not syntactically valid.",
    );
    // A bad value, a method the resource does not have, stats on the primary.
    let r = signed(
        &s,
        "PUT",
        properties,
        &[("Content-Type", "application/xml")],
        "<StorageServiceProperties><Cors><CorsRule><AllowedOrigins>*</AllowedOrigins>\
         <AllowedMethods>FETCH</AllowedMethods><MaxAgeInSeconds>1</MaxAgeInSeconds>\
         <ExposedHeaders/><AllowedHeaders/></CorsRule></Cors></StorageServiceProperties>",
    )
    .await;
    assert_eq!(r.header("x-ms-error-code"), Some("InvalidXmlNodeValue"));
    assert!(
        r.body.contains("&lt;AllowedMethods&gt;") || r.body.contains("FETCH"),
        "{r:?}"
    );
    assert_eq!(r.header("content-type"), Some("application/xml"), "{r:?}");
    let r = signed(&s, "DELETE", properties, &[], "").await;
    assert_eq!(r.status, 405, "{r:?}");
    assert!(r.body.starts_with(XML_DECLARATION), "{r:?}");
    let r = signed(
        &s,
        "GET",
        "/devstoreaccount1/?restype=service&comp=stats",
        &[],
        "",
    )
    .await;
    assert_eq!(
        r.header("x-ms-error-code"),
        Some("InvalidQueryParameterValue")
    );
    assert!(r.body.starts_with(XML_DECLARATION), "{r:?}");
    // The OData operations keep JSON.
    let r = signed(&s, "GET", "/devstoreaccount1/nosuch()", &[], "").await;
    assert_eq!(r.status, 404, "{r:?}");
    assert!(r.body.starts_with("{\"odata.error\""), "{r:?}");
    assert!(
        r.header("content-type")
            .is_some_and(|t| t.starts_with("application/json;odata=minimalmetadata")),
        "{r:?}"
    );
}

/// The entity the Python SDK's recorded tests insert (`test_get_entity_full_metadata`).
const RECORDED_ENTITY: &str = r#"{"PartitionKey": "pk", "RowKey": "rk", "age": "39", "age@odata.type": "Edm.Int64", "sex": "male", "married": true, "deceased": false, "ratio": 3.1, "evenratio": 3.0, "large": "933311100", "large@odata.type": "Edm.Int64", "Birthday": "1973-10-04T00:00:00Z", "Birthday@odata.type": "Edm.DateTime", "binary": "YmluYXJ5", "binary@odata.type": "Edm.Binary", "other": 20, "clsid": "c9da6455-213d-42c9-9a79-3e9149a57833", "clsid@odata.type": "Edm.Guid"}"#;

/// The members after the Timestamp of that entity at full metadata: annotated as in the
/// service's recorded reply (none for an Int32, a Boolean or a finite Double), in tableq's
/// member order (by name).
const RECORDED_FULL_PROPERTIES: &str = r#""Birthday@odata.type":"Edm.DateTime","Birthday":"1973-10-04T00:00:00Z","age@odata.type":"Edm.Int64","age":"39","binary@odata.type":"Edm.Binary","binary":"YmluYXJ5","clsid@odata.type":"Edm.Guid","clsid":"c9da6455-213d-42c9-9a79-3e9149a57833","deceased":false,"evenratio":3.0,"large@odata.type":"Edm.Int64","large":"933311100","married":true,"other":20,"ratio":3.1,"sex":"male"}"#;

/// Item 3: full-metadata annotations exactly as the service writes them.
#[tokio::test]
async fn full_metadata_annotates_as_the_service_does() {
    for s in on_every_store("full_metadata_annotates_as_the_service_does").await {
        create_table(&s, "fullmeta").await;
        let r = signed(
            &s,
            "POST",
            "/devstoreaccount1/fullmeta",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json;odata=fullmetadata"),
            ],
            RECORDED_ENTITY,
        )
        .await;
        assert_eq!(r.status, 201, "{}: {}", s.store, r.body);
        assert!(
            r.body.ends_with(RECORDED_FULL_PROPERTIES),
            "{}: {}",
            s.store,
            r.body
        );
        for target in [
            "/devstoreaccount1/fullmeta(PartitionKey='pk',RowKey='rk')",
            "/devstoreaccount1/fullmeta()",
        ] {
            let r = signed(
                &s,
                "GET",
                target,
                &[("Accept", "application/json;odata=fullmetadata")],
                "",
            )
            .await;
            assert_eq!(r.status, 200, "{}: {}", s.store, r.body);
            let body = r.body.trim_end_matches("]}");
            assert!(
                body.ends_with(RECORDED_FULL_PROPERTIES),
                "{}: {target}: {}",
                s.store,
                r.body
            );
            // The envelope and the Timestamp are annotated as recorded.
            assert!(
                r.body.contains(
                    r#""odata.type":"devstoreaccount1.fullmeta","odata.id":"http://127.0.0.1/devstoreaccount1/fullmeta(PartitionKey='pk',RowKey='rk')","odata.etag":"#
                ),
                "{}",
                r.body
            );
            assert!(
                r.body.contains(
                    r#""odata.editLink":"fullmeta(PartitionKey='pk',RowKey='rk')","PartitionKey":"pk","RowKey":"rk","Timestamp@odata.type":"Edm.DateTime","Timestamp":""#
                ),
                "{}",
                r.body
            );
        }
    }
}

/// Item 4: `odata.metadata` repeats the projection.
#[tokio::test]
async fn odata_metadata_repeats_the_select() {
    for s in on_every_store("odata_metadata_repeats_the_select").await {
        create_table(&s, "seltab").await;
        let r = signed(
            &s,
            "POST",
            "/devstoreaccount1/seltab",
            &[
                ("Content-Type", "application/json"),
                ("Prefer", "return-no-content"),
            ],
            RECORDED_ENTITY,
        )
        .await;
        assert_eq!(r.status, 204, "{}: {}", s.store, r.body);
        let base = "http://127.0.0.1/devstoreaccount1/$metadata#";
        for (target, metadata) in [
            (
                "/devstoreaccount1/seltab(PartitionKey='pk',RowKey='rk')?$select=age,ratio",
                "seltab/@Element&$select=age,ratio",
            ),
            (
                "/devstoreaccount1/seltab()?$select=age,sex",
                "seltab&$select=age,sex",
            ),
            // As recorded: `$select=age%2C%20sex` → `&$select=age,%20sex`.
            (
                "/devstoreaccount1/seltab()?$select=age%2C%20sex",
                "seltab&$select=age,%20sex",
            ),
            (
                "/devstoreaccount1/seltab()?$select=&$filter=",
                "seltab&$select=",
            ),
            ("/devstoreaccount1/seltab()", "seltab"),
            (
                "/devstoreaccount1/seltab(PartitionKey='pk',RowKey='rk')",
                "seltab/@Element",
            ),
        ] {
            let r = signed(
                &s,
                "GET",
                target,
                &[("Accept", "application/json;odata=minimalmetadata")],
                "",
            )
            .await;
            assert_eq!(r.status, 200, "{}: {target}: {}", s.store, r.body);
            let want = format!("{{\"odata.metadata\":\"{base}{metadata}\",");
            assert!(
                r.body.starts_with(&want),
                "{}: {target}: {}",
                s.store,
                r.body
            );
        }
        // The projection itself is unchanged.
        let r = signed(
            &s,
            "GET",
            "/devstoreaccount1/seltab(PartitionKey='pk',RowKey='rk')?$select=age,ratio",
            &[("Accept", "application/json;odata=nometadata")],
            "",
        )
        .await;
        assert_eq!(r.body, r#"{"age":"39","ratio":3.1}"#);
    }
}

fn cors_rules(n: usize) -> String {
    format!(
        "<?xml version='1.0' encoding='utf-8'?>\n<StorageServiceProperties><Cors>{}</Cors>\
         </StorageServiceProperties>",
        "<CorsRule><AllowedOrigins>www.xyz.com</AllowedOrigins><AllowedMethods>GET</AllowedMethods>\
         <AllowedHeaders /><ExposedHeaders /><MaxAgeInSeconds>0</MaxAgeInSeconds></CorsRule>"
            .repeat(n)
    )
}

fn identifiers(n: usize) -> String {
    let ids: String = (0..n)
        .map(|i| format!("<SignedIdentifier><Id>id{i}</Id></SignedIdentifier>"))
        .collect();
    format!("<?xml version='1.0' encoding='utf-8'?>\n<SignedIdentifiers>{ids}</SignedIdentifiers>")
}

/// Item 4: the refusals of the XML operations, with the service's codes.
#[tokio::test]
async fn the_xml_operations_refuse_as_the_service_does() {
    for s in on_every_store("the_xml_operations_refuse_as_the_service_does").await {
        create_table(&s, "acl").await;
        let properties = "/devstoreaccount1/?restype=service&comp=properties";
        let xml = [
            ("Content-Type", "application/xml"),
            ("Accept", "application/xml"),
        ];
        let retention = "<?xml version='1.0' encoding='utf-8'?>\n<StorageServiceProperties>\
            <MinuteMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs>\
            <RetentionPolicy><Enabled>true</Enabled><Days>366</Days></RetentionPolicy></MinuteMetrics>\
            </StorageServiceProperties>";
        for (what, target, body) in [
            ("six CORS rules", properties, cors_rules(6)),
            ("a retention of 366 days", properties, retention.to_owned()),
            (
                "six identifiers",
                "/devstoreaccount1/acl?comp=acl",
                identifiers(6),
            ),
        ] {
            let r = signed(&s, "PUT", target, &xml, &body).await;
            assert_xml_error(
                &r,
                400,
                "InvalidXmlDocument",
                "XML specified is not syntactically valid.",
            );
            let _ = what;
        }
        // At the limits, accepted.
        for (target, body, status) in [
            (properties, cors_rules(5), 202),
            ("/devstoreaccount1/acl?comp=acl", identifiers(5), 204),
        ] {
            let r = signed(&s, "PUT", target, &xml, &body).await;
            assert_eq!(r.status, status, "{}: {}", s.store, r.body);
        }
        // The ACL of a missing table.
        let r = signed(&s, "GET", "/devstoreaccount1/nosuch?comp=acl", &xml, "").await;
        assert_xml_error(
            &r,
            404,
            "ResourceNotFound",
            "The specified resource does not exist.",
        );
        let r = signed(
            &s,
            "PUT",
            "/devstoreaccount1/nosuch?comp=acl",
            &xml,
            &identifiers(1),
        )
        .await;
        assert_xml_error(
            &r,
            404,
            "ResourceNotFound",
            "The specified resource does not exist.",
        );
    }
}

/// Item 4: a failed signature is answered by the front end: plain `application/json`, or
/// XML when the request sent no `Accept`.
#[tokio::test]
async fn a_failed_signature_is_answered_as_the_front_end_does() {
    let s = in_memory().await;
    let sentence = "Server failed to authenticate the request. Make sure the value of \
                    Authorization header is formed correctly including the signature.";
    let bad = [
        ("x-ms-date", "Mon, 23 Nov 2026 16:00:00 GMT"),
        ("Authorization", "SharedKey devstoreaccount1:AAAA"),
    ];
    let with_accept = [
        bad[0],
        bad[1],
        ("Accept", "application/json;odata=minimalmetadata"),
    ];
    let r = s
        .raw(&request(
            "GET",
            "/devstoreaccount1/Tables",
            &with_accept,
            "",
        ))
        .await;
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    assert_eq!(r.header("x-ms-error-code"), Some("AuthenticationFailed"));
    let body: serde_json::Value = serde_json::from_str(&r.body).expect("JSON");
    assert_eq!(body["odata.error"]["code"], "AuthenticationFailed");
    assert!(
        body["odata.error"]["message"]["value"]
            .as_str()
            .is_some_and(|m| m.starts_with(sentence)),
        "{body}"
    );
    // No Accept: XML.
    let r = s
        .raw(&request("GET", "/devstoreaccount1/Tables", &bad, ""))
        .await;
    assert_xml_error(&r, 403, "AuthenticationFailed", sentence);
    // Unsigned, and on an XML operation with a JSON Accept: XML there.
    let r = s
        .raw(&request(
            "GET",
            "/devstoreaccount1/Tables",
            &[("Accept", "application/json")],
            "",
        ))
        .await;
    assert_eq!(r.header("content-type"), Some("application/json"), "{r:?}");
    let r = s
        .raw(&request(
            "GET",
            "/devstoreaccount1/?restype=service&comp=properties",
            &[("Accept", "application/json")],
            "",
        ))
        .await;
    assert_xml_error(&r, 403, "AuthenticationFailed", sentence);
    // A signed request the table service refuses keeps the OData form.
    let r = s
        .raw(&sign_raw(&request(
            "GET",
            "/devstoreaccount1/nosuch()",
            &[("Accept", "application/json")],
            "",
        )))
        .await;
    assert_eq!(r.status, 404, "{r:?}");
    assert!(
        r.header("content-type")
            .is_some_and(|t| t.starts_with("application/json;odata=minimalmetadata")),
        "{r:?}"
    );
}

/// Item 4: a changeset that holds no operation is answered 202 with an empty changeset
/// response.
#[tokio::test]
async fn an_empty_changeset_is_accepted() {
    for s in on_every_store("an_empty_changeset_is_accepted").await {
        for body in [
            "--batch_0\r\nContent-Type: multipart/mixed; boundary=changeset_0\r\n\r\n\
             --changeset_0--\r\n--batch_0--\r\n",
            "--batch_0\nContent-Type: multipart/mixed; boundary=changeset_0\n\n\
             --changeset_0--\n--batch_0--\n",
        ] {
            let r = signed(
                &s,
                "POST",
                "/devstoreaccount1/$batch",
                &[("Content-Type", "multipart/mixed; boundary=batch_0")],
                body,
            )
            .await;
            assert_eq!(r.status, 202, "{}: {}", s.store, r.body);
            let batch = r
                .header("content-type")
                .and_then(|t| t.strip_prefix("multipart/mixed; boundary="))
                .expect("a multipart reply")
                .to_owned();
            let changeset = r
                .body
                .split("boundary=")
                .nth(1)
                .and_then(|rest| rest.split("\r\n").next())
                .expect("a changeset boundary")
                .to_owned();
            assert!(changeset.starts_with("changesetresponse_"), "{}", r.body);
            assert_eq!(
                r.body,
                format!(
                    "--{batch}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n\
                     --{changeset}--\r\n--{batch}--\r\n"
                )
            );
        }
    }
}

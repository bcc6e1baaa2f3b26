//! What the real Table service answers, where tableq once answered otherwise (issue 27,
//! items 2–4): XML error bodies for the XML operations. Raw HTTP, so that the bytes are the
//! ones a client sends and receives.
//!

#[path = "server_support/pg.rs"]
mod pg;
mod server_support;
#[path = "server_support/stores.rs"]
mod stores;

use server_support::sign_raw;
use stores::{RawReply, StoreServer, in_memory, request};

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

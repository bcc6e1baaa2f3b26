//! Table operations over real HTTP: create, delete, read, query with `$filter`/`$top` and
//! `NextTableName`, name rules and their exact messages.

use crate::server_support;

use server_support::{FULL, MINIMAL, NOMETA, TestServer};

#[tokio::test]
async fn create_returns_201_with_the_table_and_location() {
    let s = TestServer::start().await;
    let r = s.post_json("Tables", r#"{"TableName":"People"}"#).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let location = format!("{}/devstoreaccount1/Tables('People')", s.origin);
    assert_eq!(r.header("location"), Some(location.as_str()));
    assert_eq!(r.header("dataserviceid"), Some(location.as_str()));
    assert_eq!(r.header("preference-applied"), None);
    assert_eq!(
        r.header("content-type"),
        Some("application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
    );
    assert_eq!(
        r.json(),
        serde_json::json!({
            "odata.metadata": format!("{}/devstoreaccount1/$metadata#Tables/@Element", s.origin),
            "TableName": "People"
        })
    );
}

#[tokio::test]
async fn create_honours_prefer() {
    let s = TestServer::start().await;
    let no_content = s
        .send(
            "POST",
            "Tables",
            &[
                ("Content-Type", "application/json"),
                ("Prefer", "return-no-content"),
            ],
            Some(r#"{"TableName":"tab1"}"#),
        )
        .await;
    assert_eq!(no_content.status, 204);
    assert_eq!(no_content.body, "");
    assert_eq!(
        no_content.header("preference-applied"),
        Some("return-no-content")
    );
    assert!(
        no_content
            .header("location")
            .unwrap()
            .ends_with("/Tables('tab1')")
    );
    let content = s
        .send(
            "POST",
            "Tables",
            &[
                ("Content-Type", "application/json"),
                ("Prefer", "return-content"),
                ("Accept", NOMETA),
            ],
            Some(r#"{"TableName":"tab2"}"#),
        )
        .await;
    assert_eq!(content.status, 201);
    assert_eq!(content.header("preference-applied"), Some("return-content"));
    assert_eq!(content.json(), serde_json::json!({"TableName": "tab2"}));
}

#[tokio::test]
async fn create_at_full_metadata() {
    let s = TestServer::start().await;
    let r = s
        .send(
            "POST",
            "Tables",
            &[("Content-Type", "application/json"), ("Accept", FULL)],
            Some(r#"{"TableName":"tab1","odata.type":"ignored"}"#),
        )
        .await;
    assert_eq!(r.status, 201);
    let base = format!("{}/devstoreaccount1", s.origin);
    assert_eq!(
        r.json(),
        serde_json::json!({
            "odata.metadata": format!("{base}/$metadata#Tables/@Element"),
            "odata.type": "devstoreaccount1.Tables",
            "odata.id": format!("{base}/Tables('tab1')"),
            "odata.editLink": "Tables('tab1')",
            "TableName": "tab1",
        })
    );
}

#[tokio::test]
async fn names_are_unique_case_insensitively_and_keep_their_case() {
    let s = TestServer::start().await;
    s.create_table("MyTable").await;
    let r = s.post_json("Tables", r#"{"TableName":"mytable"}"#).await;
    let message = r.expect_error(409, "TableAlreadyExists");
    assert!(message.starts_with("The table specified already exists.\n"));
    assert!(message.contains("MyTable"), "{message}");
    // Lookups ignore case; listings show the case of creation.
    let insert = s
        .post_json("MYTABLE", r#"{"PartitionKey":"p","RowKey":"r"}"#)
        .await;
    assert_eq!(insert.status, 201, "{}", insert.body);
    let got = s.get("mytable(PartitionKey='p',RowKey='r')").await;
    assert_eq!(got.status, 200);
    let list = s.get("Tables").await;
    assert_eq!(
        list.json()["value"],
        serde_json::json!([{"TableName": "MyTable"}])
    );
    let one = s.get("Tables('MYTABLE')").await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(one.json()["TableName"], "MyTable");
}

#[tokio::test]
async fn invalid_names_get_the_services_sentences() {
    let s = TestServer::start().await;
    for (name, status, code, sentence) in [
        (
            "my_table",
            400,
            "InvalidResourceName",
            "The specified resource name contains invalid characters.",
        ),
        (
            "1abc",
            400,
            "InvalidResourceName",
            "The specified resource name contains invalid characters.",
        ),
        (
            "tables",
            400,
            "InvalidResourceName",
            "The specified resource name contains invalid characters.",
        ),
        (
            "ab",
            400,
            "OutOfRangeInput",
            "The specified resource name length is not within the permissible limits.",
        ),
        (
            &"a".repeat(64),
            400,
            "OutOfRangeInput",
            "The specified resource name length is not within the permissible limits.",
        ),
    ] {
        let r = s
            .post_json("Tables", &format!(r#"{{"TableName":"{name}"}}"#))
            .await;
        let message = r.expect_error(status, code);
        let first = message.lines().next().unwrap();
        assert_eq!(first, sentence, "{name}: {message}");
        // The same name in an entity URL gets the same answer (`tables()` in any case is
        // the table collection itself).
        if name != "tables" {
            let r = s.get(&format!("{name}()")).await;
            let message = r.expect_error(status, code);
            assert!(message.starts_with(sentence), "{name}: {message}");
        }
    }
    // The longest and shortest valid names.
    s.create_table(&"a".repeat(63)).await;
    s.create_table("abc").await;
}

#[tokio::test]
async fn create_body_errors() {
    let s = TestServer::start().await;
    for body in ["", "{", r#"{"TableName":5}"#, r#"{"Name":"x"}"#, "[]"] {
        let r = s.post_json("Tables", body).await;
        r.expect_error(400, "InvalidInput");
    }
}

#[tokio::test]
async fn delete_and_get_one_table() {
    let s = TestServer::start().await;
    s.create_table("Gone").await;
    s.post_json("Gone", r#"{"PartitionKey":"p","RowKey":"r"}"#)
        .await;
    let r = s.send("DELETE", "Tables('gone')", &[], None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(r.body, "");
    // The table and its entities are gone.
    s.get("Tables('Gone')")
        .await
        .expect_error(404, "ResourceNotFound");
    s.get("Gone()").await.expect_error(404, "TableNotFound");
    let again = s.send("DELETE", "Tables('Gone')", &[], None).await;
    let message = again.expect_error(404, "ResourceNotFound");
    assert!(message.starts_with("The specified resource does not exist.\n"));
    // A new table of the same name starts empty.
    s.create_table("gone").await;
    assert_eq!(s.get("gone()").await.json()["value"], serde_json::json!([]));
}

#[tokio::test]
async fn query_tables_with_filter_top_and_continuation() {
    let s = TestServer::start().await;
    let names = ["alpha", "Beta", "gamma", "Delta", "epsilon", "Zeta", "eta"];
    for n in names {
        s.create_table(n).await;
    }
    // All, in case-insensitive order.
    let all = s.get("Tables").await;
    assert_eq!(all.status, 200);
    assert_eq!(
        all.json()["odata.metadata"],
        format!("{}/devstoreaccount1/$metadata#Tables", s.origin)
    );
    let listed: Vec<String> = all.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["TableName"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        listed,
        ["alpha", "Beta", "Delta", "epsilon", "eta", "gamma", "Zeta"]
    );
    assert_eq!(all.header("x-ms-continuation-nexttablename"), None);

    // $filter on TableName: equality and a range (case-sensitive, ordinal).
    let eq = s.get("Tables?$filter=TableName%20eq%20'gamma'").await;
    assert_eq!(
        eq.json()["value"],
        serde_json::json!([{"TableName": "gamma"}])
    );
    let range = s
        .get("Tables()?$filter=TableName%20ge%20'e'%20and%20TableName%20lt%20'f'")
        .await;
    assert_eq!(
        range.json()["value"],
        serde_json::json!([{"TableName": "epsilon"}, {"TableName": "eta"}])
    );

    // Pages of two: four pages, the last without a continuation.
    let mut seen = Vec::new();
    let mut next: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &next {
            Some(t) => format!("Tables?$top=2&NextTableName={t}"),
            None => "Tables?$top=2".to_owned(),
        };
        let r = s.get(&path).await;
        assert_eq!(r.status, 200, "{}", r.body);
        pages += 1;
        for t in r.json()["value"].as_array().unwrap() {
            seen.push(t["TableName"].as_str().unwrap().to_owned());
        }
        next = r
            .header("x-ms-continuation-nexttablename")
            .map(str::to_owned);
        if let Some(t) = &next {
            assert!(t.is_ascii() && t.starts_with("1!"), "{t}");
            // A table created behind the cursor is not revisited.
            if pages == 2 {
                s.create_table("aardvark").await;
            }
        } else {
            break;
        }
    }
    assert_eq!(pages, 4);
    assert_eq!(seen, listed);

    // Filtered paging: only matching tables count, and the last page ends paging.
    let r = s.get("Tables?$filter=TableName%20ge%20'a'&$top=3").await;
    let names: Vec<_> = r.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["TableName"].clone())
        .collect();
    assert_eq!(names, ["aardvark", "alpha", "epsilon"]);
    let t = r
        .header("x-ms-continuation-nexttablename")
        .unwrap()
        .to_owned();
    let r = s
        .get(&format!(
            "Tables?$filter=TableName%20ge%20'a'&$top=3&NextTableName={t}"
        ))
        .await;
    assert_eq!(
        r.json()["value"],
        serde_json::json!([{"TableName": "eta"}, {"TableName": "gamma"}])
    );
    assert_eq!(r.header("x-ms-continuation-nexttablename"), None);
}

#[tokio::test]
async fn query_tables_errors() {
    let s = TestServer::start().await;
    s.get("Tables?$filter=TableName%20EQ%20'a'")
        .await
        .expect_error(400, "InvalidInput");
    s.get("Tables?$top=0")
        .await
        .expect_error(400, "InvalidInput");
    s.get("Tables?$top=1001")
        .await
        .expect_error(400, "InvalidInput");
    let m = s
        .get("Tables?NextTableName=garbage")
        .await
        .expect_error(400, "InvalidInput");
    assert!(m.contains("NextTableName"), "{m}");
    s.get("Tables?$orderby=TableName")
        .await
        .expect_error(400, "InvalidInput");
}

#[tokio::test]
async fn query_tables_at_each_level() {
    let s = TestServer::start().await;
    s.create_table("tab1").await;
    let none = s.send("GET", "Tables", &[("Accept", NOMETA)], None).await;
    assert_eq!(none.body, r#"{"value":[{"TableName":"tab1"}]}"#);
    let full = s.send("GET", "Tables", &[("Accept", FULL)], None).await;
    let base = format!("{}/devstoreaccount1", s.origin);
    assert_eq!(
        full.json(),
        serde_json::json!({
            "odata.metadata": format!("{base}/$metadata#Tables"),
            "value": [{
                "odata.type": "devstoreaccount1.Tables",
                "odata.id": format!("{base}/Tables('tab1')"),
                "odata.editLink": "Tables('tab1')",
                "TableName": "tab1",
            }]
        })
    );
    let minimal = s.send("GET", "Tables", &[("Accept", MINIMAL)], None).await;
    assert_eq!(
        minimal.json()["value"],
        serde_json::json!([{"TableName": "tab1"}])
    );
}

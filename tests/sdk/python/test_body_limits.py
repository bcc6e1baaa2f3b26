"""Request bodies over the service's 4 MiB limit reach Python's HTTP stacks as the service's
413 `RequestBodyTooLarge` with its JSON error, not as a connection reset: the server reads
and discards the rest of the body before it answers (issue 16, issue 19).

Python's stacks write the whole body before they read the answer: through the SDK
(`requests`/urllib3), `urllib.request` and `http.client`. The raw requests carry a table SAS
token, so that no signing code is needed beside the SDK's.
"""

import http.client
import json
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

import pytest
from azure.core.credentials import AzureNamedKeyCredential
from azure.core.exceptions import HttpResponseError
from azure.data.tables import TableSasPermissions, generate_table_sas

import helpers
from tableq_server import ACCOUNT, ACCOUNT_KEY

OVER = 4 * 1024 * 1024 + 512 * 1024  # the limit is 4 MiB


def big_entity(row_key="r"):
    return {"PartitionKey": "p", "RowKey": row_key, "S": "x" * OVER}


def sas_url(endpoint, table):
    token = generate_table_sas(
        AzureNamedKeyCredential(ACCOUNT, ACCOUNT_KEY),
        table.table_name,
        permission=TableSasPermissions(read=True, add=True),
        expiry=datetime.now(timezone.utc) + timedelta(hours=1),
    )
    return f"{endpoint}/{table.table_name}?{token}"


def assert_413_body(body):
    error = json.loads(body)["odata.error"]
    assert error["code"] == "RequestBodyTooLarge", body
    assert "4194304 bytes" in error["message"]["value"], body


def test_sdk_create_entity_over_the_limit_is_413(table):
    with pytest.raises(HttpResponseError) as info:
        table.create_entity(big_entity())
    helpers.assert_error(info.value, 413, "RequestBodyTooLarge")
    # The connection is fine afterwards (the body was read, not cut off).
    table.create_entity({"PartitionKey": "p", "RowKey": "small"})
    assert [e["RowKey"] for e in table.list_entities()] == ["small"]


def test_sdk_transaction_over_the_limit_is_413(table):
    # 100 operations of 48 KiB each: a 4.7 MiB changeset.
    operations = [
        ("create", {"PartitionKey": "p", "RowKey": f"r{i:03}", "S": "y" * (48 * 1024)})
        for i in range(100)
    ]
    with pytest.raises(HttpResponseError) as info:
        table.submit_transaction(operations)
    assert info.value.status_code == 413, info.value
    assert helpers.header_code(info.value) == "RequestBodyTooLarge"
    assert list(table.list_entities()) == []


def test_urllib_request_over_the_limit_is_413(endpoint, table):
    request = urllib.request.Request(
        sas_url(endpoint, table),
        data=json.dumps(big_entity()).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json;odata=nometadata"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=60)
    assert info.value.code == 413
    assert info.value.headers["x-ms-error-code"] == "RequestBodyTooLarge"
    assert_413_body(info.value.read())


def test_http_client_over_the_limit_is_413_and_the_connection_goes_on(endpoint, table):
    url = urlsplit(sas_url(endpoint, table))
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    target = f"{url.path}?{url.query}"
    headers = {"Content-Type": "application/json", "Accept": "application/json;odata=nometadata"}
    try:
        conn.request("POST", target, body=json.dumps(big_entity()).encode(), headers=headers)
        response = conn.getresponse()
        assert response.status == 413
        assert_413_body(response.read())
        # The whole body was read, so the same connection serves the next request.
        conn.request("POST", target, body=json.dumps({"PartitionKey": "p", "RowKey": "ok"}), headers=headers)
        response = conn.getresponse()
        assert response.status == 201, response.read()
        response.read()
    finally:
        conn.close()

"""tableq's injected faults seen by the SDK (issue 30): the SDK's retry policy retries an
injected `ServerBusy`, and the call succeeds. The rules are armed through tableq's
administrative endpoint (`PUT /{account}/?restype=tableq&comp=faults`, signed with the
account key) and confined to this test's table; they are cleared afterwards."""

import base64
import hashlib
import hmac
import json
import urllib.request
from email.utils import formatdate
from urllib.parse import urlsplit

from azure.data.tables import TableClient

from tableq_server import ACCOUNT, ACCOUNT_KEY, connection_string


def faults_request(endpoint, method, body=None):
    """`method` on the account's fault rules, signed with SharedKeyLite; (status, body)."""
    parts = urlsplit(endpoint)
    path = parts.path.rstrip("/") + "/"
    date = formatdate(usegmt=True)
    signed = f"{date}\n/{ACCOUNT}{path}?comp=faults".encode()
    key = base64.b64decode(ACCOUNT_KEY)
    signature = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    request = urllib.request.Request(
        f"{parts.scheme}://{parts.netloc}{path}?restype=tableq&comp=faults",
        data=None if body is None else body.encode(),
        method=method,
        headers={
            "x-ms-date": date,
            "x-ms-version": "2019-02-02",
            "Authorization": f"SharedKeyLite {ACCOUNT}:{signature}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read()


def test_the_retry_policy_retries_an_injected_server_busy(endpoint, table):
    rules = {"rules": [{
        "name": "busy twice", "table": table.table_name, "operation": "InsertEntity",
        "error": "ServerBusy", "next": 2,
    }]}
    status, _ = faults_request(endpoint, "PUT", json.dumps(rules))
    assert status == 204
    try:
        # The SDK's default retry policy (retries on 503), with a short backoff.
        retrying = TableClient.from_connection_string(
            connection_string(endpoint), table.table_name,
            retry_total=3, retry_backoff_factor=0.05,
        )
        retrying.create_entity({"PartitionKey": "p", "RowKey": "1", "n": 1})
        assert table.get_entity("p", "1")["n"] == 1
        status, body = faults_request(endpoint, "GET")
        assert status == 200
        assert json.loads(body)["fired"] == [{"rule": "busy twice", "count": 2}]
    finally:
        faults_request(endpoint, "DELETE")

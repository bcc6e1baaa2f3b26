"""Hand-signed REST (the sixth kind of client rest.md names), with `requests` from the same
environment: the signatures and SAS forms that small REST helpers write by hand, which no
SDK in this suite produces — SharedKey and SharedKeyLite signed over `/…/Tables` and sent to
`/…/Tables/`, and a table SAS bound to a stored policy (`si`) without `tn`.
"""

import base64
import datetime
import hashlib
import hmac
import json
import os
import uuid
from email.utils import formatdate
from urllib.parse import quote, urlsplit

import pytest
import requests

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def endpoint():
    value = os.environ.get("TABLEQ_COMPAT_ENDPOINT")
    if not value:
        pytest.fail("TABLEQ_COMPAT_ENDPOINT is not set: run scripts/compat-tests.sh")
    return value.rstrip("/")


def sign(text):
    digest = hmac.new(base64.b64decode(KEY), text.encode("utf-8"), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def request(method, path, scheme="SharedKey", signed_path=None, body=None, headers=None):
    """`method` on `endpoint() + path`, signed over `signed_path` (default: the path sent)."""
    url = endpoint() + path
    date = formatdate(usegmt=True)
    sent_path = urlsplit(url).path
    resource = f"/{ACCOUNT}{signed_path if signed_path is not None else sent_path}"
    content_type = "application/json" if body is not None else ""
    if scheme == "SharedKey":
        to_sign = f"{method}\n\n{content_type}\n{date}\n{resource}"
    else:
        to_sign = f"{date}\n{resource}"
    all_headers = {
        "x-ms-date": date,
        "x-ms-version": "2019-02-02",
        "Accept": "application/json;odata=nometadata",
        "DataServiceVersion": "3.0;NetFx",
        "Authorization": f"{scheme} {ACCOUNT}:{sign(to_sign)}",
        **(headers or {}),
    }
    if body is not None:
        all_headers["Content-Type"] = content_type
        body = json.dumps(body)
    return requests.request(method, url, data=body, headers=all_headers, timeout=30)


def error_code(response):
    return response.headers.get("x-ms-error-code")


@pytest.fixture
def table():
    name = f"pyh{uuid.uuid4().hex[:10]}"
    r = request("POST", "/Tables", body={"TableName": name})
    assert r.status_code == 201, r.text
    yield name
    request("DELETE", f"/Tables('{name}')")


@pytest.mark.parametrize("scheme", ["SharedKey", "SharedKeyLite"])
def test_signed_without_the_trailing_slash_that_is_sent(scheme, table):
    signed = f"/{ACCOUNT}/Tables"
    r = request("GET", "/Tables/", scheme=scheme, signed_path=signed)
    assert r.status_code == 200, (r.status_code, error_code(r), r.text)
    assert table in [t["TableName"] for t in r.json()["value"]]
    # the signature still binds the resource: another path is refused
    r = request("GET", "/Tables/", scheme=scheme, signed_path=f"/{ACCOUNT}/Other")
    assert (r.status_code, error_code(r)) == (403, "AuthenticationFailed")


def test_policy_sas_without_tn(table):
    r = request("POST", f"/{table}", body={"PartitionKey": "p", "RowKey": "r", "V": 1})
    assert r.status_code == 201, r.text
    expiry = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    acl = (
        '<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier><Id>pol</Id>'
        f"<AccessPolicy><Expiry>{expiry}</Expiry><Permission>r</Permission></AccessPolicy>"
        "</SignedIdentifier></SignedIdentifiers>"
    )
    date = formatdate(usegmt=True)
    to_sign = f"PUT\n\napplication/xml\n{date}\n/{ACCOUNT}{urlsplit(endpoint()).path}/{table}?comp=acl"
    r = requests.put(
        f"{endpoint()}/{table}?comp=acl",
        data=acl,
        headers={
            "x-ms-date": date,
            "x-ms-version": "2019-02-02",
            "Content-Type": "application/xml",
            "Authorization": f"SharedKey {ACCOUNT}:{sign(to_sign)}",
        },
        timeout=30,
    )
    assert r.status_code == 204, (r.status_code, r.text)
    # sv 2019-02-02 table SAS: sp, st, se, /table/{acct}/{table}, si, sip, spr, sv, spk, srk, epk, erk
    to_sign = "\n".join(["", "", "", f"/table/{ACCOUNT}/{table.lower()}", "pol", "", "", "2019-02-02", "", "", "", ""])
    sas = f"sv=2019-02-02&si=pol&sig={quote(sign(to_sign), safe='')}"
    url = f"{endpoint()}/{table}(PartitionKey='p',RowKey='r')?{sas}"
    r = requests.get(url, headers={"Accept": "application/json;odata=nometadata", "x-ms-version": "2019-02-02"}, timeout=30)
    assert r.status_code == 200, (r.status_code, error_code(r), r.text)
    assert r.json()["V"] == 1
    # the policy grants only r: an insert through the same SAS is refused
    r = requests.post(
        f"{endpoint()}/{table}?{sas}",
        data=json.dumps({"PartitionKey": "p", "RowKey": "x"}),
        headers={"Content-Type": "application/json", "x-ms-version": "2019-02-02"},
        timeout=30,
    )
    assert (r.status_code, error_code(r)) == (403, "AuthorizationPermissionMismatch"), r.text

"""HTTPS and Entra ID tokens: azure-data-tables with azure-identity's ClientSecretCredential
against `tableq serve --tls self-signed`, its local issuer as the authority.

The runner (`scripts/sdk-tests.sh`) starts that server and sets:
* `TABLEQ_SDK_TLS_ENDPOINT`: `https://127.0.0.1:<port>/devstoreaccount1`;
* `TABLEQ_SDK_TLS_HTTP_ENDPOINT`: the same server's plain-HTTP endpoint;
* `TABLEQ_SDK_TLS_AUTHORITY`: `https://127.0.0.1:<port>` (the local issuer);
* `TABLEQ_SDK_TLS_CA`: the CA file to trust (as `REQUESTS_CA_BUNDLE`).
The server runs its local issuer (`--local-issuer`) with two registered clients:
`reader-app` (secret `reader-secret`, Storage Table Data Reader) and `contributor-app`
(secret `contributor-secret`, Storage Table Data Contributor); any other client, or a wrong
secret, gets no token. Without those variables (the PostgreSQL runs) the tests are skipped.
"""

import datetime
import os
import uuid

import pytest
import requests
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.data.tables import (
    AccountSasPermissions,
    ResourceTypes,
    TableServiceClient,
    UpdateMode,
    generate_account_sas,
)
from azure.identity import ClientSecretCredential

from tableq_server import ACCOUNT, ACCOUNT_KEY

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"


@pytest.fixture(scope="module")
def tls(monkeypatch_module):
    names = ["ENDPOINT", "HTTP_ENDPOINT", "AUTHORITY", "CA"]
    values = {n: os.environ.get(f"TABLEQ_SDK_TLS_{n}") for n in names}
    if not all(values.values()):
        pytest.skip("no HTTPS server in this run (TABLEQ_SDK_TLS_* unset: PostgreSQL runs)")
    # As a user would: trust the emulator's CA for every `requests` call.
    monkeypatch_module.setenv("REQUESTS_CA_BUNDLE", values["CA"])
    return values


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


SECRETS = {"reader-app": "reader-secret", "contributor-app": "contributor-secret"}


def credential(tls, client_id, secret=None):
    return ClientSecretCredential(
        TENANT,
        client_id,
        secret if secret is not None else SECRETS[client_id],
        authority=tls["AUTHORITY"],
        disable_instance_discovery=True,
    )


def service(tls, client_id="contributor-app"):
    return TableServiceClient(
        endpoint=tls["ENDPOINT"], credential=credential(tls, client_id), retry_total=0
    )


def unique(prefix):
    return prefix + uuid.uuid4().hex[:12]


def test_a_contributor_token_runs_the_whole_flow(tls):
    svc = service(tls)
    name = unique("tok")
    table = svc.create_table(name)
    try:
        table.create_entity({"PartitionKey": "p", "RowKey": "1", "n": 1, "s": "one"})
        table.upsert_entity({"PartitionKey": "p", "RowKey": "2", "n": 2}, mode=UpdateMode.REPLACE)
        table.update_entity({"PartitionKey": "p", "RowKey": "1", "m": "x"}, mode=UpdateMode.MERGE)
        got = table.get_entity("p", "1")
        assert (got["n"], got["s"], got["m"]) == (1, "one", "x")
        table.submit_transaction(
            [
                ("create", {"PartitionKey": "p", "RowKey": "3", "n": 3}),
                ("upsert", {"PartitionKey": "p", "RowKey": "4", "n": 4}),
                ("delete", {"PartitionKey": "p", "RowKey": "2"}),
            ]
        )
        rows = list(table.query_entities("n ge @low", parameters={"low": 2}))
        assert sorted(r["RowKey"] for r in rows) == ["3", "4"]
        assert name in [t.name for t in svc.list_tables()]
        table.delete_entity("p", "3")
        assert sorted(e["RowKey"] for e in table.list_entities()) == ["1", "4"]
    finally:
        svc.delete_table(name)
    assert name not in [t.name for t in svc.list_tables()]


def test_a_reader_token_reads_but_cannot_write(tls):
    writer = service(tls)
    name = unique("tokr")
    table = writer.create_table(name)
    try:
        table.create_entity({"PartitionKey": "p", "RowKey": "1", "n": 1})
        reader = service(tls, "reader-app")
        read_table = reader.get_table_client(name)
        assert read_table.get_entity("p", "1")["n"] == 1
        assert [e["RowKey"] for e in read_table.query_entities("n eq 1")] == ["1"]
        assert name in [t.name for t in reader.list_tables()]
        for write in (
            lambda: read_table.create_entity({"PartitionKey": "p", "RowKey": "2"}),
            lambda: read_table.delete_entity("p", "1"),
            lambda: reader.create_table(unique("tokn")),
            lambda: read_table.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "9"})]),
        ):
            with pytest.raises(HttpResponseError) as err:
                write()
            assert err.value.status_code == 403
            assert err.value.response.headers["x-ms-error-code"] == "AuthorizationPermissionMismatch"
        assert [e["RowKey"] for e in table.list_entities()] == ["1"]
    finally:
        writer.delete_table(name)


def test_shared_key_and_sas_keep_working_over_https(tls):
    key = AzureNamedKeyCredential(ACCOUNT, ACCOUNT_KEY)
    svc = TableServiceClient(endpoint=tls["ENDPOINT"], credential=key, retry_total=0)
    name = unique("tokk")
    table = svc.create_table(name)
    try:
        table.create_entity({"PartitionKey": "p", "RowKey": "1"})
        sas = generate_account_sas(
            key,
            resource_types=ResourceTypes(service=True, container=True, object=True),
            permission=AccountSasPermissions(read=True, list=True),
            expiry=datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1),
        )
        by_sas = TableServiceClient(
            endpoint=tls["ENDPOINT"], credential=AzureSasCredential(sas), retry_total=0
        )
        assert [e["RowKey"] for e in by_sas.get_table_client(name).list_entities()] == ["1"]
    finally:
        svc.delete_table(name)


def test_tokens_over_plain_http_are_refused(tls):
    token = credential(tls, "contributor-app").get_token("https://storage.azure.com/.default")
    reply = requests.get(
        f"{tls['HTTP_ENDPOINT']}/Tables",
        headers={
            "Authorization": f"Bearer {token.token}",
            "x-ms-version": "2019-02-02",
            "Accept": "application/json;odata=nometadata",
        },
        timeout=10,
    )
    assert reply.status_code == 403
    assert reply.headers["x-ms-error-code"] == "AuthenticationFailed"
    assert reply.headers["WWW-Authenticate"].startswith("Bearer authorization_uri=https://")
    assert "resource_id=https://storage.azure.com" in reply.headers["WWW-Authenticate"]
    # The same token over HTTPS is fine.
    ok = requests.get(
        f"{tls['ENDPOINT']}/Tables",
        headers={
            "Authorization": f"Bearer {token.token}",
            "x-ms-version": "2019-02-02",
            "Accept": "application/json;odata=nometadata",
        },
        timeout=10,
    )
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize(
    "client_id, secret",
    [("random-stranger", "x"), ("contributor-app", "made-up"), ("reader-app", "contributor-secret")],
)
def test_strangers_and_wrong_secrets_get_no_token(tls, client_id, secret):
    # The issuer gives tokens to registered clients with their own secret only: the SDK
    # surfaces Entra ID's answer (401 invalid_client, AADSTS7000215).
    with pytest.raises(ClientAuthenticationError) as err:
        credential(tls, client_id, secret).get_token("https://storage.azure.com/.default")
    assert "AADSTS7000215" in str(err.value)
    svc = TableServiceClient(
        endpoint=tls["ENDPOINT"], credential=credential(tls, client_id, secret), retry_total=0
    )
    with pytest.raises(ClientAuthenticationError):
        svc.create_table(unique("stolen"))

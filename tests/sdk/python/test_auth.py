"""Authorization with the Python SDK: the account key (connection string and
`AzureNamedKeyCredential`, SharedKey signatures), SAS tokens made by `generate_table_sas` and
`generate_account_sas` (permissions, time window, key ranges), and wrong credentials, which
the SDK raises as `ClientAuthenticationError` (403 `AuthenticationFailed`). What a valid SAS
does not allow is a 403 `HttpResponseError` with the service's code
(`AuthorizationPermissionMismatch`, `AuthorizationFailure`,
`AuthorizationResourceTypeMismatch`), as against the service."""

from datetime import datetime, timedelta, timezone

import pytest
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.data.tables import (
    AccountSasPermissions,
    ResourceTypes,
    TableClient,
    TableSasPermissions,
    TableServiceClient,
    generate_account_sas,
    generate_table_sas,
)

import helpers
from tableq_server import ACCOUNT, ACCOUNT_KEY

WRONG_KEY = "b3RoZXIgYWNjb3VudCBrZXkgZm9yIHRlc3RzIG9ubHkgMDEyMzQ1Njc4OQ=="


def dev_credential(key=ACCOUNT_KEY):
    return AzureNamedKeyCredential(ACCOUNT, key)


def sas_table(endpoint, table_name, token):
    return TableClient(endpoint, table_name, credential=AzureSasCredential(token), **helpers.CLIENT_KWARGS)


def soon(hours=1):
    return datetime.now(timezone.utc) + timedelta(hours=hours)


def seed(table):
    for pk, rk in [("a", "1"), ("b", "1"), ("b", "5"), ("c", "1"), ("d", "1")]:
        table.create_entity({"PartitionKey": pk, "RowKey": rk, "V": 1})


def keys(entities):
    return sorted((e["PartitionKey"], e["RowKey"]) for e in entities)


def assert_denied(err):
    helpers.assert_error(err, 403, "AuthenticationFailed")


def denied_write(action, code="AuthenticationFailed"):
    """A write refused with 403 `code`. `create_entity` re-raises the pipeline's error as it
    is (an `HttpResponseError`, see helpers.assert_error), other calls raise
    `ClientAuthenticationError` for `AuthenticationFailed`; all carry the status and code."""
    with pytest.raises(HttpResponseError) as info:
        action()
    helpers.assert_error(info.value, 403, code)


def refused(action, code):
    """A call refused with 403 `code` (an `HttpResponseError`)."""
    with pytest.raises(HttpResponseError) as info:
        action()
    helpers.assert_error(info.value, 403, code)


def test_named_key_credential_signs_requests(endpoint):
    with TableServiceClient(endpoint, credential=dev_credential(), **helpers.CLIENT_KWARGS) as service:
        name = helpers.unique_name("auth")
        table = service.create_table(name)
        try:
            table.create_entity({"PartitionKey": "p", "RowKey": "r"})
            assert table.get_entity("p", "r")["RowKey"] == "r"
        finally:
            service.delete_table(name)


def test_wrong_key_raises_client_authentication_error(endpoint, table):
    with TableServiceClient(endpoint, credential=dev_credential(WRONG_KEY), **helpers.CLIENT_KWARGS) as service:
        with pytest.raises(ClientAuthenticationError) as info:
            list(service.list_tables())
        assert_denied(info.value)
    wrong = TableClient(endpoint, table.table_name, credential=dev_credential(WRONG_KEY), **helpers.CLIENT_KWARGS)
    denied_write(lambda: wrong.create_entity({"PartitionKey": "p", "RowKey": "r"}))
    assert list(table.list_entities()) == []


def test_table_sas_permissions(endpoint, table):
    seed(table)
    read = generate_table_sas(dev_credential(), table.table_name, permission=TableSasPermissions(read=True),
                              expiry=soon(), start=datetime.now(timezone.utc) - timedelta(minutes=5))
    reader = sas_table(endpoint, table.table_name, read)
    assert len(list(reader.list_entities())) == 5
    assert reader.get_entity("b", "5")["V"] == 1
    denied_write(lambda: reader.create_entity({"PartitionKey": "x", "RowKey": "1"}),
                 "AuthorizationPermissionMismatch")
    refused(lambda: reader.delete_entity("a", "1"), "AuthorizationPermissionMismatch")
    assert len(list(table.list_entities())) == 5

    writer = sas_table(endpoint, table.table_name, generate_table_sas(
        dev_credential(), table.table_name, permission="raud", expiry=soon()))
    writer.create_entity({"PartitionKey": "x", "RowKey": "1"})
    writer.upsert_entity({"PartitionKey": "x", "RowKey": "1", "V": 2})
    writer.delete_entity("x", "1")


def test_table_sas_time_window(endpoint, table):
    seed(table)
    expired = generate_table_sas(dev_credential(), table.table_name, permission="raud",
                                 start=soon(-2), expiry=soon(-1))
    with pytest.raises(ClientAuthenticationError) as info:
        list(sas_table(endpoint, table.table_name, expired).list_entities())
    assert_denied(info.value)
    early = generate_table_sas(dev_credential(), table.table_name, permission="raud",
                               start=soon(1), expiry=soon(2))
    denied_write(lambda: sas_table(endpoint, table.table_name, early).create_entity({"PartitionKey": "x", "RowKey": "1"}))
    assert len(list(table.list_entities())) == 5


def test_table_sas_key_range(endpoint, table):
    seed(table)
    token = generate_table_sas(dev_credential(), table.table_name, permission="raud", expiry=soon(),
                               start_pk="b", start_rk="2", end_pk="c", end_rk="9")
    ranged = sas_table(endpoint, table.table_name, token)
    # Queries see only the range.
    assert keys(ranged.list_entities()) == [("b", "5"), ("c", "1")]
    assert keys(ranged.query_entities("V eq 1")) == [("b", "5"), ("c", "1")]
    # Single-entity operations outside it fail; inside it they work.
    for pk, rk in [("a", "1"), ("b", "1"), ("d", "1")]:
        refused(lambda: ranged.get_entity(pk, rk), "AuthorizationFailure")
        denied_write(lambda: ranged.create_entity({"PartitionKey": pk, "RowKey": rk + "x"}),
                     "AuthorizationFailure")
        refused(lambda: ranged.delete_entity(pk, rk), "AuthorizationFailure")
    ranged.create_entity({"PartitionKey": "b", "RowKey": "3"})
    assert ranged.get_entity("c", "1")["V"] == 1
    assert keys(table.list_entities()) == [("a", "1"), ("b", "1"), ("b", "3"), ("b", "5"), ("c", "1"), ("d", "1")]


def test_table_sas_for_another_table_is_refused(endpoint, make_table):
    first, second = make_table(), make_table()
    token = generate_table_sas(dev_credential(), first.table_name, permission="raud", expiry=soon())
    denied_write(lambda: sas_table(endpoint, second.table_name, token).create_entity({"PartitionKey": "p", "RowKey": "r"}),
                 "AuthorizationFailure")
    assert list(second.list_entities()) == []


def test_account_sas(endpoint, service, table):
    seed(table)
    token = generate_account_sas(dev_credential(), ResourceTypes(container=True, object=True),
                                 AccountSasPermissions(read=True, list=True, add=True, create=True), expiry=soon())
    with TableServiceClient(endpoint, credential=AzureSasCredential(token), **helpers.CLIENT_KWARGS) as sas_service:
        assert table.table_name in [t.name for t in sas_service.list_tables()]
        name = helpers.unique_name("acctsas")
        made = sas_service.create_table(name)
        try:
            made.create_entity({"PartitionKey": "p", "RowKey": "r"})
            assert len(list(sas_service.get_table_client(table.table_name).list_entities())) == 5
            # No delete permission.
            refused(lambda: made.delete_entity("p", "r"), "AuthorizationPermissionMismatch")
            refused(lambda: sas_service.delete_table(name), "AuthorizationPermissionMismatch")
        finally:
            service.delete_table(name)
    objects_only = generate_account_sas(dev_credential(), ResourceTypes(object=True),
                                        AccountSasPermissions(read=True, list=True), expiry=soon())
    with TableServiceClient(endpoint, credential=AzureSasCredential(objects_only), **helpers.CLIENT_KWARGS) as sas_service:
        refused(lambda: list(sas_service.list_tables()), "AuthorizationResourceTypeMismatch")
    expired = generate_account_sas(dev_credential(), ResourceTypes(container=True, object=True),
                                   "rwdlacu", expiry=soon(-1), start=soon(-2))
    with TableServiceClient(endpoint, credential=AzureSasCredential(expired), **helpers.CLIENT_KWARGS) as sas_service:
        with pytest.raises(ClientAuthenticationError):
            list(sas_service.list_tables())


def test_table_sas_transactions_are_checked_operation_by_operation(endpoint, table):
    """`submit_transaction` with a table SAS: each operation of the changeset is held to the
    token's permissions and key range; a refused one fails the transaction (403 at its
    index) and nothing is written."""
    from azure.data.tables import TableTransactionError

    seed(table)
    token = generate_table_sas(dev_credential(), table.table_name, permission="raud", expiry=soon(),
                               start_pk="b", start_rk="0", end_pk="b", end_rk="8")
    ranged = sas_table(endpoint, table.table_name, token)
    ranged.submit_transaction([
        ("create", {"PartitionKey": "b", "RowKey": "7"}),
        ("delete", {"PartitionKey": "b", "RowKey": "1"}),
    ])
    with pytest.raises(TableTransactionError) as info:
        ranged.submit_transaction([
            ("create", {"PartitionKey": "b", "RowKey": "6"}),
            ("create", {"PartitionKey": "b", "RowKey": "9"}),
        ])
    assert info.value.status_code == 403
    assert info.value.index == 1
    add_only = sas_table(endpoint, table.table_name, generate_table_sas(
        dev_credential(), table.table_name, permission="a", expiry=soon()))
    with pytest.raises(TableTransactionError) as info:
        add_only.submit_transaction([
            ("create", {"PartitionKey": "b", "RowKey": "2"}),
            ("delete", {"PartitionKey": "b", "RowKey": "5"}),
        ])
    assert info.value.status_code == 403
    assert info.value.index == 1
    assert keys(table.list_entities()) == [("a", "1"), ("b", "5"), ("b", "7"), ("c", "1"), ("d", "1")]

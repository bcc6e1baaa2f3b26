"""An example suite using pytest-tableq's fixtures, as a project of yours would: nothing
to configure — installing the package registers the fixtures."""

from azure.core.exceptions import ResourceExistsError
from azure.data.tables import TableServiceClient, UpdateMode
import pytest


def test_insert_and_point_read(table_client):
    table_client.create_entity({"PartitionKey": "p", "RowKey": "1", "Name": "Ada", "Age": 36})
    entity = table_client.get_entity("p", "1")
    assert entity["Name"] == "Ada"
    assert entity["Age"] == 36
    with pytest.raises(ResourceExistsError):
        table_client.create_entity({"PartitionKey": "p", "RowKey": "1"})


def test_query_with_a_filter(table_client):
    for i in range(10):
        table_client.create_entity({"PartitionKey": "p", "RowKey": f"{i:02}", "Age": i * 10})
    found = table_client.query_entities("Age ge @min and Age lt @max", parameters={"min": 30, "max": 70})
    assert [e["RowKey"] for e in found] == ["03", "04", "05", "06"]


def test_upsert_merges_and_replaces(table_client):
    table_client.upsert_entity({"PartitionKey": "p", "RowKey": "r", "A": 1, "B": 2})
    table_client.upsert_entity({"PartitionKey": "p", "RowKey": "r", "B": 3}, mode=UpdateMode.MERGE)
    assert {k: v for k, v in table_client.get_entity("p", "r").items()} == {
        "PartitionKey": "p", "RowKey": "r", "A": 1, "B": 3,
    }
    table_client.upsert_entity({"PartitionKey": "p", "RowKey": "r", "C": 4}, mode=UpdateMode.REPLACE)
    entity = table_client.get_entity("p", "r")
    assert "A" not in entity and entity["C"] == 4


def test_each_test_gets_a_fresh_table(table_client):
    assert list(table_client.list_entities()) == []


def test_the_session_server_is_described(tableq_server):
    assert tableq_server.endpoint.startswith("http://127.0.0.1:")
    assert tableq_server.account == "devstoreaccount1"
    assert f"AccountKey={tableq_server.key};" in tableq_server.connection_string
    assert tableq_server.port and str(tableq_server.port) in tableq_server.endpoint


def test_a_function_scoped_server_is_separate_and_empty(tableq_server_function, tableq_server, table_service_client):
    assert tableq_server_function.pid != tableq_server.pid
    assert tableq_server_function.port != tableq_server.port
    table_service_client.create_table("onlyinsession")
    try:
        with TableServiceClient.from_connection_string(tableq_server_function.connection_string) as own:
            assert [t.name for t in own.list_tables()] == []
            own.create_table("mine")
            assert [t.name for t in own.list_tables()] == ["mine"]
    finally:
        table_service_client.delete_table("onlyinsession")


def test_the_sdk_retries_an_injected_server_busy(tableq_clean_server):
    # The service's 503 ServerBusy, twice, on this table's inserts: the SDK's retry policy
    # (fast here) retries, and the third attempt succeeds.
    tableq_clean_server.set_faults(
        {"seed": 1, "rules": [{"table": "retried", "operation": "InsertEntity", "error": "ServerBusy", "next": 2}]}
    )
    with TableServiceClient.from_connection_string(
        tableq_clean_server.connection_string, retry_backoff_factor=0.05, retry_total=3
    ) as service:
        table = service.create_table("retried")
        table.create_entity({"PartitionKey": "p", "RowKey": "1"})
        assert table.get_entity("p", "1")["RowKey"] == "1"
    fired = tableq_clean_server.faults()["fired"]
    assert [f["count"] for f in fired] == [2]


def test_a_reset_empties_the_account(tableq_clean_server, table_service_client):
    table_service_client.create_table("leftover")
    tableq_clean_server.reset()
    assert [t.name for t in table_service_client.list_tables()] == []


def test_a_bad_rule_set_is_refused_with_the_reason(tableq_clean_server):
    from pytest_tableq import TableqError

    with pytest.raises(TableqError, match="Teapot"):
        tableq_clean_server.set_faults({"rules": [{"error": "Teapot"}]})


_finished_servers = []


def test_a_function_scoped_server_runs_during_its_test(tableq_server_function):
    assert tableq_server_function.process.poll() is None
    _finished_servers.append(tableq_server_function)


def test_the_previous_tests_server_was_stopped_after_it():
    # Runs after the previous test (pytest keeps the file's order).
    assert _finished_servers, "the previous test ran"
    assert all(server.process.poll() is not None for server in _finished_servers)

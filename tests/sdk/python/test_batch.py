"""Entity group transactions through azure-data-tables' `submit_transaction` (rest.md
"Batch"): every operation type in one transaction, one shared ETag, `TableTransactionError`
with the failing operation's index, atomicity, the partition and duplicate rules, the
100-operation limit."""

import pytest
from azure.core import MatchConditions
from azure.data.tables import TableTransactionError, UpdateMode
from azure.data.tables._table_batch import TableBatchOperations

import helpers


def test_every_operation_type_in_one_transaction(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "replace", "Old": 1})
    stale = table.create_entity({"PartitionKey": "p", "RowKey": "merge", "Keep": 1})
    table.create_entity({"PartitionKey": "p", "RowKey": "delete"})
    current = table.get_entity("p", "replace").metadata["etag"]

    result = table.submit_transaction(
        [
            ("create", {"PartitionKey": "p", "RowKey": "create", "N": 1}),
            (
                "update",
                {"PartitionKey": "p", "RowKey": "replace", "New": 2},
                {"mode": UpdateMode.REPLACE, "etag": current, "match_condition": MatchConditions.IfNotModified},
            ),
            ("update", {"PartitionKey": "p", "RowKey": "merge", "Added": 3}, {"mode": UpdateMode.MERGE}),
            ("upsert", {"PartitionKey": "p", "RowKey": "upsert-merge", "M": 4}, {"mode": UpdateMode.MERGE}),
            ("upsert", {"PartitionKey": "p", "RowKey": "upsert'replace", "R": 5}, {"mode": UpdateMode.REPLACE}),
            ("delete", {"PartitionKey": "p", "RowKey": "delete"}),
        ]
    )
    assert len(result) == 6
    etags = [r.get("etag") for r in result]
    # One Timestamp for the whole transaction: the five writes share one ETag.
    assert len(set(etags[:5])) == 1, etags
    helpers.etag_timestamp(etags[0])
    assert etags[0] != stale["etag"]

    got = {e["RowKey"]: dict(e) for e in table.list_entities()}
    assert set(got) == {"create", "replace", "merge", "upsert-merge", "upsert'replace"}
    assert got["replace"] == {"PartitionKey": "p", "RowKey": "replace", "New": 2}
    assert got["merge"] == {"PartitionKey": "p", "RowKey": "merge", "Keep": 1, "Added": 3}
    assert got["upsert'replace"]["R"] == 5
    for entity in table.list_entities():
        assert entity.metadata["etag"] == etags[0]


def test_failure_names_the_index_and_applies_nothing(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "exists", "V": 1})
    operations = [
        ("create", {"PartitionKey": "p", "RowKey": "a"}),
        ("upsert", {"PartitionKey": "p", "RowKey": "exists", "V": 2}),
        ("create", {"PartitionKey": "p", "RowKey": "b"}),
        ("create", {"PartitionKey": "p", "RowKey": "exists"}),
    ]
    # Operation 1 writes "exists" and operation 3 creates it again: a duplicate row.
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(operations)
    assert info.value.index == 3
    assert info.value.status_code == 400
    assert info.value.error_code == "InvalidDuplicateRow"

    # A create of an existing entity at index 2.
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(
            [
                ("create", {"PartitionKey": "p", "RowKey": "a"}),
                ("upsert", {"PartitionKey": "p", "RowKey": "c"}),
                ("create", {"PartitionKey": "p", "RowKey": "exists"}),
            ]
        )
    err = info.value
    assert err.index == 2
    helpers.assert_error(err, 409, "EntityAlreadyExists")
    assert err.message.startswith("2:The specified entity already exists.")
    # Nothing was applied.
    assert [e["RowKey"] for e in table.list_entities()] == ["exists"]
    assert table.get_entity("p", "exists")["V"] == 1

    # A stale ETag at index 1 (412) and a missing entity at index 0 (404).
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(
            [
                ("create", {"PartitionKey": "p", "RowKey": "z"}),
                (
                    "delete",
                    {"PartitionKey": "p", "RowKey": "exists"},
                    {"etag": 'W/"datetime\'2020-01-01T00%3A00%3A00.0000000Z\'"', "match_condition": MatchConditions.IfNotModified},
                ),
            ]
        )
    assert (info.value.index, info.value.status_code) == (1, 412)
    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction([("update", {"PartitionKey": "p", "RowKey": "missing", "V": 1})])
    assert (info.value.index, info.value.status_code) == (0, 404)
    assert [e["RowKey"] for e in table.list_entities()] == ["exists"]


def test_different_partitions(table):
    # The SDK refuses them itself...
    with pytest.raises(ValueError):
        table.submit_transaction(
            [("create", {"PartitionKey": "p", "RowKey": "1"}), ("create", {"PartitionKey": "q", "RowKey": "2"})]
        )
    # ...so the server's own check is reached by resetting the SDK's record of the partition
    # between operations (a private attribute: the request is otherwise the SDK's own).
    batch = TableBatchOperations(
        config=table._client._config,
        endpoint=f"{table.scheme}://{table._primary_hostname}",
        table_name=table.table_name,
        is_cosmos_endpoint=table._cosmos_endpoint,
    )
    for operation in [
        ("create", {"PartitionKey": "p", "RowKey": "1"}),
        ("create", {"PartitionKey": "p", "RowKey": "2"}),
        ("create", {"PartitionKey": "q", "RowKey": "3"}),
    ]:
        batch._partition_key = None
        batch.add_operation(operation)
    with pytest.raises(TableTransactionError) as info:
        table._batch_send(table.table_name, *batch.requests)
    assert info.value.index == 2
    helpers.assert_error(info.value, 400, "CommandsInBatchActOnDifferentPartitions")
    assert list(table.list_entities()) == []


def test_at_most_100_operations(table):
    def creates(n):
        return [("create", {"PartitionKey": "p", "RowKey": f"{i:03}"}) for i in range(n)]

    with pytest.raises(TableTransactionError) as info:
        table.submit_transaction(creates(101))
    assert (info.value.index, info.value.status_code) == (100, 400)
    assert list(table.list_entities()) == []
    assert len(table.submit_transaction(creates(100))) == 100
    assert len(list(table.list_entities())) == 100


def test_missing_table_and_empty_transaction(service):
    client = service.get_table_client(helpers.unique_name("missing"))
    with pytest.raises(TableTransactionError) as info:
        client.submit_transaction([("create", {"PartitionKey": "p", "RowKey": "1"})])
    assert info.value.index == 0
    helpers.assert_error(info.value, 404, "TableNotFound")
    # The SDK turns the service's 400 for an empty changeset into an empty result.
    assert client.submit_transaction([]) == []

"""Optimistic concurrency (If-Match / ETag), both upserts, and both merge forms on the wire
(PATCH, and POST + X-HTTP-Method: MERGE as the SDK sends it to `localhost` on a port other
than 10002) — rest.md "Resources" and "What the official clients actually send"."""

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError, ResourceModifiedError, ResourceNotFoundError
from azure.data.tables import UpdateMode

import helpers


@pytest.fixture(params=["127.0.0.1", "localhost"])
def client(request, service, table, endpoint):
    """The test table through an endpoint on 127.0.0.1 (merge = PATCH) or on localhost
    (the SDK's Cosmos mode: merge = POST + X-HTTP-Method: MERGE)."""
    host = request.param
    client = helpers.table_client(helpers.with_host(endpoint, host), table.table_name)
    client.merge_form = ("POST", "MERGE") if host == "localhost" else ("PATCH", None)
    with client:
        yield client


def assert_merge_form(client, recorder):
    sent = (recorder.last["method"], recorder.last["x_http_method"])
    assert sent == client.merge_form, f"the SDK sent {sent}, the test expects {client.merge_form}"


@pytest.mark.parametrize("mode", [UpdateMode.REPLACE, UpdateMode.MERGE])
def test_stale_etag_is_update_condition_not_satisfied(client, mode):
    first = client.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1})
    second = client.update_entity({"PartitionKey": "p", "RowKey": "r", "V": 2}, mode)
    with pytest.raises(ResourceModifiedError) as info:
        client.update_entity(
            {"PartitionKey": "p", "RowKey": "r", "V": 3},
            mode,
            etag=first["etag"],
            match_condition=MatchConditions.IfNotModified,
        )
    helpers.assert_error(info.value, 412, "UpdateConditionNotSatisfied")
    entity = client.get_entity("p", "r")
    assert entity["V"] == 2 and entity.metadata["etag"] == second["etag"]


@pytest.mark.parametrize("mode", [UpdateMode.REPLACE, UpdateMode.MERGE])
def test_current_etag_updates(client, mode):
    created = client.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1, "W": "w"})
    recorder = helpers.Recorder()
    updated = client.update_entity(
        {"PartitionKey": "p", "RowKey": "r", "V": 2},
        mode,
        etag=created["etag"],
        match_condition=MatchConditions.IfNotModified,
        raw_response_hook=recorder,
    )
    assert recorder.last["if_match"] == created["etag"]
    if mode == UpdateMode.MERGE:
        assert_merge_form(client, recorder)
    assert updated["etag"] != created["etag"]
    entity = client.get_entity("p", "r")
    assert entity.metadata["etag"] == updated["etag"]
    expected = {"PartitionKey": "p", "RowKey": "r", "V": 2}
    if mode == UpdateMode.MERGE:
        expected["W"] = "w"
    assert dict(entity) == expected


def test_stale_etag_on_delete_is_update_condition_not_satisfied(client):
    first = client.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1})
    client.update_entity({"PartitionKey": "p", "RowKey": "r", "V": 2})
    with pytest.raises(ResourceModifiedError) as info:
        client.delete_entity("p", "r", etag=first["etag"], match_condition=MatchConditions.IfNotModified)
    helpers.assert_error(info.value, 412, "UpdateConditionNotSatisfied")
    current = client.get_entity("p", "r")
    client.delete_entity(current, match_condition=MatchConditions.IfNotModified)
    with pytest.raises(ResourceNotFoundError):
        client.get_entity("p", "r")


def test_if_match_that_is_not_an_etag_is_invalid_input(client):
    client.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1})
    with pytest.raises(HttpResponseError) as info:
        client.update_entity(
            {"PartitionKey": "p", "RowKey": "r", "V": 2},
            etag="not-an-etag",
            match_condition=MatchConditions.IfNotModified,
        )
    helpers.assert_error(info.value, 400, "InvalidInput")
    assert client.get_entity("p", "r")["V"] == 1


def test_upsert_merge_inserts_then_merges(client):
    recorder = helpers.Recorder()
    inserted = client.upsert_entity(
        {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"}, UpdateMode.MERGE, raw_response_hook=recorder
    )
    assert_merge_form(client, recorder)
    assert recorder.last["if_match"] is None and recorder.last["status"] == 204
    helpers.etag_timestamp(inserted["etag"])
    assert dict(client.get_entity("p", "r")) == {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"}

    merged = client.upsert_entity({"PartitionKey": "p", "RowKey": "r", "B": "B2", "C": 3.5}, UpdateMode.MERGE)
    assert merged["etag"] != inserted["etag"]
    entity = client.get_entity("p", "r")
    assert dict(entity) == {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "B2", "C": 3.5}
    assert entity.metadata["etag"] == merged["etag"]


def test_upsert_replace_inserts_then_replaces(client):
    recorder = helpers.Recorder()
    inserted = client.upsert_entity(
        {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"}, UpdateMode.REPLACE, raw_response_hook=recorder
    )
    assert (recorder.last["method"], recorder.last["if_match"], recorder.last["status"]) == ("PUT", None, 204)
    assert dict(client.get_entity("p", "r")) == {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"}

    replaced = client.upsert_entity({"PartitionKey": "p", "RowKey": "r", "C": True}, UpdateMode.REPLACE)
    assert replaced["etag"] != inserted["etag"]
    entity = client.get_entity("p", "r")
    assert dict(entity) == {"PartitionKey": "p", "RowKey": "r", "C": True}
    assert entity.metadata["etag"] == replaced["etag"]


def test_merge_of_missing_entity_with_if_match_is_not_found(client):
    recorder = helpers.Recorder()
    with pytest.raises(ResourceNotFoundError) as info:
        client.update_entity({"PartitionKey": "p", "RowKey": "gone", "A": 1}, UpdateMode.MERGE,
                             raw_response_hook=recorder)
    helpers.assert_error(info.value, 404, "ResourceNotFound")
    assert_merge_form(client, recorder)
    assert recorder.last["if_match"] == "*"

"""Every entity operation through azure-data-tables: insert, get, update (replace, merge),
delete, and their errors; keys in URLs; metadata, ETag and Timestamp (rest.md "Resources",
data-model.md "System properties")."""

import datetime

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError
from azure.data.tables import TableEntity, UpdateMode

import helpers


def test_create_entity_returns_etag_and_get_returns_the_entity(table):
    before = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    created = table.create_entity({"PartitionKey": "p", "RowKey": "r", "Name": "Ada", "Age": 36})
    helpers.etag_timestamp(created["etag"])
    assert created["date"] is not None

    entity = table.get_entity("p", "r")
    assert isinstance(entity, TableEntity)
    assert dict(entity) == {"PartitionKey": "p", "RowKey": "r", "Name": "Ada", "Age": 36}
    assert entity.metadata["etag"] == created["etag"]
    timestamp = entity.metadata["timestamp"]
    assert isinstance(timestamp, datetime.datetime)
    assert timestamp > before
    # The ETag is the Timestamp, `:` percent-encoded.
    assert helpers.etag_timestamp(created["etag"]) == timestamp.tables_service_value


def test_insert_existing_key_is_entity_already_exists(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 1})
    with pytest.raises(ResourceExistsError) as info:
        table.create_entity({"PartitionKey": "p", "RowKey": "r", "V": 2})
    helpers.assert_error(info.value, 409, "EntityAlreadyExists")
    assert table.get_entity("p", "r")["V"] == 1


def test_get_missing_entity_is_resource_not_found(table):
    with pytest.raises(ResourceNotFoundError) as info:
        table.get_entity("p", "nothing")
    helpers.assert_error(info.value, 404, "ResourceNotFound")


def test_get_entity_with_select(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b", "C": True})
    entity = table.get_entity("p", "r", select=["B", "RowKey"])
    assert dict(entity) == {"B": "b", "RowKey": "r"}
    helpers.etag_timestamp(entity.metadata["etag"])


def test_replace_swaps_the_whole_property_set(table):
    created = table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"})
    updated = table.update_entity({"PartitionKey": "p", "RowKey": "r", "C": 3.5}, UpdateMode.REPLACE)
    assert updated["etag"] != created["etag"]
    entity = table.get_entity("p", "r")
    assert dict(entity) == {"PartitionKey": "p", "RowKey": "r", "C": 3.5}
    assert entity.metadata["etag"] == updated["etag"]


def test_merge_keeps_unmentioned_properties(table):
    created = table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"})
    updated = table.update_entity({"PartitionKey": "p", "RowKey": "r", "B": "B2", "C": False})
    assert updated["etag"] != created["etag"]
    entity = table.get_entity("p", "r")
    assert dict(entity) == {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "B2", "C": False}
    assert entity.metadata["etag"] == updated["etag"]


@pytest.mark.parametrize("mode", [UpdateMode.REPLACE, UpdateMode.MERGE])
def test_update_of_missing_entity_is_resource_not_found(table, mode):
    # update_entity sends If-Match: * (it must exist), unlike upsert.
    with pytest.raises(ResourceNotFoundError) as info:
        table.update_entity({"PartitionKey": "p", "RowKey": "missing", "A": 1}, mode)
    helpers.assert_error(info.value, 404, "ResourceNotFound")
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("p", "missing")


def test_delete_entity(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r"})
    table.create_entity({"PartitionKey": "p", "RowKey": "s"})
    table.delete_entity("p", "r")
    with pytest.raises(ResourceNotFoundError):
        table.get_entity("p", "r")
    assert [e["RowKey"] for e in table.list_entities()] == ["s"]
    # The entity form of the call.
    table.delete_entity(table.get_entity("p", "s"))
    assert list(table.list_entities()) == []


def test_delete_missing_entity_is_404_resource_not_found(table):
    # The SDK swallows the 404 of delete_entity; the recorded response shows it.
    recorder = helpers.Recorder()
    table.delete_entity("p", "missing", raw_response_hook=recorder)
    assert (recorder.last["status"], recorder.last["code"]) == (404, "ResourceNotFound")
    assert recorder.last["if_match"] == "*"


@pytest.mark.parametrize(
    "pk, rk",
    [
        ("it's", "O''Brien'"),  # quotes: OData literals double them
        ("with space", "a+b&c=d%20e"),  # URL-significant characters
        ("ünïcödé ключ", "日本語"),
        ("😀 emoji", "\U0001f600"),
        ("", ""),  # empty keys are allowed
        ("(PartitionKey='x')", ",RowKey='y'"),
        ("~!@$^*[]{}|;:<>.`", "\"dq\""),
    ],
)
def test_keys_round_trip_through_urls(table, pk, rk):
    created = table.create_entity({"PartitionKey": pk, "RowKey": rk, "V": 1})
    entity = table.get_entity(pk, rk)
    assert (entity["PartitionKey"], entity["RowKey"], entity["V"]) == (pk, rk, 1)
    assert entity.metadata["etag"] == created["etag"]

    table.update_entity({"PartitionKey": pk, "RowKey": rk, "V": 2}, UpdateMode.MERGE)
    table.update_entity({"PartitionKey": pk, "RowKey": rk, "V": 3, "W": 4}, UpdateMode.REPLACE)
    assert dict(table.get_entity(pk, rk)) == {"PartitionKey": pk, "RowKey": rk, "V": 3, "W": 4}

    found = list(
        table.query_entities("PartitionKey eq @pk and RowKey eq @rk", parameters={"pk": pk, "rk": rk})
    )
    assert [(e["PartitionKey"], e["RowKey"]) for e in found] == [(pk, rk)]

    table.delete_entity(pk, rk)
    with pytest.raises(ResourceNotFoundError):
        table.get_entity(pk, rk)


def test_payload_timestamp_is_ignored(table):
    old = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "Timestamp": old})
    entity = table.get_entity("p", "r")
    assert "Timestamp" not in entity
    assert entity.metadata["timestamp"].year > 2000
    table.update_entity({"PartitionKey": "p", "RowKey": "r", "Timestamp": old}, UpdateMode.REPLACE)
    assert table.get_entity("p", "r").metadata["timestamp"].year > 2000


def test_lowercase_timestamp_is_an_ordinary_property(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "timestamp": "mine"})
    entity = table.get_entity("p", "r")
    assert entity["timestamp"] == "mine"


def test_timestamp_and_etag_advance_on_every_write(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "N": 0})
    seen = [table.get_entity("p", "r").metadata]
    for n in range(1, 8):
        # Back-to-back writes, often within one 100 ns tick of the clock's resolution.
        if n % 2:
            table.update_entity({"PartitionKey": "p", "RowKey": "r", "N": n}, UpdateMode.MERGE)
        else:
            table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "N": n}, UpdateMode.REPLACE)
        seen.append(table.get_entity("p", "r").metadata)
    stamps = [helpers.ticks(m["timestamp"].tables_service_value) for m in seen]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), stamps
    etags = [m["etag"] for m in seen]
    assert len(set(etags)) == len(etags)
    for meta in seen:
        assert helpers.etag_timestamp(meta["etag"]) == meta["timestamp"].tables_service_value


def test_update_with_the_read_entity_and_its_etag(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1})
    entity = table.get_entity("p", "r")
    entity["A"] = 2
    # TableEntity carries its ETag in metadata: IfNotModified uses it.
    result = table.update_entity(entity, match_condition=MatchConditions.IfNotModified)
    assert result["etag"] != entity.metadata["etag"]
    assert table.get_entity("p", "r")["A"] == 2

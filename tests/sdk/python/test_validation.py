"""Every validation code of data-model.md, sent through azure-data-tables.

Where the SDK cannot put a payload on the wire through its entity API (a property name twice
in one JSON object), the request goes through the SDK's own signed pipeline
(`send_request`) with a hand-written body; the JS suite covers the conversions the Python
SDK refuses client-side (annotated strings for Int32/Int64/Boolean, JSON objects as values).
"""

import json

import pytest
from azure.core.exceptions import HttpResponseError
from azure.core.rest import HttpRequest
from azure.data.tables import EdmType, EntityProperty, UpdateMode

import helpers

MiB = 1024 * 1024


def entity(**props):
    return {"PartitionKey": "p", "RowKey": "r", **props}


def assert_rejected(table, payload, code, write=None):
    """`payload` is refused with 400 `code` and nothing is stored."""
    write = write or table.create_entity
    with pytest.raises(HttpResponseError) as info:
        write(payload)
    helpers.assert_error(info.value, 400, code)
    assert list(table.list_entities()) == []


# Every write operation validates its payload.
WRITES = {
    "insert": lambda t: t.create_entity,
    "upsert-merge": lambda t: lambda e: t.upsert_entity(e, UpdateMode.MERGE),
    "upsert-replace": lambda t: lambda e: t.upsert_entity(e, UpdateMode.REPLACE),
}


# --- PropertiesNeedValue ---------------------------------------------------------------

@pytest.mark.parametrize("missing", ["PartitionKey", "RowKey"])
def test_missing_key_is_properties_need_value(table, missing):
    payload = {"PartitionKey": "p", "RowKey": "r", "A": 1}
    del payload[missing]
    # The SDK recognises the code and raises its own ValueError, wrapping the service error.
    with pytest.raises(ValueError, match=f"{missing} must be present") as info:
        table.create_entity(payload)
    helpers.assert_wrapped_error(info.value, 400, "PropertiesNeedValue")
    assert list(table.list_entities()) == []


# --- KeyValueTooLarge -------------------------------------------------------------------

@pytest.mark.parametrize("key", ["PartitionKey", "RowKey"])
def test_key_over_1024_utf16_units_is_key_value_too_large(table, key):
    at_limit = entity(**{key: "k" * 1024})  # the limit itself is fine
    table.create_entity(at_limit)
    table.delete_entity(at_limit["PartitionKey"], at_limit["RowKey"])
    assert_rejected(table, entity(**{key: "k" * 1025}), "KeyValueTooLarge")


def test_key_length_counts_utf16_units(table):
    # 512 emoji = 1,024 UTF-16 units (2,048 UTF-8 bytes): allowed; one more is too large.
    table.create_entity(entity(RowKey="\U0001f600" * 512))
    table.delete_entity("p", "\U0001f600" * 512)
    assert_rejected(table, entity(RowKey="\U0001f600" * 513), "KeyValueTooLarge")
    assert_rejected(table, entity(RowKey="é" * 1025), "KeyValueTooLarge")


# --- InvalidInput: forbidden key characters, keys that are not strings -------------------

FORBIDDEN = ["/", "\\", "#", "?", "\t", "\n", "\r", "\x00", "\x1f", "\x7f", "\x85", "\x9f"]


@pytest.mark.parametrize("char", FORBIDDEN, ids=[f"U+{ord(c):04X}" for c in FORBIDDEN])
@pytest.mark.parametrize("key", ["PartitionKey", "RowKey"])
def test_forbidden_key_characters_are_invalid_input(table, key, char):
    assert_rejected(table, entity(**{key: f"a{char}b"}), "InvalidInput")


def test_allowed_key_characters_next_to_the_forbidden_ones(table):
    for i, char in enumerate(["\x20", "\x7e", "\xa0", "%", "'", "\"", "*", "|"]):
        table.create_entity(entity(RowKey=f"a{char}b{i}"))
    assert len(list(table.list_entities())) == 8


@pytest.mark.parametrize("value", [5, 1.5, True])
def test_key_that_is_not_a_json_string_is_invalid_input(table, value):
    assert_rejected(table, entity(PartitionKey=value), "InvalidInput")


# --- PropertyNameInvalid / PropertyNameTooLong --------------------------------------------

BAD_NAMES = ["first-name", "9lives", "has space", "dot.ted", "\u0301accent", "a\x07b",
             "\ue000private", "semi;colon", "plus+"]


@pytest.mark.parametrize("name", BAD_NAMES)
@pytest.mark.parametrize("write", list(WRITES))
def test_invalid_property_name_is_property_name_invalid(table, name, write):
    assert_rejected(table, entity(**{name: 1}), "PropertyNameInvalid", WRITES[write](table))


def test_valid_unusual_property_names(table):
    names = ["_", "_x9", "Größe", "日本", "Ωmega", "x" * 255, "timestamp", "ETag"]
    table.create_entity(entity(**{n: i for i, n in enumerate(names)}))
    got = table.get_entity("p", "r")
    assert {n: got[n] for n in names} == {n: i for i, n in enumerate(names)}


def test_property_name_over_255_is_property_name_too_long(table):
    assert_rejected(table, entity(**{"x" * 256: 1}), "PropertyNameTooLong")
    # Counted in UTF-16 units: 128 supplementary letters (𝒜, a letter) = 256 units.
    assert_rejected(table, entity(**{"\U0001d49c" * 128: 1}), "PropertyNameTooLong")


# --- DuplicatePropertiesSpecified -------------------------------------------------------

def test_same_property_twice_is_duplicate_properties_specified(table):
    # A Python dict cannot hold a name twice, so the JSON is written by hand and sent through
    # the SDK's own pipeline (its SharedKey signing, headers and transport).
    body = '{"PartitionKey":"p","RowKey":"r","A":1,"A":2}'
    request = HttpRequest(
        "POST",
        f"{table.url.rstrip('/')}/{table.table_name}",
        content=body.encode(),
        headers={
            "Content-Type": "application/json;odata=nometadata",
            "Accept": "application/json;odata=minimalmetadata",
            "DataServiceVersion": "3.0",
            "x-ms-version": "2019-02-02",
        },
    )
    response = table._client._client.send_request(request)  # pylint: disable=protected-access
    assert response.status_code == 400, response.text()
    assert response.headers.get("x-ms-error-code") == "DuplicatePropertiesSpecified"
    assert json.loads(response.text())["odata.error"]["code"] == "DuplicatePropertiesSpecified"
    assert list(table.list_entities()) == []


# --- TooManyProperties ------------------------------------------------------------------

def test_252_custom_properties_is_the_limit(table):
    table.create_entity(entity(**{f"P{i:03d}": i for i in range(252)}))
    assert len(table.get_entity("p", "r")) == 254  # + PartitionKey, RowKey
    table.delete_entity("p", "r")
    assert_rejected(table, entity(**{f"P{i:03d}": i for i in range(253)}), "TooManyProperties")


def test_merge_that_grows_past_252_properties_is_too_many_properties(table):
    table.create_entity(entity(**{f"A{i:03d}": i for i in range(200)}))
    with pytest.raises(HttpResponseError) as info:
        table.update_entity(entity(**{f"B{i:03d}": i for i in range(53)}), UpdateMode.MERGE)
    helpers.assert_error(info.value, 400, "TooManyProperties")
    assert len(table.get_entity("p", "r")) == 202


# --- PropertyValueTooLarge --------------------------------------------------------------

def test_string_over_32k_utf16_units_is_property_value_too_large(table):
    table.create_entity(entity(S="s" * 32 * 1024))
    table.delete_entity("p", "r")
    assert_rejected(table, entity(S="s" * (32 * 1024 + 1)), "PropertyValueTooLarge")
    # UTF-16 units, not bytes: 16 K emoji are 32 K units and fine, one more is too large.
    table.create_entity(entity(S="\U0001f600" * 16 * 1024))
    table.delete_entity("p", "r")
    assert_rejected(table, entity(S="\U0001f600" * (16 * 1024) + "x"), "PropertyValueTooLarge")


def test_binary_over_64_kib_is_property_value_too_large(table):
    table.create_entity(entity(B=b"\xab" * 64 * 1024))
    assert table.get_entity("p", "r")["B"] == b"\xab" * 64 * 1024
    table.delete_entity("p", "r")
    assert_rejected(table, entity(B=b"\xab" * (64 * 1024 + 1)), "PropertyValueTooLarge")


# --- EntityTooLarge ---------------------------------------------------------------------

def sized_entity(total):
    """An entity whose size by the data-model formula is exactly `total` bytes: 4 + 2 + 2
    for the keys "p"/"r", then Binary properties B00.. of 8 + 6 + (len + 4) bytes each."""
    props, remaining = {}, total - 8
    i = 0
    while remaining > 0:
        overhead = 8 + 3 * 2 + 4
        size = min(64 * 1024, remaining - overhead)
        assert size >= 0
        props[f"B{i:02d}"] = b"\x00" * size
        remaining -= overhead + size
        i += 1
    assert remaining == 0
    return entity(**props)


def test_entity_of_exactly_1_mib_is_accepted_one_byte_more_is_entity_too_large(table):
    table.create_entity(sized_entity(MiB))
    assert sum(len(v) for k, v in table.get_entity("p", "r").items() if k.startswith("B")) > 1_000_000
    table.delete_entity("p", "r")
    assert_rejected(table, sized_entity(MiB + 1), "EntityTooLarge")


def test_merge_that_grows_past_1_mib_is_entity_too_large(table):
    table.create_entity(sized_entity(MiB - 20))
    with pytest.raises(HttpResponseError) as info:
        # + 8 + 2·2 + (4 + 4) = 20 bytes fits exactly; a second such property does not.
        table.update_entity(entity(Z1=b"\x01" * 4, Z2=b"\x01" * 4), UpdateMode.MERGE)
    helpers.assert_error(info.value, 400, "EntityTooLarge")
    table.update_entity(entity(Z1=b"\x01" * 4), UpdateMode.MERGE)
    assert table.get_entity("p", "r")["Z1"] == b"\x01" * 4


# --- OutOfRangeInput (DateTime) and InvalidInput (values) ------------------------------

@pytest.mark.parametrize(
    "text",
    ["1600-12-31T23:59:59.9999999Z", "0001-01-01T00:00:00Z", "1601-01-01T00:30:00+01:00"],
)
def test_datetime_before_1601_is_out_of_range_input(table, text):
    # The SDK passes a string annotated as DateTime through unchanged.
    assert_rejected(table, entity(D=EntityProperty(text, EdmType.DATETIME)), "OutOfRangeInput")


def test_datetime_after_9999_is_out_of_range_input(table):
    text = "9999-12-31T23:59:59.9999999-00:01"  # 10000-01-01T00:00:59.9999999Z
    assert_rejected(table, entity(D=EntityProperty(text, EdmType.DATETIME)), "OutOfRangeInput")


@pytest.mark.parametrize(
    "value",
    [
        EntityProperty("2013-08-02", EdmType.DATETIME),  # date only
        EntityProperty("2013-08-02T17:37Z", EdmType.DATETIME),  # no seconds
        EntityProperty("2013-08-02 17:37:43Z", EdmType.DATETIME),  # space, not T
        EntityProperty("2013-08-02T17:37:43.12345678Z", EdmType.DATETIME),  # 8 digits
        EntityProperty("yesterday", EdmType.DATETIME),
        EntityProperty("a455c695df985678aaaa81d3367e5a34", EdmType.GUID),  # undashed
        EntityProperty("{a455c695-df98-5678-aaaa-81d3367e5a34}", EdmType.GUID),
        EntityProperty("not-a-guid", EdmType.GUID),
        EntityProperty("abc", EdmType.DOUBLE),
        EntityProperty("1e400", EdmType.DOUBLE),  # overflow
        EntityProperty("nan", EdmType.DOUBLE),  # only the exact NaN
    ],
    ids=lambda p: f"{p.edm_type.value}:{p.value}",
)
def test_value_that_does_not_convert_is_invalid_input(table, value):
    assert_rejected(table, entity(V=value), "InvalidInput")


def test_every_code_is_checked_on_merge_and_replace_too(table):
    table.create_entity(entity(A=1))
    for payload, code in [
        (entity(**{"bad-name": 1}), "PropertyNameInvalid"),
        (entity(**{"x" * 256: 1}), "PropertyNameTooLong"),
        (entity(S="s" * (32 * 1024 + 1)), "PropertyValueTooLarge"),
        (entity(D=EntityProperty("1600-01-01T00:00:00Z", EdmType.DATETIME)), "OutOfRangeInput"),
        (entity(G=EntityProperty("nope", EdmType.GUID)), "InvalidInput"),
    ]:
        for mode in (UpdateMode.MERGE, UpdateMode.REPLACE):
            with pytest.raises(HttpResponseError) as info:
                table.update_entity(payload, mode)
            helpers.assert_error(info.value, 400, code)
    assert dict(table.get_entity("p", "r")) == entity(A=1)

"""The eight Edm types round-tripping through azure-data-tables, read back by get *and* by
query (data-model.md "Types (Edm)")."""

import datetime
import math
import uuid

import pytest
from azure.data.tables import EdmType, EntityProperty, UpdateMode

UTC = datetime.timezone.utc
GUID = uuid.UUID("a455c695-df98-5678-aaaa-81d3367e5a34")
ALL_BYTES = bytes(range(256))


def written_entity():
    """One entity holding every type, in the forms the SDK sends."""
    return {
        "PartitionKey": "types",
        "RowKey": "all",
        # Edm.String
        "Str": "héllo, wörld ✓ 😀",
        "StrEmpty": "",
        "StrControl": "tab\there\nnew line\x01",  # control characters are fine in values
        "StrNumeric": "12345",  # stays a String
        # Edm.Int32
        "I32": 42,
        "I32Min": -(2**31),
        "I32Max": 2**31 - 1,
        # Edm.Int64 (annotated decimal string)
        "I64": EntityProperty(2**53 + 1, EdmType.INT64),
        "I64Min": EntityProperty(-(2**63), EdmType.INT64),
        "I64Max": EntityProperty(2**63 - 1, EdmType.INT64),
        "I64Small": EntityProperty(7, EdmType.INT64),  # small, still Int64
        # Edm.Double
        "Dbl": 3.25,
        "DblWhole": 5.0,  # must come back as a float, not an int
        "DblTiny": 5e-324,
        "DblHuge": 1.7976931348623157e308,
        "DblNeg": -0.1,
        "DblNaN": float("nan"),
        "DblInf": float("inf"),
        "DblNegInf": float("-inf"),
        # Edm.Boolean
        "BoolT": True,
        "BoolF": False,
        # Edm.DateTime
        "Dt": datetime.datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC),
        "Dt7": EntityProperty("2013-08-02T17:37:43.9004348Z", EdmType.DATETIME),
        "DtMin": EntityProperty("1601-01-01T00:00:00Z", EdmType.DATETIME),
        "DtMax": EntityProperty("9999-12-31T23:59:59.9999999Z", EdmType.DATETIME),
        # Edm.Guid
        "Guid": GUID,
        "GuidUpper": EntityProperty(str(GUID).upper(), EdmType.GUID),
        # Edm.Binary
        "Bin": ALL_BYTES,
        "BinEmpty": b"",
        "BinOne": b"\x00",
    }


# name -> (expected Python value, expected type); the DateTime service text is checked apart.
EXPECTED = {
    "Str": ("héllo, wörld ✓ 😀", str),
    "StrEmpty": ("", str),
    "StrControl": ("tab\there\nnew line\x01", str),
    "StrNumeric": ("12345", str),
    "I32": (42, int),
    "I32Min": (-(2**31), int),
    "I32Max": (2**31 - 1, int),
    "I64": (EntityProperty(2**53 + 1, EdmType.INT64), EntityProperty),
    "I64Min": (EntityProperty(-(2**63), EdmType.INT64), EntityProperty),
    "I64Max": (EntityProperty(2**63 - 1, EdmType.INT64), EntityProperty),
    "I64Small": (EntityProperty(7, EdmType.INT64), EntityProperty),
    "Dbl": (3.25, float),
    "DblWhole": (5.0, float),
    "DblTiny": (5e-324, float),
    "DblHuge": (1.7976931348623157e308, float),
    "DblNeg": (-0.1, float),
    "DblInf": (float("inf"), float),
    "DblNegInf": (float("-inf"), float),
    "BoolT": (True, bool),
    "BoolF": (False, bool),
    "Guid": (GUID, uuid.UUID),
    "GuidUpper": (GUID, uuid.UUID),
    "Bin": (ALL_BYTES, bytes),
    "BinEmpty": (b"", bytes),
    "BinOne": (b"\x00", bytes),
}

# DateTime properties: the exact service text (7 digits, trailing zeros dropped, UTC).
EXPECTED_DATETIME_TEXT = {
    "Dt": "2024-02-29T23:59:58.123456Z",
    "Dt7": "2013-08-02T17:37:43.9004348Z",
    "DtMin": "1601-01-01T00:00:00Z",
    "DtMax": "9999-12-31T23:59:59.9999999Z",
}


def check_entity(entity):
    names = set(EXPECTED) | set(EXPECTED_DATETIME_TEXT) | {"DblNaN", "PartitionKey", "RowKey"}
    assert set(entity) == names
    for name, (value, kind) in EXPECTED.items():
        got = entity[name]
        assert type(got) is kind, f"{name}: {got!r} is a {type(got).__name__}, expected {kind.__name__}"
        assert got == value, f"{name}: {got!r} != {value!r}"
    assert math.isnan(entity["DblNaN"])
    assert math.copysign(1.0, entity["DblNeg"]) == -1.0
    for name, text in EXPECTED_DATETIME_TEXT.items():
        got = entity[name]
        assert isinstance(got, datetime.datetime), f"{name}: {got!r}"
        assert got.tzinfo is not None and got.utcoffset() == datetime.timedelta(0)
        # TablesEntityDatetime keeps the service's text with its 7 digits.
        assert got.tables_service_value == text, f"{name}: {got.tables_service_value!r}"
    assert entity["Dt"] == datetime.datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)


def test_every_type_round_trips_through_get_and_query(table):
    table.create_entity(written_entity())
    check_entity(table.get_entity("types", "all"))

    queried = list(table.query_entities("PartitionKey eq 'types' and RowKey eq 'all'"))
    assert len(queried) == 1
    check_entity(queried[0])

    listed = list(table.list_entities())
    assert len(listed) == 1
    check_entity(listed[0])


def test_values_read_back_write_back_unchanged(table):
    # What the SDK read (EntityProperty, TablesEntityDatetime with 7 digits, UUID, bytes,
    # non-finite floats) written back by replace and upsert is the same entity.
    table.create_entity(written_entity())
    entity = table.get_entity("types", "all")
    table.update_entity(entity, UpdateMode.REPLACE)
    check_entity(table.get_entity("types", "all"))
    table.upsert_entity(table.get_entity("types", "all"), UpdateMode.MERGE)
    check_entity(table.get_entity("types", "all"))


def test_every_type_round_trips_through_merge(table):
    table.create_entity({"PartitionKey": "types", "RowKey": "all", "Extra": "kept"})
    table.update_entity(written_entity(), UpdateMode.MERGE)
    entity = table.get_entity("types", "all")
    assert entity.pop("Extra") == "kept"
    check_entity(entity)


@pytest.mark.parametrize(
    "name, literal",
    [
        ("Str", "'héllo, wörld ✓ 😀'"),
        ("I32", "42"),
        ("I32Min", "-2147483648"),
        ("I64", f"{2**53 + 1}L"),
        ("I64Min", f"{-(2**63)}L"),
        ("Dbl", "3.25"),
        ("DblWhole", "5.0"),
        ("DblInf", "INF"),
        ("DblNegInf", "-INF"),
        ("BoolT", "true"),
        ("BoolF", "false"),
        ("Dt7", "datetime'2013-08-02T17:37:43.9004348Z'"),
        ("Dt", "datetime'2024-02-29T23:59:58.123456Z'"),
        ("DtMax", "datetime'9999-12-31T23:59:59.9999999Z'"),
        ("Guid", "guid'a455c695-df98-5678-aaaa-81d3367e5a34'"),
        ("GuidUpper", "guid'A455C695-DF98-5678-AAAA-81D3367E5A34'"),
        ("BinOne", "X'00'"),
        ("Bin", "binary'" + ALL_BYTES.hex() + "'"),
    ],
)
def test_each_type_is_found_by_an_equality_filter(table, name, literal):
    table.create_entity(written_entity())
    # Lacks the property: a comparison on it is false.
    table.create_entity({"PartitionKey": "types", "RowKey": "other", "Unrelated": 1})
    found = list(table.query_entities(f"{name} eq {literal}"))
    assert [e["RowKey"] for e in found] == ["all"]
    check_entity(found[0])


def test_nan_equals_nothing_and_is_not_equal_to_everything(table):
    table.create_entity({"PartitionKey": "p", "RowKey": "nan", "D": float("nan")})
    table.create_entity({"PartitionKey": "p", "RowKey": "one", "D": 1.0})
    assert list(table.query_entities("D eq NaN")) == []
    assert [e["RowKey"] for e in table.query_entities("D ne NaN")] == ["nan", "one"]
    assert [e["RowKey"] for e in table.query_entities("D ne 1.0")] == ["nan"]


@pytest.mark.parametrize(
    "sent, stored",
    [
        ("2013-08-02T19:37:43.5+02:00", "2013-08-02T17:37:43.5Z"),  # offsets become UTC
        ("2013-08-02T15:07:43.5-02:30", "2013-08-02T17:37:43.5Z"),
        ("2013-08-02T17:37:43", "2013-08-02T17:37:43Z"),  # no offset = UTC
        ("2013-08-02T17:37:43.0000000Z", "2013-08-02T17:37:43Z"),  # trailing zeros dropped
        ("2013-08-02T17:37:43.120Z", "2013-08-02T17:37:43.12Z"),
        ("2013-08-02T17:37:43.0000001Z", "2013-08-02T17:37:43.0000001Z"),
    ],
)
def test_datetime_input_forms_are_normalised_to_utc(table, sent, stored):
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "D": EntityProperty(sent, EdmType.DATETIME)})
    assert table.get_entity("p", "r")["D"].tables_service_value == stored
    found = list(table.query_entities(f"D eq datetime'{stored}'"))
    assert [e["D"].tables_service_value for e in found] == [stored]

"""Queries through azure-data-tables: `query_entities` with parameters, `$select` (also of
missing properties), paging across pages, order, and the semantics and errors of query.md."""

import datetime
import uuid

import pytest
from azure.core.exceptions import HttpResponseError
from azure.data.tables import EdmType, EntityProperty

import helpers

UTC = datetime.timezone.utc


def keys(entities):
    return [(e["PartitionKey"], e["RowKey"]) for e in entities]


def row_keys(entities):
    return [e["RowKey"] for e in entities]


@pytest.fixture
def people(table):
    rows = [
        {"RowKey": "01", "Name": "Ada", "Age": 36, "Score": 9.5, "Active": True,
         "Born": datetime.datetime(1815, 12, 10, tzinfo=UTC),
         "Id": uuid.UUID("00000000-0000-0000-0000-000000000001"),
         "Blob": b"\x01\x02", "Big": EntityProperty(2**40, EdmType.INT64)},
        {"RowKey": "02", "Name": "O'Brien", "Age": 51, "Score": 7.25, "Active": False,
         "Born": datetime.datetime(1970, 1, 1, 12, 30, tzinfo=UTC),
         "Id": uuid.UUID("00000000-0000-0000-0000-000000000002"),
         "Blob": b"\xff", "Big": EntityProperty(-5, EdmType.INT64)},
        {"RowKey": "03", "Name": "Grace", "Age": 85, "Score": 10.0, "Active": True,
         "Born": datetime.datetime(1906, 12, 9, tzinfo=UTC),
         "Id": uuid.UUID("00000000-0000-0000-0000-000000000003"),
         "Blob": b"", "Big": EntityProperty(2**62, EdmType.INT64)},
        {"RowKey": "04", "Name": "NoAge"},  # lacks most properties
    ]
    for row in rows:
        table.create_entity(dict(row, PartitionKey="people"))
    return table


@pytest.mark.parametrize(
    "query, parameters, expected",
    [
        ("Name eq @n", {"n": "O'Brien"}, ["02"]),  # the SDK doubles the quote
        ("Age gt @a", {"a": 40}, ["02", "03"]),
        ("Age ge @lo and Age lt @hi", {"lo": 36, "hi": 85}, ["01", "02"]),
        ("Score le @s", {"s": 9.5}, ["01", "02"]),
        ("Active eq @b", {"b": True}, ["01", "03"]),
        ("Active eq @b", {"b": False}, ["02"]),
        ("Born lt @d", {"d": datetime.datetime(1900, 1, 1, tzinfo=UTC)}, ["01"]),
        ("Born eq @d", {"d": datetime.datetime(1970, 1, 1, 12, 30, tzinfo=UTC)}, ["02"]),
        ("Id eq @g", {"g": uuid.UUID("00000000-0000-0000-0000-000000000003")}, ["03"]),
        ("Blob eq @x", {"x": b"\xff"}, ["02"]),
        ("Big gt @big", {"big": 2**41}, ["03"]),  # the SDK appends L to a large int
        ("Big eq @big", {"big": 2**40}, ["01"]),
        ("PartitionKey eq @pk and RowKey ge @rk", {"pk": "people", "rk": "03"}, ["03", "04"]),
        ("Name ne @n", {"n": "Ada"}, ["02", "03", "04"]),
    ],
)
def test_query_entities_with_parameters(people, query, parameters, expected):
    assert row_keys(people.query_entities(query, parameters=parameters)) == expected


def test_filters_combine_and_or_not(people):
    assert row_keys(people.query_entities("Age lt 40 or Age gt 80")) == ["01", "03"]
    assert row_keys(people.query_entities("(Age lt 40 or Age gt 80) and Active eq true")) == ["01", "03"]
    assert row_keys(people.query_entities("Active")) == ["01", "03"]  # bare boolean = eq true
    assert row_keys(people.query_entities("30 lt Age and not (Name eq 'Grace')")) == ["01", "02"]


def test_missing_property_semantics(people):
    # A comparison on a missing property is false for every operator, `ne` included ...
    assert row_keys(people.query_entities("Age ne 36")) == ["02", "03"]
    # ... and `not` negates normally, so it returns the entity that lacks Age.
    assert row_keys(people.query_entities("not (Age eq 36)")) == ["02", "03", "04"]


def test_numeric_literals_widen_to_the_property_type(people):
    # An Int32 literal compares by value with Int64 and Double properties.
    assert row_keys(people.query_entities("Big eq -5")) == ["02"]
    assert row_keys(people.query_entities("Score eq 10")) == ["03"]
    # An Int64 literal against an Int32 property is a type mismatch: property < literal.
    assert row_keys(people.query_entities("Age eq 36L")) == []
    assert row_keys(people.query_entities("Age lt 1L")) == ["01", "02", "03"]


def test_select_returns_only_the_selected_properties_and_null_for_missing(people):
    entities = list(people.query_entities("PartitionKey eq 'people'", select=["Name", "Age", "Nope"]))
    assert [dict(e) for e in entities] == [
        {"Name": "Ada", "Age": 36, "Nope": None},
        {"Name": "O'Brien", "Age": 51, "Nope": None},
        {"Name": "Grace", "Age": 85, "Nope": None},
        {"Name": "NoAge", "Age": None, "Nope": None},
    ]
    for entity in entities:
        helpers.etag_timestamp(entity.metadata["etag"])


def test_select_keeps_types_and_keys_when_named(people):
    entities = list(people.list_entities(select="RowKey,Big,Born,Missing"))
    assert entities[0]["Big"] == EntityProperty(2**40, EdmType.INT64)
    assert entities[0]["Born"].tables_service_value == "1815-12-10T00:00:00Z"
    assert [dict(e)["RowKey"] for e in entities] == ["01", "02", "03", "04"]
    assert all(e["Missing"] is None for e in entities)
    assert entities[3]["Big"] is None and "PartitionKey" not in entities[3]


def test_get_entity_select_of_a_missing_property_is_none(people):
    entity = people.get_entity("people", "04", select=["Name", "Age"])
    assert dict(entity) == {"Name": "NoAge", "Age": None}


def insert_rows(table, count, partitions=3):
    expected = []
    for i in range(count):
        pk, rk = f"p{i % partitions}", f"r{i:04d}"
        table.upsert_entity({"PartitionKey": pk, "RowKey": rk, "N": i})
        expected.append((pk, rk))
    return sorted(expected)


def test_list_entities_pages_across_partitions(table):
    expected = insert_rows(table, 25)
    pages = [keys(page) for page in table.list_entities(results_per_page=7).by_page()]
    assert [len(p) for p in pages] == [7, 7, 7, 4]
    assert [k for page in pages for k in page] == expected


def test_query_entities_pages_with_a_residual_filter(table):
    insert_rows(table, 40, partitions=4)
    expected = sorted((f"p{i % 4}", f"r{i:04d}") for i in range(5, 35) if i % 4 != 2)
    pager = table.query_entities(
        "N ge @lo and N lt @hi and PartitionKey ne 'p2'",
        parameters={"lo": 5, "hi": 35},
        results_per_page=5,
    )
    pages = [keys(page) for page in pager.by_page()]
    assert len(pages) >= 3
    assert all(len(page) <= 5 for page in pages)
    assert [k for page in pages for k in page] == expected


def test_paging_resumes_from_a_continuation_token(table):
    expected = insert_rows(table, 12, partitions=2)
    first = table.list_entities(results_per_page=4).by_page()
    page = keys(next(first))
    token = first.continuation_token
    assert page == expected[:4] and token
    # A new pager started from the token yields exactly the rest.
    rest = table.list_entities(results_per_page=4).by_page(continuation_token=token)
    assert [k for p in rest for k in keys(p)] == expected[4:]


def test_paging_is_stable_under_writes_between_pages(table):
    expected = insert_rows(table, 15, partitions=1)
    pages = table.query_entities("PartitionKey eq 'p0'", results_per_page=5).by_page()
    first = keys(next(pages))
    assert first == expected[:5]
    # Between pages: insert before the continuation (never revisited), insert after it,
    # delete one that was not returned yet.
    table.create_entity({"PartitionKey": "p0", "RowKey": "r0000a", "N": -1})
    table.create_entity({"PartitionKey": "p0", "RowKey": "r9999", "N": 99})
    table.delete_entity("p0", "r0010")
    rest = [k for page in pages for k in keys(page)]
    assert rest == [k for k in expected[5:] if k != ("p0", "r0010")] + [("p0", "r9999")]


def test_results_come_in_utf16_ordinal_key_order(table):
    # U+FF5E sorts after a supplementary-plane character in UTF-8 but before it in UTF-16.
    row_keys_in = ["a", "B", "~", "\uff5e", "\U0001f600", "\u00e9", "", "ab"]
    for rk in row_keys_in:
        table.create_entity({"PartitionKey": "p", "RowKey": rk})
    for pk in ["\uff5e", "\U0001f600", "Z"]:
        table.create_entity({"PartitionKey": pk, "RowKey": "x"})
    utf16 = lambda s: s.encode("utf-16-be")  # noqa: E731
    expected = sorted([("p", rk) for rk in row_keys_in] + [(pk, "x") for pk in ["\uff5e", "\U0001f600", "Z"]],
                      key=lambda k: (utf16(k[0]), utf16(k[1])))
    assert keys(table.list_entities()) == expected
    assert keys(table.list_entities(results_per_page=2)) == expected
    ranged = table.query_entities("PartitionKey eq 'p' and RowKey gt @lo", parameters={"lo": "\U0001f600"})
    assert [rk for _, rk in keys(ranged)] == ["\uff5e"]


@pytest.mark.parametrize(
    "query",
    [
        "Age EQ 5",  # keywords are lowercase
        "Age eq",
        "Age eq 'unterminated",
        "startswith(Name, 'A')",  # functions are unsupported
        "Age eq null",
        "Age eq Score",  # property vs property
        "Age eq 2147483648",  # Int32 literal out of range
    ],
)
def test_invalid_filters_are_invalid_input(people, query):
    with pytest.raises(HttpResponseError) as info:
        list(people.query_entities(query))
    helpers.assert_error(info.value, 400, "InvalidInput")


def test_at_most_15_comparisons(people):
    fifteen = " or ".join(f"Age eq {n}" for n in range(15))
    assert list(people.query_entities(fifteen)) == []
    with pytest.raises(HttpResponseError) as info:
        list(people.query_entities(fifteen + " or Age eq 36"))
    helpers.assert_error(info.value, 400, "InvalidInput")


@pytest.mark.parametrize("top", [0, 1001])
def test_top_outside_1_to_1000_is_invalid_input(people, top):
    with pytest.raises(HttpResponseError) as info:
        next(people.list_entities(results_per_page=top).by_page())  # the first request only
    helpers.assert_error(info.value, 400, "InvalidInput")


def test_top_1000_is_allowed(people):
    assert len(list(people.list_entities(results_per_page=1000))) == 4

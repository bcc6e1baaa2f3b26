"""Tables through azure-data-tables: create, list, query, delete, case rules, invalid names
(data-model.md "Table names", rest.md "Resources")."""

import pytest
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError

import helpers

# The SDK turns the service's two table-name errors into this ValueError (rest.md).
SDK_NAME_MESSAGE = "Storage table names must be alphanumeric"


def test_create_returns_the_table_and_list_shows_it(service):
    name = helpers.unique_name("Created")
    try:
        client = service.create_table(name)
        assert client.table_name == name
        assert name in [t.name for t in service.list_tables()]
    finally:
        service.delete_table(name)
    assert name not in [t.name for t in service.list_tables()]


def test_table_names_are_case_insensitive_and_keep_their_case(service):
    name = helpers.unique_name("MiXeD")
    service.create_table(name)
    try:
        # The same name in another case is the same table: creating it again conflicts.
        with pytest.raises(ResourceExistsError) as info:
            service.create_table(name.lower())
        helpers.assert_error(info.value, 409, "TableAlreadyExists")
        with pytest.raises(ResourceExistsError) as info:
            service.create_table(name.upper())
        helpers.assert_error(info.value, 409, "TableAlreadyExists")

        # Lookups ignore case: write through one spelling, read through another.
        service.get_table_client(name.upper()).create_entity({"PartitionKey": "p", "RowKey": "r"})
        assert service.get_table_client(name.lower()).get_entity("p", "r")["RowKey"] == "r"

        # The case given at creation is what listing returns.
        listed = [t.name for t in service.query_tables("TableName eq @n", parameters={"n": name})]
        assert listed == [name]
        assert name in [t.name for t in service.list_tables()]
    finally:
        # Deleting through another case deletes the table.
        service.delete_table(name.lower())
    assert name not in [t.name for t in service.list_tables()]


def test_create_existing_table_conflicts(service, table):
    with pytest.raises(ResourceExistsError) as info:
        service.create_table(table.table_name)
    helpers.assert_error(info.value, 409, "TableAlreadyExists")
    # The TableClient spelling of the same call.
    with pytest.raises(ResourceExistsError) as info:
        table.create_table()
    helpers.assert_error(info.value, 409, "TableAlreadyExists")


@pytest.mark.parametrize(
    "name, code",
    [
        ("my_table", "InvalidResourceName"),  # '_' is not a letter or digit
        ("my-table", "InvalidResourceName"),
        ("1abc", "InvalidResourceName"),  # must start with a letter
        ("9" * 10, "InvalidResourceName"),
        ("Täble", "InvalidResourceName"),  # letters are ASCII only
        ("ab", "OutOfRangeInput"),  # 3..63 long
        ("a" * 64, "OutOfRangeInput"),
    ],
)
def test_invalid_table_names_raise_the_sdks_value_error(service, name, code):
    # The SDK recognises the service's code + message and raises its own ValueError; the
    # service error it wraps tells the two codes apart.
    with pytest.raises(ValueError, match=SDK_NAME_MESSAGE) as info:
        service.create_table(name)
    helpers.assert_wrapped_error(info.value, 400, code)
    assert name not in [t.name for t in service.list_tables()]


@pytest.mark.parametrize("name", ["abc", "Z9z", helpers.unique_name("A").ljust(63, "9")])
def test_boundary_table_names_are_valid(service, name):
    service.create_table(name)
    try:
        assert name in [t.name for t in service.list_tables()]
    finally:
        service.delete_table(name)


@pytest.mark.parametrize("name", ["tables", "Tables", "TABLES"])
def test_reserved_name_tables_is_invalid_resource_name(service, name):
    # Syntactically valid, so the SDK does not turn it into a ValueError (decided:
    # 400 InvalidResourceName).
    with pytest.raises(HttpResponseError) as info:
        service.create_table(name)
    helpers.assert_error(info.value, 400, "InvalidResourceName")


def test_delete_table_missing_is_404_resource_not_found(service):
    # The SDK swallows the 404 of delete_table; the recorded response shows it.
    recorder = helpers.Recorder()
    service.delete_table(helpers.unique_name("Missing"), raw_response_hook=recorder)
    assert (recorder.last["status"], recorder.last["code"]) == (404, "ResourceNotFound")


def test_entity_operations_on_a_missing_table_are_table_not_found(service):
    missing = service.get_table_client(helpers.unique_name("Missing"))
    with pytest.raises(ResourceNotFoundError) as info:
        missing.create_entity({"PartitionKey": "p", "RowKey": "r"})
    helpers.assert_error(info.value, 404, "TableNotFound")
    with pytest.raises(ResourceNotFoundError) as info:
        missing.get_entity("p", "r")
    helpers.assert_error(info.value, 404, "TableNotFound")
    with pytest.raises(ResourceNotFoundError) as info:
        list(missing.query_entities("PartitionKey eq 'p'"))
    helpers.assert_error(info.value, 404, "TableNotFound")
    with pytest.raises(ResourceNotFoundError) as info:
        missing.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
    helpers.assert_error(info.value, 404, "TableNotFound")


def test_query_tables_by_name_filters(service):
    prefix = helpers.unique_name("Qt")
    names = [f"{prefix}{suffix}" for suffix in ("a", "b", "c")]
    for name in names:
        service.create_table(name)
    try:
        exact = service.query_tables("TableName eq @name", parameters={"name": names[1]})
        assert [t.name for t in exact] == [names[1]]

        # A name range: everything that starts with the prefix.
        ranged = service.query_tables(
            "TableName ge @lo and TableName lt @hi",
            parameters={"lo": prefix, "hi": prefix + "z"},
        )
        assert sorted(t.name for t in ranged) == names

        either = service.query_tables(
            "TableName eq @x or TableName eq @y", parameters={"x": names[0], "y": names[2]}
        )
        assert sorted(t.name for t in either) == [names[0], names[2]]

        assert list(service.query_tables("TableName eq 'nosuchtable0'")) == []
    finally:
        for name in names:
            service.delete_table(name)


def test_query_tables_pages_with_next_table_name(service):
    prefix = helpers.unique_name("Pg")
    names = [f"{prefix}{i}" for i in range(7)]
    for name in names:
        service.create_table(name)
    try:
        pages = [
            [t.name for t in page]
            for page in service.query_tables(
                "TableName ge @lo and TableName lt @hi",
                parameters={"lo": prefix, "hi": prefix + "z"},
                results_per_page=2,
            ).by_page()
        ]
        assert len(pages) >= 4, pages
        assert all(len(page) <= 2 for page in pages), pages
        found = [name for page in pages for name in page]
        assert sorted(found) == names
        assert len(found) == len(set(found)), "a table was returned twice across pages"

        listed = [t.name for page in service.list_tables(results_per_page=3).by_page() for t in page]
        assert set(names) <= set(listed)
        assert len(listed) == len(set(listed)), "list_tables repeated a table across pages"
    finally:
        for name in names:
            service.delete_table(name)

"""The legacy Python client `azure-cosmosdb-table` 1.0.6 against `tableq serve`.

Every operation the client offers: tables (create, exists, list with paging, delete), entities
of all eight EDM types (insert, get, replace and merge with ETags, insert-or-replace,
insert-or-merge, delete), batches, queries with paging and projection, full metadata,
service properties and stats, table ACLs, table and account SAS — and the exact error codes
of the failures it can provoke. Run by `scripts/compat-tests.sh` with
`TABLEQ_COMPAT_ENDPOINT=http://127.0.0.1:PORT/devstoreaccount1`.
"""

import datetime
import os
import uuid

import pytest
from azure.common import AzureConflictHttpError, AzureHttpError, AzureMissingResourceHttpError
from azure.cosmosdb.table.common.models import (
    AccessPolicy,
    AccountPermissions,
    CorsRule,
    Logging,
    Metrics,
    ResourceTypes,
    RetentionPolicy,
)
from azure.cosmosdb.table.models import (
    AzureBatchOperationError,
    EdmType,
    Entity,
    EntityProperty,
    TablePayloadFormat,
    TablePermissions,
)
from azure.cosmosdb.table.tablebatch import TableBatch
from azure.cosmosdb.table.tableservice import TableService

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
WRONG_KEY = "A" * 86 + "=="
UTC = datetime.timezone.utc


def endpoint():
    value = os.environ.get("TABLEQ_COMPAT_ENDPOINT")
    if not value:
        pytest.fail("TABLEQ_COMPAT_ENDPOINT is not set: run scripts/compat-tests.sh")
    return value.rstrip("/")


def no_retries(service):
    service.retry = lambda context: None
    return service


def make_service(key=KEY):
    ep = endpoint()
    conn = (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={key};"
        f"TableEndpoint={ep};TableSecondaryEndpoint={ep}-secondary;"
    )
    return no_retries(TableService(connection_string=conn))


def sas_service(token):
    conn = f"TableEndpoint={endpoint()};SharedAccessSignature={token}"
    return no_retries(TableService(connection_string=conn))


def name(tag="t"):
    return f"pyl{tag}{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def svc():
    return make_service()


@pytest.fixture
def table(svc):
    t = name()
    assert svc.create_table(t, fail_on_exist=True) is True
    yield t
    svc.delete_table(t)


def error_code(excinfo):
    return getattr(excinfo.value, "error_code", None)


def expect_error(status, code, fn, *args, **kwargs):
    with pytest.raises(AzureHttpError) as excinfo:
        fn(*args, **kwargs)
    assert excinfo.value.status_code == status, str(excinfo.value)
    assert error_code(excinfo) == code, str(excinfo.value)
    return excinfo.value


def all_types_entity(pk, rk):
    return {
        "PartitionKey": pk,
        "RowKey": rk,
        "Str": "héllo 'quoted' \u00e9",
        "I32": EntityProperty(EdmType.INT32, -2147483648),
        "I64": 9007199254740993,  # a Python int is sent as Edm.Int64
        "Dbl": 3.25,
        "Flag": True,
        # the client writes whole seconds ('%Y-%m-%dT%H:%M:%SZ')
        "When": datetime.datetime(2021, 6, 9, 1, 17, 8, tzinfo=UTC),
        "Id": EntityProperty(EdmType.GUID, "c9da6455-213d-42c9-9a79-3e9149a57833"),
        "Bytes": EntityProperty(EdmType.BINARY, b"\x00\x01\xfe\xff"),
    }


def check_all_types(e):
    assert e.PartitionKey == "p" and e.RowKey == "r1"
    assert e.Str == "héllo 'quoted' \u00e9"
    assert isinstance(e.I32, EntityProperty) and e.I32.type == EdmType.INT32
    assert e.I32.value == -2147483648
    assert e.I64 == 9007199254740993 and type(e.I64) is int
    assert e.Dbl == 3.25 and type(e.Dbl) is float
    assert e.Flag is True
    assert e.When == datetime.datetime(2021, 6, 9, 1, 17, 8, tzinfo=UTC)
    assert isinstance(e.Id, EntityProperty) and e.Id.type == EdmType.GUID
    assert e.Id.value == "c9da6455-213d-42c9-9a79-3e9149a57833"
    assert isinstance(e.Bytes, EntityProperty) and e.Bytes.type == EdmType.BINARY
    assert e.Bytes.value == b"\x00\x01\xfe\xff"
    assert isinstance(e.Timestamp, datetime.datetime)
    assert e.etag.startswith("W/\"datetime'")


# --- tables ------------------------------------------------------------------------------


def test_tables_create_exists_list_delete(svc):
    names = sorted(name("list") for _ in range(3))
    for t in names:
        assert svc.create_table(t) is True
    assert svc.create_table(names[0]) is False  # exists, fail_on_exist=False
    expect_error(409, "TableAlreadyExists", svc.create_table, names[0], fail_on_exist=True)
    assert svc.exists(names[1]) is True
    listed = [t.name for t in svc.list_tables()]
    assert set(names) <= set(listed)
    # paging through the tables, two at a time (NextTableName)
    page = svc.list_tables(num_results=2)
    first = [t.name for t in page]
    assert len(first) == 2 and page.next_marker
    rest = [t.name for t in svc.list_tables(marker=page.next_marker)]
    assert set(first).isdisjoint(rest) and set(names) <= set(first + rest)
    for t in names:
        assert svc.delete_table(t) is True
    assert svc.exists(names[1]) is False
    assert svc.delete_table(names[0]) is False
    expect_error(404, "ResourceNotFound", svc.delete_table, names[0], fail_not_exist=True)


def test_table_name_errors(svc):
    expect_error(400, "OutOfRangeInput", svc.create_table, "ab", fail_on_exist=True)
    expect_error(400, "InvalidResourceName", svc.create_table, "1abc", fail_on_exist=True)


# --- entities ----------------------------------------------------------------------------


def test_insert_and_get_all_eight_types(svc, table):
    etag = svc.insert_entity(table, all_types_entity("p", "r1"))
    assert etag.startswith("W/\"datetime'")
    e = svc.get_entity(table, "p", "r1")
    check_all_types(e)
    assert e.etag == etag
    queried = list(svc.query_entities(table, filter="PartitionKey eq 'p'"))
    assert len(queried) == 1
    check_all_types(queried[0])


def test_full_and_no_metadata(svc, table):
    svc.insert_entity(table, all_types_entity("p", "r1"))
    full = svc.get_entity(table, "p", "r1", accept=TablePayloadFormat.JSON_FULL_METADATA)
    check_all_types(full)
    # The service annotates neither Int32 nor Boolean in full metadata (JSON's own types):
    # with a Boolean annotation this client hands back an EntityProperty, not a bool.
    assert full.Flag is True
    none = svc.get_entity(table, "p", "r1", accept=TablePayloadFormat.JSON_NO_METADATA)
    assert none.I64 == "9007199254740993"  # bare: no type to read it by
    assert none.Str == "héllo 'quoted' \u00e9"


def test_full_metadata_annotations_match_the_service(svc, table):
    """The service's full metadata annotates Int64, DateTime, Guid, Binary and Timestamp —
    not Int32, Boolean, String or a finite Double (its recorded replies carry `"ratio": 3.1`
    and `"double": 5.0` bare), so this SDK hands back plain values for those."""
    svc.insert_entity(table, all_types_entity("p", "r1"))
    seen = {}

    def resolver(pk, rk, prop, value, edm):
        seen[prop] = edm
        return edm

    got = svc.get_entity(
        table, "p", "r1", accept=TablePayloadFormat.JSON_FULL_METADATA, property_resolver=resolver
    )
    assert seen["I32"] is None, seen
    assert seen["Flag"] is None, seen
    assert seen["Str"] is None, seen
    assert seen["I64"] == EdmType.INT64
    assert seen["When"] == EdmType.DATETIME
    assert seen["Id"] == EdmType.GUID
    assert seen["Bytes"] == EdmType.BINARY
    assert seen["Dbl"] is None, seen
    # Plain values, not EntityProperty wrappers: `if e.Flag:` means what it says.
    assert got.Flag is True and isinstance(got.Dbl, float) and got.Dbl == 3.25


def test_select(svc, table):
    svc.insert_entity(table, all_types_entity("p", "r1"))
    e = svc.get_entity(table, "p", "r1", select="Str,I64")
    assert e.Str.startswith("héllo") and e.I64 == 9007199254740993
    assert "Dbl" not in e and "Flag" not in e
    rows = list(svc.query_entities(table, select="Flag"))
    assert rows[0].Flag is True and "Str" not in rows[0]


def test_replace_and_merge_with_etags(svc, table):
    etag1 = svc.insert_entity(table, {"PartitionKey": "p", "RowKey": "r", "A": "a", "B": 1})
    etag2 = svc.update_entity(table, {"PartitionKey": "p", "RowKey": "r", "C": "c"}, if_match=etag1)
    assert etag2 != etag1
    e = svc.get_entity(table, "p", "r")
    assert e.C == "c" and "A" not in e and "B" not in e
    expect_error(
        412,
        "UpdateConditionNotSatisfied",
        svc.update_entity,
        table,
        {"PartitionKey": "p", "RowKey": "r", "X": "x"},
        if_match=etag1,
    )
    etag3 = svc.merge_entity(table, {"PartitionKey": "p", "RowKey": "r", "D": 2.5}, if_match=etag2)
    e = svc.get_entity(table, "p", "r")
    assert e.C == "c" and e.D == 2.5 and e.etag == etag3
    expect_error(
        412,
        "UpdateConditionNotSatisfied",
        svc.merge_entity,
        table,
        {"PartitionKey": "p", "RowKey": "r", "X": "x"},
        if_match=etag2,
    )
    # if_match='*' (the default) replaces and merges whatever the ETag
    svc.merge_entity(table, {"PartitionKey": "p", "RowKey": "r", "E": False})
    assert svc.get_entity(table, "p", "r").E is False
    expect_error(
        412, "UpdateConditionNotSatisfied", svc.delete_entity, table, "p", "r", if_match=etag1
    )
    svc.delete_entity(table, "p", "r", if_match=svc.get_entity(table, "p", "r").etag)
    expect_error(404, "ResourceNotFound", svc.get_entity, table, "p", "r")


def test_insert_or_replace_and_insert_or_merge(svc, table):
    svc.insert_or_replace_entity(table, {"PartitionKey": "p", "RowKey": "r", "A": "a"})
    svc.insert_or_merge_entity(table, {"PartitionKey": "p", "RowKey": "r", "B": "b"})
    e = svc.get_entity(table, "p", "r")
    assert (e.A, e.B) == ("a", "b")
    svc.insert_or_replace_entity(table, {"PartitionKey": "p", "RowKey": "r", "C": "c"})
    e = svc.get_entity(table, "p", "r")
    assert e.C == "c" and "A" not in e
    svc.insert_or_merge_entity(table, {"PartitionKey": "p", "RowKey": "r2", "Z": 7})
    assert svc.get_entity(table, "p", "r2").Z == 7


def test_entity_errors(svc, table):
    svc.insert_entity(table, {"PartitionKey": "p", "RowKey": "r"})
    expect_error(409, "EntityAlreadyExists", svc.insert_entity, table, {"PartitionKey": "p", "RowKey": "r"})
    expect_error(404, "ResourceNotFound", svc.get_entity, table, "p", "missing")
    expect_error(404, "ResourceNotFound", svc.update_entity, table, {"PartitionKey": "p", "RowKey": "missing"})
    expect_error(404, "ResourceNotFound", svc.merge_entity, table, {"PartitionKey": "p", "RowKey": "missing"})
    expect_error(404, "ResourceNotFound", svc.delete_entity, table, "p", "missing")
    missing = name("gone")
    expect_error(404, "TableNotFound", svc.insert_entity, missing, {"PartitionKey": "p", "RowKey": "r"})
    expect_error(404, "TableNotFound", svc.get_entity, missing, "p", "r")
    expect_error(
        400, "PropertyNameInvalid", svc.insert_entity, table, {"PartitionKey": "p", "RowKey": "x", "bad name": 1}
    )
    expect_error(400, "InvalidInput", lambda: list(svc.query_entities(table, filter="PartitionKey eq")))


def test_query_paging_and_filters(svc, table):
    for i in range(25):
        svc.insert_entity(table, {"PartitionKey": "p", "RowKey": f"r{i:03}", "N": EntityProperty(EdmType.INT32, i)})
    page = svc.query_entities(table, num_results=10)
    rows = list(page)
    assert [r.RowKey for r in rows] == [f"r{i:03}" for i in range(10)]
    assert page.next_marker == {"nextpartitionkey": page.next_marker["nextpartitionkey"], "nextrowkey": page.next_marker["nextrowkey"]}
    rest = list(svc.query_entities(table, marker=page.next_marker))
    assert [r.RowKey for r in rest] == [f"r{i:03}" for i in range(10, 25)]
    # the generator follows continuations by itself when num_results is not given
    assert len(list(svc.query_entities(table, filter="N ge 5 and N lt 20"))) == 15
    # a small page size with a filter: _query_entities pages of 4
    pages = 0
    marker = None
    seen = []
    while True:
        result = svc._query_entities(table, filter="N ge 3", max_results=4, marker=marker)
        pages += 1
        seen += [r.N.value for r in result]
        marker = result.next_marker
        if not marker:
            break
    assert seen == list(range(3, 25)) and pages >= 6


# --- batches -----------------------------------------------------------------------------


def test_batch_every_operation(svc, table):
    svc.insert_entity(table, {"PartitionKey": "b", "RowKey": "upd", "V": "old"})
    svc.insert_entity(table, {"PartitionKey": "b", "RowKey": "mrg", "V": "old"})
    svc.insert_entity(table, {"PartitionKey": "b", "RowKey": "del"})
    etag = svc.get_entity(table, "b", "upd").etag
    with svc.batch(table) as batch:
        batch.insert_entity(all_types_entity("b", "ins"))
        batch.update_entity({"PartitionKey": "b", "RowKey": "upd", "V": "new"}, if_match=etag)
        batch.merge_entity({"PartitionKey": "b", "RowKey": "mrg", "W": "w"})
        batch.delete_entity("b", "del")
        batch.insert_or_replace_entity({"PartitionKey": "b", "RowKey": "ior", "V": 1.5})
        batch.insert_or_merge_entity({"PartitionKey": "b", "RowKey": "iom", "V": False})
    rows = {e.RowKey: e for e in svc.query_entities(table, filter="PartitionKey eq 'b'")}
    assert sorted(rows) == ["ins", "iom", "ior", "mrg", "upd"]
    assert rows["upd"].V == "new" and rows["mrg"].W == "w" and rows["mrg"].V == "old"
    assert rows["ior"].V == 1.5 and rows["iom"].V is False
    assert rows["ins"].I64 == 9007199254740993
    # one Timestamp for the whole batch
    assert len({e.Timestamp for e in rows.values()}) == 1


def test_batch_returns_etags_and_is_atomic(svc, table):
    batch = TableBatch()
    batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})
    batch.insert_entity({"PartitionKey": "a", "RowKey": "2"})
    etags = svc.commit_batch(table, batch)
    assert len(etags) == 2 and all(e.startswith("W/\"datetime'") for e in etags)
    batch = TableBatch()
    batch.insert_entity({"PartitionKey": "a", "RowKey": "3"})
    batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})  # exists
    with pytest.raises(AzureBatchOperationError) as excinfo:
        svc.commit_batch(table, batch)
    assert excinfo.value.status_code == 409
    assert excinfo.value.code == "EntityAlreadyExists"
    assert "1:" in str(excinfo.value)
    expect_error(404, "ResourceNotFound", svc.get_entity, table, "a", "3")  # rolled back


def test_batch_update_condition_fails(svc, table):
    svc.insert_entity(table, {"PartitionKey": "a", "RowKey": "1"})
    batch = TableBatch()
    batch.update_entity({"PartitionKey": "a", "RowKey": "1"}, if_match="W/\"datetime'2000-01-01T00%3A00%3A00Z'\"")
    with pytest.raises(AzureBatchOperationError) as excinfo:
        svc.commit_batch(table, batch)
    assert excinfo.value.status_code == 412
    assert excinfo.value.code == "UpdateConditionNotSatisfied"


# --- service properties, stats, ACL -----------------------------------------------------


def test_service_properties_round_trip(svc):
    logging = Logging(delete=True, read=False, write=True, retention_policy=RetentionPolicy(enabled=True, days=5))
    hour = Metrics(enabled=True, include_apis=True, retention_policy=RetentionPolicy(enabled=True, days=7))
    minute = Metrics(enabled=False, retention_policy=RetentionPolicy(enabled=False))
    cors = [
        CorsRule(
            ["http://example.com", "http://other.example"],
            ["GET", "PUT", "MERGE"],
            max_age_in_seconds=60,
            exposed_headers=["x-ms-meta-*"],
            allowed_headers=["x-ms-meta-abc", "x-ms-meta-data*"],
        )
    ]
    try:
        svc.set_table_service_properties(logging=logging, hour_metrics=hour, minute_metrics=minute, cors=cors)
        props = svc.get_table_service_properties()
        assert props.logging.delete is True and props.logging.read is False and props.logging.write is True
        assert props.logging.retention_policy.enabled is True and props.logging.retention_policy.days == 5
        assert props.hour_metrics.enabled is True and props.hour_metrics.include_apis is True
        assert props.hour_metrics.retention_policy.days == 7
        assert props.minute_metrics.enabled is False
        assert len(props.cors) == 1
        rule = props.cors[0]
        assert rule.allowed_origins == ["http://example.com", "http://other.example"]
        assert rule.allowed_methods == ["GET", "PUT", "MERGE"]
        assert rule.max_age_in_seconds == 60
        assert rule.exposed_headers == ["x-ms-meta-*"]
        assert rule.allowed_headers == ["x-ms-meta-abc", "x-ms-meta-data*"]
    finally:
        svc.set_table_service_properties(
            logging=Logging(), hour_metrics=Metrics(), minute_metrics=Metrics(), cors=[]
        )
    props = svc.get_table_service_properties()
    assert props.logging.delete is False and props.cors == []


def test_service_properties_errors(svc):
    bad = [CorsRule(["*"], ["GET"]) for _ in range(6)]
    # The service answers six CORS rules with InvalidXmlDocument (recorded replies).
    expect_error(400, "InvalidXmlDocument", svc.set_table_service_properties, cors=bad)


def test_service_stats_on_the_secondary(svc):
    stats = svc.get_table_service_stats()
    assert stats.geo_replication.status == "live"
    assert isinstance(stats.geo_replication.last_sync_time, datetime.datetime)


def test_table_acl_round_trip(svc, table):
    start = datetime.datetime(2030, 1, 1, tzinfo=UTC)
    expiry = datetime.datetime(2031, 1, 1, tzinfo=UTC)
    svc.set_table_acl(
        table,
        {
            "read": AccessPolicy(permission=TablePermissions.QUERY, start=start, expiry=expiry),
            "all": AccessPolicy(permission="raud", expiry=expiry),
        },
    )
    acl = svc.get_table_acl(table)
    assert sorted(acl) == ["all", "read"]
    assert acl["read"].permission == "r"
    assert acl["all"].permission == "raud"
    assert acl["read"].start == start and acl["read"].expiry == expiry
    svc.set_table_acl(table, {})
    assert svc.get_table_acl(table) == {}
    # The ACL of a missing table: 404 ResourceNotFound, as the service answers it (XML).
    expect_error(404, "ResourceNotFound", svc.get_table_acl, name("gone"))


# --- SAS ---------------------------------------------------------------------------------


def expiry_in(hours=1):
    return datetime.datetime.now(UTC) + datetime.timedelta(hours=hours)


def test_table_sas_permissions_and_ranges(svc, table):
    svc.insert_entity(table, {"PartitionKey": "p1", "RowKey": "r1", "V": 1})
    read = svc.generate_table_shared_access_signature(table, TablePermissions.QUERY, expiry=expiry_in())
    reader = sas_service(read)
    assert reader.get_entity(table, "p1", "r1").V == 1
    assert [e.RowKey for e in reader.query_entities(table)] == ["r1"]
    expect_error(
        403, "AuthorizationPermissionMismatch", reader.insert_entity, table, {"PartitionKey": "p1", "RowKey": "x"}
    )
    writer = sas_service(
        svc.generate_table_shared_access_signature(
            table, "raud", expiry=expiry_in(), start_pk="p1", start_rk="a", end_pk="p1", end_rk="z"
        )
    )
    writer.insert_entity(table, {"PartitionKey": "p1", "RowKey": "m"})
    writer.delete_entity(table, "p1", "m")
    expect_error(
        403, "AuthorizationFailure", writer.insert_entity, table, {"PartitionKey": "p2", "RowKey": "m"}
    )
    expired = sas_service(
        svc.generate_table_shared_access_signature(
            table, "r", expiry=datetime.datetime.now(UTC) - datetime.timedelta(hours=1)
        )
    )
    expect_error(403, "AuthenticationFailed", expired.get_entity, table, "p1", "r1")


def test_table_sas_with_a_stored_policy(svc, table):
    svc.insert_entity(table, {"PartitionKey": "p", "RowKey": "r"})
    svc.set_table_acl(table, {"pol": AccessPolicy(permission="r", expiry=expiry_in())})
    token = svc.generate_table_shared_access_signature(table, id="pol")
    reader = sas_service(token)
    assert reader.get_entity(table, "p", "r").RowKey == "r"
    expect_error(
        403, "AuthorizationPermissionMismatch", reader.insert_entity, table, {"PartitionKey": "p", "RowKey": "x"}
    )
    svc.set_table_acl(table, {})
    expect_error(403, "AuthenticationFailed", reader.get_entity, table, "p", "r")


def test_account_sas(svc, table):
    svc.insert_entity(table, {"PartitionKey": "p", "RowKey": "r"})
    token = svc.generate_account_shared_access_signature(
        ResourceTypes(service=True, container=True, object=True),
        AccountPermissions(read=True, list=True, write=True, add=True, create=True, delete=True, update=True),
        expiry_in(),
    )
    full = sas_service(token)
    assert table in [t.name for t in full.list_tables()]
    t = name("acct")
    assert full.create_table(t, fail_on_exist=True)
    full.insert_entity(t, {"PartitionKey": "p", "RowKey": "r", "V": "v"})
    assert full.get_entity(t, "p", "r").V == "v"
    assert full.get_table_service_properties().logging is not None
    assert full.delete_table(t, fail_not_exist=True)
    objects_only = sas_service(
        svc.generate_account_shared_access_signature(
            ResourceTypes(object=True), AccountPermissions(read=True), expiry_in()
        )
    )
    assert objects_only.get_entity(table, "p", "r").RowKey == "r"
    expect_error(
        403, "AuthorizationResourceTypeMismatch", objects_only.create_table, name("no"), fail_on_exist=True
    )
    expect_error(
        403,
        "AuthorizationPermissionMismatch",
        objects_only.insert_entity,
        table,
        {"PartitionKey": "p", "RowKey": "x"},
    )


def test_wrong_key_is_refused(table):
    bad = make_service(key=WRONG_KEY)
    expect_error(403, "AuthenticationFailed", bad.get_entity, table, "p", "r")
    expect_error(403, "AuthenticationFailed", bad.get_table_service_properties)

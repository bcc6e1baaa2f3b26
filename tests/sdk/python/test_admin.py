"""Service properties, service stats, table access policies and SAS with `policy_id`
through azure-data-tables (issue 16): every method of TableServiceClient and TableClient
that the other test files do not already cover, against the store under test."""

from datetime import datetime, timedelta, timezone

import pytest
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import HttpResponseError
from azure.data.tables import (
    AccountSasPermissions,
    ResourceTypes,
    TableAccessPolicy,
    TableAnalyticsLogging,
    TableClient,
    TableCorsRule,
    TableMetrics,
    TableRetentionPolicy,
    TableSasPermissions,
    TableServiceClient,
    generate_account_sas,
    generate_table_sas,
)

import helpers
from tableq_server import ACCOUNT, ACCOUNT_KEY

CREDENTIAL = AzureNamedKeyCredential(ACCOUNT, ACCOUNT_KEY)


def _now():
    return datetime.now(timezone.utc)


@pytest.fixture
def restore_properties(service):
    """Puts the account's service properties back as they were after the test (other tests
    of the run share the account)."""
    before = service.get_service_properties()
    yield
    service.set_service_properties(
        analytics_logging=before["analytics_logging"],
        hour_metrics=before["hour_metrics"],
        minute_metrics=before["minute_metrics"],
        cors=before["cors"],
    )


def test_service_properties_round_trip_and_partial_set(service, restore_properties):
    props = service.get_service_properties()
    assert set(props) == {"analytics_logging", "hour_metrics", "minute_metrics", "cors"}

    logging = TableAnalyticsLogging(
        version="1.0", delete=True, read=False, write=True,
        retention_policy=TableRetentionPolicy(enabled=True, days=5),
    )
    metrics = TableMetrics(
        version="1.0", enabled=True, include_apis=True,
        retention_policy=TableRetentionPolicy(enabled=True, days=7),
    )
    rule = TableCorsRule(
        ["http://app.example", "http://other.example"], ["GET", "PUT", "MERGE"],
        max_age_in_seconds=300, exposed_headers=["x-ms-*"], allowed_headers=["x-ms-*", "content-type"],
    )
    service.set_service_properties(
        analytics_logging=logging, hour_metrics=metrics, minute_metrics=TableMetrics(), cors=[rule]
    )
    got = service.get_service_properties()
    assert got["analytics_logging"].delete and got["analytics_logging"].write
    assert not got["analytics_logging"].read
    assert got["analytics_logging"].retention_policy.days == 5
    assert got["hour_metrics"].enabled and got["hour_metrics"].include_apis
    assert got["hour_metrics"].retention_policy.days == 7
    assert not got["minute_metrics"].enabled
    [cors] = got["cors"]
    assert cors.allowed_origins == ["http://app.example", "http://other.example"]
    assert cors.allowed_methods == ["GET", "PUT", "MERGE"]
    assert cors.max_age_in_seconds == 300
    assert cors.exposed_headers == ["x-ms-*"]
    assert cors.allowed_headers == ["x-ms-*", "content-type"]

    # Only CORS: logging and metrics stay.
    service.set_service_properties(cors=[])
    again = service.get_service_properties()
    assert again["cors"] == []
    assert again["analytics_logging"].delete
    assert again["hour_metrics"].retention_policy.days == 7


def test_service_properties_errors(service, restore_properties):
    rule = TableCorsRule(["*"], ["GET"])
    with pytest.raises(HttpResponseError) as err:
        service.set_service_properties(cors=[rule] * 6)
    # As the service answers it (docs/rest.md, protocol notes).
    helpers.assert_error(err.value, 400, "InvalidXmlDocument")
    with pytest.raises(HttpResponseError) as err:
        service.set_service_properties(cors=[TableCorsRule(["*"], ["FETCH"])])
    helpers.assert_error(err.value, 400, "InvalidXmlNodeValue")


def test_service_stats_on_the_secondary(service):
    stats = service.get_service_stats()
    assert stats["geo_replication"]["status"] == "live"
    synced = stats["geo_replication"]["last_sync_time"]
    assert abs((_now() - synced).total_seconds()) < 600, synced


def test_access_policies_round_trip_and_go_with_the_table(service, table):
    assert table.get_table_access_policy() == {}
    start = datetime(2030, 1, 1, tzinfo=timezone.utc)
    expiry = datetime(2031, 2, 3, 4, 5, 6, tzinfo=timezone.utc)
    table.set_table_access_policy(
        {
            "readers": TableAccessPolicy(start=start, expiry=expiry, permission="r"),
            "writers": TableAccessPolicy(expiry=expiry, permission="raud"),
            "bare": None,
        }
    )
    got = table.get_table_access_policy()
    assert set(got) == {"readers", "writers", "bare"}
    assert got["readers"].start == start
    assert got["readers"].expiry == expiry
    assert got["readers"].permission == "r"
    assert got["writers"].permission == "raud"
    assert got["bare"] is None

    # The service answers 6 policies with 400 InvalidXmlDocument, which the SDK turns into
    # a `ValueError` ("Too many access policies provided…") wrapping it.
    with pytest.raises(ValueError) as err:
        table.set_table_access_policy({f"p{i}": None for i in range(6)})
    helpers.assert_wrapped_error(err.value, 400, "InvalidXmlDocument")

    table.set_table_access_policy({})
    assert table.get_table_access_policy() == {}

    table.set_table_access_policy({"readers": TableAccessPolicy(expiry=expiry, permission="r")})
    name = table.table_name
    service.delete_table(name)
    service.create_table(name)
    assert table.get_table_access_policy() == {}


def test_sas_with_policy_id_follows_the_stored_policy(endpoint, table):
    table.create_entity({"PartitionKey": "p", "RowKey": "r"})
    table.set_table_access_policy(
        {"team": TableAccessPolicy(expiry=_now() + timedelta(hours=1), permission="r")}
    )
    token = generate_table_sas(CREDENTIAL, table.table_name, policy_id="team")
    sas_table = TableClient(
        endpoint, table.table_name, credential=AzureSasCredential(token), **helpers.CLIENT_KWARGS
    )
    assert [e["RowKey"] for e in sas_table.list_entities()] == ["r"]
    with pytest.raises(HttpResponseError) as err:
        sas_table.create_entity({"PartitionKey": "p", "RowKey": "new"})
    helpers.assert_error(err.value, 403, "AuthorizationPermissionMismatch")

    # A changed policy changes the token at once; a removed one revokes it.
    table.set_table_access_policy(
        {"team": TableAccessPolicy(expiry=_now() + timedelta(hours=1), permission="ra")}
    )
    sas_table.create_entity({"PartitionKey": "p", "RowKey": "new"})
    table.set_table_access_policy({})
    with pytest.raises(HttpResponseError) as err:
        list(sas_table.list_entities())
    helpers.assert_error(err.value, 403, "AuthenticationFailed")

    # A field in both the token and the policy.
    table.set_table_access_policy(
        {"team": TableAccessPolicy(expiry=_now() + timedelta(hours=1), permission="r")}
    )
    both = generate_table_sas(
        CREDENTIAL, table.table_name, policy_id="team", permission=TableSasPermissions(read=True)
    )
    both_table = TableClient(
        endpoint, table.table_name, credential=AzureSasCredential(both), **helpers.CLIENT_KWARGS
    )
    with pytest.raises(HttpResponseError) as err:
        list(both_table.list_entities())
    helpers.assert_error(err.value, 403, "AuthenticationFailed")


def test_authorization_codes_as_the_service_gives_them(endpoint, table):
    table.create_entity({"PartitionKey": "b", "RowKey": "1"})
    expiry = _now() + timedelta(hours=1)
    read_only = generate_table_sas(
        CREDENTIAL, table.table_name, permission=TableSasPermissions(read=True), expiry=expiry
    )
    reader = TableClient(
        endpoint, table.table_name, credential=AzureSasCredential(read_only), **helpers.CLIENT_KWARGS
    )
    with pytest.raises(HttpResponseError) as err:
        reader.create_entity({"PartitionKey": "b", "RowKey": "2"})
    helpers.assert_error(err.value, 403, "AuthorizationPermissionMismatch")

    ranged = generate_table_sas(
        CREDENTIAL, table.table_name, permission=TableSasPermissions(read=True), expiry=expiry,
        start_pk="a", end_pk="a",
    )
    ranged_client = TableClient(
        endpoint, table.table_name, credential=AzureSasCredential(ranged), **helpers.CLIENT_KWARGS
    )
    with pytest.raises(HttpResponseError) as err:
        ranged_client.get_entity("b", "1")
    helpers.assert_error(err.value, 403, "AuthorizationFailure")

    objects_only = generate_account_sas(
        CREDENTIAL, resource_types=ResourceTypes(object=True),
        permission=AccountSasPermissions(read=True, list=True), expiry=expiry,
    )
    limited = TableServiceClient(endpoint, credential=AzureSasCredential(objects_only), **helpers.CLIENT_KWARGS)
    with pytest.raises(HttpResponseError) as err:
        list(limited.list_tables())
    helpers.assert_error(err.value, 403, "AuthorizationResourceTypeMismatch")

    elsewhere = generate_table_sas(
        CREDENTIAL, table.table_name, permission=TableSasPermissions(read=True), expiry=expiry,
        ip_address_or_range="10.9.8.7",
    )
    with pytest.raises(HttpResponseError) as err:
        list(TableClient(
            endpoint, table.table_name, credential=AzureSasCredential(elsewhere), **helpers.CLIENT_KWARGS
        ).list_entities())
    helpers.assert_error(err.value, 403, "AuthorizationSourceIPMismatch")

    wrong = TableServiceClient(
        endpoint, credential=AzureNamedKeyCredential(ACCOUNT, "d3Jvbmcga2V5IGZvciB0ZXN0cw=="),
        **helpers.CLIENT_KWARGS,
    )
    with pytest.raises(HttpResponseError) as err:
        list(wrong.list_tables())
    helpers.assert_error(err.value, 403, "AuthenticationFailed")


def test_an_empty_filter_and_select_are_no_options(table):
    """`query_entities("")` sends `$filter=` (an empty option, as Storage Explorer sends
    `$select=&$filter=`): the server reads it as no filter."""
    table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1})
    assert [e["A"] for e in table.query_entities("")] == [1]

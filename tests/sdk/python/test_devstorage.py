"""`UseDevelopmentStorage=true`, literally: the SDK's built-in development connection string
must work against `tableq serve` started with its defaults (127.0.0.1:10002, no flags but
`--in-memory`). Needs port 10002: skipped, with the reason, when something else holds it."""

import pytest
from azure.data.tables import TableServiceClient, UpdateMode

import helpers
from tableq_server import DEV_STORAGE_PORT, TableqServer, port_is_free


def test_use_development_storage_true(tableq_bin, tmp_path):
    if not port_is_free(DEV_STORAGE_PORT):
        pytest.skip(f"port {DEV_STORAGE_PORT} is in use, so UseDevelopmentStorage=true cannot reach our server")
    server = TableqServer(tableq_bin, default_port=True, log_path=tmp_path / "server.log").start()
    try:
        with TableServiceClient.from_connection_string("UseDevelopmentStorage=true", **helpers.CLIENT_KWARGS) as service:
            assert service.url.startswith(f"http://127.0.0.1:{DEV_STORAGE_PORT}/devstoreaccount1")
            name = helpers.unique_name("DevStorage")
            table = service.create_table(name)
            table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1})
            recorder = helpers.Recorder()
            table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "B": "b"}, UpdateMode.MERGE,
                                raw_response_hook=recorder)
            # On 127.0.0.1:10002 the SDK is in storage mode: merge is PATCH.
            assert (recorder.last["method"], recorder.last["x_http_method"]) == ("PATCH", None)
            assert dict(table.get_entity("p", "r")) == {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"}
            assert [e["B"] for e in table.query_entities("A eq 1")] == ["b"]
            assert name in [t.name for t in service.list_tables()]
            service.delete_table(name)
    finally:
        server.terminate()
        print(server.log_tail())  # pytest shows it when the test failed

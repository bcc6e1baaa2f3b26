"""Durability through real clients (rest.md "Endpoint and defaults"): the tests start
`tableq serve --data DIR` themselves and stop it by its pid.

* write, stop with SIGTERM, start on the same directory, read everything back;
* write, SIGKILL right after the last acknowledgement, start, and read back every
  acknowledged write with its ETag — twice in a row, and once with writers still running.
"""

import math
import threading

import pytest
from azure.core import MatchConditions
from azure.core.exceptions import AzureError, ResourceNotFoundError
from azure.data.tables import UpdateMode

import helpers
from tableq_server import TableqServer
from test_types import check_entity, written_entity


@pytest.fixture
def durable(tableq_bin, tmp_path):
    """Starts servers on one data directory; every server is killed at the end."""
    servers = []

    def start(data_dir=None):
        data_dir = data_dir or tmp_path / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        server = TableqServer(
            tableq_bin,
            data_dir=data_dir,
            log_path=tmp_path / "server.log",
        )
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.kill()
    if servers:
        print(servers[-1].log_tail())  # pytest shows it when the test failed


def snapshot(client):
    """Every entity of a table: key -> (properties, etag, Timestamp text)."""
    def comparable(value):  # NaN != NaN: compare it by name
        return "NaN" if isinstance(value, float) and math.isnan(value) else value

    return {
        (e["PartitionKey"], e["RowKey"]): (
            {name: comparable(value) for name, value in e.items()},
            e.metadata["etag"],
            e.metadata["timestamp"].tables_service_value,
        )
        for e in client.list_entities(results_per_page=50)
    }


def test_sigterm_then_restart_keeps_every_write(durable, tmp_path):
    server = durable()
    service = helpers.service_client(server.endpoint)
    kept = service.create_table(helpers.unique_name("KeptCase"))
    dropped = service.create_table(helpers.unique_name("Dropped"))
    kept.create_entity(written_entity())
    for i in range(30):
        kept.create_entity({"PartitionKey": f"p{i % 3}", "RowKey": f"r{i:03d}", "N": i, "S": "x" * i})
    kept.update_entity({"PartitionKey": "p0", "RowKey": "r000", "Merged": True}, UpdateMode.MERGE)
    kept.update_entity({"PartitionKey": "p1", "RowKey": "r001", "Replaced": 1.5}, UpdateMode.REPLACE)
    kept.upsert_entity({"PartitionKey": "p9", "RowKey": "new", "Up": "serted"}, UpdateMode.MERGE)
    kept.delete_entity("p2", "r002")
    dropped.create_entity({"PartitionKey": "p", "RowKey": "r"})
    service.delete_table(dropped.table_name)
    before = snapshot(kept)
    assert len(before) == 31

    status = server.terminate()
    print(f"tableq serve exited with status {status} after SIGTERM")

    server = durable()
    service = helpers.service_client(server.endpoint)
    names = [t.name for t in service.list_tables()]
    assert kept.table_name in names  # with the case given at creation
    assert dropped.table_name not in names
    client = service.get_table_client(kept.table_name)
    assert snapshot(client) == before
    check_entity(client.get_entity("types", "all"))
    with pytest.raises(ResourceNotFoundError):
        client.get_entity("p2", "r002")

    # Writing goes on where it stopped: the Timestamp still advances.
    old = helpers.ticks(before[("p0", "r000")][2])
    client.update_entity({"PartitionKey": "p0", "RowKey": "r000", "After": 1}, UpdateMode.MERGE)
    assert helpers.ticks(client.get_entity("p0", "r000").metadata["timestamp"].tables_service_value) > old
    server.terminate()

    # The data lives in the directory: a server on another, empty directory has none of it.
    other = durable(tmp_path / "empty")
    assert kept.table_name not in [t.name for t in helpers.service_client(other.endpoint).list_tables()]


def write_and_record(client, expected, round_number, count=40):
    """Sequential writes of every kind; `expected` maps each key to (properties, ETag) as
    acknowledged, or None when the acknowledged write was a delete."""
    for i in range(count):
        pk, rk = f"p{i % 3}", f"r{(i // 3) % 4}"  # 12 keys, each written with several kinds
        props = {"PartitionKey": pk, "RowKey": rk, "Round": round_number, "I": i, "Text": f"v{i}" * (i % 5)}
        kind = i % 5
        key = (pk, rk)
        if kind == 0 or expected.get(key) is None:
            result = client.upsert_entity(props, UpdateMode.REPLACE)
            expected[key] = (props, result["etag"])
        elif kind == 1:
            result = client.upsert_entity({"PartitionKey": pk, "RowKey": rk, "Merged": i}, UpdateMode.MERGE)
            expected[key] = (dict(expected[key][0], Merged=i), result["etag"])
        elif kind == 2:
            result = client.update_entity(props, UpdateMode.REPLACE)
            expected[key] = (props, result["etag"])
        elif kind == 3:
            client.delete_entity(pk, rk)
            expected[key] = None
        else:
            result = client.update_entity(
                props, UpdateMode.MERGE, etag=expected[key][1], match_condition=MatchConditions.IfNotModified
            )
            expected[key] = (dict(expected[key][0], **props), result["etag"])


def check_recorded(client, expected):
    for (pk, rk), state in expected.items():
        if state is None:
            with pytest.raises(ResourceNotFoundError):
                client.get_entity(pk, rk)
            continue
        props, etag = state
        entity = client.get_entity(pk, rk)
        assert dict(entity) == props, f"{(pk, rk)} after the crash"
        assert entity.metadata["etag"] == etag, f"{(pk, rk)}: the ETag changed across the crash"


def test_sigkill_right_after_the_acknowledgement_loses_nothing(durable):
    server = durable()
    name = helpers.unique_name("Crash")
    helpers.service_client(server.endpoint).create_table(name)
    expected = {}
    for round_number in range(2):
        client = helpers.table_client(server.endpoint, name)
        write_and_record(client, expected, round_number)
        last = client.create_entity({"PartitionKey": "last", "RowKey": str(round_number), "Acked": True})
        server.kill()  # immediately after the acknowledgement: no time to flush anything
        expected[("last", str(round_number))] = (
            {"PartitionKey": "last", "RowKey": str(round_number), "Acked": True},
            last["etag"],
        )

        server = durable()
        client = helpers.table_client(server.endpoint, name)
        check_recorded(client, expected)
    server.kill()


def test_sigkill_during_concurrent_writes_keeps_every_acknowledged_write(durable):
    server = durable()
    name = helpers.unique_name("Busy")
    helpers.service_client(server.endpoint).create_table(name)
    acked = {}  # key -> (version, etag) of the last acknowledged write
    attempted = {}  # key -> last version sent
    enough = threading.Event()

    def writer(worker):
        client = helpers.table_client(server.endpoint, name)
        version = 0
        while True:
            version += 1
            key = (f"w{worker}", f"k{version % 7}")
            attempted[key] = version
            try:
                result = client.upsert_entity(
                    {"PartitionKey": key[0], "RowKey": key[1], "Version": version}, UpdateMode.REPLACE
                )
            except AzureError:
                return  # the server is gone
            acked[key] = (version, result["etag"])
            if version >= 60:
                enough.set()

    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(3)]
    for thread in threads:
        thread.start()
    assert enough.wait(60), "the writers made no progress"
    server.kill()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive(), "a writer hung after the server was killed"

    server = durable()
    client = helpers.table_client(server.endpoint, name)
    for key, (version, etag) in acked.items():
        entity = client.get_entity(*key)
        # The write in flight at the kill may or may not have landed; everything acknowledged
        # before it has.
        assert version <= entity["Version"] <= attempted[key], key
        if entity["Version"] == version:
            assert entity.metadata["etag"] == etag, key
    server.kill()

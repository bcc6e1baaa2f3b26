"""Fixtures of the Python SDK suite (`azure-data-tables`) against `tableq serve`.

Environment (set by `scripts/sdk-tests.sh`):
* `TABLEQ_SDK_ENDPOINT`: the table endpoint of a running server,
  e.g. `http://127.0.0.1:41234/devstoreaccount1` (every test except the restart and
  development-storage ones uses it);
* `TABLEQ_BIN`: the `tableq` binary, for the tests that start their own servers
  (restart tests, `UseDevelopmentStorage=true`); without it they are skipped with a reason;
* `TABLEQ_SDK_STORE`: the store behind `TABLEQ_SDK_ENDPOINT` (`durable`, `memory`, `pg`,
  `pg-sharded`; default `durable`).

Every test that asks for `TABLEQ_BIN` (the `tableq_bin` fixture) starts its own server on a
data directory or in memory and is marked `own_server`. Those tests do not touch the store
under test, so in the PostgreSQL runs (`TABLEQ_SDK_STORE=pg|pg-sharded`) they are skipped
with that reason: the durable run of the suite covers them, and the SIGKILL/restart tests
would only repeat it at several seconds each.
"""

import os

import pytest

import helpers

OWN_SERVER_REASON = (
    "starts its own tableq server (data directory or --in-memory), not the {store} store "
    "under test: covered by the --store durable run"
)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "own_server: the test starts its own `tableq serve` from TABLEQ_BIN (skipped in the "
        "PostgreSQL runs, which test the store behind TABLEQ_SDK_ENDPOINT)",
    )


def pytest_collection_modifyitems(config, items):
    store = os.environ.get("TABLEQ_SDK_STORE", "durable")
    for item in items:
        if "tableq_bin" not in getattr(item, "fixturenames", ()):
            continue
        item.add_marker(pytest.mark.own_server)
        if store not in ("durable", "memory"):
            item.add_marker(pytest.mark.skip(reason=OWN_SERVER_REASON.format(store=store)))


@pytest.fixture(scope="session")
def endpoint():
    value = os.environ.get("TABLEQ_SDK_ENDPOINT")
    if not value:
        pytest.fail("TABLEQ_SDK_ENDPOINT is not set: run the suite with scripts/sdk-tests.sh")
    return value.rstrip("/")


@pytest.fixture(scope="session")
def tableq_bin():
    value = os.environ.get("TABLEQ_BIN")
    if not value:
        pytest.skip("TABLEQ_BIN is not set: this test starts its own tableq server")
    return value


@pytest.fixture(scope="session")
def service(endpoint):
    with helpers.service_client(endpoint) as client:
        yield client


@pytest.fixture
def make_table(service):
    """Creates tables with unique names and deletes them after the test."""
    created = []

    def make(prefix="py"):
        name = helpers.unique_name(prefix)
        client = service.create_table(name)
        created.append(name)
        return client

    yield make
    for name in created:
        service.delete_table(name)


@pytest.fixture
def table(make_table):
    """A fresh, empty table (a `TableClient`)."""
    return make_table()

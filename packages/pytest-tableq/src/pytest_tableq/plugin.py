"""pytest fixtures for tableq (loaded through the ``pytest11`` entry point).

* ``tableq_server`` — one server for the whole session (``--in-memory --port 0``);
* ``tableq_server_function`` — a server of the test's own, stopped after it;
* ``table_service_client`` — an ``azure.data.tables.TableServiceClient`` on the session
  server;
* ``table_client`` — a ``TableClient`` on a new, uniquely named table of the session
  server, deleted after the test;
* ``tableq_clean_server`` — the session server with its account reset before the test
  (no tables, default service properties) and its fault rules cleared after it.

The binary is ``--tableq-bin``, else ``$TABLEQ_BIN``, else ``tableq`` on ``PATH``.
"""

import uuid

import pytest

from . import start_server


def pytest_addoption(parser):
    parser.addoption(
        "--tableq-bin",
        default=None,
        help="the tableq binary for the tableq fixtures (default: $TABLEQ_BIN, else tableq on PATH)",
    )


def _start(config):
    return start_server(binary=config.getoption("--tableq-bin"))


@pytest.fixture(scope="session")
def tableq_server(pytestconfig):
    """A ``tableq serve --in-memory`` shared by the session: ``.endpoint``,
    ``.connection_string``, ``.account``, ``.key``, ``.pid``."""
    server = _start(pytestconfig)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tableq_server_function(pytestconfig):
    """A ``tableq serve --in-memory`` of this test alone (an empty store), stopped after it."""
    server = _start(pytestconfig)
    try:
        yield server
    finally:
        server.stop()


def _tables():
    try:
        import azure.data.tables as tables
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise pytest.UsageError(
            "the table_service_client and table_client fixtures need azure-data-tables "
            "(pip install 'pytest-tableq[azure]')"
        ) from e
    return tables


@pytest.fixture(scope="session")
def table_service_client(tableq_server):
    """An ``azure.data.tables.TableServiceClient`` on the session server."""
    tables = _tables()
    with tables.TableServiceClient.from_connection_string(tableq_server.connection_string) as client:
        yield client


@pytest.fixture
def table_client(table_service_client):
    """A ``TableClient`` on a new table with a unique name, deleted after the test."""
    name = "t" + uuid.uuid4().hex
    client = table_service_client.create_table(name)
    try:
        yield client
    finally:
        table_service_client.delete_table(name)
        client.close()


@pytest.fixture
def tableq_clean_server(tableq_server):
    """The session server, its account reset before the test (no tables, default service
    properties) and its fault rules cleared after it: a clean account without a new
    server."""
    tableq_server.reset()
    try:
        yield tableq_server
    finally:
        tableq_server.clear_faults()

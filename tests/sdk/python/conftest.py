"""Fixtures of the Python SDK suite (`azure-data-tables`) against `tableq serve`.

Environment (set by `scripts/sdk-tests.sh`):
* `TABLEQ_SDK_ENDPOINT`: the table endpoint of a running server,
  e.g. `http://127.0.0.1:41234/devstoreaccount1` (every test except the restart and
  development-storage ones uses it);
* `TABLEQ_BIN`: the `tableq` binary, for the tests that start their own servers
  (restart tests, `UseDevelopmentStorage=true`); without it they are skipped with a reason.
"""

import os

import pytest

import helpers


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

"""The Azure CLI (`az storage table|entity|cors|logging|metrics`, `az storage account
generate-sas`) against `tableq serve`.

Every table command group the CLI offers: tables (create, exists, list with paging, stats,
delete), entities of all eight EDM types (insert with `--if-exists fail|replace|merge`,
show with `--select`, query with a filter, `--num-results` and `--marker`, replace and merge
with `--if-match`, delete), the table's stored access policies, table SAS (permissions, key
ranges, a stored policy) and account SAS, CORS rules, logging and metrics — and the error
codes of the failures it can provoke, as the CLI prints them. The commands run through the
CLI's own entry point in one long-lived process (`az_runner.py`, the interpreter of the `az`
script): a new `az` process would cost seconds of start-up for each. Run by `scripts/compat-tests.sh` with
`TABLEQ_COMPAT_ENDPOINT=http://127.0.0.1:PORT/devstoreaccount1` and `AZ` (the `az` program).
"""

import datetime
import json
import os
import shutil
import subprocess
import uuid

import pytest

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def endpoint():
    value = os.environ.get("TABLEQ_COMPAT_ENDPOINT")
    if not value:
        pytest.fail("TABLEQ_COMPAT_ENDPOINT is not set: run scripts/compat-tests.sh")
    return value.rstrip("/")


def connection_string():
    ep = endpoint()
    return (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
        f"TableEndpoint={ep};TableSecondaryEndpoint={ep}-secondary;"
    )


def az_env(tmp):
    env = dict(os.environ)
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT",
                 "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_SERVICE_ENDPOINT", "AZURE_STORAGE_AUTH_MODE"):
        env.pop(name, None)
    env.update(
        {
            "AZURE_CONFIG_DIR": str(tmp),
            "AZURE_CORE_COLLECT_TELEMETRY": "false",
            "AZURE_CORE_NO_COLOR": "true",
            "AZURE_CORE_ONLY_SHOW_ERRORS": "true",
            "AZURE_CORE_SURVEY_MESSAGE": "false",
        }
    )
    return env


def az_python(az):
    """The interpreter of the `az` script (its `#!` line), or None when `az` is no Python
    script (then every command runs as its own `az` process)."""
    path = shutil.which(az)
    if not path:
        pytest.fail(f"{az} not found")
    with open(path, "rb") as script:
        first = script.readline().decode("utf-8", "replace")
    if first.startswith("#!") and "python" in first:
        return first[2:].split()[0]
    return None


class Az:
    """Runs CLI commands: in one long-lived `az_runner.py` process of the CLI's own
    interpreter (a fresh `az` process costs seconds of start-up per command), else as `az`."""

    def __init__(self, env):
        self.env = env
        self.az = os.environ.get("AZ", "az")
        python = az_python(self.az)
        self.proc = None
        if python:
            runner = os.path.join(os.path.dirname(os.path.abspath(__file__)), "az_runner.py")
            self.proc = subprocess.Popen(
                [python, runner], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )

    def __call__(self, args):
        if self.proc is None:
            proc = subprocess.run(
                [self.az, *args], env=self.env, capture_output=True, text=True, timeout=120,
                stdin=subprocess.DEVNULL,
            )
            return proc.returncode, proc.stdout, proc.stderr
        self.proc.stdin.write(json.dumps(list(args)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"az_runner.py exited ({self.proc.poll()}) during {args[:3]}"
        reply = json.loads(line)
        return reply["rc"], reply["out"], reply["err"]

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="session")
def env(tmp_path_factory):
    az = Az(az_env(tmp_path_factory.mktemp("azconfig")))
    yield az
    az.close()


def run(env, *args, auth=None, check=True, debug=False):
    """Runs `az ARGS -o json` with the connection string (or `auth`, a list of auth
    arguments); returns the parsed JSON (None for no output), or (rc, stderr) if not `check`."""
    auth = ["--connection-string", connection_string()] if auth is None else auth
    rc, out, err = env([*args, *auth, "--output", "json", *(["--debug"] if debug else [])])
    if not check:
        return rc, err
    assert rc == 0, f"{' '.join(args)} failed ({rc}):\n{err}"
    out = out.strip()
    return json.loads(out) if out else None


def run_fails(env, code, *args, auth=None):
    """`az ARGS` fails with the service's error `code`: the CLI prints some codes itself and
    replaces others by advice (a 403 becomes "You do not have the required permissions"), so
    the call runs with `--debug`, whose log holds the service's reply (`ErrorCode:<code>`)."""
    rc, stderr = run(env, *args, auth=auth, check=False, debug=True)
    assert rc != 0, f"{' '.join(args)} succeeded; expected {code}"
    assert f"ErrorCode:{code}" in stderr or f'"code":"{code}"' in stderr, (
        f"{' '.join(args)}: {code} not in:\n{stderr[-3000:]}"
    )


def name(tag="t"):
    return f"az{tag}{uuid.uuid4().hex[:10]}"


def expiry(hours=2):
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=hours)
    return when.strftime("%Y-%m-%dT%H:%MZ")


def sas_auth(token):
    return ["--sas-token", token, "--table-endpoint", endpoint(), "--account-name", ACCOUNT]


def test_tables_create_exists_list_stats_delete(env):
    prefix = name("list")
    names = [f"{prefix}{i}" for i in range(3)]
    for t in names:
        assert run(env, "storage", "table", "create", "--name", t, "--fail-on-exist") == {"created": True}
    # without --fail-on-exist the CLI swallows the 409 and answers created: true
    assert run(env, "storage", "table", "create", "--name", names[0]) == {"created": True}
    run_fails(env, "TableAlreadyExists", "storage", "table", "create", "--name", names[0], "--fail-on-exist")
    assert run(env, "storage", "table", "exists", "--name", names[1]) == {"exists": True}
    listed = [t["name"] for t in run(env, "storage", "table", "list")]
    assert set(names) <= set(listed)
    page = run(env, "storage", "table", "list", "--num-results", "2", "--show-next-marker")
    entries = [t for t in page if "name" in t]
    markers = [t["nextMarker"] for t in page if "nextMarker" in t]
    assert len(entries) == 2 and markers and markers[0], page
    rest = run(env, "storage", "table", "list", "--marker", markers[0])
    assert not {t["name"] for t in entries} & {t["name"] for t in rest if "name" in t}
    # stats go to the secondary, which the CLI derives from --table-endpoint (a connection
    # string's TableSecondaryEndpoint it ignores)
    key_auth = ["--table-endpoint", endpoint(), "--account-name", ACCOUNT, "--account-key", KEY]
    stats = run(env, "storage", "table", "stats", auth=key_auth)
    assert '"status": "live"' in json.dumps(stats), stats
    for t in names:
        assert run(env, "storage", "table", "delete", "--name", t, "--fail-not-exist") == {"deleted": True}
    assert run(env, "storage", "table", "exists", "--name", names[1]) == {"exists": False}
    # the CLI asks `exists` first and raises its own "does not exist" error
    rc, stderr = run(env, "storage", "table", "delete", "--name", names[0], "--fail-not-exist", check=False)
    assert rc != 0 and "The specified resource does not exist." in stderr, stderr
    assert run(env, "storage", "table", "delete", "--name", names[0]) == {"deleted": False}
    run_fails(env, "OutOfRangeInput", "storage", "table", "create", "--name", "ab", "--fail-on-exist")


ALL_TYPES = [
    "PartitionKey=p",
    "RowKey=r1",
    "Str=hello world",
    "I32=-2147483648",
    "I32@odata.type=Edm.Int32",
    "I64=9223372036854775807",
    "I64@odata.type=Edm.Int64",
    "Dbl=3.25",
    "Dbl@odata.type=Edm.Double",
    "Flag=true",
    "Flag@odata.type=Edm.Boolean",
    "When=2021-06-09T01:17:08.379589Z",
    "When@odata.type=Edm.DateTime",
    "Id=c9da6455-213d-42c9-9a79-3e9149a57833",
    "Id@odata.type=Edm.Guid",
    "Bytes=abc",  # the CLI sends the text's bytes (base64 "YWJj") and shows them as base64
    "Bytes@odata.type=Edm.Binary",
]


def check_all_types(e):
    assert e["PartitionKey"] == "p" and e["RowKey"] == "r1"
    assert e["Str"] == "hello world"
    assert e["I32"] == -2147483648
    # the CLI shows an Int64 as {"edm_type": "Edm.Int64", "value": …}
    assert e["I64"] == {"edm_type": "Edm.Int64", "value": 9223372036854775807}, e
    assert e["Dbl"] == 3.25
    assert e["Flag"] is True
    assert e["When"].startswith("2021-06-09T01:17:08.379589"), e
    assert e["Id"] == "c9da6455-213d-42c9-9a79-3e9149a57833"
    assert e["Bytes"] == "YWJj", e
    etag = e.get("etag") or e.get("odata.etag") or e.get("metadata", {}).get("etag")
    assert etag and etag.startswith("W/\"datetime'"), e


@pytest.fixture
def table(env):
    t = name()
    run(env, "storage", "table", "create", "--name", t, "--fail-on-exist")
    yield t
    run(env, "storage", "table", "delete", "--name", t)


def test_entities_types_etags_upserts_and_errors(env, table):
    run(env, "storage", "entity", "insert", "-t", table, "-e", *ALL_TYPES)
    e = run(env, "storage", "entity", "show", "-t", table, "--partition-key", "p", "--row-key", "r1")
    check_all_types(e)
    etag = e.get("etag") or e.get("odata.etag") or e["metadata"]["etag"]
    # the CLI reads the entity first and raises its own "already exists" error
    rc, stderr = run(env, "storage", "entity", "insert", "-t", table, "-e", "PartitionKey=p", "RowKey=r1", check=False)
    assert rc != 0 and "The specified entity already exists." in stderr, stderr
    sel = run(env, "storage", "entity", "show", "-t", table, "--partition-key", "p", "--row-key", "r1", "--select", "Str", "Flag")
    assert sel["Str"] == "hello world" and sel["Flag"] is True and "Dbl" not in sel
    # replace and merge with the ETag, then with a stale one
    run(env, "storage", "entity", "replace", "-t", table, "-e", "PartitionKey=p", "RowKey=r1", "C=c", "--if-match", etag)
    run_fails(
        env, "UpdateConditionNotSatisfied",
        "storage", "entity", "merge", "-t", table, "-e", "PartitionKey=p", "RowKey=r1", "D=d", "--if-match", etag,
    )
    run(env, "storage", "entity", "merge", "-t", table, "-e", "PartitionKey=p", "RowKey=r1", "D=d")
    e = run(env, "storage", "entity", "show", "-t", table, "--partition-key", "p", "--row-key", "r1")
    assert e["C"] == "c" and e["D"] == "d" and "Str" not in e, e
    # --if-exists replace and merge (insert-or-replace, insert-or-merge)
    run(env, "storage", "entity", "insert", "-t", table, "--if-exists", "merge", "-e", "PartitionKey=p", "RowKey=r1", "E=e")
    run(env, "storage", "entity", "insert", "-t", table, "--if-exists", "replace", "-e", "PartitionKey=p", "RowKey=r2", "F=f")
    rows = run(env, "storage", "entity", "query", "-t", table, "--filter", "PartitionKey eq 'p'")["items"]
    by_key = {r["RowKey"]: r for r in rows}
    assert by_key["r1"]["E"] == "e" and by_key["r1"]["C"] == "c" and by_key["r2"]["F"] == "f"
    run(env, "storage", "entity", "delete", "-t", table, "--partition-key", "p", "--row-key", "r2")
    run_fails(env, "ResourceNotFound", "storage", "entity", "show", "-t", table, "--partition-key", "p", "--row-key", "r2")
    run_fails(env, "TableNotFound", "storage", "entity", "insert", "-t", name("gone"), "-e", "PartitionKey=p", "RowKey=r")


def test_query_paging_filter_select(env, table):
    for i in range(5):
        run(env, "storage", "entity", "insert", "-t", table, "-e", "PartitionKey=p", f"RowKey=r{i}", f"N={i}",
            "N@odata.type=Edm.Int32")
    first = run(env, "storage", "entity", "query", "-t", table, "--num-results", "2", "--select", "N")
    assert [r["N"] for r in first["items"]] == [0, 1], first
    marker = first["nextMarker"]
    assert marker.get("nextpartitionkey") and marker.get("nextrowkey"), first
    second = run(env, "storage", "entity", "query", "-t", table, "--num-results", "2", "--marker",
                 f"nextpartitionkey={marker['nextpartitionkey']}", f"nextrowkey={marker['nextrowkey']}")
    assert [r["N"] for r in second["items"]] == [2, 3], second
    filtered = run(env, "storage", "entity", "query", "-t", table, "--filter", "N ge 3")
    assert sorted(r["N"] for r in filtered["items"]) == [3, 4]
    run_fails(env, "InvalidInput", "storage", "entity", "query", "-t", table, "--filter", "N ge")


def test_policies_and_table_sas(env, table):
    run(env, "storage", "entity", "insert", "-t", table, "-e", "PartitionKey=p1", "RowKey=r1", "V=v")
    run(env, "storage", "table", "policy", "create", "-t", table, "-n", "pol", "--permissions", "r", "--expiry", expiry())
    policies = run(env, "storage", "table", "policy", "list", "-t", table)
    assert "pol" in policies and policies["pol"]["permission"] == "r", policies
    run(env, "storage", "table", "policy", "update", "-t", table, "-n", "pol", "--permissions", "ra")
    assert run(env, "storage", "table", "policy", "show", "-t", table, "-n", "pol")["permission"] == "ra"
    # a SAS from the stored policy, then one with permissions and key ranges of its own
    token = run(env, "storage", "table", "generate-sas", "-n", table, "--policy-name", "pol")
    e = run(env, "storage", "entity", "show", "-t", table, "--partition-key", "p1", "--row-key", "r1", auth=sas_auth(token))
    assert e["V"] == "v"
    run_fails(env, "AuthorizationPermissionMismatch", "storage", "entity", "delete", "-t", table,
              "--partition-key", "p1", "--row-key", "r1", auth=sas_auth(token))
    ranged = run(env, "storage", "table", "generate-sas", "-n", table, "--permissions", "raud", "--expiry", expiry(),
                 "--start-pk", "p1", "--end-pk", "p1")
    run(env, "storage", "entity", "insert", "-t", table, "-e", "PartitionKey=p1", "RowKey=m", auth=sas_auth(ranged))
    run_fails(env, "AuthorizationFailure", "storage", "entity", "insert", "-t", table, "-e", "PartitionKey=p2",
              "RowKey=m", auth=sas_auth(ranged))
    run(env, "storage", "table", "policy", "delete", "-t", table, "-n", "pol")
    assert run(env, "storage", "table", "policy", "list", "-t", table) in ({}, None, [])
    run_fails(env, "AuthenticationFailed", "storage", "entity", "show", "-t", table, "--partition-key", "p1",
              "--row-key", "r1", auth=sas_auth(token))


def test_account_sas(env, table):
    token = run(env, "storage", "account", "generate-sas", "--services", "t", "--resource-types", "sco",
                "--permissions", "rwdlacu", "--expiry", expiry(), "--account-name", ACCOUNT, "--account-key", KEY, auth=[])
    t2 = name("acct")
    assert run(env, "storage", "table", "create", "--name", t2, auth=sas_auth(token)) == {"created": True}
    run(env, "storage", "entity", "insert", "-t", t2, "-e", "PartitionKey=p", "RowKey=r", auth=sas_auth(token))
    assert run(env, "storage", "table", "delete", "--name", t2, auth=sas_auth(token)) == {"deleted": True}
    objects = run(env, "storage", "account", "generate-sas", "--services", "t", "--resource-types", "o",
                  "--permissions", "r", "--expiry", expiry(), "--account-name", ACCOUNT, "--account-key", KEY, auth=[])
    run_fails(env, "AuthorizationResourceTypeMismatch", "storage", "table", "create", "--name", name("no"),
              auth=sas_auth(objects))


def test_cors_logging_metrics(env):
    services = ["--services", "t"]
    try:
        run(env, "storage", "cors", "clear", *services)
        run(env, "storage", "cors", "add", *services, "--methods", "GET", "PUT", "MERGE", "--origins",
            "http://example.com", "--allowed-headers", "x-ms-meta-abc", "x-ms-meta-data*",
            "--exposed-headers", "x-ms-meta-*", "--max-age", "60")
        rules = run(env, "storage", "cors", "list", *services)
        assert len(rules) == 1, rules
        rule = rules[0]
        assert rule["Service"] == "table" or rule.get("service") == "table", rule
        run(env, "storage", "logging", "update", *services, "--log", "rwd", "--retention", "5", "--version", "1.0")
        logging = run(env, "storage", "logging", "show", *services)
        text = json.dumps(logging).lower()
        assert '"delete": true' in text and '"read": true' in text and '"days": 5' in text, logging
        run(env, "storage", "metrics", "update", *services, "--hour", "true", "--minute", "false", "--api", "true",
            "--retention", "7")
        metrics = run(env, "storage", "metrics", "show", *services)
        text = json.dumps(metrics).lower()
        assert '"days": 7' in text and '"enabled": true' in text, metrics
    finally:
        run(env, "storage", "cors", "clear", *services)
        run(env, "storage", "logging", "off", *services)
        run(env, "storage", "metrics", "update", *services, "--hour", "false", "--minute", "false", "--retention", "0")
    assert run(env, "storage", "cors", "list", *services) == []

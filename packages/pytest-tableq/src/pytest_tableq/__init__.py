"""Start and stop ``tableq serve`` (the Azure Table service emulator) for tests.

The binary is ``$TABLEQ_BIN`` when set, else ``tableq`` on ``PATH``. A server is started
in memory on a free loopback port (``--in-memory --port 0``) and is ready when it has
written its ``--ready-file``: a JSON object with its endpoint, account, key, connection
string and pid. It is stopped by that pid (SIGTERM, then SIGKILL after a timeout).

    >>> server = start_server()                     # doctest: +SKIP
    >>> server.connection_string                    # doctest: +SKIP
    'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;...'
    >>> server.stop()                               # doctest: +SKIP

The pytest fixtures built on this live in :mod:`pytest_tableq.plugin`.
"""

import base64
import email.utils
import hashlib
import hmac
import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse

__all__ = ["TableqServer", "TableqError", "find_binary", "start_server"]

__version__ = "0.1.0"


class TableqError(RuntimeError):
    """The binary cannot be found, or the server did not start."""


def find_binary(explicit=None):
    """The tableq binary: ``explicit``, else ``$TABLEQ_BIN``, else ``tableq`` on PATH."""
    candidate = explicit or os.environ.get("TABLEQ_BIN")
    if candidate:
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            raise TableqError(f"TABLEQ_BIN={candidate} is not an executable file")
        return os.path.abspath(candidate)
    found = shutil.which("tableq")
    if not found:
        raise TableqError(
            "tableq not found: set TABLEQ_BIN to the binary or put `tableq` on PATH "
            "(cargo install --path . in the tableq repository)"
        )
    return found


class TableqServer:
    """A running ``tableq serve``: what its ready file says, and how to stop it."""

    def __init__(self, process, ready, workdir):
        self.process = process
        #: The whole ready object (endpoints, ports, accounts, pid, data, store).
        self.ready = ready
        self._workdir = workdir
        first = ready["accounts"][0]
        #: The table endpoint, e.g. ``http://127.0.0.1:40123/devstoreaccount1``.
        self.endpoint = ready["endpoint"]
        #: The connection string for the Azure SDKs.
        self.connection_string = ready["connectionString"]
        #: The account name (``devstoreaccount1``).
        self.account = first["name"]
        #: The account's base64 key.
        self.key = first["key"]
        #: The server's process id.
        self.pid = ready["pid"]
        #: The HTTP port.
        self.port = ready["ports"].get("http")

    @property
    def log_path(self):
        """The file that holds the server's stdout and stderr."""
        return os.path.join(self._workdir, "server.log")

    def log_tail(self, lines=40):
        """The last lines of the server's output (for failure messages)."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout=10.0):
        """Stops the server by its pid: SIGTERM (a clean shutdown), SIGKILL after
        ``timeout`` seconds. Returns its exit status; safe to call twice."""
        if self.process.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self._workdir, ignore_errors=True)
        return self.process.returncode

    # --- tableq's administrative operations (`restype=tableq`, the account key only) ---

    def set_faults(self, rules):
        """Replaces the server's fault rules (a dict, or its JSON text) — e.g.
        ``{"rules": [{"table": "orders", "error": "ServerBusy", "next": 2}]}``; the plan
        starts afresh from its seed. A bad rule set raises :class:`TableqError` with the
        server's reason."""
        body = rules if isinstance(rules, str) else json.dumps(rules)
        self._admin("PUT", "faults", body)

    def clear_faults(self):
        """No more injected faults."""
        self._admin("DELETE", "faults")

    def faults(self):
        """The rules in force, their seed, how often each rule fired, the throttle's limits."""
        return json.loads(self._admin("GET", "faults"))

    def reset(self):
        """Deletes every table of the account and resets its service properties: a clean
        account for the next test, without a new server."""
        self._admin("POST", "reset")

    def _admin(self, method, comp, body=None):
        """One administrative request, signed with SharedKeyLite (the account key)."""
        url = urllib.parse.urlsplit(f"{self.endpoint}/?restype=tableq&comp={comp}")
        date = email.utils.formatdate(usegmt=True)
        resource = f"/{self.account}{url.path}?comp={comp}"
        signature = base64.b64encode(
            hmac.new(base64.b64decode(self.key), f"{date}\n{resource}".encode(), hashlib.sha256).digest()
        ).decode()
        headers = {
            "x-ms-date": date,
            "x-ms-version": "2019-02-02",
            "Authorization": f"SharedKeyLite {self.account}:{signature}",
        }
        data = body.encode() if body is not None else None
        if data is not None:
            headers["Content-Type"] = "application/json"
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        try:
            connection.request(method, f"{url.path}?{url.query}", body=data, headers=headers)
            reply = connection.getresponse()
            text = reply.read().decode("utf-8", errors="replace")
        finally:
            connection.close()
        if reply.status >= 300:
            raise TableqError(f"{method} ?restype=tableq&comp={comp}: {reply.status} {text}")
        return text

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self):
        return f"TableqServer(endpoint={self.endpoint!r}, pid={self.pid})"


def start_server(*args, binary=None, timeout=30.0):
    """Starts ``tableq serve --in-memory --host 127.0.0.1 --port 0`` with ``args`` added
    (e.g. ``"--seed", "data/"``) and returns once it answers requests."""
    binary = find_binary(binary)
    workdir = tempfile.mkdtemp(prefix="pytest-tableq-")
    ready_path = os.path.join(workdir, "ready.json")
    command = [
        binary, "serve", "--in-memory", "--host", "127.0.0.1", "--port", "0",
        "--ready-file", ready_path, *args,
    ]
    env = dict(os.environ)
    env.setdefault("RUST_LOG", "warn")
    with open(os.path.join(workdir, "server.log"), "wb") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
        )
    deadline = time.monotonic() + timeout
    while True:
        # The file is renamed into place whole, once the server answers requests.
        if os.path.exists(ready_path):
            with open(ready_path, encoding="utf-8") as f:
                ready = json.load(f)
            return TableqServer(process, ready, workdir)
        if process.poll() is not None or time.monotonic() > deadline:
            server_log = _read(os.path.join(workdir, "server.log"))
            if process.poll() is None:
                process.kill()
                process.wait()
            shutil.rmtree(workdir, ignore_errors=True)
            raise TableqError(
                f"`{' '.join(command)}` did not become ready "
                f"(exit status {process.returncode}); its output:\n{server_log}"
            )
        time.sleep(0.005)


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""

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

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

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

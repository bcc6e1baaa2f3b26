"""Start, probe and stop a `tableq serve` process — shared by the runner and the tests.

Used two ways:

* as a library by the restart and development-storage tests (`TableqServer`), which start
  their own servers on a data directory and stop them with SIGTERM or SIGKILL;
* as a command by `scripts/sdk-tests.sh`:

      python3 tableq_server.py free-port            # prints a free loopback port
      python3 tableq_server.py port-free 10002      # exit 0 if the port can be bound
      python3 tableq_server.py wait PORT PID [SECS] # exit 0 once PORT answers HTTP

Only the standard library is used, so the runner can call it before the venv exists.
A server is always stopped by the pid this module started, never by name.
"""

import http.client
import os
import signal
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
DEV_STORAGE_PORT = 10002


def free_port():
    """A loopback port that was free a moment ago (bind port 0, read it back, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def port_is_free(port):
    """True if `port` can be bound on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) still answers kill(0).
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def answers_http(port, timeout=1.0):
    """True if something on `port` answers an HTTP request (any status counts)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", f"/{ACCOUNT}/Tables")
        conn.getresponse().read()
        return True
    except OSError:
        return False
    finally:
        conn.close()


def wait_until_answering(port, is_alive, timeout=30.0):
    """Polls until the server answers HTTP; returns an error text, or None when it answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_alive():
            return "the server exited before it answered"
        if answers_http(port):
            return None
        time.sleep(0.05)
    return f"the server did not answer on port {port} within {timeout:.0f} s"


def connection_string(endpoint):
    """The explicit connection string equivalent to UseDevelopmentStorage=true for `endpoint`."""
    return (
        "DefaultEndpointsProtocol=http;"
        f"AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};TableEndpoint={endpoint};"
    )


class TableqServer:
    """One `tableq serve` child process.

    `data_dir=None` runs `--in-memory`; `port=None` picks a free port; `default_port=True`
    passes no `--host`/`--port` at all (the server's defaults, 127.0.0.1:10002).
    """

    def __init__(self, binary, data_dir=None, port=None, log_path=None, default_port=False):
        self.binary = binary
        self.data_dir = data_dir
        self.default_port = default_port
        self.port = DEV_STORAGE_PORT if default_port else (port or free_port())
        self.log_path = log_path
        self.process = None

    @property
    def endpoint(self):
        return f"http://{HOST}:{self.port}/{ACCOUNT}"

    def command(self):
        cmd = [self.binary, "serve"]
        if not self.default_port:
            cmd += ["--host", HOST, "--port", str(self.port)]
        cmd += ["--data", str(self.data_dir)] if self.data_dir is not None else ["--in-memory"]
        return cmd

    def start(self, timeout=30.0):
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        finally:
            if self.log_path:
                log.close()
        error = wait_until_answering(self.port, lambda: self.process.poll() is None, timeout)
        if error:
            self.kill()
            raise RuntimeError(f"{' '.join(self.command())}: {error}\n{self.log_tail()}")
        return self

    def log_tail(self, lines=30):
        if not self.log_path or not os.path.exists(self.log_path):
            return "(no server log)"
        with open(self.log_path, encoding="utf-8", errors="replace") as log:
            tail = log.read().splitlines()[-lines:]
        return "server log (last lines):\n" + "\n".join(tail)

    def running(self):
        return self.process is not None and self.process.poll() is None

    def terminate(self, timeout=15.0):
        """SIGTERM, then wait for the exit; returns the exit status (negative = signal)."""
        return self._signal(signal.SIGTERM, timeout)

    def kill(self, timeout=15.0):
        """SIGKILL (no chance to flush anything), then reap; returns the exit status."""
        return self._signal(signal.SIGKILL, timeout)

    def _signal(self, signum, timeout):
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"the server (pid {self.process.pid}) ignored signal {signum}")


def _main(argv):
    if len(argv) >= 1 and argv[0] == "free-port":
        print(free_port())
        return 0
    if len(argv) == 2 and argv[0] == "port-free":
        return 0 if port_is_free(int(argv[1])) else 1
    if len(argv) in (3, 4) and argv[0] == "wait":
        port, pid = int(argv[1]), int(argv[2])
        timeout = float(argv[3]) if len(argv) == 4 else 30.0
        error = wait_until_answering(port, lambda: _pid_alive(pid), timeout)
        if error:
            print(f"tableq_server.py: {error}", file=sys.stderr)
            return 1
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

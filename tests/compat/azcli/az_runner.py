"""Runs Azure CLI commands one after another in one process — the CLI's own entry point
(`azure.cli.core.get_default_cli().invoke`, what the `az` script calls), without paying the
seconds of start-up of a new `az` process for every command.

Run with the interpreter of the `az` script (its `#!` line). Protocol: one JSON array of
arguments per line on stdin; one JSON object `{"rc", "out", "err"}` per line on stdout (the
command's output, and whatever it wrote to stderr, e.g. the `--debug` log).
"""

import contextlib
import io
import json
import logging
import sys

from azure.cli.core import get_default_cli


def main():
    reply = sys.stdout
    for line in sys.stdin:
        args = json.loads(line)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(err), contextlib.redirect_stderr(err):
            try:
                rc = get_default_cli().invoke(args, out_file=out)
            except SystemExit as exit_:
                rc = exit_.code if isinstance(exit_.code, int) else 1
        # The CLI sets up its log handlers on the stream of its first command: drop them,
        # so the next command logs to its own.
        for logger in [logging.getLogger(), *map(logging.getLogger, list(logging.root.manager.loggerDict))]:
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
        reply.write(json.dumps({"rc": rc, "out": out.getvalue(), "err": err.getvalue()}) + "\n")
        reply.flush()


if __name__ == "__main__":
    main()

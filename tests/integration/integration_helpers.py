"""Helpers the integration tests share, whichever client they drive (no PyMongo import here):
polling a change stream, a failCommand fail point set once on the primary, a TLS set-up the
simulator serves and a client can trust, and the ``mongo-sansio`` command run as a child
process."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest


def next_changes(stream: Any, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
    """``count`` events from ``stream`` (try_next returns None after each empty getMore)."""
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(out)} of {count} events: {out}")
        change = stream.try_next()
        if change is not None:
            out.append(change)
    return out


def fail_once(simulator: Any, command: str, **data: Any) -> None:
    """Make the next ``command`` on ``simulator``'s primary fail as ``data`` says (a
    failCommand fail point's data: ``closeConnection``, ``errorCode``, ``appName``...)."""
    primary = simulator.primary
    assert primary is not None
    simulator.configure_failpoint(
        primary,
        {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": [command], **data},
        },
    )


class TrustedTls(NamedTuple):
    """A fresh trustme CA, a server TLS context it signed, and its certificate's file."""

    ca: Any
    server_context: ssl.SSLContext
    ca_file: str


def trusted_tls(
    directory: Path, hostnames: tuple[str, ...] = ("127.0.0.1", "localhost")
) -> TrustedTls:
    """A server certificate for ``hostnames`` issued by a fresh trustme CA, whose certificate is
    written in ``directory`` for a client's ``tlsCAFile``.  Skips the test when trustme is not
    installed."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*hostnames).configure_cert(context)
    ca_file = directory / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return TrustedTls(ca, context, str(ca_file))


@contextmanager
def cli_process(*args: str) -> Iterator[subprocess.Popen[str]]:
    """``python -m mongo_sansio.adapters.cli ARGS`` with unbuffered text on piped stdout and
    stderr.  On the way out a process still running is killed, and the pipes are closed."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "mongo_sansio.adapters.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def first_line_uri(process: subprocess.Popen[str], prefix: str = "mongodb://", timeout: float = 15.0) -> str:
    """The URI ``mongo-sansio sim`` prints on its first line (read in a thread, so a server that
    never prints fails after ``timeout`` instead of hanging); it must start with ``prefix``."""
    first_line: list[str] = []
    reader = threading.Thread(target=lambda: first_line.append(process.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    assert first_line and first_line[0].startswith(prefix), process.stderr
    return first_line[0].strip()

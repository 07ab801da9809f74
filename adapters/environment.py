"""The process facts the handshake's client metadata needs, gathered where I/O is allowed.

The core builds the ``client`` document (:func:`mongo_sansio.connection.build_client_metadata`)
from data only; this module reads that data from the running process: the operating system
and architecture (:mod:`platform`), the Python implementation and version, the environment
variables (FaaS and Kubernetes detection), and whether ``/.dockerenv`` exists.  Every adapter
(blocking, gevent, asyncio, trio) calls :func:`client_metadata` once per client.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from typing import Any

from mongo_sansio import __version__
from mongo_sansio.connection import DriverInfo, build_client_metadata

__all__ = ["DRIVER", "os_fields", "platform_string", "client_metadata"]

DRIVER = DriverInfo(name="mongo-sansio", version=__version__)


def os_fields() -> dict[str, str]:
    """``client.os``: type, name, architecture and version, as far as Python can tell."""
    system = platform.system()
    fields = {
        "type": system or "unknown",
        "name": system,
        "architecture": platform.machine(),
        "version": platform.release(),
    }
    if system == "Darwin":
        fields["name"] = "macOS"
        fields["version"] = platform.mac_ver()[0] or fields["version"]
    return {key: value for key, value in fields.items() if value}


def platform_string() -> str:
    """``client.platform``: the Python implementation and version, e.g. ``CPython 3.11.9``."""
    return f"{platform.python_implementation()} {platform.python_version()}"


def client_metadata(
    app_name: str | None,
    *,
    wrapping: Sequence[DriverInfo] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The handshake's ``client`` document for this process (``environ`` defaults to
    ``os.environ``; tests pass their own)."""
    return build_client_metadata(
        app_name=app_name,
        driver=DRIVER,
        os=os_fields(),
        platform=platform_string(),
        env=dict(os.environ if environ is None else environ),
        wrapping=wrapping,
        docker=os.path.exists("/.dockerenv"),
    )

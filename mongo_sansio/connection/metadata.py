"""The ``client`` document of the handshake (mongodb-handshake/handshake.md), built from data.

Inputs: the application name, the driver's :class:`DriverInfo` and any wrapping libraries'
(appended with ``|``), the operating system fields, the platform string, and the process
environment as a mapping -- all gathered by the adapter (the core never reads
``os.environ`` or probes files: whether ``/.dockerenv`` exists comes in as ``docker``).
Output: the metadata document (a ``dict``), at most :data:`MAX_METADATA_SIZE` BSON bytes.

FaaS detection follows the specification's table: ``aws.lambda`` (``AWS_EXECUTION_ENV``
starting with ``AWS_Lambda_``, or ``AWS_LAMBDA_RUNTIME_API``), ``azure.func``
(``FUNCTIONS_WORKER_RUNTIME``), ``gcp.func`` (``K_SERVICE`` or ``FUNCTION_NAME``) and
``vercel`` (``VERCEL``).  Vercel wins over AWS (Vercel runs on Lambda); any other mix of
providers reports none.  A variable holding a value of the wrong type (a memory size that is
not an int32) leaves its field out, silently.  The container (``env.container``) is reported
alongside any FaaS data.

When the document is too large, fields are dropped cumulatively in the specification's order
until it fits: ``env`` fields other than ``name``, then ``os`` fields other than ``type``,
then ``env`` entirely, then ``platform`` is truncated (on a UTF-8 character boundary).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.bson import encode
from mongo_sansio.errors import ConfigurationError

__all__ = [
    "DriverInfo",
    "MAX_APP_NAME_SIZE",
    "MAX_METADATA_SIZE",
    "build_client_metadata",
    "detect_faas",
    "detect_container",
    "metadata_size",
]

#: the largest ``client.application.name``, in UTF-8 bytes (BSON overhead not counted)
MAX_APP_NAME_SIZE = 128
#: the largest ``client`` document, in BSON bytes (overhead counted)
MAX_METADATA_SIZE = 512

_DELIMITER = "|"
_OS_FIELDS = ("type", "name", "architecture", "version")
_INT32 = re.compile(r"-?[0-9]{1,10}")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _no_delimiter(instance: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise ConfigurationError(f"driver info {attribute.name} must be a string, not {value!r}")
    if _DELIMITER in value:
        raise ConfigurationError(
            f"driver info {attribute.name} {value!r} must not contain {_DELIMITER!r}, "
            "the metadata delimiter"
        )


@attrs.frozen
class DriverInfo:
    """A driver's (or a wrapping library's) name, version and platform.

    The strings must not contain ``|``, which joins the driver's values with those of the
    libraries wrapping it (``"mongo-sansio|framework"``).
    """

    name: str = attrs.field(validator=_no_delimiter)
    version: str | None = attrs.field(default=None, validator=_no_delimiter)
    platform: str | None = attrs.field(default=None, validator=_no_delimiter)

    def __attrs_post_init__(self) -> None:
        if not self.name:
            raise ConfigurationError("driver info name must not be empty")


def _joined(values: Sequence[str | None]) -> str | None:
    present = [value for value in values if value]
    return _DELIMITER.join(present) if present else None


def _int32(text: str | None) -> int | None:
    """The int32 ``text`` spells, or None (a wrong type leaves the field out, no error)."""
    if text is None or not _INT32.fullmatch(text):
        return None
    value = int(text)
    return value if _INT32_MIN <= value <= _INT32_MAX else None


def _set(env: Mapping[str, str], name: str) -> bool:
    """Whether the variable is "populated": present and not empty."""
    value = env.get(name)
    return isinstance(value, str) and value != ""


def detect_faas(env: Mapping[str, str]) -> dict[str, Any]:
    """The FaaS fields of ``client.env`` (``name`` first), or ``{}`` when there is no provider
    or an ambiguous mix of them."""
    found: set[str] = set()
    execution_env = env.get("AWS_EXECUTION_ENV")
    on_lambda = isinstance(execution_env, str) and execution_env.startswith("AWS_Lambda_")
    if on_lambda or _set(env, "AWS_LAMBDA_RUNTIME_API"):
        found.add("aws.lambda")
    if _set(env, "FUNCTIONS_WORKER_RUNTIME"):
        found.add("azure.func")
    if _set(env, "K_SERVICE") or _set(env, "FUNCTION_NAME"):
        found.add("gcp.func")
    if _set(env, "VERCEL"):
        found.add("vercel")
    if found == {"vercel", "aws.lambda"}:
        found = {"vercel"}  # Vercel functions run on AWS Lambda: the specification prefers it
    if len(found) != 1:
        return {}
    (name,) = found
    fields: dict[str, Any] = {"name": name}

    def text(variable: str) -> str | None:
        value = env.get(variable)
        return value if isinstance(value, str) and value else None

    if name == "aws.lambda":
        fields["memory_mb"] = _int32(text("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"))
        fields["region"] = text("AWS_REGION")
    elif name == "gcp.func":
        fields["timeout_sec"] = _int32(text("FUNCTION_TIMEOUT_SEC"))
        fields["memory_mb"] = _int32(text("FUNCTION_MEMORY_MB"))
        fields["region"] = text("FUNCTION_REGION")
    elif name == "vercel":
        fields["region"] = text("VERCEL_REGION")
    return {key: value for key, value in fields.items() if value is not None}


def detect_container(env: Mapping[str, str], *, docker: bool = False) -> dict[str, str]:
    """``client.env.container``: ``runtime: docker`` when the adapter found ``/.dockerenv``,
    ``orchestrator: kubernetes`` when ``KUBERNETES_SERVICE_HOST`` is set; ``{}`` otherwise."""
    container: dict[str, str] = {}
    if docker:
        container["runtime"] = "docker"
    if _set(env, "KUBERNETES_SERVICE_HOST"):
        container["orchestrator"] = "kubernetes"
    return container


def metadata_size(document: Mapping[str, Any]) -> int:
    """The BSON size of a metadata document, overhead included."""
    return len(encode(document))


def build_client_metadata(
    *,
    app_name: str | None,
    driver: DriverInfo,
    os: Mapping[str, str],
    platform: str | None,
    env: Mapping[str, str],
    wrapping: Sequence[DriverInfo] = (),
    docker: bool = False,
) -> dict[str, Any]:
    """The handshake's ``client`` document (see the module documentation).

    ``driver`` is this driver (its ``version`` is required); ``wrapping`` lists the libraries
    wrapping it, outermost last: their names, versions and platforms are appended with ``|``
    (an entry equal to the one before it is not appended twice).  ``os`` holds ``type``
    (``"unknown"`` when missing), and optionally ``name``, ``architecture`` and ``version``.
    ``env`` is the process environment; ``docker`` says ``/.dockerenv`` exists.

    Raises :class:`~mongo_sansio.errors.ConfigurationError` for an ``app_name`` over 128 UTF-8
    bytes, and when the document cannot fit in 512 bytes even after every truncation the
    specification allows (only the application name and driver info are left then).
    """
    if not isinstance(driver, DriverInfo) or not driver.version:
        raise ConfigurationError("client metadata needs the driver's name and version")
    document: dict[str, Any] = {}
    if app_name is not None:
        if not isinstance(app_name, str):
            raise ConfigurationError(f"appname must be a string, not {app_name!r}")
        try:
            size = len(app_name.encode("utf-8"))
        except UnicodeEncodeError:
            raise ConfigurationError("appname must be valid UTF-8 text") from None
        if size > MAX_APP_NAME_SIZE:
            raise ConfigurationError(
                f"appname is {size} bytes long; it must be at most {MAX_APP_NAME_SIZE} bytes"
            )
        document["application"] = {"name": app_name}
    drivers = [driver]
    for wrapper in wrapping:
        if not isinstance(wrapper, DriverInfo):
            raise ConfigurationError(f"wrapping driver info must be DriverInfo, not {wrapper!r}")
        if wrapper != drivers[-1]:
            drivers.append(wrapper)
    document["driver"] = {
        "name": _joined([info.name for info in drivers]),
        "version": _joined([info.version for info in drivers]),
    }
    os_fields = {"type": os.get("type") or "unknown"}
    for key in _OS_FIELDS[1:]:
        value = os.get(key)
        if isinstance(value, str) and value:
            os_fields[key] = value
    document["os"] = os_fields
    full_platform = _joined([platform, *(info.platform for info in drivers[1:])])
    if full_platform is not None:
        document["platform"] = full_platform
    env_fields = detect_faas(env)
    container = detect_container(env, docker=docker)
    if container:
        env_fields["container"] = container
    if env_fields:
        document["env"] = env_fields
    return _truncated(document)


def _truncated(document: dict[str, Any]) -> dict[str, Any]:
    """Apply the specification's truncation steps, in order, until the document fits."""
    if metadata_size(document) <= MAX_METADATA_SIZE:
        return document
    # 1. env keeps only its name (an env without one goes entirely)
    if "env" in document:
        name = document["env"].get("name")
        if name is None:
            del document["env"]
        else:
            document["env"] = {"name": name}
        if metadata_size(document) <= MAX_METADATA_SIZE:
            return document
    # 2. os keeps only its type
    document["os"] = {"type": document["os"]["type"]}
    if metadata_size(document) <= MAX_METADATA_SIZE:
        return document
    # 3. env goes
    if document.pop("env", None) is not None and metadata_size(document) <= MAX_METADATA_SIZE:
        return document
    # 4. platform is cut to what fits (on a character boundary), or goes when nothing does
    platform = document.get("platform")
    if platform is not None:
        document["platform"] = ""
        room = MAX_METADATA_SIZE - metadata_size(document)
        if room >= 0:
            cut = platform.encode("utf-8")[:room]
            document["platform"] = cut.decode("utf-8", "ignore")
            return document
        del document["platform"]
    size = metadata_size(document)
    if size > MAX_METADATA_SIZE:
        raise ConfigurationError(
            f"client metadata is {size} bytes even without the optional fields (limit "
            f"{MAX_METADATA_SIZE}): shorten the application name or the driver info"
        )
    return document

"""The Stable API: what a command's ``apiVersion``, ``apiStrict`` and ``apiDeprecationErrors``
declare, and mongod's refusals of them.

Inputs: a command's name and body.  Outputs: the command's
:class:`ApiParameters`, or a CommandError in mongod's order:

1. ``apiStrict`` or ``apiDeprecationErrors`` without ``apiVersion``: 4886600;
2. an ``apiVersion`` other than "1": APIVersionError (322) -- the simulator never accepts
   version 2 (mongod's ``acceptApiVersion2`` test parameter is off);
3. ``apiStrict: true`` and a command outside the declared version: APIStrictError (323);
4. ``apiDeprecationErrors: true`` and a command deprecated in it: APIDeprecationError (324).

Beyond the command itself: under ``apiStrict`` an aggregate refuses the stages outside
version 1 (:func:`check_pipeline`); a command continuing a transaction, and a getMore, must
declare what the transaction's first command (the cursor's command) declared, else
APIMismatchError (325) (:func:`check_same`).

This module also holds mongod's test-only commands of the Stable API tests (``testVersion2``
and friends), registered as mongod registers them when test commands are enabled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.engine.order import type_name
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome

__all__ = ["API_TEST_COMMANDS", "ApiParameters", "check_pipeline", "check_same", "parse_api_parameters"]

V1 = frozenset({"1"})
V2 = frozenset({"2"})
V1_AND_2 = frozenset({"1", "2"})

# The commands of Stable API version 1 the simulator knows, by every name it answers to
# (mongod names an alias's command by its main name: findandmodify is findAndModify).  Not in
# version 1, though drivers send them: isMaster (hello is), distinct, buildInfo, serverStatus.
_V1_COMMANDS = frozenset({
    "abortTransaction", "aggregate", "authenticate", "collMod", "commitTransaction", "count",
    "create", "createIndexes", "delete", "drop", "dropDatabase", "dropIndexes", "endSessions",
    "explain", "find", "findAndModify", "findandmodify", "getMore", "hello", "insert",
    "killCursors", "listCollections", "listDatabases", "listIndexes", "ping", "refreshSessions",
    "saslContinue", "saslStart", "update",
    "bulkWrite",  # (8.0 added it; a 7.0 simulator does not know the command at all)
})

# mongod's test-only commands: the versions each is in, and those it is deprecated in.
_TEST_VERSIONS: dict[str, frozenset[str]] = {
    "testVersion2": V2,
    "testVersions1And2": V1_AND_2,
    "testDeprecationInVersion2": V1_AND_2,
    "testDeprecation": V1,
    "testRemoval": V1,
}
_TEST_DEPRECATED: dict[str, frozenset[str]] = {
    "testDeprecationInVersion2": V2,
    "testDeprecation": V1,
}

# Aggregation stages outside version 1 (mongod registers them "never in version 1").
_STAGES_NOT_IN_V1 = frozenset({
    "$currentOp", "$indexStats", "$listLocalSessions", "$listSessions", "$planCacheStats",
    "$search", "$searchMeta", "$vectorSearch", "$listSearchIndexes",
})
# Stages whose sub-pipelines mongod checks as well.
_SUB_PIPELINES = {"$lookup": "pipeline", "$unionWith": "pipeline"}


@attrs.frozen
class ApiParameters:
    """What a command declared; None: the field was absent (absent and false differ, as in
    mongod's comparison of a getMore's parameters with its cursor's)."""

    version: str | None = None
    strict: bool | None = None
    deprecation_errors: bool | None = None

    def describe(self) -> str:
        """As mongod prints the parameters in APIMismatchError messages."""
        parts = []
        if self.version is not None:
            parts.append(f'apiVersion: "{self.version}"')
        if self.strict is not None:
            parts.append(f"apiStrict: {str(self.strict).lower()}")
        if self.deprecation_errors is not None:
            parts.append(f"apiDeprecationErrors: {str(self.deprecation_errors).lower()}")
        return "{ " + ", ".join(parts) + " }" if parts else "{}"


def _typed(body: Mapping[str, Any], field: str, kind: type, expected: str) -> Any:
    value = body.get(field)
    if value is None and field not in body:
        return None
    # bool is an int in Python; neither stands for the other in BSON
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise CommandError(
            14, "TypeMismatch",
            f"BSON field 'APIParametersFromClient.{field}' is the wrong type '{type_name(value)}', "
            f"expected type '{expected}'",
        )
    return value


def _versions_of(name: str) -> frozenset[str]:
    if name in _TEST_VERSIONS:
        return _TEST_VERSIONS[name]
    return V1 if name in _V1_COMMANDS else frozenset()


def parse_api_parameters(name: str, body: Mapping[str, Any]) -> ApiParameters:
    """The command's declaration, checked as mongod checks it before running anything."""
    params = ApiParameters(
        _typed(body, "apiVersion", str, "string"),
        _typed(body, "apiStrict", bool, "bool"),
        _typed(body, "apiDeprecationErrors", bool, "bool"),
    )
    if (params.strict is not None or params.deprecation_errors is not None) and params.version is None:
        raise CommandError(4886600, "Location4886600",
                           "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
    version = params.version
    if version is None:
        return params
    if version == "2":
        raise CommandError(322, "APIVersionError", "Cannot accept API version 2")
    if version != "1":
        raise CommandError(322, "APIVersionError", 'API version must be "1"')
    if params.strict and version not in _versions_of(name):
        raise CommandError(
            323, "APIStrictError",
            f"Provided apiStrict:true, but the command {_main_name(name)} is not in API Version {version}. "
            f"Information on supported commands and migrations in API Version {version} can be found at "
            "https://dochub.mongodb.org/core/manual-versioned-api",
        )
    if params.deprecation_errors and version in _TEST_DEPRECATED.get(name, frozenset()):
        raise CommandError(
            324, "APIDeprecationError",
            f"Provided apiDeprecationErrors:true, but the command {name} is deprecated in API Version {version}",
        )
    return params


def _main_name(name: str) -> str:
    return {"findandmodify": "findAndModify", "ismaster": "isMaster", "buildinfo": "buildInfo"}.get(name, name)


def check_pipeline(params: ApiParameters, pipeline: Any) -> None:
    """Under apiStrict in version 1, refuse the stages outside it, at any depth."""
    if not (params.strict and params.version == "1") or not isinstance(pipeline, list):
        return
    for stage in pipeline:
        if not isinstance(stage, Mapping) or not stage:
            continue
        name, spec = next(iter(stage.items()))
        if name in _STAGES_NOT_IN_V1:
            raise CommandError(323, "APIStrictError", f"{name} is not allowed with 'apiStrict: true' in API Version 1")
        if name == "$collStats" and isinstance(spec, Mapping) and set(spec) - {"count"}:
            raise CommandError(323, "APIStrictError", "only the 'count' option to $collStats is supported in API Version 1")
        if name in _SUB_PIPELINES and isinstance(spec, Mapping):
            check_pipeline(params, spec.get(_SUB_PIPELINES[name]))
        if name == "$facet" and isinstance(spec, Mapping):
            for inner in spec.values():
                check_pipeline(params, inner)


def check_same(command: str, params: ApiParameters, first: ApiParameters, what: str) -> None:
    """A getMore or a transaction's later command declares what the first command did."""
    if params != first:
        raise CommandError(
            325, "APIMismatchError",
            f"API parameter mismatch: {command} used params {params.describe()}, {what} used {first.describe()}",
        )


def _echo_parameters(ctx: Context) -> Outcome:
    """mongod's test commands answer the API parameters they were given."""
    reply: dict[str, Any] = {}
    for field in ("apiVersion", "apiStrict", "apiDeprecationErrors"):
        if field in ctx.body:
            reply[field] = ctx.body[field]
    return {**reply, "ok": 1.0}


API_TEST_COMMANDS = [CommandSpec(name, _echo_parameters, requires_auth=False) for name in _TEST_VERSIONS]

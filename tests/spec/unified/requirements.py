"""runOnRequirements against what the deployment reports.

Input: a :class:`Deployment` (the simulator's members, its topology -- ``replicaset`` or
``single`` --, the server version its ``buildInfo`` claims, whether auth is on, the server
parameters it answers) and the requirement lists of a file and of a test.  Output: None when
the test may run, else the reason it may not (the first unmet requirement's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import attrs

from .matching import is_number

__all__ = ["Deployment", "requirements_reason", "version_tuple"]

#: the mechanisms a simulated deployment with access control offers its users (MONGODB-OIDC:
#: JWTs of the deployment's OIDC issuer, found by ENVIRONMENT test in $OIDC_TOKEN_FILE)
SIMULATED_MECHANISMS = ("SCRAM-SHA-1", "SCRAM-SHA-256", "MONGODB-OIDC")


def version_tuple(text: str) -> tuple[int, ...]:
    """``"4.4.7"`` -> (4, 4, 7); missing parts are 0; pre-release suffixes ignored."""
    parts: list[int] = []
    for part in str(text).split(".")[:3]:
        digits = ""
        for char in part:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits or 0))
    return tuple(parts + [0] * (3 - len(parts)))


@attrs.define
class Deployment:
    """One running deployment a test file runs against.

    ``server_parameters(name)`` returns a parameter's value, or raises KeyError when the
    server does not know it (or has no getParameter)."""

    members: list[str]
    topology: str  # "replicaset" | "single" | "load-balanced"
    server_version: str
    replset: str | None = None
    auth: bool = False
    credentials: tuple[str, str] | None = None  # (user, password) of the admin database
    serverless: bool = False
    csfle: bool = False
    simulator: Any = None
    server_parameter: Callable[[str], Any] | None = None
    #: the file (in $OIDC_TOKEN_FILE) holding a JWT the simulator's OIDC issuer accepts
    oidc_token_file: str | None = None
    #: topology "load-balanced": the load balancer front's ``host:port`` (clients connect
    #: there with loadBalanced=true; ``members`` are the replica set behind it)
    load_balancer: str | None = None
    #: the front over several routers (a client with useMultipleMongoses), else None
    multi_load_balancer: str | None = None

    def uri(
        self, *, direct: bool = False, credentials: bool = True, multiple: bool = False,
        one_mongos: bool = False,
    ) -> str:
        """``credentials`` False: without the SCRAM user (a client authenticating otherwise);
        ``multiple``: a client with useMultipleMongoses (load-balanced: the front over
        several routers); ``one_mongos``: only the first mongos of a sharded cluster
        (useMultipleMongoses false)."""
        user = ""
        if self.credentials is not None and credentials:
            user = f"{quote(self.credentials[0], safe='')}:{quote(self.credentials[1], safe='')}@"
        if self.load_balancer is not None:
            front = self.multi_load_balancer if multiple and self.multi_load_balancer else self.load_balancer
            return f"mongodb://{user}{front}/?loadBalanced=true"
        if direct or self.topology == "single" or (one_mongos and self.topology == "sharded"):
            return f"mongodb://{user}{self.members[0]}/"
        options = f"?replicaSet={self.replset}" if self.replset else ""
        return f"mongodb://{user}{','.join(self.members)}/{options}"

    def describe(self) -> str:
        kind = {
            "replicaset": "a replica set",
            "load-balanced": "a load-balanced deployment",
            "sharded": "a sharded cluster",
        }.get(self.topology, "a standalone")
        return f"{kind} reporting server version {self.server_version}"


def _parameter_reason(deployment: Deployment, parameters: Mapping[str, Any]) -> str | None:
    for name, wanted in parameters.items():
        if deployment.server_parameter is None:
            return f"needs server parameter {name}={wanted!r} (the simulator has no getParameter)"
        try:
            actual = deployment.server_parameter(name)
        except KeyError:
            return f"needs server parameter {name}={wanted!r} (the server does not know it)"
        same = actual == wanted if is_number(actual) and is_number(wanted) else (
            type(actual) is type(wanted) and actual == wanted
        )
        if not same:
            return f"needs server parameter {name}={wanted!r} (the server has {actual!r})"
    return None


def unmet(requirement: Mapping[str, Any], deployment: Deployment) -> str | None:
    """Why one runOnRequirement is not met (None when it is)."""
    version = version_tuple(deployment.server_version)
    for key, value in requirement.items():
        if key == "minServerVersion" and version < version_tuple(value):
            return f"needs server version >= {value} (the simulator reports {deployment.server_version})"
        if key == "maxServerVersion" and version > version_tuple(value):
            return f"needs server version <= {value} (the simulator reports {deployment.server_version})"
        if key == "topologies":
            wanted = set(value)
            if "sharded-replicaset" in wanted:
                wanted.add("sharded")
            if deployment.topology not in wanted:
                return f"needs a {' or '.join(value)} deployment (not {deployment.describe()})"
        if key == "serverless":
            if value == "require" and not deployment.serverless:
                return "needs a serverless deployment"
            if value == "forbid" and deployment.serverless:
                return "must not run on a serverless deployment"
        if key == "auth" and bool(value) != deployment.auth:
            return "needs authentication enabled" if value else "needs authentication disabled"
        if key == "authMechanism" and (not deployment.auth or value not in SIMULATED_MECHANISMS):
            return f"needs the {value} authentication mechanism (the simulator offers SCRAM and OIDC)"
        if key == "csfle":
            supported = deployment.csfle
            if value is False and supported:
                return "must not run where CSFLE is supported"
            if value is not False and not supported:
                return "needs client-side field level encryption (not supported here)"
        if key == "serverParameters":
            reason = _parameter_reason(deployment, value)
            if reason:
                return reason
        if key not in (
            "minServerVersion", "maxServerVersion", "topologies", "serverless", "auth",
            "authMechanism", "csfle", "serverParameters",
        ):
            return f"runOnRequirements {key!r} is not supported by this runner"
    return None


def requirements_reason(
    requirements: Sequence[Mapping[str, Any]] | None, deployment: Deployment
) -> str | None:
    """None when any requirement is met (or there are none), else the first one's reason."""
    if not requirements:
        return None
    reasons = [unmet(r, deployment) for r in requirements]
    if any(reason is None for reason in reasons):
        return None
    return reasons[0]

"""The Connection String spec tests: every file of ``connection-string/tests``.

Each case parses its URI with :func:`mongo_sansio.uri.parse_uri`: an invalid case must raise
ConfigurationError; a valid one must warn exactly when the case says so and give the hosts,
user information, auth database and options it lists (option keys compared case-insensitively,
as the suite's README says; a null expectation asserts nothing).

These cases test syntax, not credentials (``mongodb://alice@host`` is a valid *string* though
the auth spec refuses a SCRAM credential without a password), so they parse with
``check_credential=False``; the auth spec's rules have their own suite
(``test_auth_connection_string.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from _specs import suite_cases

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri import ConnectionString, parse_uri

SUITE = "connection-string"


def _expand(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
    for case in data["tests"]:
        yield case["description"], case


CASES = suite_cases(SUITE, _expand)


def plain(value: Any) -> Any:
    """Our immutable containers as the JSON the suites compare with."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    return value


def check_hosts(result: ConnectionString, expected: list[dict[str, Any]] | None) -> None:
    if expected is None:
        return
    assert len(result.hosts) == len(expected), result.hosts
    for host, want in zip(result.hosts, expected, strict=True):
        assert host.host == want["host"]
        if want.get("port") is not None:
            assert host.port == want["port"]
        if want.get("type") is not None:
            assert host.kind == want["type"]


def check_options(result: ConnectionString, expected: Mapping[str, Any] | None) -> None:
    for key, value in (expected or {}).items():
        assert key in result.options, f"option {key!r} missing from {result.options!r}"
        assert plain(result.options[key]) == value, key


def run_case(case: dict[str, Any], *, check_credential: bool) -> ConnectionString | None:
    warnings: list[str] = []
    if not case["valid"]:
        with pytest.raises(ConfigurationError):
            parse_uri(case["uri"], warn=warnings.append, check_credential=check_credential)
        return None
    result = parse_uri(case["uri"], warn=warnings.append, check_credential=check_credential)
    if case.get("warning") is not None:
        assert bool(warnings) == case["warning"], warnings
    assert list(result.warnings) == warnings
    check_hosts(result, case.get("hosts"))
    check_options(result, case.get("options"))
    return result


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_connection_string(case: dict[str, Any]) -> None:
    result = run_case(case, check_credential=False)
    auth = case.get("auth")
    if result is None or auth is None:
        return
    assert result.username == auth["username"]
    assert result.password == auth["password"]
    assert result.database == auth["db"]

"""The auth spec's connection-string tests (``auth/tests/legacy``).

Each URI is parsed as a client constructor would (credential rules on): an invalid case must
raise ConfigurationError; a valid one must describe the credential the case lists (null: no
credential configured; ``mechanism_properties`` is a subset).  The ``unified`` files are run
against the simulator by ``test_auth_unified.py`` and skipped here, naming it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from _specs import suite_cases
from test_connection_string import plain

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri import parse_uri

SUITE = "auth"

# The legacy file is mid-way through the removal of MONGODB-AWS credentials from connection
# strings (JAVA-6030 skips the same case): this case expects user:pass@ to be refused while
# "should use username and password if specified (MONGODB-AWS)" expects the same shape of
# URI to be accepted.  We follow the accepted form, which the other AWS cases also assume.
CONTRADICTORY = {
    "should throw an exception if username and password provided (MONGODB-AWS)": (
        "contradicts 'should use username and password if specified (MONGODB-AWS)' in the "
        "same file (the spec is removing AWS credentials from URIs; JAVA-6030 skips it too)"
    ),
}


def _expand(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
    unified = "unified" in path.parts
    for case in data["tests"]:
        if unified:
            yield case["description"], {"skip": "a unified-format test: run by test_auth_unified.py"}
        elif case["description"] in CONTRADICTORY:
            yield case["description"], {"skip": CONTRADICTORY[case["description"]]}
        else:
            yield case["description"], case


CASES = suite_cases(SUITE, _expand)


@pytest.mark.spec
@pytest.mark.parametrize("case", CASES)
def test_auth_connection_string(case: dict[str, Any]) -> None:
    if "skip" in case:
        pytest.skip(case["skip"])
    if not case["valid"]:
        with pytest.raises(ConfigurationError):
            parse_uri(case["uri"])
        return
    credential = parse_uri(case["uri"]).credential
    expected = case.get("credential")
    if expected is None:
        assert credential is None
        return
    assert credential is not None
    for key, attribute in (
        ("username", "username"),
        ("password", "password"),
        ("source", "source"),
        ("mechanism", "mechanism"),
    ):
        if key in expected:
            assert getattr(credential, attribute) == expected[key], key
    if "mechanism_properties" in expected:
        properties = expected["mechanism_properties"]
        if properties is None:
            assert not credential.mechanism_properties
        else:
            for name, value in properties.items():
                assert plain(credential.mechanism_properties.get(name)) == value, name

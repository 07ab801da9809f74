"""WriteConcern and ReadConcern: validation, the documents they send, server defaults."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.ops.write_concern import (
    DEFAULT_READ_CONCERN,
    DEFAULT_WRITE_CONCERN,
    ReadConcern,
    WriteConcern,
)

# The cases of read-write-concern's document tests (write-concern.json): options, the document
# sent, whether it is the server default, whether it is acknowledged.
VALID_WRITE_CONCERNS = [
    ({}, {}, True, True),
    ({"w": 3}, {"w": 3}, False, True),
    ({"w": "majority"}, {"w": "majority"}, False, True),
    ({"w": "my_mode"}, {"w": "my_mode"}, False, True),
    ({"wtimeout_ms": 1000}, {"wtimeout": 1000}, False, True),
    ({"journal": True}, {"j": True}, False, True),
    ({"journal": False}, {"j": False}, False, True),
    ({"w": 0}, {"w": 0}, False, False),
    ({"w": 0, "wtimeout_ms": 500}, {"w": 0, "wtimeout": 500}, False, False),
    ({"w": 0, "journal": False}, {"w": 0, "j": False}, False, False),
    (
        {"w": 3, "wtimeout_ms": 1000, "journal": True},
        {"w": 3, "wtimeout": 1000, "j": True},
        False,
        True,
    ),
]


@pytest.mark.parametrize(("options", "document", "default", "acknowledged"), VALID_WRITE_CONCERNS)
def test_valid_write_concerns(
    options: dict[str, Any], document: dict[str, Any], default: bool, acknowledged: bool
) -> None:
    concern = WriteConcern(**options)
    assert concern.to_document() == document
    assert list(concern.to_document()) == list(document)  # w, wtimeout, j
    assert concern.is_server_default is default
    assert concern.acknowledged is acknowledged
    assert WriteConcern.from_document(document) == concern


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"w": -3}, "w"),
        ({"w": True}, "w"),
        ({"w": 1.5}, "w"),
        ({"wtimeout_ms": -1000}, "wtimeoutMS"),
        ({"wtimeout_ms": "1000"}, "wtimeoutMS"),
        ({"journal": 1}, "journal"),
        ({"w": 0, "journal": True}, "journal"),
    ],
)
def test_invalid_write_concerns_name_the_option(options: dict[str, Any], names: str) -> None:
    with pytest.raises(ConfigurationError, match=names):
        WriteConcern(**options)


def test_write_concern_from_document_refuses_unknown_fields_and_non_documents() -> None:
    with pytest.raises(ConfigurationError, match="fsync"):
        WriteConcern.from_document({"w": 1, "fsync": True})
    with pytest.raises(ConfigurationError):
        WriteConcern.from_document([("w", 1)])  # type: ignore[arg-type]


def test_defaults_are_the_server_defaults() -> None:
    assert DEFAULT_WRITE_CONCERN.is_server_default and DEFAULT_WRITE_CONCERN.acknowledged
    assert DEFAULT_READ_CONCERN.is_server_default and DEFAULT_READ_CONCERN.to_document() == {}


@pytest.mark.parametrize(
    "level", ["local", "majority", "linearizable", "snapshot", "available", "future"]
)
def test_read_concern_levels(level: str) -> None:
    concern = ReadConcern(level=level)
    assert concern.to_document() == {"level": level}
    assert not concern.is_server_default
    assert ReadConcern.from_document({"level": level}) == concern


@pytest.mark.parametrize("level", ["", 1, {"level": "x"}])
def test_invalid_read_concern_levels(level: Any) -> None:
    with pytest.raises(ConfigurationError, match="readConcernLevel"):
        ReadConcern(level=level)


def test_read_concern_from_document() -> None:
    assert ReadConcern.from_document({}) == DEFAULT_READ_CONCERN
    with pytest.raises(ConfigurationError):
        ReadConcern.from_document("majority")  # type: ignore[arg-type]


write_concerns = st.builds(
    WriteConcern,
    w=st.none() | st.integers(0, 50) | st.sampled_from(["majority", "dc1"]),
    wtimeout_ms=st.none() | st.integers(0, 10**6),
    journal=st.none() | st.just(False),
)


@given(write_concerns)
def test_write_concern_document_round_trip(concern: WriteConcern) -> None:
    document = concern.to_document()
    assert WriteConcern.from_document(document) == concern
    assert (document == {}) is concern.is_server_default
    assert concern.acknowledged is (document.get("w") != 0)


def test_write_concerns_are_frozen() -> None:
    import attrs

    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        WriteConcern(w=1).w = 2  # type: ignore[misc]


def test_pymongo_signatures() -> None:
    """``WriteConcern(w, wtimeout, j)`` and ``ReadConcern(level)`` as PyMongo spells them."""
    assert WriteConcern("majority", 1000, True).to_document() == {
        "w": "majority",
        "wtimeout": 1000,
        "j": True,
    }
    assert WriteConcern(w=1, wtimeout=5, j=False) == WriteConcern(w=1, wtimeout_ms=5, journal=False)
    assert WriteConcern(fsync=True).to_document() == {"j": True}
    assert ReadConcern("snapshot").to_document() == {"level": "snapshot"}
    with pytest.raises(ConfigurationError):
        WriteConcern(j=True, fsync=True)

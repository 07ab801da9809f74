"""PyMongo's public names that code moved over from PyMongo uses as is: the index direction
constants, ``errors.CollectionInvalid``, a read preference's ``name`` and ``document``, and
PyMongo's messages for update and replacement documents (found by the side-by-side snippets,
tests/integration/test_pymongo_snippets.py)."""

from __future__ import annotations

import pytest

import mongo_sansio.adapters.blocking as blocking
from mongo_sansio import errors
from mongo_sansio.ops.crud_commands import check_replacement, check_update
from mongo_sansio.ops.database import CollectionInvalid
from mongo_sansio.selection.read_preference import ReadPreference


def test_index_constants_have_pymongos_values() -> None:
    assert (blocking.ASCENDING, blocking.DESCENDING) == (1, -1)
    assert (blocking.GEO2D, blocking.GEOSPHERE, blocking.HASHED, blocking.TEXT) == (
        "2d",
        "2dsphere",
        "hashed",
        "text",
    )
    assert {"ASCENDING", "DESCENDING", "TEXT"} <= set(blocking.__all__)


def test_collection_invalid_is_one_class_under_errors() -> None:
    assert errors.CollectionInvalid is CollectionInvalid is blocking.CollectionInvalid
    assert issubclass(errors.CollectionInvalid, errors.PyMongoError)
    assert "CollectionInvalid" in errors.__all__


@pytest.mark.parametrize(
    ("preference", "name", "mode"),
    [
        (ReadPreference.PRIMARY, "Primary", "primary"),
        (ReadPreference.PRIMARY_PREFERRED, "PrimaryPreferred", "primaryPreferred"),
        (ReadPreference.SECONDARY, "Secondary", "secondary"),
        (ReadPreference.SECONDARY_PREFERRED, "SecondaryPreferred", "secondaryPreferred"),
        (ReadPreference.NEAREST, "Nearest", "nearest"),
    ],
)
def test_read_preference_name_and_document(
    preference: ReadPreference, name: str, mode: str
) -> None:
    assert preference.name == name
    assert preference.document == {"mode": mode} == preference.to_document()


def test_read_preference_document_carries_tags() -> None:
    tagged = ReadPreference(mode="secondary", tag_sets=[{"dc": "east"}], max_staleness_seconds=120)
    assert tagged.document == {
        "mode": "secondary",
        "tags": [{"dc": "east"}],
        "maxStalenessSeconds": 120,
    }


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"x": 1}, "update only works with $ operators (found 'x')"),
        ({}, "update cannot be empty"),
        ([], "update cannot be empty"),
    ],
)
def test_update_messages_begin_as_pymongos(update: object, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        check_update(update)
    assert str(raised.value).startswith(message)


def test_replacement_message_begins_as_pymongos() -> None:
    with pytest.raises(ValueError) as raised:
        check_replacement({"$set": {"x": 1}})
    assert str(raised.value).startswith("replacement can not include $ operators (found '$set')")

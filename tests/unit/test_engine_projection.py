"""Find projections: inclusion, exclusion, _id, dotted paths, $slice, $elemMatch, positional $."""

from __future__ import annotations

from typing import Any

import pytest

from mongo_sansio.testing.engine.errors import CommandError
from mongo_sansio.testing.engine.projection import Projection, project

DOC: dict[str, Any] = {
    "_id": 1,
    "name": "n",
    "size": {"h": 10, "w": 20},
    "items": [{"k": "a", "q": 1}, {"k": "b", "q": 5}, 7],
    "nums": [1, 2, 3, 4, 5],
}


def test_none_and_empty_projection_return_everything() -> None:
    assert project(DOC, None) == DOC
    assert project(DOC, {}) == DOC


def test_inclusion_keeps_id_by_default() -> None:
    assert project(DOC, {"name": 1}) == {"_id": 1, "name": "n"}
    assert project(DOC, {"name": True, "_id": 0}) == {"name": "n"}


def test_only_id() -> None:
    assert project(DOC, {"_id": 1}) == {"_id": 1}


def test_exclusion() -> None:
    assert project(DOC, {"items": 0, "nums": 0, "size": 0}) == {"_id": 1, "name": "n"}
    assert project(DOC, {"_id": 0})["name"] == "n"
    assert "_id" not in project(DOC, {"_id": 0})


def test_dotted_inclusion_and_exclusion() -> None:
    assert project(DOC, {"size.h": 1}) == {"_id": 1, "size": {"h": 10}}
    assert project(DOC, {"size.h": 0})["size"] == {"w": 20}
    assert project(DOC, {"items.k": 1}) == {"_id": 1, "items": [{"k": "a"}, {"k": "b"}]}
    assert project(DOC, {"items.k": 0})["items"] == [{"q": 1}, {"q": 5}, 7]


def test_nested_projection_documents_mean_dotted_paths() -> None:
    assert project(DOC, {"size": {"w": 1}}) == {"_id": 1, "size": {"w": 20}}


def test_inclusion_never_invents_fields() -> None:
    assert project(DOC, {"missing": 1, "name.sub": 1}) == {"_id": 1}


@pytest.mark.parametrize(
    ("spec", "code"),
    [({"name": 1, "size": 0}, 31254), ({"size": 0, "name": 1}, 31253)],
)
def test_mixing_inclusion_and_exclusion_is_an_error(spec: dict[str, Any], code: int) -> None:
    with pytest.raises(CommandError) as info:
        Projection(spec)
    assert info.value.code == code
    assert info.value.code_name == f"Location{code}"


def test_id_may_be_excluded_in_an_inclusion() -> None:
    assert project(DOC, {"_id": 0, "name": 1}) == {"name": "n"}


def test_path_collision_is_an_error() -> None:
    with pytest.raises(CommandError) as info:
        Projection({"size": 1, "size.h": 1})
    assert info.value.code == 31249


@pytest.mark.parametrize(
    ("slice_", "expected"),
    [(2, [1, 2]), (-2, [4, 5]), ([1, 2], [2, 3]), ([-2, 1], [4]), (0, []), (10, [1, 2, 3, 4, 5])],
)
def test_slice(slice_: Any, expected: list[int]) -> None:
    out = project(DOC, {"nums": {"$slice": slice_}})
    assert out["nums"] == expected
    assert out["name"] == "n"  # $slice alone keeps the other fields


def test_slice_with_inclusion() -> None:
    assert project(DOC, {"name": 1, "nums": {"$slice": 1}}) == {"_id": 1, "name": "n", "nums": [1]}


def test_slice_errors() -> None:
    with pytest.raises(CommandError):
        Projection({"nums": {"$slice": "x"}})
    with pytest.raises(CommandError):
        Projection({"nums": {"$slice": [1, 0]}})


def test_elem_match_projection() -> None:
    assert project(DOC, {"items": {"$elemMatch": {"q": {"$gt": 2}}}}) == {
        "_id": 1, "items": [{"k": "b", "q": 5}],
    }
    assert project(DOC, {"items": {"$elemMatch": {"q": 99}}}) == {"_id": 1}
    assert project(DOC, {"nums": {"$elemMatch": {"$gt": 3}}}) == {"_id": 1, "nums": [4]}


def test_positional_projection_uses_the_query() -> None:
    out = project(DOC, {"nums.$": 1}, filter={"nums": {"$gte": 3}})
    assert out == {"_id": 1, "nums": [3]}
    out = project(DOC, {"items.$": 1}, filter={"items.k": "b"})
    assert out == {"_id": 1, "items": [{"k": "b", "q": 5}]}


def test_positional_projection_without_a_matching_query_is_an_error() -> None:
    with pytest.raises(CommandError) as info:
        project(DOC, {"nums.$": 1}, filter={"name": "n"})
    assert info.value.code == 2


def test_computed_fields() -> None:
    assert project(DOC, {"area": {"$multiply": ["$size.h", "$size.w"]}}) == {"_id": 1, "area": 200}
    assert project(DOC, {"label": {"$literal": 1}, "_id": 0}) == {"label": 1}
    assert project(DOC, {"_id": "$name"}) == {"_id": "n"}


def test_field_order_follows_the_document() -> None:
    assert list(project(DOC, {"nums": 1, "name": 1})) == ["_id", "name", "nums"]


def test_projection_returns_copies() -> None:
    out = project(DOC, {"size": 1})
    out["size"]["h"] = 0
    assert DOC["size"]["h"] == 10

"""Collections created with options that change what they are: clustered collections (and,
beside them in listCollections, capped ones).

Inputs: a ``create`` command's body.  Outputs: the options the collection is kept with
(:func:`clustered_options`, validated as mongod validates them, refused with its codes), and
how listCollections and listIndexes show such a collection (:func:`listed_collection`,
:func:`listed_indexes`).

A clustered collection stores its documents in the order of its cluster key, ``_id``: it has
no separate ``_id`` index, so listCollections gives no ``idIndex`` and shows the
``clusteredIndex`` option, and listIndexes lists the clustered index (``clustered: true``) in
the place of ``_id_``.  The key stays unique; the simulator keeps its ``_id`` uniqueness as for
any collection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.testing.engine import CommandError

__all__ = ["clustered_options", "listed_collection", "listed_indexes"]

_ID_INDEX = {"v": 2, "key": {"_id": 1}, "name": "_id_"}


def clustered_options(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``clusteredIndex`` option a ``create`` keeps (None: not clustered), in mongod's
    canonical form ``{v, key, name, unique}`` (name ``_id_`` unless given)."""
    if "clusteredIndex" not in body:
        return None
    spec = body["clusteredIndex"]
    if not isinstance(spec, Mapping):
        # (mongod also takes a boolean, the legacy form it uses for time series buckets)
        raise CommandError(14, "TypeMismatch", "BSON field 'create.clusteredIndex' is the wrong type, expected type 'object'")
    if spec.get("unique") is not True:
        raise CommandError(5979700, "Location5979700", "The clusteredIndex option requires unique: true to be specified")
    key = spec.get("key")
    if not (isinstance(key, Mapping) and list(key) == ["_id"] and key["_id"] == 1 and not isinstance(key["_id"], bool)):
        raise CommandError(197, "InvalidIndexSpecificationOption",
                           "The clusteredIndex option is only supported for key: {_id: 1}")
    version = spec.get("v", 2)
    if version != 2 or isinstance(version, bool):
        raise CommandError(5979704, "Location5979704",
                           f"Invalid clusteredIndex specification; cannot create a clusteredIndex with v={version}")
    name = spec.get("name", "_id_")
    if not isinstance(name, str):
        raise CommandError(14, "TypeMismatch", "BSON field 'clusteredIndex.name' is the wrong type, expected type 'string'")
    return {"v": 2, "key": {"_id": 1}, "name": name, "unique": True}


def listed_collection(name: str, capped: Mapping[str, Any] | None, clustered: Mapping[str, Any] | None) -> dict[str, Any]:
    """A collection's listCollections entry."""
    options: dict[str, Any] = dict(capped or {})
    if clustered is not None:
        options["clusteredIndex"] = dict(clustered)
    row: dict[str, Any] = {"name": name, "type": "collection", "options": options, "info": {"readOnly": False}}
    if clustered is None:
        row["idIndex"] = dict(_ID_INDEX)
    return row


def listed_indexes(specs: list[dict[str, Any]], clustered: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """listIndexes: the clustered index, flagged, stands where ``_id_`` would."""
    if clustered is None:
        return specs
    return [{**clustered, "clustered": True} if spec["name"] == "_id_" else spec for spec in specs]

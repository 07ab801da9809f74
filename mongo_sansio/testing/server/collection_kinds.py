"""Collections created with options that change what they are: clustered and time series
collections (and, beside them in listCollections, capped ones).

Inputs: a ``create`` command's body.  Outputs: the options the collection is kept with
(:func:`clustered_options`, :func:`timeseries_options`, validated as mongod validates them,
refused with its codes), and how listCollections and listIndexes show such a collection
(:func:`listed_collection`, :func:`listed_indexes`).

A clustered collection stores its documents in the order of its cluster key, ``_id``: it has
no separate ``_id`` index, so listCollections gives no ``idIndex`` and shows the
``clusteredIndex`` option, and listIndexes lists the clustered index (``clustered: true``) in
the place of ``_id_``.  The key stays unique; the simulator keeps its ``_id`` uniqueness as for
any collection.

A time series collection (mongod keeps its measurements in buckets, a clustered collection
behind a view) has no ``_id`` index: ``_id`` need not be unique.  It is listed with type
``timeseries`` and its options (``granularity`` "seconds" unless given, and the bucket span it
implies), and, given a ``metaField``, it has mongod 7.0's default index on the meta and time
fields.  Known differences: the simulator stores the measurements as plain documents, does not
check the time field of an insert, and does not refuse writes to it in transactions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.testing.engine import CommandError

__all__ = ["clustered_options", "listed_collection", "listed_indexes", "timeseries_index", "timeseries_options"]

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


# A granularity's bucket span (bucketMaxSpanSeconds), as mongod derives it.
_SPANS = {"seconds": 3600, "minutes": 86400, "hours": 2592000}


def _string(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise CommandError(14, "TypeMismatch", f"BSON field 'create.timeseries.{field}' is the wrong type, expected type 'string'")
    return value


def timeseries_options(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The options a time series ``create`` is listed with (None: not time series)."""
    if "timeseries" not in body:
        return None
    spec = body["timeseries"]
    if not isinstance(spec, Mapping):
        raise CommandError(14, "TypeMismatch", "BSON field 'create.timeseries' is the wrong type, expected type 'object'")
    for key in spec:
        if key not in ("timeField", "metaField", "granularity", "bucketMaxSpanSeconds", "bucketRoundingSeconds"):
            raise CommandError(40415, "Location40415", f"BSON field 'create.timeseries.{key}' is an unknown field.")
    if "timeField" not in spec:
        raise CommandError(40414, "Location40414", "BSON field 'create.timeseries.timeField' is missing but a required field")
    listed: dict[str, Any] = {"timeField": _string(spec["timeField"], "timeField")}
    if "metaField" in spec:
        listed["metaField"] = _string(spec["metaField"], "metaField")
    if "bucketMaxSpanSeconds" in spec or "bucketRoundingSeconds" in spec:
        # custom bucketing (6.3): both are given, and no granularity
        listed["bucketRoundingSeconds"] = spec.get("bucketRoundingSeconds")
        listed["bucketMaxSpanSeconds"] = spec.get("bucketMaxSpanSeconds")
    else:
        granularity = _string(spec.get("granularity", "seconds"), "granularity")
        if granularity not in _SPANS:
            raise CommandError(2, "BadValue", f"Enumeration value '{granularity}' for field 'granularity' is not a valid value.")
        listed["granularity"] = granularity
        listed["bucketMaxSpanSeconds"] = _SPANS[granularity]
    options: dict[str, Any] = {"timeseries": listed}
    if "expireAfterSeconds" in body:
        options = {"expireAfterSeconds": body["expireAfterSeconds"], **options}
    return options


def timeseries_index(options: Mapping[str, Any]) -> dict[str, Any] | None:
    """mongod 7.0's default index of a time series collection with a metaField."""
    spec = options["timeseries"]
    if "metaField" not in spec:
        return None
    meta, time = spec["metaField"], spec["timeField"]
    return {"key": {meta: 1, time: 1}, "name": f"{meta}_1_{time}_1"}


def listed_collection(
    name: str,
    capped: Mapping[str, Any] | None,
    clustered: Mapping[str, Any] | None,
    timeseries: Mapping[str, Any] | None = None,
    collation: Mapping[str, Any] | None = None,
    uuid: Any = None,
    *,
    validation: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A collection's listCollections entry; ``collation``: its default (full form), which
    its _id index has too; ``uuid``: the collection's UUID (``info.uuid``); ``validation``:
    the validator, validationLevel and validationAction options that were set."""
    with_collation = {"collation": dict(collation)} if collation is not None else {}
    if timeseries is not None:
        # (mongod lists a time series collection as the view over its buckets: no UUID)
        options = {**timeseries, **with_collation}
        return {"name": name, "type": "timeseries", "options": options, "info": {"readOnly": False}}
    options = {**(capped or {}), **(validation or {}), **with_collation}
    if clustered is not None:
        options["clusteredIndex"] = dict(clustered)
    info: dict[str, Any] = {"readOnly": False}
    if uuid is not None:
        info["uuid"] = uuid
    row: dict[str, Any] = {"name": name, "type": "collection", "options": options, "info": info}
    if clustered is None:
        row["idIndex"] = {**_ID_INDEX, **with_collation}
    return row


def listed_indexes(specs: list[dict[str, Any]], clustered: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """listIndexes: the clustered index, flagged, stands where ``_id_`` would."""
    if clustered is None:
        return specs
    return [{**clustered, "clustered": True} if spec["name"] == "_id_" else spec for spec in specs]

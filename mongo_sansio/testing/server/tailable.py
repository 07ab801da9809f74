"""Capped collections and tailable ``find`` cursors.

Inputs: ``create``'s ``capped``/``size``/``max`` options (:func:`capped_options`); a ``find``
with ``tailable`` (and ``awaitData``) on a capped collection (:func:`tailable_source`).
Outputs: the options a capped collection is listed with, and a cursor source that, at each
getMore, returns the documents inserted since the cursor last looked (in natural order, through
the find's filter and projection), so the cursor stays open when it has nothing; an awaitData
getMore waits for an insert or its maxTimeMS (:mod:`.commands_crud`).  A tailable find on a
collection that is not capped is refused as mongod refuses it; a tailable cursor whose
collection was dropped fails its next getMore with QueryPlanKilled (175).

The simulator does not evict from capped collections (``size``/``max`` are recorded and listed
only): a knowing difference, see docs/simulator.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.engine.collation import Collation
from mongo_sansio.testing.engine.projection import Projection
from mongo_sansio.testing.engine.query import compile_filter
from mongo_sansio.testing.server.context import Context
from mongo_sansio.testing.server.cursors import Source

__all__ = ["capped_options", "check_tailable", "tailable_source"]


def capped_options(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The options a ``create`` makes a capped collection with (None: not capped)."""
    if body.get("capped") is not True:
        return None
    size = body.get("size")
    if isinstance(size, bool) or not isinstance(size, int | float):
        raise CommandError(72, "InvalidOptions", "the 'size' field is required when 'capped' is true")
    if size <= 0:
        raise CommandError(2, "BadValue", "size must be greater than 0")
    options: dict[str, Any] = {"capped": True, "size": int(size)}
    maximum = body.get("max")
    if isinstance(maximum, int | float) and not isinstance(maximum, bool) and maximum > 0:
        options["max"] = int(maximum)
    return options


def check_tailable(ctx: Context, ns: str) -> tuple[bool, bool]:
    """(tailable, awaitData) of a find, refused as mongod refuses them."""
    tailable = ctx.body.get("tailable") is True
    await_data = ctx.body.get("awaitData") is True
    if await_data and not tailable:
        raise CommandError(9, "FailedToParse", "Cannot set 'awaitData' without also setting 'tailable'")
    if tailable and ns not in ctx.cluster.capped:
        raise CommandError(2, "BadValue", f"error processing query: ns={ns} tailable cursor requested on non capped collection")
    return tailable, await_data


def tailable_source(ctx: Context, database: str, name: str, seen: int, collation: Collation | None = None) -> Source:
    """What a tailable cursor reads at each getMore: the documents after the first ``seen``
    (its filter comparing strings under the find's ``collation``)."""
    cluster = ctx.cluster
    predicate = compile_filter(ctx.body.get("filter") if isinstance(ctx.body.get("filter"), Mapping) else None, collation)
    raw_projection = ctx.body.get("projection")
    projection = (Projection(raw_projection, collation=collation)
                  if isinstance(raw_projection, Mapping) and raw_projection else None)
    position = [seen]

    def more(_wall: float) -> list[dict[str, Any]]:
        collection = cluster.collection(database, name)
        if collection is None:
            raise CommandError(175, "QueryPlanKilled", f"collection dropped: {database}.{name}")
        documents = list(collection)  # copies, in natural (insertion) order
        fresh = documents[position[0]:]
        position[0] = len(documents)
        out = [d for d in fresh if predicate(d)]
        return [projection.apply(d) for d in out] if projection is not None else out

    return more

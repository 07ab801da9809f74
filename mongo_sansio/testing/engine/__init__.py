"""The simulated server's data engine: pure, in-memory, with mongod's semantics.

The command handlers of the simulated replica set call into it; nothing here touches the wire.

* :mod:`.order` -- the BSON comparison/sort order, equality with numeric coercion, type names.
* :mod:`.paths` -- dotted paths: read with array traversal, written with document creation.
* :mod:`.query` -- filters (``matches``, ``compile_filter``).
* :mod:`.projection` -- find and $project projections.
* :mod:`.update` -- update operators, replacements, pipeline updates, upsert seeds.
* :mod:`.expressions` / :mod:`.aggregate` -- aggregation expressions and the pipeline runner.
* :mod:`.collation` -- collation documents and string comparison under them (no ICU).
* :mod:`.collection` -- an in-memory collection with unique indexes and findAndModify.
* :mod:`.indexes` -- index specs (with their collations) and index keys.
* :mod:`.errors` -- :class:`CommandError`, carrying mongod's code, codeName and errmsg.
"""

from __future__ import annotations

from mongo_sansio.testing.engine.aggregate import run_pipeline, sort_documents
from mongo_sansio.testing.engine.collection import Collection, UpdateOutcome, WriteEvent
from mongo_sansio.testing.engine.errors import CommandError
from mongo_sansio.testing.engine.expressions import compile_expression, evaluate
from mongo_sansio.testing.engine.order import MISSING, compare, sort_key, values_equal
from mongo_sansio.testing.engine.projection import Projection, project
from mongo_sansio.testing.engine.query import compile_filter, matches
from mongo_sansio.testing.engine.update import Update, upsert_seed

__all__ = [
    "Collection",
    "CommandError",
    "MISSING",
    "Projection",
    "Update",
    "UpdateOutcome",
    "WriteEvent",
    "compare",
    "compile_expression",
    "compile_filter",
    "evaluate",
    "matches",
    "project",
    "run_pipeline",
    "sort_documents",
    "sort_key",
    "upsert_seed",
    "values_equal",
]

"""Atlas Search index commands, answered as a mongod without Atlas Search answers them.

``createSearchIndexes``, ``dropSearchIndex``, ``updateSearchIndex`` and the
``$listSearchIndexes`` stage need a search process beside mongod (Atlas, or an Atlas CLI local
deployment).  A plain mongod refuses them with code 31082 (SearchNotEnabled) and a message
that points at Atlas; the simulator does the same, so a client's helpers can be checked for
the commands they send (the index-management spec's tests expect exactly that error).
"""

from __future__ import annotations

from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.context import CommandSpec, Context, Outcome

__all__ = ["SEARCH_COMMANDS", "search_not_enabled"]

SEARCH_NOT_ENABLED = 31082


def search_not_enabled() -> CommandError:
    return CommandError(
        SEARCH_NOT_ENABLED,
        "SearchNotEnabled",
        "Using Atlas Search Database Commands and the $listSearchIndexes aggregation stage "
        "requires additional configuration: connect to Atlas or an Atlas CLI local deployment",
    )


def _refused(ctx: Context) -> Outcome:
    raise search_not_enabled()


SEARCH_COMMANDS = [
    CommandSpec("createSearchIndexes", _refused, access="write"),
    CommandSpec("dropSearchIndex", _refused, access="write"),
    CommandSpec("updateSearchIndex", _refused, access="write"),
]

"""atheris target for the connection string parser (and the TXT-record options parser).

Invariant: for any text, ``parse_uri`` returns a ConnectionString or raises
ConfigurationError, nothing else, and so do reading its credential and
``parse_options(..., origin="txt")`` over the same text.  A result is deterministic (parsing
again gives an equal value with the same warnings), the ``warn`` callable saw exactly the
result's ``warnings``, and the repr does not depend on the password (so it cannot show it).

Run a campaign:  python fuzz/uri_parse.py CORPUS_DIR -max_total_time=3600  (docs/fuzzing.md)
"""

from __future__ import annotations

import attrs

from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri import ConnectionString, parse_options, parse_uri


def check_text(text: str) -> ConnectionString | None:
    seen: list[str] = []
    try:
        result = parse_uri(text, warn=seen.append, check_credential=False)
    except ConfigurationError:
        result = None
    if result is not None:
        assert list(result.warnings) == seen, "warn() and .warnings disagree"
        again = parse_uri(text, check_credential=False)
        assert again == result and again.warnings == result.warnings, "parsing is not deterministic"
        other = None if result.password is None else result.password + "\x00other"
        assert repr(attrs.evolve(result, password=other)) == repr(result), "repr shows the password"
        assert str(result) == repr(result)
        try:
            result.credential  # noqa: B018 -- only ConfigurationError may escape
        except ConfigurationError:
            pass
    try:
        parse_options(text.partition("?")[2], origin="txt")
    except ConfigurationError:
        pass
    return result


def check_one(data: bytes) -> None:
    check_text(data.decode("utf-8", "replace"))


if __name__ == "__main__":
    from _runner import fuzz  # fuzz/ is sys.path[0] when a target runs as a script

    fuzz(check_one)

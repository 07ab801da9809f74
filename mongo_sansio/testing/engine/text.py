"""Text indexes and ``$text`` search, as mongod's version 3 text index answers them.

A text index is created from a key with ``"text"`` fields (``{title: "text"}``, ``{"$**":
"text"}``, or a compound key around them); :func:`text_index_spec` gives the spec mongod lists:
the key ``{_fts: "text", _ftsx: 1}`` in place of the text fields, ``weights`` (1 for each text
field, the ``weights`` option overriding or adding fields, sorted by name), ``default_language``
("english"), ``language_override`` ("language") and ``textIndexVersion: 3``.

``{$text: {$search, $language, $caseSensitive, $diacriticSensitive}}`` (:class:`TextQuery`)
matches as mongod's does: the search string is split into terms (case-insensitive,
diacritic-insensitive, English stop words dropped, words stemmed), ``"quoted phrases"`` and
``-negated`` terms or phrases.  A document matches when one of the positive terms is among its
indexed words, every positive phrase is in one of its indexed strings (a case-insensitive
substring), and no negated term or phrase is.  Its score is mongod's formula: for each query
term and indexed string, ``weight * freq * (0.5 * count / words + 0.5)`` (``freq`` adding 1,
1/2, 1/4 ... for each occurrence, ``words`` the string's non-stop words, and a 1.1 boost when
the whole string is the term), summed.

Simplifications (docs/simulator.md): English is the only language with stop words and a stemmer,
and the stemmer is a small suffix stripper, not Snowball's Porter stemmer ("running" and "runs"
both give "run", but irregular forms do not meet); any other language (and "none") matches
whole words only; a document's ``language`` field is not read.

The score rides along the documents of a find or an aggregation under :data:`TEXT_SCORE`, a
field name no BSON document can hold (it contains NUL), so that ``{$meta: "textScore"}`` in a
projection, an expression or a sort can read it; :func:`strip_scores` removes it before the
documents leave the engine.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.testing.engine.errors import CommandError, bad_value, location
from mongo_sansio.testing.engine.order import (
    MISSING,
    copy_value,
    is_number,
    numeric_value,
    render,
    type_name,
)
from mongo_sansio.testing.engine.paths import lookup_leaves, split_path

__all__ = [
    "TEXT_SCORE", "TextIndex", "TextQuery", "compile_meta", "find_text_clause", "scored", "strip_scores",
    "text_index_spec", "text_query", "with_scores",
]

#: where a document's text score rides through a find or a pipeline (never a BSON field name)
TEXT_SCORE = "\x00textScore"
_NO_SCORE = "query requires text score metadata, but it is not available"
_META_KINDS = ("textScore", "randVal", "searchScore", "searchHighlights", "geoNearDistance", "geoNearPoint",
               "recordId", "indexKey", "sortKey", "searchScoreDetails", "searchSequenceToken", "score",
               "scoreDetails", "vectorSearchScore")
# mongod's text search languages (and their two-letter codes)
_LANGUAGES = frozenset({
    "none", "danish", "da", "dutch", "nl", "english", "en", "finnish", "fi", "french", "fr", "german", "de",
    "hungarian", "hu", "italian", "it", "norwegian", "nb", "portuguese", "pt", "romanian", "ro", "russian", "ru",
    "spanish", "es", "swedish", "sv", "turkish", "tr",
})
_ENGLISH_STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she should
so some such than that the their theirs them themselves then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves
""".split())
_WORD = re.compile(r"[^\W_]+")


# --- the index ---------------------------------------------------------------------------------


def text_index_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec of a text index (``spec`` from createIndexes, its name already given) as mongod
    keeps and lists it."""
    key: dict[str, Any] = {}
    weights: dict[str, Any] = {}
    for field, direction in spec["key"].items():
        if direction == "text":
            weights[field] = 1
            if "_fts" not in key:
                key["_fts"], key["_ftsx"] = "text", 1
        else:
            key[field] = direction
    given = spec.get("weights", {})
    if not isinstance(given, Mapping):  # code and message from memory
        raise CommandError(67, "CannotCreateIndex", "text index option 'weights' must be an object")
    for field, weight in given.items():
        if not is_number(weight) or not 0 < numeric_value(weight) < 100000:
            raise CommandError(67, "CannotCreateIndex",
                               f"text index weight must be in the exclusive interval (0,100000) but found: {render(weight)}")
        weights[field] = weight
    language = spec.get("default_language", "english")
    if not isinstance(language, str) or language not in _LANGUAGES:  # message from memory
        raise CommandError(67, "CannotCreateIndex", f"default_language is not valid: {render(language)}")
    override = spec.get("language_override", "language")
    if not isinstance(override, str) or not override:
        raise CommandError(67, "CannotCreateIndex", "language_override must be a non-empty string")
    out: dict[str, Any] = {"v": spec["v"], "key": key, "name": spec["name"]}
    for option, value in spec.items():
        if option not in ("v", "key", "name", "weights", "default_language", "language_override", "textIndexVersion"):
            out[option] = value
    out.update({"weights": dict(sorted(weights.items())), "default_language": language,
                "language_override": override, "textIndexVersion": 3})
    return out


class TextIndex:
    """What a collection's text index indexes: field -> weight, and its default language."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.weights = {field: float(numeric_value(weight)) for field, weight in spec["weights"].items()}
        self.language = str(spec.get("default_language", "english"))

    def strings(self, document: Mapping[str, Any]) -> list[tuple[float, str]]:
        """(weight, string) for every indexed string of ``document``."""
        out: list[tuple[float, str]] = []
        for field, weight in self.weights.items():
            if field == "$**":
                out.extend((weight, s) for s in _all_strings(document))
                continue
            for leaf in lookup_leaves(document, split_path(field)):
                for value in leaf if isinstance(leaf, list) else [leaf]:
                    if isinstance(value, str):
                        out.append((weight, value))
        return out


def _all_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for key, inner in value.items() if key != TEXT_SCORE for s in _all_strings(inner)]
    if isinstance(value, list):
        return [s for inner in value for s in _all_strings(inner)]
    return []


# --- words -------------------------------------------------------------------------------------


def _fold(text: str, case_sensitive: bool, diacritic_sensitive: bool) -> str:
    if not diacritic_sensitive:
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text if case_sensitive else text.lower()


def _stem(word: str) -> str:
    """A small English suffix stripper (applied alike to documents and queries): a final
    -ies/-ing/-edly/-ed/-ly/-es/-s, a doubled consonant left by -ing/-ed, then a final -e, so
    that "bake", "bakes" and "baking" meet, as Porter's stems do."""
    stem = word
    for suffix, keep in (("ies", "y"), ("ing", ""), ("edly", ""), ("ed", ""), ("ly", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                break
            if suffix == "es" and not word[:-2].endswith(("s", "x", "z", "ch", "sh")):
                continue
            stem = word[: len(word) - len(suffix)] + keep
            if suffix in ("ing", "ed") and len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]  # running -> run, stopped -> stop
            break
    if stem.endswith("e") and len(stem) > 3:
        stem = stem[:-1]
    return stem


class _Words:
    def __init__(self, language: str, case_sensitive: bool, diacritic_sensitive: bool) -> None:
        self.english = language in ("english", "en")
        self.case_sensitive = case_sensitive
        self.diacritic_sensitive = diacritic_sensitive

    def terms(self, text: str) -> list[str]:
        """The index terms of ``text``: its words, stop words left out, stemmed."""
        out = []
        for word in _WORD.findall(_fold(text, self.case_sensitive, self.diacritic_sensitive)):
            lowered = word.lower()
            if self.english and lowered in _ENGLISH_STOP_WORDS:
                continue
            out.append(_stem(word) if self.english else word)
        return out

    def phrase_text(self, text: str) -> str:
        return _fold(text, self.case_sensitive, self.diacritic_sensitive)


# --- the query ---------------------------------------------------------------------------------


def _parse_search(search: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(positive words, negated words, positive phrases, negated phrases) of a $search string."""
    words: list[str] = []
    negated_words: list[str] = []
    phrases: list[str] = []
    negated_phrases: list[str] = []
    i = 0
    while i < len(search):
        char = search[i]
        if char.isspace():
            i += 1
            continue
        negated = char == "-" and i + 1 < len(search) and not search[i + 1].isspace()
        start = i + 1 if negated else i
        if start < len(search) and search[start] == '"':
            end = search.find('"', start + 1)
            end = len(search) if end < 0 else end
            (negated_phrases if negated else phrases).append(search[start + 1: end])
            i = end + 1
            continue
        end = start
        while end < len(search) and not search[end].isspace() and search[end] != '"':
            end += 1
        (negated_words if negated else words).append(search[start:end])
        i = end
    return words, negated_words, phrases, negated_phrases


class TextQuery:
    """One parsed ``$text`` query over a collection's text index."""

    def __init__(self, argument: Any, index: TextIndex) -> None:
        if not isinstance(argument, Mapping):
            raise bad_value("$text expects an object")
        for key in argument:
            if key not in ("$search", "$language", "$caseSensitive", "$diacriticSensitive"):
                raise bad_value(f"extra fields in $text: {key}")  # message from memory
        search = argument.get("$search")
        if not isinstance(search, str):
            raise bad_value("$search required and must be a string" if search is None
                            else f"$search had the wrong type. Expected string, found {type_name(search)}")
        language = argument.get("$language", index.language)
        if not isinstance(language, str) or language not in _LANGUAGES:  # code and message from memory
            raise bad_value(f"language override unsupported: {render(language)}")
        flags = []
        for name in ("$caseSensitive", "$diacriticSensitive"):
            flag = argument.get(name, False)
            if not isinstance(flag, bool):
                raise bad_value(f"{name} had the wrong type. Expected bool, found {type_name(flag)}")
            flags.append(flag)
        self.index = index
        self.words = _Words(language, flags[0], flags[1])
        words, negated_words, phrases, negated_phrases = _parse_search(search)
        self.terms = list(dict.fromkeys(t for w in (*words, *phrases) for t in self.words.terms(w)))
        self.negated = {t for w in negated_words for t in self.words.terms(w)}
        self.phrases = [self.words.phrase_text(p) for p in phrases if p.strip()]
        self.negated_phrases = [self.words.phrase_text(p) for p in negated_phrases if p.strip()]

    def matches(self, document: Mapping[str, Any]) -> bool:
        if not self.terms:
            return False
        strings = self.index.strings(document)
        found = {t for _, s in strings for t in self.words.terms(s)}
        if not found.intersection(self.terms) or found.intersection(self.negated):
            return False
        texts = [self.words.phrase_text(s) for _, s in strings]
        if not all(any(phrase in text for text in texts) for phrase in self.phrases):
            return False
        return not any(phrase in text for phrase in self.negated_phrases for text in texts)

    def score(self, document: Mapping[str, Any]) -> float:
        wanted = set(self.terms)
        total = 0.0
        for weight, raw in self.index.strings(document):
            terms = self.words.terms(raw)
            if not terms:
                continue
            freq: dict[str, float] = {}
            count: dict[str, int] = {}
            for term in terms:
                count[term] = count.get(term, 0) + 1
                freq[term] = freq.get(term, 0.0) + 1.0 / 2 ** (count[term] - 1)
            for term in wanted.intersection(count):
                boost = 1.1 if raw.strip().lower() == term.lower() else 1.0
                total += weight * freq[term] * (0.5 * count[term] / len(terms) + 0.5) * boost
        return total


def find_text_clause(filter_: Any) -> Any:
    """The argument of the filter's ``$text`` (at the top or in a top-level ``$and``), else MISSING."""
    if not isinstance(filter_, Mapping):
        return MISSING
    if "$text" in filter_:
        return filter_["$text"]
    clauses = filter_.get("$and")
    for clause in clauses if isinstance(clauses, list) else []:
        found = find_text_clause(clause)
        if found is not MISSING:
            return found
    return MISSING


def text_query(argument: Any, index: TextIndex | None) -> TextQuery:
    if index is None:
        raise CommandError(27, "IndexNotFound", "text index required for $text query")
    return TextQuery(argument, index)


# --- the score's way through ---------------------------------------------------------------------


def compile_meta(argument: Any) -> Callable[[Any, Mapping[str, Any]], Any]:
    """``{$meta: "textScore"}``: the document's score (40218 when the query had no $text);
    the other kinds, which the simulator has nothing for, are missing."""
    if not isinstance(argument, str) or argument not in _META_KINDS:
        raise location(17308, f"Unsupported argument to $meta: {render(argument)}")
    if argument != "textScore":
        return lambda root, variables: MISSING

    def read(root: Any, variables: Mapping[str, Any]) -> Any:
        if not isinstance(root, Mapping) or TEXT_SCORE not in root:
            raise location(40218, _NO_SCORE)
        return root[TEXT_SCORE]

    return read


def with_scores(documents: list[dict[str, Any]], query: TextQuery) -> list[dict[str, Any]]:
    """Shallow copies of ``documents`` carrying their scores."""
    return [{**document, TEXT_SCORE: query.score(document)} for document in documents]


def scored(
    rows: list[tuple[Any, dict[str, Any]]], query: TextQuery,
    sort_by: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None,
) -> list[tuple[Any, dict[str, Any]]]:
    """A find's (key, document) rows as shallow copies carrying their scores, in ``sort_by``'s
    order (the sort may name the score)."""
    matched = [(key, {**document, TEXT_SCORE: query.score(document)}) for key, document in rows]
    if sort_by is not None:
        position = {id(document): i for i, document in enumerate(sort_by([d for _, d in matched]))}
        matched.sort(key=lambda row: position[id(row[1])])
    return matched


def strip_scores(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for document in documents:
        document.pop(TEXT_SCORE, None)
    return documents


def copy_without_score(document: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = copy_value(dict(document))
    out.pop(TEXT_SCORE, None)
    return out

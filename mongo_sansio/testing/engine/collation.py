"""Collations: the collation document as mongod parses it, and string comparison under it.

:func:`parse_collation` checks a collation document as mongod 7.0 does (the IDL ``Collation``
struct first, field by field in document order, then the locale, then the combinations of
options) and returns a :class:`Collation`, or None for ``{locale: "simple"}``, mongod's binary
comparison.  :meth:`Collation.document` is the full form mongod lists (listCollections,
listIndexes), every option filled in and ``version`` "57.1", the ICU release mongod 7.0 uses.

mongod compares strings with ICU; the simulator has no ICU, so :meth:`Collation.key` builds a
sort key that approximates the root locale of the Unicode Collation Algorithm, whatever the
locale (no language's tailoring is modelled):

* the text is decomposed (NFD, so canonically equivalent strings compare equal: the
  ``normalization`` option changes nothing), and each character with the combining marks after
  it is one element;
* primary level: spaces < punctuation < symbols < currency < digits < letters and the rest; a
  letter weighs as its case-folded compatibility form (so "A", "a" and a full-width "ａ" share
  a primary weight, "ß" weighs as "ss"), then by code point (so letters Unicode does not
  decompose, such as "ø" or "æ", sort after "z" where ICU puts them beside "o" and "a");
  format characters (zero-width joiners and the like) and other controls are ignored;
* secondary level: the combining marks (accents), compared from the end with ``backwards``;
* tertiary level: lower case before upper case (ICU's default), upper first with
  ``caseFirst: "upper"``, and a compatibility variant after its plain form; ``caseLevel``
  adds the case comparison at strengths 1 and 2;
* ``alternate: "shifted"`` ignores spaces and punctuation (only spaces with ``maxVariable:
  "space"``) below strength 4 and compares them last at strength 4; strength 5 breaks the
  remaining ties by code point;
* ``numericOrdering`` compares each run of decimal digits as the number it writes ("10" after
  "9"; leading zeros do not count).

Strength 1 thus compares base letters only (case and accents ignored), strength 2 adds the
accents, strength 3 (the default) the case: the answers a driver's tests depend on.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.testing.engine.errors import CommandError, bad_value, location, type_mismatch
from mongo_sansio.testing.engine.order import is_number, numeric_value, render, type_name

__all__ = ["ICU_VERSION", "LOCALES", "Collation", "parse_collation"]

#: the ICU release mongod 7.0 is built with; a collation document naming another is refused
ICU_VERSION = "57.1"

#: The locales mongod supports (its manual's table), each with its collation variants; a
#: variant is asked for as ``"<locale>@collation=<variant>"``.
LOCALES: dict[str, tuple[str, ...]] = {
    "af": (), "sq": (), "am": (), "ar": ("compat",), "hy": (), "as": (), "az": ("search",),
    "bn": ("traditional",), "be": (), "bs": ("search",), "bs_Cyrl": (), "bg": (), "my": (),
    "ca": ("search",), "chr": (), "zh": ("big5han", "gb2312han", "unihan", "zhuyin"),
    "zh_Hant": (), "hr": ("search",), "cs": ("search",), "da": ("search",), "nl": (), "dz": (),
    "en": (), "en_US": (), "en_US_POSIX": (), "eo": (), "et": (), "ee": (), "fo": (), "fil": (),
    "fi": ("search", "traditional"), "fr": (), "fr_CA": (), "gl": ("search",), "ka": (),
    "de": ("search", "eor", "phonebook"), "de_AT": ("phonebook",), "el": (), "gu": (), "ha": (),
    "haw": (), "he": ("search",), "hi": (), "hu": (), "is": ("search",), "ig": (),
    "smn": ("search",), "id": (), "ga": (), "it": (), "ja": ("unihan",), "kl": ("search",),
    "kn": ("traditional",), "kk": (), "km": (), "kok": (), "ko": ("search", "searchjl", "unihan"),
    "ky": (), "lkt": (), "lo": (), "lv": (), "ln": ("phonetic",), "lt": (), "dsb": (), "lb": (),
    "mk": (), "ms": (), "ml": (), "mt": (), "mr": (), "mn": (), "ne": (), "se": ("search",),
    "nb": ("search",), "nn": ("search",), "or": (), "om": (), "ps": (), "fa": (), "fa_AF": (),
    "pl": (), "pt": (), "pa": (), "ro": (), "ru": (), "sr": (), "sr_Latn": ("search",),
    "si": ("dictionary",), "sk": ("search",), "sl": (), "es": ("search", "traditional"),
    "sw": (), "sv": ("search",), "ta": (), "te": (), "th": (), "bo": (), "to": (),
    "tr": ("search",), "uk": (), "hsb": (), "ur": (), "ug": (), "vi": ("traditional",),
    "wae": (), "cy": (), "yi": ("search",), "yo": (), "zu": (),
}

# Defaults a locale changes (mongod's manual: French Canadian compares accents backwards).
# Other languages' tailored defaults are not modelled.
_LOCALE_DEFAULTS: dict[str, dict[str, Any]] = {"fr_CA": {"backwards": True}}

_ENUMS: dict[str, tuple[str, ...]] = {
    "caseFirst": ("upper", "lower", "off"),
    "alternate": ("non-ignorable", "shifted"),
    "maxVariable": ("punct", "space"),
}
_BOOLEANS = ("caseLevel", "numericOrdering", "normalization", "backwards")
_KNOWN = ("locale", *_BOOLEANS, *_ENUMS, "strength", "version")


@attrs.frozen
class Collation:
    """A parsed, non-simple collation: every option set (the locale's defaults filled in)."""

    locale: str
    strength: int = 3
    case_level: bool = False
    case_first: str = "off"
    numeric_ordering: bool = False
    alternate: str = "non-ignorable"
    max_variable: str = "punct"
    normalization: bool = False
    backwards: bool = False
    # sort keys already made (a string is usually compared many times in one operation)
    _keys: dict[str, tuple[Any, ...]] = attrs.field(factory=dict, eq=False, hash=False, repr=False)

    def document(self) -> dict[str, Any]:
        """The collation as mongod lists it: every field, in mongod's order."""
        return {
            "locale": self.locale, "caseLevel": self.case_level, "caseFirst": self.case_first,
            "strength": self.strength, "numericOrdering": self.numeric_ordering,
            "alternate": self.alternate, "maxVariable": self.max_variable,
            "normalization": self.normalization, "backwards": self.backwards, "version": ICU_VERSION,
        }

    def key(self, text: str) -> tuple[Any, ...]:
        """A sort key for ``text``: two strings compare under this collation as their keys
        compare, and are equal under it exactly when their keys are equal."""
        found = self._keys.get(text)
        if found is None:
            if len(self._keys) > 50_000:  # a bound, for long-lived collection defaults
                self._keys.clear()
            found = self._keys[text] = _sort_key(self, text)
        return found

    def compare(self, left: str, right: str) -> int:
        a, b = self.key(left), self.key(right)
        return int(a > b) - int(a < b)


# --- parsing ---------------------------------------------------------------------------------


def _wrong_type(path: str, value: Any, expected: str) -> CommandError:
    return type_mismatch(f"BSON field '{path}' is the wrong type '{type_name(value)}', expected {expected}")


def parse_collation(spec: Any, where: str = "collation", fields_at: str = "collation") -> Collation | None:
    """The collation a command's ``where`` field (e.g. "find.collation") asks for; None for
    the simple (binary) collation.  Raises CommandError with mongod's code when it is bad.

    ``fields_at``: the path mongod names a bad field by: "collation" when the command takes
    the field as any object and the collation parser reads it (find, update, aggregate, an
    index), the command's own path when its parser knows the collation's fields (create)."""
    if not isinstance(spec, Mapping):
        raise _wrong_type(where, spec, "type 'object'")
    given = _parse_fields(spec, fields_at)
    if "locale" not in given:
        raise location(40414, f"BSON field '{fields_at}.locale' is missing but a required field")
    locale: str = given.pop("locale")
    shown = render(dict(spec))
    if "\0" in locale:
        raise bad_value(f"Field 'locale' cannot contain null byte. Collation spec: {shown}")
    if locale == "simple":
        return None  # (mongod 7.0 ignores any other field then)
    _check_locale(locale, shown)
    version = given.pop("version", ICU_VERSION)
    options = {**_LOCALE_DEFAULTS.get(locale.split("@")[0], {}), **given}
    strength = options.get("strength", 3)
    if strength not in (1, 2, 3, 4, 5):
        raise bad_value(f"Enumeration value '{strength}' for field 'collation.strength' is not a valid value.")
    if version != ICU_VERSION:
        raise CommandError(
            161, "IncompatibleCollationVersion",
            f"Requested collation version {version} but the only available collator version was "
            f"{ICU_VERSION}. Requested collation spec: {shown}",
        )
    collation = Collation(
        locale, strength=strength, case_level=options.get("caseLevel", False),
        case_first=options.get("caseFirst", "off"), numeric_ordering=options.get("numericOrdering", False),
        alternate=options.get("alternate", "non-ignorable"), max_variable=options.get("maxVariable", "punct"),
        normalization=options.get("normalization", False), backwards=options.get("backwards", False),
    )
    if collation.backwards and strength == 1:
        raise bad_value(f"'backwards' is invalid with 'strength' of 1 in: {shown}")
    if collation.case_first != "off" and not collation.case_level and strength < 3:
        raise bad_value(f"'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: {shown}")
    return collation


def _parse_fields(spec: Mapping[str, Any], at: str) -> dict[str, Any]:
    """The IDL struct's parse: each field's type (and enumeration) in document order; an
    unknown field fails where it stands."""
    given: dict[str, Any] = {}
    for field, value in spec.items():
        path = f"{at}.{field}"
        if field not in _KNOWN:
            raise location(40415, f"BSON field '{path}' is an unknown field.")
        if field in ("locale", "version") or field in _ENUMS:
            if not isinstance(value, str):
                raise _wrong_type(path, value, "type 'string'")
            if field in _ENUMS and value not in _ENUMS[field]:
                raise bad_value(f"Enumeration value '{value}' for field '{path}' is not a valid value.")
        elif field in _BOOLEANS:
            if not isinstance(value, bool):
                raise _wrong_type(path, value, "type 'bool'")
        else:  # strength: any number, truncated to an int, then held to 0..5
            if not is_number(value):
                raise _wrong_type(path, value, "types '[long, int, decimal, double']")
            value = _truncated(value)
            for limit, holds in ((0, value >= 0), (5, value <= 5)):
                if not holds:
                    operator = ">=" if limit == 0 else "<="
                    raise location(51024, f"BSON field '{path}' value must be {operator} {limit}, actual value '{value}'")
        given[field] = value
    return given


def _truncated(number: Any) -> int:
    try:
        return int(numeric_value(number))
    except (ValueError, OverflowError, ArithmeticError):  # NaN and infinities
        return 0


def _check_locale(locale: str, shown: str) -> None:
    """mongod takes a locale ICU knows exactly; for a near miss it names the one ICU would
    have used (a different spelling of case, or a more general locale)."""
    if not locale:
        raise bad_value(f"Field 'locale' cannot be the empty string in: {shown}")
    base, _, variant = locale.partition("@")
    if base in LOCALES and (not variant or variant.removeprefix("collation=") in LOCALES[base]
                            and variant.startswith("collation=")):
        return
    suggestion = next((known for known in LOCALES if known.lower() == base.lower()), None)
    while suggestion is None and "_" in base:
        base = base.rsplit("_", 1)[0]
        suggestion = base if base in LOCALES else None
    message = f"Field 'locale' is invalid in: {shown}"
    raise bad_value(message + (f". Did you mean '{suggestion}'?" if suggestion else ""))


# --- sort keys -------------------------------------------------------------------------------

# Primary groups, in the root collation's order
_SPACE, _PUNCT, _SYMBOL, _CURRENCY, _DIGIT, _LETTER = range(6)
_GROUP_SHIFT = 24  # a group's weights sit above every code point (< 2**21)
_NUMBER_MARK = 0x100  # a numericOrdering run's first weight: this plus its digit count
_LAST = 1 << 30  # the quaternary weight of what is not variable


@attrs.frozen
class _Element:
    group: int
    primary: int
    marks: tuple[int, ...]  # the combining marks' code points (secondary differences)
    upper: bool
    variant: bool  # a compatibility form (full-width, ligature part, superscript ...)


def _group(char: str) -> int | None:
    """The primary group of a character; None for what the root collation ignores."""
    category = unicodedata.category(char)
    if char.isspace() or category in ("Zs", "Zl", "Zp"):
        return _SPACE
    if category in ("Cc", "Cf"):
        return None
    if category.startswith("P"):
        return _PUNCT
    if category == "Sc":
        return _CURRENCY
    if category.startswith("S"):
        return _SYMBOL
    if unicodedata.decimal(char, None) is not None:
        return _DIGIT
    return _LETTER


def _elements(text: str) -> list[_Element]:
    decomposed = unicodedata.normalize("NFD", text)
    clusters: list[tuple[str, list[int]]] = []
    for char in decomposed:
        if unicodedata.category(char).startswith("M") and clusters:
            clusters[-1][1].append(ord(char))
        else:
            clusters.append((char, []))
    out: list[_Element] = []
    for base, marks in clusters:
        if unicodedata.category(base).startswith("M"):  # a mark with no base before it
            out.append(_Element(_LETTER, 0, (ord(base), *marks), False, False))
            continue
        compatible = unicodedata.normalize("NFKD", base)
        # a compatibility form, or a letter that folds to others ("ß" to "ss"): a tertiary
        # difference from the plain letters
        variant = compatible != base or base.casefold() != base.lower()
        upper = base.isupper() or base.istitle()
        extra = [ord(c) for c in compatible if unicodedata.category(c).startswith("M")]
        folded = [c for c in compatible.casefold() if not unicodedata.category(c).startswith("M")]
        for index, char in enumerate(folded):
            group = _group(char)
            if group is None:
                continue
            value = unicodedata.decimal(char) if group == _DIGIT else ord(char)
            accents = tuple(marks + extra) if index == len(folded) - 1 else ()
            out.append(_Element(group, (group << _GROUP_SHIFT) | value, accents, upper, variant))
    return out


def _numeric_runs(elements: list[_Element]) -> list[_Element]:
    """Each run of digits as one number: its digit count first (a longer number is larger),
    then its digits, leading zeros left out."""
    out: list[_Element] = []
    index = 0
    while index < len(elements):
        if elements[index].group != _DIGIT:
            out.append(elements[index])
            index += 1
            continue
        end = index
        while end < len(elements) and elements[end].group == _DIGIT:
            end += 1
        digits = [e.primary & 0xF for e in elements[index:end]]
        while len(digits) > 1 and digits[0] == 0:
            digits.pop(0)
        base = _DIGIT << _GROUP_SHIFT
        weights = [base | (_NUMBER_MARK + len(digits)), *(base | d for d in digits)]
        out.extend(_Element(_DIGIT, w, (), False, False) for w in weights)
        index = end
    return out


def _sort_key(collation: Collation, text: str) -> tuple[Any, ...]:
    elements = _elements(text)
    if collation.numeric_ordering:
        elements = _numeric_runs(elements)
    shifted = collation.alternate == "shifted"
    variable = (_SPACE, _PUNCT) if collation.max_variable == "punct" else (_SPACE,)
    kept = [e for e in elements if not (shifted and e.group in variable)]
    upper_first = collation.case_first == "upper"
    primary = tuple(e.primary for e in kept if e.primary)
    secondary: list[int] = []
    for element in kept:
        secondary.append(0)
        secondary.extend(element.marks)
    if collation.backwards:
        secondary.reverse()
    cases = tuple(int(e.upper != upper_first) for e in kept)
    levels: list[tuple[Any, ...]] = [primary]
    if collation.strength >= 2:
        levels.append(tuple(secondary))
    if collation.case_level:
        levels.append(cases)
    if collation.strength >= 3:
        levels.append(tuple(2 * case + e.variant for case, e in zip(cases, kept, strict=True)))
    if collation.strength >= 4 and shifted:
        levels.append(tuple(e.primary if e.group in variable else _LAST for e in elements))
    if collation.strength == 5:
        levels.append(tuple(ord(c) for c in unicodedata.normalize("NFD", text)))
    return tuple(levels)

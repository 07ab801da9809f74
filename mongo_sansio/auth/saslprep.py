"""SASLprep (RFC 4013): the stringprep profile SCRAM-SHA-256 applies to passwords.

Input: a ``str``.  Output: the prepared ``str``, or :class:`SASLprepError` when the text holds
a character the profile prohibits.  The steps are RFC 3454's, in its order:

1. map: non-ASCII spaces (table C.1.2) become U+0020, "commonly mapped to nothing" (B.1) go;
2. normalize with NFKC, as Unicode 3.2 defines it (the version stringprep's tables are from);
3. prohibit: the tables C.1.2, C.2.1, C.2.2, C.3 to C.9, and, unless ``allow_unassigned``,
   code points unassigned in Unicode 3.2 (A.1) -- stored strings, which passwords are, must not
   hold them;
4. bidirectional text: a string with a right-to-left character (D.1) holds no left-to-right
   one (D.2) and starts and ends with a right-to-left character.

The tables come from the standard library's :mod:`stringprep`.  Error messages say which rule
failed, never which character or where: the text is usually a password.
"""

from __future__ import annotations

import stringprep
import unicodedata

from mongo_sansio.errors import ConfigurationError

__all__ = ["SASLprepError", "saslprep"]


class SASLprepError(ConfigurationError):
    """The text holds a character SASLprep prohibits (the message never repeats the text)."""


# Prohibited output (RFC 4013 section 2.3), each with the phrase an error uses.
_PROHIBITED = (
    (stringprep.in_table_c12, "a non-ASCII space"),
    (stringprep.in_table_c21_c22, "a control character"),
    (stringprep.in_table_c3, "a private use character"),
    (stringprep.in_table_c4, "a non-character code point"),
    (stringprep.in_table_c5, "a surrogate code point"),
    (stringprep.in_table_c6, "a character inappropriate for plain text"),
    (stringprep.in_table_c7, "a character inappropriate for canonical representation"),
    (stringprep.in_table_c8, "a display-changing or deprecated character"),
    (stringprep.in_table_c9, "a tagging character"),
)


def saslprep(text: str, *, allow_unassigned: bool = False) -> str:
    """Prepare ``text`` by RFC 4013; ``allow_unassigned`` is for query strings only."""
    if not isinstance(text, str):
        raise TypeError("saslprep takes a str")
    if text.isascii():
        # ASCII maps and normalizes to itself and has no right-to-left characters: only the
        # control characters (C.2.1) can be wrong.
        if any(ord(char) < 0x20 or ord(char) == 0x7F for char in text):
            raise SASLprepError("SASLprep: the text contains a control character")
        return text
    mapped = "".join(
        " " if stringprep.in_table_c12(char) else char
        for char in text
        if not stringprep.in_table_b1(char)
    )
    prepared = unicodedata.ucd_3_2_0.normalize("NFKC", mapped)
    for char in prepared:
        for in_table, what in _PROHIBITED:
            if in_table(char):
                raise SASLprepError(f"SASLprep: the text contains {what}")
        if not allow_unassigned and stringprep.in_table_a1(char):
            raise SASLprepError(
                "SASLprep: the text contains a code point unassigned in Unicode 3.2"
            )
    _check_bidi(prepared)
    return prepared


def _check_bidi(prepared: str) -> None:
    if not any(stringprep.in_table_d1(char) for char in prepared):
        return
    if any(stringprep.in_table_d2(char) for char in prepared):
        raise SASLprepError("SASLprep: the text mixes right-to-left and left-to-right characters")
    if not (stringprep.in_table_d1(prepared[0]) and stringprep.in_table_d1(prepared[-1])):
        raise SASLprepError(
            "SASLprep: text with right-to-left characters must start and end with one"
        )

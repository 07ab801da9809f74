"""SASLprep (RFC 4013): the RFC's examples, the auth spec's prose cases, each rule, and scramp's
implementation as an oracle under hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.auth import SASLprepError, saslprep
from mongo_sansio.errors import ConfigurationError


@pytest.mark.parametrize(
    ("text", "prepared"),
    [
        # RFC 4013 section 3
        ("I\u00adX", "IX"),  # SOFT HYPHEN mapped to nothing
        ("user", "user"),
        ("USER", "USER"),  # case preserved
        ("\u00aa", "a"),  # output is NFKC
        ("\u2168", "IX"),
        # the auth spec's SCRAM-SHA-256 prose test (Step 4)
        ("IX", "IX"),
        ("\u2163", "IV"),
        ("I\u00adV", "IV"),
        # more mappings
        ("a\u00a0b", "a b"),  # NO-BREAK SPACE (C.1.2) becomes a space
        ("a\u3000b", "a b"),  # IDEOGRAPHIC SPACE
        ("a\u200bb\ufeff", "ab"),  # ZERO WIDTH SPACE and BOM map to nothing
        ("\ufb01", "fi"),  # compatibility ligature
        ("e\u0301", "\u00e9"),  # composed
        ("a b", "a b"),  # ASCII space is allowed
        ("", ""),
        ("\u00ad", ""),  # maps to the empty string
        ("\u0627\u0628", "\u0627\u0628"),  # all right-to-left is fine
        ("\u0627\u0031\u0628", "\u0627\u0031\u0628"),  # RandAL ... RandAL with a digit inside
        ("p\u00e4ssw\u00f6rd", "p\u00e4ssw\u00f6rd"),
    ],
)
def test_prepared(text: str, prepared: str) -> None:
    assert saslprep(text) == prepared


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("\u0007", "control"),  # RFC 4013 section 3
        ("\u0627\u0031", "start and end"),  # RFC 4013 section 3: bidi
        ("\u0031\u0627", "start and end"),
        ("\u0627a\u0628", "mixes"),
        ("a\x00b", "control"),
        ("a\x7f", "control"),
        ("a\u0085", "control"),  # NEXT LINE, non-ASCII control (C.2.2)
        ("\ue000", "private use"),
        ("\U000f0000", "private use"),
        ("\ufdd0", "non-character"),
        ("\ud800", "surrogate"),
        ("\ufffd", "plain text"),
        ("\u2ff0", "canonical"),
        ("\u200e", "display-changing"),  # LEFT-TO-RIGHT MARK (C.8)
        ("\U000e0001", "tagging"),
        ("\u0221", "unassigned"),  # unassigned in Unicode 3.2 (assigned later)
        ("\U0001f600", "unassigned"),  # an emoji: after 3.2
    ],
)
def test_prohibited(text: str, rule: str) -> None:
    with pytest.raises(SASLprepError, match=rule) as caught:
        saslprep(text)
    # a ValueError and a ConfigurationError too, and it never repeats the text
    assert isinstance(caught.value, ConfigurationError)
    assert isinstance(caught.value, ValueError)
    assert text not in str(caught.value) or text == ""


def test_unassigned_allowed_for_query_strings() -> None:
    assert saslprep("\u0221", allow_unassigned=True) == "\u0221"
    assert saslprep("x\U0001f600", allow_unassigned=True) == "x\U0001f600"
    with pytest.raises(SASLprepError):
        saslprep("\u0007", allow_unassigned=True)


def test_not_a_string() -> None:
    with pytest.raises(TypeError):
        saslprep(b"bytes")  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii"), max_size=30))
def test_ascii_fast_path_keeps_printable_text(text: str) -> None:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        with pytest.raises(SASLprepError):
            saslprep(text)
    else:
        assert saslprep(text) == text


scramp_utils = pytest.importorskip("scramp.utils")
ScramException = pytest.importorskip("scramp").ScramException


def _oracle(text: str) -> str | None:
    try:
        return str(scramp_utils.saslprep(text))
    except ScramException:
        return None


_INTERESTING = st.sampled_from(
    [
        "\u00ad",
        "\u00a0",
        "\u2168",
        "\u0627",
        "\u05d0",
        "\u0031",
        "a",
        " ",
        "\u200b",
        "\u0301",
        "\u00aa",
        "\ufb01",
        "\u0221",
        "\ue000",
        "\u200e",
        "\u0007",
        "\ufeff",
        "\u3000",
        "\u06f0",
    ]
)


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.text(max_size=12), st.lists(_INTERESTING, max_size=8).map("".join)))
def test_agrees_with_scramp(text: str) -> None:
    """Both prepare the text the same way, or both refuse it."""
    expected = _oracle(text)
    if expected is None:
        with pytest.raises(SASLprepError):
            saslprep(text)
    else:
        assert saslprep(text) == expected

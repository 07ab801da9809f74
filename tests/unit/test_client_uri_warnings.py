"""The blocking client shows the URI parser's warnings as UserWarnings, as PyMongo 4.20 does.

PyMongo 4.20.1, observed with ``MongoClient(uri, connect=False)``: ``tls=ture``,
``connectTimeoutMS=-5``, ``readPreference=bogus`` and an unknown option each emit one
``UserWarning`` and the option keeps its default (TLS stays off, the connect timeout is the
default, the read preference is primary); the same bad values given as keyword arguments raise
(ValueError, TypeError or ConfigurationError there; our ConfigurationError, a ValueError,
here).  Constructing a client does not connect, so these tests need no server.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from mongo_sansio.adapters._uri import emit_uri_warnings, parse_client_uri
from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.uri import DnsAnswer, DnsQuestion, SrvAnswer, SrvRecord, TxtAnswer

_DEFAULT_CLIENT = MongoClient("mongodb://h/")
DEFAULTS = _DEFAULT_CLIENT.settings
_DEFAULT_CLIENT.close()


def client_warnings(uri: str, **options: Any) -> tuple[MongoClient, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client = MongoClient(uri, **options)  # the line every warning must point at
    return client, caught


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ("tls=ture", r"invalid value 'ture' for option 'tls'.*ignored"),
        ("connectTimeoutMS=-5", r"invalid value '-5' for option 'connectTimeoutMS'.*ignored"),
        ("readPreference=bogus", r"invalid value 'bogus' for option 'readPreference'.*ignored"),
        ("bogusOption=1", r"unsupported option 'bogusOption' ignored"),
    ],
)
def test_an_ignored_uri_option_warns_at_the_callers_line_and_keeps_the_default(
    query: str, match: str
) -> None:
    with pytest.warns(UserWarning, match=match) as caught:
        client = MongoClient(f"mongodb://h/?{query}")
    assert len(caught) == 1
    assert caught[0].filename == __file__  # the user's line, not the library's
    settings = client.settings
    assert settings.tls.enabled is False
    assert settings.connect_timeout == DEFAULTS.connect_timeout
    assert settings.read_preference == DEFAULTS.read_preference
    client.close()


def test_each_warning_is_emitted_once_in_order() -> None:
    client, caught = client_warnings("mongodb://h/?tls=ture&maxPoolSize=abc&foo=1&maxPoolSize=7")
    messages = [str(w.message) for w in caught]
    assert [m.split(" for option ")[-1].split(":")[0] for m in messages[1:]] == [
        "'tls'",
        "'maxPoolSize'",
    ]
    assert messages[0] == "unsupported option 'foo' ignored"
    assert all(w.category is UserWarning for w in caught)
    assert all(w.filename == __file__ for w in caught)
    assert client.settings.max_pool_size == 7  # the valid repetition is kept
    client.close()


def test_a_clean_uri_emits_nothing() -> None:
    client, caught = client_warnings("mongodb://h/?tls=false&connectTimeoutMS=5&w=majority")
    assert caught == []
    assert client.settings.connect_timeout == 0.005
    client.close()


def test_warnings_never_show_the_password() -> None:
    client, caught = client_warnings("mongodb://u:s3cret@h/?s3cret=1")
    assert len(caught) == 1 and "s3cret" not in str(caught[0].message)
    client.close()


def test_keyword_compressor_notice_warns_too() -> None:
    # PyMongo warns "Unsupported compressor: foo" for the keyword as for the URI.
    client, caught = client_warnings("mongodb://h/", compressors="zlib,foo")
    assert [str(w.message) for w in caught] == [
        "unsupported compressors in compressors ignored: foo"
    ]
    assert client.settings.handshake.compressors == ("zlib",)
    client.close()


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"tls": "ture"}, "tls"),
        ({"tls": 1}, "tls"),
        ({"tls": "1"}, "tls"),
        ({"retryWrites": 0}, "retryWrites"),
        ({"connectTimeoutMS": -5}, "connectTimeoutMS"),
        ({"connectTimeoutMS": "abc"}, "connectTimeoutMS"),
        ({"readPreference": "bogus"}, "readPreference"),
        ({"bogusOption": 1}, "bogusOption"),
    ],
)
def test_an_invalid_keyword_option_is_an_error_naming_it(
    options: dict[str, Any], name: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an error, never a warning
        with pytest.raises(ConfigurationError, match=f"'{name}'"):
            MongoClient("mongodb://h/", **options)


@pytest.mark.parametrize(
    "query",
    ["authSource=", "authMechanism=BOGUS", "tls=true&ssl=false", "journal=true&w=0"],
)
def test_uri_values_that_are_errors_stay_errors(query: str) -> None:
    with pytest.raises(ConfigurationError):
        MongoClient(f"mongodb://h/?{query}")


def test_true_false_keywords_still_accepted() -> None:
    client = MongoClient("mongodb://h/", tls="TRUE", retryWrites=False)
    assert client.settings.tls.enabled and client.settings.retry_writes is False
    client.close()


class _TxtWithBadValue:
    def ask(self, question: DnsQuestion) -> DnsAnswer:
        if question.rdtype == "SRV":
            record = SrvRecord(target="a.example.com.", port=27017)
            return SrvAnswer(question=question, records=(record,))
        return TxtAnswer(question=question, records=((b"loadBalanced=maybe",),))


def test_a_txt_records_warning_is_emitted_after_resolution() -> None:
    client, caught = client_warnings(
        "mongodb+srv://cluster.example.com/?tls=ture", dns_resolver=_TxtWithBadValue()
    )
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert "'tls'" in messages[0] and "'loadBalanced'" in messages[1]
    assert all(w.filename == __file__ for w in caught)
    assert client.settings.tls.enabled  # mongodb+srv's default
    client.close()


def test_the_helper_counts_stacklevel_from_its_caller() -> None:
    def library_constructor() -> None:
        parse_client_uri("mongodb://h/?x=1", {}, stacklevel=2)
        emit_uri_warnings(["second"], stacklevel=2)

    with pytest.warns(UserWarning) as caught:
        library_constructor()
    line = test_the_helper_counts_stacklevel_from_its_caller.__code__.co_firstlineno + 6
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line), (__file__, line)]
    assert str(caught[1].message) == "second"

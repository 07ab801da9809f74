"""The SCRAM client: the RFC and auth-spec vectors, the server checks, the cache, and a
differential run against scramp's server side."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.auth.scram import (
    ScramCache,
    ScramClient,
    ScramMechanism,
    mongodb_password_digest,
)
from mongo_sansio.errors import AuthenticationError, ConfigurationError, InvalidOperation

RFC5802_NONCE = "fyko+d2lbbFgONRv9qkxdawL"
RFC5802_SERVER_FIRST = b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"
RFC7677_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC7677_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)


def _started(mechanism: ScramMechanism = "SCRAM-SHA-256", **kwargs: Any) -> ScramClient:
    nonce = RFC7677_NONCE if mechanism == "SCRAM-SHA-256" else RFC5802_NONCE
    client = ScramClient(mechanism, "user", "pencil", nonce, **kwargs)
    client.client_first()
    return client


_SHARED_CACHE = ScramCache()


def _at_final(mechanism: ScramMechanism = "SCRAM-SHA-256") -> ScramClient:
    client = _started(mechanism, cache=_SHARED_CACHE)
    client.handle_server_first(
        RFC7677_SERVER_FIRST if mechanism == "SCRAM-SHA-256" else RFC5802_SERVER_FIRST
    )
    client.client_final()
    return client


# --- vectors ------------------------------------------------------------------------------------


def test_rfc5802_sha1_vector_without_mongodb_digest() -> None:
    client = ScramClient("SCRAM-SHA-1", "user", "pencil", RFC5802_NONCE, mongodb_digest=False)
    assert client.client_first() == b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"
    client.handle_server_first(RFC5802_SERVER_FIRST)
    assert client.salt == base64.b64decode("QSXCR+Q6sek8bf92") and client.iterations == 4096
    assert client.client_final() == (
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    )
    assert not client.complete
    client.handle_server_final(b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")
    assert client.complete


def test_auth_spec_sha1_example_with_mongodb_digest() -> None:
    client = ScramClient("SCRAM-SHA-1", "user", "pencil", RFC5802_NONCE)
    assert client.client_first() == b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"
    client.handle_server_first(
        b"r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000"
    )
    assert client.client_final() == (
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,"
        b"p=MC2T8BvbmWRckDw8oWl5IVghwCY="
    )
    client.handle_server_final(b"v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=")
    assert client.complete


def test_rfc7677_sha256_vector_and_auth_spec_example() -> None:
    # The auth spec's SCRAM-SHA-256 conversation is RFC 7677's, byte for byte.
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", RFC7677_NONCE)
    assert client.client_first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    client.handle_server_first(RFC7677_SERVER_FIRST)
    assert client.client_final() == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    client.handle_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    assert client.complete


def test_sha256_password_is_saslprepped() -> None:
    # "pen\u00adcil" prepares to "pencil": the RFC 7677 proof comes out the same.
    client = ScramClient("SCRAM-SHA-256", "user", "pen\u00adcil", RFC7677_NONCE)
    client.client_first()
    client.handle_server_first(RFC7677_SERVER_FIRST)
    assert client.client_final().endswith(b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")


def test_mongodb_digest() -> None:
    assert (
        mongodb_password_digest("user", "pencil") == hashlib.md5(b"user:mongo:pencil").hexdigest()
    )
    # SCRAM-SHA-1 does not SASLprep: a soft hyphen changes the digest, so the proof differs.
    finals = []
    for password in ("pencil", "pen\u00adcil"):
        client = ScramClient("SCRAM-SHA-1", "user", password, RFC5802_NONCE)
        client.client_first()
        client.handle_server_first(RFC5802_SERVER_FIRST)
        finals.append(client.client_final())
    assert finals[0] != finals[1]


def test_user_name_is_escaped_and_not_prepared() -> None:
    client = ScramClient("SCRAM-SHA-256", "a=b,c\u2168", "pw", "nonce")
    assert client.client_first() == "n,,n=a=3Db=2Cc\u2168,r=nonce".encode()


def test_reprs_hide_the_password() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "hunter2", "nonce")
    assert "hunter2" not in repr(client) and "password=<hidden>" in repr(client)
    assert "new" in repr(client)
    cache = ScramCache()
    assert "ScramCache(<0 entries>)" == repr(cache)
    keys = cache.keys("SCRAM-SHA-256", b"hunter2", b"salt", 4096)
    assert repr(keys) == "ScramKeys()"


# --- what the client refuses locally -------------------------------------------------------------


@pytest.mark.parametrize("nonce", ["", "a,b", "caf\u00e9", "sp ace", "tab\t"])
def test_bad_client_nonce(nonce: str) -> None:
    with pytest.raises(ConfigurationError, match="nonce"):
        ScramClient("SCRAM-SHA-256", "user", "pencil", nonce)


def test_bad_mechanism_and_unencodable_text() -> None:
    with pytest.raises(ConfigurationError):
        ScramClient("SCRAM-MD5", "user", "pencil", "n")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError) as caught:
        ScramClient("SCRAM-SHA-1", "user", "pw\ud800", "n")
    assert "\ud800" not in str(caught.value)
    with pytest.raises(ConfigurationError):
        ScramClient("SCRAM-SHA-256", "us\ud800er", "pw", "n")
    with pytest.raises(ConfigurationError):  # SASLprep refuses a control character
        ScramClient("SCRAM-SHA-256", "user", "pw\x07", "n")


def test_steps_out_of_order() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", RFC7677_NONCE)
    with pytest.raises(InvalidOperation):
        client.client_final()
    client.client_first()
    with pytest.raises(InvalidOperation):
        client.client_first()
    with pytest.raises(InvalidOperation):
        client.handle_server_final(b"v=")


# --- what the client refuses from the server -----------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        # the nonce must start with ours and add something
        (b"r=someoneelse,s=QSXCR+Q6sek8bf92,i=4096", "nonce"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=QSXCR+Q6sek8bf92,i=4096", "nonce"),
        (b"r=rOprNGfwEbeRWgbNEkq,s=QSXCR+Q6sek8bf92,i=4096", "nonce"),
        (b"r=rOprNGfwEbeRWgbNEkqO\xff,s=QSXCR+Q6sek8bf92,i=4096", "nonce"),
        (b"r=rOprNGfwEbeRWgbNEkqO \x01,s=QSXCR+Q6sek8bf92,i=4096", "nonce"),
        # the iteration floor
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=4095", "4095 iterations"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=0", "fewer than the minimum"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=9999999999", "too many"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=" + b"9" * 5000, "malformed"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=-4096", "malformed"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=4096.0", "malformed"),
        (
            b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=\xd9\xa4\xd9\xa0\xd9\xa9\xd9\xa6",
            "malformed",
        ),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=", "malformed"),
        # salt
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=,i=4096", "malformed"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=not base64!,i=4096", "malformed"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR,i=4096", "malformed"),
        # shape
        (b"", "malformed"),
        (b"garbage", "malformed"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz", "malformed"),
        (b"s=QSXCR+Q6sek8bf92,r=rOprNGfwEbeRWgbNEkqOxyz,i=4096", "malformed"),
        (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=4096,", "malformed"),
        (b"rr=x,s=QSXCR+Q6sek8bf92,i=4096", "malformed"),
        # errors and mandatory extensions
        (b"e=other-error", "refused: other-error"),
        (b"e=\xff\xfe secret bytes", "unrecognized"),
        (b"m=ext,r=rOprNGfwEbeRWgbNEkqOxyz,s=QSXCR+Q6sek8bf92,i=4096", "extension"),
    ],
)
def test_bad_server_first(payload: bytes, match: str) -> None:
    client = _started()
    with pytest.raises(AuthenticationError, match=match) as caught:
        client.handle_server_first(payload)
    assert caught.value.code is None
    # no chained exception carries the peer's bytes along
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None or caught.value.__suppress_context__
    assert "secret" not in str(caught.value)
    with pytest.raises(InvalidOperation):  # a failed conversation goes no further
        client.client_final()


def test_server_first_may_carry_extensions() -> None:
    client = _started()
    client.handle_server_first(RFC7677_SERVER_FIRST + b",x=extension")
    assert client.client_final().startswith(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2R")


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (
            b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
            "could not prove it knows the password",
        ),
        (b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4", "malformed"),  # unpadded
        (b"v=", "could not prove"),
        (b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=AAAA", "malformed"),
        (b"v=" + base64.b64encode(b"\x00" * 33), "could not prove"),
        (b"e=invalid-proof", "refused: invalid-proof"),
        (b"x=1", "malformed"),
        (b"", "malformed"),
        (b"\x00", "malformed"),
    ],
)
def test_bad_server_final(payload: bytes, match: str) -> None:
    client = _at_final()
    with pytest.raises(AuthenticationError, match=match):
        client.handle_server_final(payload)
    assert not client.complete


def test_server_final_may_carry_extensions() -> None:
    client = _at_final()
    client.handle_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=,x=1")
    assert client.complete


_NONCE = RFC7677_NONCE.encode()
_PIECES = st.sampled_from(
    [
        b"r=",
        _NONCE,
        b"xyz",
        b",",
        b"s=",
        b"QSXCR+Q6sek8bf92",
        b"i=",
        b"4096",
        b"4095",
        b"e=",
        b"m=",
        b"v=",
        b"=",
        b"\xff",
        b"\x00",
        b"9" * 20,
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.binary(max_size=80), st.lists(_PIECES, max_size=12).map(b"".join)))
def test_garbage_server_first_is_only_ever_an_authentication_error(payload: bytes) -> None:
    client = _started()
    try:
        client.handle_server_first(payload)
    except AuthenticationError:
        return
    # accepted: then it really did extend our nonce with enough iterations
    assert payload.startswith(b"r=" + _NONCE) and client.iterations >= 4096 and client.salt


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=60), st.lists(_PIECES, max_size=8).map(b"".join)))
def test_garbage_server_final_is_only_ever_an_authentication_error(payload: bytes) -> None:
    client = _at_final()
    with pytest.raises(AuthenticationError):
        client.handle_server_final(payload)


# --- the cache -----------------------------------------------------------------------------------


@pytest.fixture
def pbkdf2_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    real = hashlib.pbkdf2_hmac

    def counting(*args: Any) -> bytes:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", counting)
    return calls


def _final_with(
    cache: ScramCache, password: str, server_first: bytes = RFC7677_SERVER_FIRST
) -> bytes:
    client = ScramClient("SCRAM-SHA-256", "user", password, RFC7677_NONCE, cache=cache)
    client.client_first()
    client.handle_server_first(server_first)
    return client.client_final()


def test_cache_reuses_keys(pbkdf2_calls: list[tuple[Any, ...]]) -> None:
    cache = ScramCache()
    first = _final_with(cache, "pencil")
    assert _final_with(cache, "pencil") == first
    assert len(pbkdf2_calls) == 1 and len(cache) == 1
    # SASLprep-equivalent passwords are the same password
    assert _final_with(cache, "pen\u00adcil") == first
    assert len(pbkdf2_calls) == 1


def test_cache_never_lets_another_password_in(pbkdf2_calls: list[tuple[Any, ...]]) -> None:
    cache = ScramCache()
    right = _final_with(cache, "pencil")
    wrong = _final_with(cache, "pencil2")
    assert right != wrong and len(pbkdf2_calls) == 2 and len(cache) == 2


def test_cache_key_includes_salt_iterations_and_mechanism(
    pbkdf2_calls: list[tuple[Any, ...]],
) -> None:
    cache = ScramCache()
    _final_with(cache, "pencil")
    _final_with(cache, "pencil", RFC7677_SERVER_FIRST.replace(b"i=4096", b"i=4097"))
    _final_with(cache, "pencil", RFC7677_SERVER_FIRST.replace(b"s=W22Z", b"s=X22Z"))
    assert len(pbkdf2_calls) == 3
    assert cache.keys("SCRAM-SHA-1", b"pencil", b"salt", 4096) != cache.keys(
        "SCRAM-SHA-256", b"pencil", b"salt", 4096
    )
    assert len(cache) == 5


def test_cache_is_bounded() -> None:
    cache = ScramCache(max_entries=2)
    first = cache.keys("SCRAM-SHA-256", b"a", b"salt", 4096)
    cache.keys("SCRAM-SHA-256", b"b", b"salt", 4096)
    assert cache.keys("SCRAM-SHA-256", b"a", b"salt", 4096) is first  # now most recent
    cache.keys("SCRAM-SHA-256", b"c", b"salt", 4096)  # drops "b"
    assert len(cache) == 2
    assert cache.keys("SCRAM-SHA-256", b"a", b"salt", 4096) is first
    with pytest.raises(ConfigurationError):
        ScramCache(max_entries=0)


# --- differential: our client against scramp's server --------------------------------------------

scramp = pytest.importorskip("scramp")


def _server(mechanism: str, stored_password: str, *, server_key_from: str | None = None) -> Any:
    """scramp's server for one user; ``server_key_from`` signs with another password's key."""
    m = scramp.ScramMechanism(mechanism)
    salt, stored_key, server_key, iterations = m.make_auth_info(
        stored_password, iteration_count=4096
    )
    if server_key_from is not None:
        server_key = m.make_auth_info(server_key_from, iteration_count=4096, salt=salt)[2]
    return m.make_server(lambda _user: (salt, stored_key, server_key, iterations))


def _stored(mechanism: str, user: str, password: str) -> str:
    return mongodb_password_digest(user, password) if mechanism == "SCRAM-SHA-1" else password


PASSWORDS = [
    "pencil",
    "p\u00e4ssw\u00f6rd",
    "\u2163",
    "\u043f\u0430\u0440\u043e\u043b\u044c",
    "a b,c=d",
]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
@pytest.mark.parametrize("password", PASSWORDS)
@pytest.mark.parametrize("user", ["user", "us=er,\u2168"])
def test_against_scramp_right_password(mechanism: ScramMechanism, password: str, user: str) -> None:
    server = _server(mechanism, _stored(mechanism, user, password))
    client = ScramClient(mechanism, user, password, "clientNonce0123456789+/=")
    server.set_client_first(client.client_first().decode())
    client.handle_server_first(server.get_server_first().encode())
    server.set_client_final(client.client_final().decode())  # raises if our proof is wrong
    client.handle_server_final(server.get_server_final().encode())
    assert client.complete


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
@pytest.mark.parametrize("password", PASSWORDS)
def test_against_scramp_wrong_password(mechanism: ScramMechanism, password: str) -> None:
    server = _server(mechanism, _stored(mechanism, "user", password))
    client = ScramClient(mechanism, "user", password + "x", "clientNonce")
    server.set_client_first(client.client_first().decode())
    client.handle_server_first(server.get_server_first().encode())
    with pytest.raises(scramp.ScramException):
        server.set_client_final(client.client_final().decode())
    with pytest.raises(AuthenticationError, match="invalid-proof"):
        client.handle_server_final(server.get_server_final().encode())


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_against_scramp_server_that_does_not_know_the_password(mechanism: ScramMechanism) -> None:
    # The server accepts our proof (it holds our StoredKey) but signs with another ServerKey.
    server = _server(mechanism, _stored(mechanism, "user", "pencil"), server_key_from="other")
    client = ScramClient(mechanism, "user", "pencil", "clientNonce")
    server.set_client_first(client.client_first().decode())
    client.handle_server_first(server.get_server_first().encode())
    server.set_client_final(client.client_final().decode())
    with pytest.raises(AuthenticationError, match="could not prove it knows the password"):
        client.handle_server_final(server.get_server_final().encode())


@settings(max_examples=15, deadline=None)
@given(
    password=st.text(
        alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"]),
        min_size=1,
        max_size=12,
    ),
    mechanism=st.sampled_from(["SCRAM-SHA-1", "SCRAM-SHA-256"]),
)
def test_against_scramp_any_password(password: str, mechanism: ScramMechanism) -> None:
    """Whatever the password: SASLprep refuses it on both sides, or the conversation succeeds."""
    try:
        server = _server(mechanism, _stored(mechanism, "user", password))
    except scramp.ScramException:
        server = None
    try:
        client = ScramClient(mechanism, "user", password, "n0nce")
    except ConfigurationError:
        assert server is None
        return
    assert server is not None
    server.set_client_first(client.client_first().decode())
    client.handle_server_first(server.get_server_first().encode())
    server.set_client_final(client.client_final().decode())
    client.handle_server_final(server.get_server_final().encode())
    assert client.complete

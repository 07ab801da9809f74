"""The hello command (build_hello), Stable API fields, and the ConnectionDescription of a reply."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import Int64, ObjectId
from mongo_sansio.connection import (
    MAX_SUPPORTED_WIRE_VERSION,
    MIN_SUPPORTED_WIRE_VERSION,
    ConnectionDescription,
    HandshakeOptions,
    InvalidHelloReply,
    ServerApi,
    build_hello,
    check_compatible,
    sasl_supported_mechs_user,
    stable_api_fields,
)
from mongo_sansio.errors import (
    ConfigurationError,
    IncompatibleServerError,
    MongoError,
    NotPrimaryError,
    ServerError,
)
from mongo_sansio.flow import ServerInfo
from mongo_sansio.sdam.description import ServerType
from mongo_sansio.uri.credential import Credential

METADATA = {"driver": {"name": "mongo-sansio", "version": "1.0"}, "os": {"type": "Linux"}}
ADDRESS = ("db.example.com", 27017)


# -- build_hello -------------------------------------------------------------------------------


def test_default_is_legacy_hello_over_op_query() -> None:
    body, op_query = build_hello(HandshakeOptions(), METADATA)
    assert op_query is True
    # backpressure: "2", a string (handshake.md, "Test 9: Handshake documents include
    # backpressure: "2"")
    assert body == {"isMaster": 1, "helloOk": True, "client": METADATA, "backpressure": "2"}
    assert list(body)[0] == "isMaster"


@pytest.mark.parametrize(
    "options",
    [HandshakeOptions(server_api=ServerApi("1")), HandshakeOptions(load_balanced=True)],
    ids=["stable-api", "load-balanced"],
)
def test_stable_api_or_load_balanced_use_hello_over_op_msg(options: HandshakeOptions) -> None:
    body, op_query = build_hello(options, METADATA)
    assert op_query is False
    assert list(body)[0] == "hello" and body["hello"] == 1
    assert "isMaster" not in body
    assert body["helloOk"] is True
    assert ("loadBalanced" in body) is options.load_balanced
    assert ("apiVersion" in body) is (options.server_api is not None)


def test_every_optional_field() -> None:
    options = HandshakeOptions(
        app_name="app",
        compressors=("zstd", "zlib"),
        load_balanced=True,
        server_api=ServerApi("1", strict=True, deprecation_errors=False),
        sasl_supported_mechs_user="admin.alice",
    )
    speculative = {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": b"n,,", "db": "admin"}
    body, op_query = build_hello(options, METADATA, speculative)
    assert op_query is False
    assert body == {
        "hello": 1,
        "helloOk": True,
        "client": METADATA,
        "backpressure": "2",
        "compression": ["zstd", "zlib"],
        "loadBalanced": True,
        "saslSupportedMechs": "admin.alice",
        "speculativeAuthenticate": speculative,
        "apiVersion": "1",
        "apiStrict": True,
        "apiDeprecationErrors": False,
    }


def test_absent_options_leave_their_fields_out() -> None:
    body, _ = build_hello(HandshakeOptions(), METADATA, None)
    for field in ("compression", "loadBalanced", "saslSupportedMechs", "speculativeAuthenticate"):
        assert field not in body
    assert not any(key.startswith("api") for key in body)


def test_stable_api_fields() -> None:
    assert stable_api_fields(None) == {}
    assert stable_api_fields(ServerApi("1")) == {"apiVersion": "1"}
    # given values are sent even when they equal the server's defaults
    assert stable_api_fields(ServerApi("1", strict=False, deprecation_errors=False)) == {
        "apiVersion": "1",
        "apiStrict": False,
        "apiDeprecationErrors": False,
    }


def test_server_api_validation() -> None:
    with pytest.raises(ConfigurationError, match="version '2'"):
        ServerApi("2")
    with pytest.raises(ConfigurationError, match="strict"):
        ServerApi("1", strict="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"compressors": ("lz4",)}, "lz4"),
        ({"compressors": "zlib"}, "sequence"),
        ({"zlib_compression_level": 10}, "zlibCompressionLevel"),
        ({"zlib_compression_level": True}, "zlibCompressionLevel"),
        ({"load_balanced": 1}, "load_balanced"),
        ({"app_name": 5}, "app_name"),
        ({"sasl_supported_mechs_user": b"x"}, "sasl_supported_mechs_user"),
    ],
)
def test_handshake_options_validation(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        HandshakeOptions(**kwargs)


def test_compressors_become_a_tuple() -> None:
    assert HandshakeOptions(compressors=["zlib", "snappy"]).compressors == ("zlib", "snappy")


def test_sasl_supported_mechs_user_from_a_credential() -> None:
    negotiate = Credential(mechanism=None, username="alice", password="pw", source="admin")
    assert sasl_supported_mechs_user(negotiate) == "admin.alice"
    scram = Credential(mechanism="SCRAM-SHA-1", username="alice", password="pw", source="db")
    assert sasl_supported_mechs_user(scram) is None
    assert sasl_supported_mechs_user(None) is None


# -- ConnectionDescription -------------------------------------------------------------------


def hello(**fields: Any) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "isWritablePrimary": True,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "ok": 1.0,
    }
    reply.update(fields)
    return {key: value for key, value in reply.items() if value is not None}


def describe(reply: Any, **kwargs: Any) -> ConnectionDescription:
    return ConnectionDescription.from_hello(ADDRESS, reply, **kwargs)


def test_defaults_when_fields_are_absent() -> None:
    description = describe(hello())
    assert description.max_bson_object_size == 16 * 1024 * 1024
    assert description.max_message_size_bytes == 48_000_000
    assert description.max_write_batch_size == 100_000
    assert description.logical_session_timeout_minutes is None
    assert description.compressor is None
    assert description.sasl_supported_mechs is None
    assert description.speculative_authenticate is None
    assert description.server_type is ServerType.STANDALONE


def test_fields_are_read() -> None:
    process = ObjectId()
    service = ObjectId()
    reply = hello(
        helloOk=True,
        maxBsonObjectSize=1024,
        maxMessageSizeBytes=4096,
        maxWriteBatchSize=Int64(10),
        logicalSessionTimeoutMinutes=30,
        saslSupportedMechs=["SCRAM-SHA-256", "SOMETHING-NEW"],  # unknown ones are fine
        speculativeAuthenticate={"conversationId": 1, "done": False, "payload": b"r="},
        connectionId=42.0,
        serviceId=service,
        topologyVersion={"processId": process, "counter": Int64(3)},
        setName="rs0",
        hosts=["DB.example.com:27017", "[::1]:27018"],
        primary="db.example.com:27017",
        secondary=False,
    )
    description = describe(reply)
    assert description.hello_ok is True
    assert description.max_bson_object_size == 1024
    assert description.max_message_size_bytes == 4096
    assert description.max_write_batch_size == 10
    assert description.logical_session_timeout_minutes == 30
    assert description.sasl_supported_mechs == ("SCRAM-SHA-256", "SOMETHING-NEW")
    assert dict(description.speculative_authenticate or {}) == reply["speculativeAuthenticate"]
    assert description.server_connection_id == 42
    assert description.service_id == service
    assert description.topology_version is not None
    assert description.topology_version.counter == 3
    assert description.set_name == "rs0"
    assert description.hosts == (("db.example.com", 27017), ("::1", 27018))
    assert description.primary == ("db.example.com", 27017)
    assert description.server_type is ServerType.RS_PRIMARY
    assert dict(description.reply) == reply


@pytest.mark.parametrize(
    ("offered", "server", "expected"),
    [
        (("zlib", "zstd"), ["zstd", "zlib"], "zlib"),  # our order of preference decides
        (("snappy", "zstd"), ["zstd"], "zstd"),
        (("snappy",), ["zlib"], None),
        (("zlib",), None, None),
        ((), ["zlib"], None),
    ],
)
def test_compressor_choice(
    offered: tuple[str, ...], server: list[str] | None, expected: str | None
) -> None:
    assert describe(hello(compression=server), compressors=offered).compressor == expected


@pytest.mark.parametrize(
    ("fields", "kind", "writable"),
    [
        ({}, ServerType.STANDALONE, True),
        ({"msg": "isdbgrid", "isWritablePrimary": None, "ismaster": True}, ServerType.MONGOS, True),
        ({"setName": "rs0"}, ServerType.RS_PRIMARY, True),
        ({"setName": "rs0", "isWritablePrimary": False, "secondary": True},
         ServerType.RS_SECONDARY, False),
        ({"setName": "rs0", "isWritablePrimary": False, "arbiterOnly": True},
         ServerType.RS_ARBITER, False),
        ({"setName": "rs0", "isWritablePrimary": False, "hidden": True},
         ServerType.RS_OTHER, False),
        ({"isreplicaset": True, "isWritablePrimary": False}, ServerType.RS_GHOST, False),
        ({"isWritablePrimary": None, "ismaster": False, "setName": "rs0", "secondary": True},
         ServerType.RS_SECONDARY, False),
    ],
)  # fmt: skip
def test_server_type_and_server_info(
    fields: dict[str, Any], kind: ServerType, writable: bool
) -> None:
    description = describe(hello(maxWireVersion=17, maxBsonObjectSize=2048, **fields))
    assert description.server_type is kind
    assert description.to_server_info() == ServerInfo(
        address=ADDRESS,
        max_wire_version=17,
        is_writable=writable,
        max_bson_object_size=2048,
        max_message_size_bytes=48_000_000,
        max_write_batch_size=100_000,
    )


def test_load_balanced_is_a_writable_load_balancer() -> None:
    description = describe(hello(serviceId=ObjectId()), load_balanced=True)
    assert description.server_type is ServerType.LOAD_BALANCER
    assert description.to_server_info().is_writable


def test_ok_0_raises_the_typed_server_error() -> None:
    with pytest.raises(ServerError) as caught:
        describe({"ok": 0, "errmsg": "no", "code": 8000, "codeName": "AtlasError"})
    assert caught.value.code == 8000
    with pytest.raises(NotPrimaryError):
        describe({"ok": 0, "errmsg": "node is recovering", "code": 91})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("isWritablePrimary", "yes"),
        ("helloOk", []),
        ("minWireVersion", "0"),
        ("maxWireVersion", 2.5),
        ("maxWireVersion", -1),
        ("maxBsonObjectSize", 0),
        ("maxMessageSizeBytes", 10),
        ("maxWriteBatchSize", "many"),
        ("logicalSessionTimeoutMinutes", {}),
        ("compression", "zlib"),
        ("compression", [1]),
        ("saslSupportedMechs", "SCRAM-SHA-256"),
        ("saslSupportedMechs", [b"x"]),
        ("speculativeAuthenticate", b"x"),
        ("connectionId", True),
        ("serviceId", "5f1d"),
        ("topologyVersion", {"processId": 1, "counter": 1}),
        ("topologyVersion", []),
        ("setName", 1),
        ("hosts", "a:1"),
        ("hosts", ["a:notaport"]),
        ("primary", 5),
        ("msg", 1),
        ("secondary", "no"),
    ],
)
def test_malformed_field_is_named(field: str, value: Any) -> None:
    with pytest.raises(InvalidHelloReply, match=field):
        describe(hello(**{field: value}), compressors=("zlib",))


def test_reply_must_be_a_document() -> None:
    with pytest.raises(InvalidHelloReply):
        describe([("ok", 1)])


# -- wire versions ---------------------------------------------------------------------------


def test_supported_range() -> None:
    assert (MIN_SUPPORTED_WIRE_VERSION, MAX_SUPPORTED_WIRE_VERSION) == (7, 25)


@pytest.mark.parametrize(("low", "high"), [(0, 7), (25, 30), (7, 25), (0, 21), (13, 13)])
def test_overlapping_ranges_are_compatible(low: int, high: int) -> None:
    check_compatible(describe(hello(minWireVersion=low, maxWireVersion=high)))


def test_server_too_new() -> None:
    with pytest.raises(IncompatibleServerError) as caught:
        check_compatible(describe(hello(minWireVersion=26, maxWireVersion=30)))
    message = str(caught.value)
    assert "db.example.com:27017" in message
    assert "requires wire version 26" in message and "26 through 30" in message
    assert "only supports 7 through 25" in message


def test_server_too_old() -> None:
    with pytest.raises(IncompatibleServerError) as caught:
        check_compatible(describe(hello(minWireVersion=0, maxWireVersion=6)))
    message = str(caught.value)
    assert "db.example.com:27017" in message
    assert "reports wire version 6" in message and "0 through 6" in message
    assert "requires at least 7 (MongoDB 4.0)" in message and "7 through 25" in message


def test_missing_wire_versions_mean_a_very_old_server() -> None:
    with pytest.raises(IncompatibleServerError):
        check_compatible(describe({"ok": 1, "ismaster": True}))


def test_load_balanced_requires_service_id() -> None:
    with pytest.raises(IncompatibleServerError, match="does not support this mode"):
        check_compatible(describe(hello(), load_balanced=True), load_balanced=True)
    check_compatible(describe(hello(serviceId=ObjectId()), load_balanced=True), load_balanced=True)


# -- malformed replies: only our errors ---------------------------------------------------------

_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats()
    | st.text(max_size=8) | st.binary(max_size=4) | st.sampled_from(
        ["zlib", "snappy", "isdbgrid", "a:1", "[::1]:2", "SCRAM-SHA-256", ObjectId(), Int64(7)]
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["processId", "counter", "a"]), inner, max_size=3
    ),
    max_leaves=6,
)  # fmt: skip
_hello_keys = st.sampled_from(
    [
        "ok", "isWritablePrimary", "ismaster", "helloOk", "minWireVersion", "maxWireVersion",
        "maxBsonObjectSize", "maxMessageSizeBytes", "maxWriteBatchSize", "compression",
        "logicalSessionTimeoutMinutes", "saslSupportedMechs", "speculativeAuthenticate",
        "connectionId", "serviceId", "topologyVersion", "setName", "hosts", "primary",
        "secondary", "msg", "isreplicaset", "hidden", "arbiterOnly", "errmsg", "code",
    ]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_hello_keys, _values, max_size=8), st.booleans())
def test_random_hello_documents_give_only_our_errors(reply: dict[str, Any], lb: bool) -> None:
    reply.setdefault("ok", 1)
    try:
        description = describe(reply, compressors=("zlib", "snappy"), load_balanced=lb)
    except (InvalidHelloReply, ServerError):
        return
    assert description.compressor in (None, "zlib", "snappy")
    description.to_server_info()
    try:
        check_compatible(description, load_balanced=lb)
    except IncompatibleServerError:
        pass
    except MongoError as exc:  # pragma: no cover - the assertion's message
        raise AssertionError(f"unexpected {exc!r}") from exc

"""The Spark data source's pure decisions (mongo_sansio.pipeline) and the simulator stages it
needs: hashed keys and key partitions, token offsets and batch windows, _id range partitions
without gaps or overlaps, schema inference with its widening rules."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.bson import Decimal128, Int64, ObjectId, Timestamp
from mongo_sansio.pipeline.hashing import hashed_index_key, key_partition, partition_match
from mongo_sansio.pipeline.offsets import (
    StreamOffset,
    TokenRange,
    Verdict,
    next_end,
    parse_start_at,
)
from mongo_sansio.pipeline.partitions import choose_boundaries, range_filters
from mongo_sansio.pipeline.schema import (
    Array,
    Kind,
    SchemaMismatch,
    Struct,
    converter,
    finalize,
    infer_schema,
    kind_of,
    parse_hints,
    row_converter,
    sample_types,
    spark_type_name,
    widen,
)
from mongo_sansio.testing.engine import CommandError, run_pipeline
from mongo_sansio.testing.engine.query import compile_filter

# --- hashing ---------------------------------------------------------------------------------


def test_numbers_hash_as_64_bit_integers() -> None:
    assert hashed_index_key(1) == hashed_index_key(1.0) == hashed_index_key(Int64(1))
    assert hashed_index_key(1.9) == hashed_index_key(1)  # truncated toward zero
    assert hashed_index_key(1) != hashed_index_key("1")
    assert hashed_index_key({"_id": 1}) != hashed_index_key(1)


def test_hashed_key_is_stable() -> None:
    # Pinned: partitions of a running query must not move between versions.  Believed to be
    # mongod's convertShardKeyToHashed(1), not verified against a live mongod.
    assert hashed_index_key(1) == 5902408780260971510


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.integers(1, 16))
def test_key_partition_is_in_range(value: int, partitions: int) -> None:
    assert 0 <= key_partition({"_id": value}, partitions) < partitions


def test_server_side_partition_match_agrees_with_the_client() -> None:
    events = [{"documentKey": {"_id": n}} for n in range(60)] + [{"operationType": "drop"}]
    seen: list[int] = []
    for index in range(4):
        kept = run_pipeline(events, [partition_match(index, 4)])
        for event in kept:
            assert key_partition(event.get("documentKey"), 4) == index
        seen.extend(id(e) for e in kept)
        assert (index == 0) == any("documentKey" not in e for e in kept)
    assert sum(len(run_pipeline(events, [partition_match(i, 4)])) for i in range(4)) == len(events)


_key_values = st.one_of(
    st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), st.text(max_size=4), st.none(),
    st.booleans(), st.binary(min_size=12, max_size=12).map(ObjectId),
)


@given(
    st.lists(st.lists(_key_values, min_size=1, max_size=3), min_size=1, max_size=20),
    st.integers(1, 5),
)
def test_sharded_document_keys_split_exactly_once(keys: list[list[object]], partitions: int) -> None:
    """On a sharded collection documentKey is the shard key's fields, then _id: the server's
    $match and the client's assignment still put each event in exactly one partition."""
    events: list[dict[str, object]] = [
        {"n": n, "documentKey": {**{f"sk{i}": value for i, value in enumerate(values[1:])}, "_id": values[0]}}
        for n, values in enumerate(keys)
    ]
    events.append({"n": len(events), "operationType": "drop"})
    owners: dict[object, list[int]] = {}
    for index in range(partitions):
        for event in run_pipeline(events, [partition_match(index, partitions)]):
            owners.setdefault(event["n"], []).append(index)
    assert owners == {
        n: [key_partition(event.get("documentKey"), partitions)] for n, event in enumerate(events)
    }


# --- offsets ---------------------------------------------------------------------------------


def test_offsets_round_trip_through_their_dict_form() -> None:
    offset = StreamOffset(token="82AB", cluster_time=Timestamp(5, 6))
    assert StreamOffset.from_dict(offset.to_dict()) == offset
    assert StreamOffset.from_json(offset.to_json()) == offset
    start = StreamOffset(operation_time=Timestamp(7, 1))
    assert StreamOffset.from_dict(start.to_dict()) == start
    assert start.watch_options() == {"start_at_operation_time": Timestamp(7, 1)}
    assert offset.watch_options() == {"start_after": {"_data": "82AB"}}
    with pytest.raises(ValueError):
        StreamOffset()
    with pytest.raises(ValueError):
        StreamOffset.from_json("[1]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, {"latest": True}),
        ("LATEST", {"latest": True}),
        ("1700000000", {"operation_time": Timestamp(1700000000, 0)}),
        ("1700000000:7", {"operation_time": Timestamp(1700000000, 7)}),
        ('{"$timestamp": {"t": 5, "i": 2}}', {"operation_time": Timestamp(5, 2)}),
        ('{"_data": "8265AB"}', {"token": "8265AB"}),
        ("8265ABCDEF", {"token": "8265ABCDEF"}),
        ("2024-01-01T00:00:00Z", {"operation_time": Timestamp(1704067200, 0)}),
    ],
)
def test_start_at_forms(text: str | None, expected: dict[str, object]) -> None:
    parsed = parse_start_at(text)
    for name, value in expected.items():
        assert getattr(parsed, name) == value


def test_start_at_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="startAt"):
        parse_start_at("yesterday-ish")


def _seen(*tokens: str) -> list[tuple[str, Timestamp | None]]:
    return [(token, Timestamp(1, index)) for index, token in enumerate(tokens)]


def test_next_end_takes_the_last_event_within_the_limit() -> None:
    start = StreamOffset(token="A0")
    end = next_end(start, _seen("A1", "A2", "A3"), "A9", max_events=2, quiet_seconds=0, quiet_advance_seconds=60)
    assert end.token == "A2" and end.cluster_time == Timestamp(1, 1)
    end = next_end(start, _seen("A1", "A2", "A3"), "A9", max_events=None, quiet_seconds=0, quiet_advance_seconds=60)
    assert end.token == "A3"


def test_a_quiet_stream_advances_only_now_and_then() -> None:
    start = StreamOffset(token="A0")
    assert next_end(start, [], "A5", max_events=None, quiet_seconds=10, quiet_advance_seconds=60) == start
    moved = next_end(start, [], "A5", max_events=None, quiet_seconds=61, quiet_advance_seconds=60)
    assert moved.token == "A5"
    # a post-batch token at or before the start never moves it back
    assert next_end(start, [], "A0", max_events=None, quiet_seconds=99, quiet_advance_seconds=60) == start


def test_an_available_now_target_bounds_the_batches_and_is_reached() -> None:
    start = StreamOffset(token="A0")
    # the read-ahead has not reached the target yet: the batch ends at the last event
    end = next_end(start, _seen("A1", "A4"), "A4", max_events=None, quiet_seconds=0,
                   quiet_advance_seconds=60, target="A5")
    assert end.token == "A4"
    end = next_end(end, [], "A9", max_events=None, quiet_seconds=0, quiet_advance_seconds=60, target="A5")
    assert end.token == "A5"
    again = next_end(end, [], "A9", max_events=None, quiet_seconds=0, quiet_advance_seconds=60, target="A5")
    assert again == end  # nothing left: Spark ends the available-now run


def test_a_read_ahead_past_the_target_ends_the_batch_at_the_target() -> None:
    start = StreamOffset(token="A0")
    end = next_end(start, _seen("A1", "A4", "A7"), "A9", max_events=None, quiet_seconds=0,
                   quiet_advance_seconds=60, target="A5")
    assert end.token == "A5" and end.cluster_time == Timestamp(1, 1)  # no empty batch to follow
    # the limit cut the events before the target: the batch ends at its last event
    end = next_end(start, _seen("A1", "A2", "A4"), "A9", max_events=2, quiet_seconds=0,
                   quiet_advance_seconds=60, target="A5")
    assert end.token == "A2"
    end = next_end(start, _seen("A1", "A4"), "A9", max_events=2, quiet_seconds=0,
                   quiet_advance_seconds=60, target="A5")
    assert end.token == "A5"


def test_with_no_limit_one_event_before_the_position_ends_the_batch_there() -> None:
    start = StreamOffset(token="A0")
    now = StreamOffset(token="A8", cluster_time=Timestamp(9, 1))
    end = next_end(start, _seen("A1"), "A1", max_events=None, quiet_seconds=0, quiet_advance_seconds=60, position=now)
    assert end == now  # every event up to the position is in the batch
    # the first event came after the position was taken: the batch ends at it
    end = next_end(start, _seen("A9"), "A9", max_events=None, quiet_seconds=0, quiet_advance_seconds=60, position=now)
    assert end.token == "A9"
    # a limit needs the tokens counted: the position is not used
    end = next_end(start, _seen("A1"), "A1", max_events=5, quiet_seconds=0, quiet_advance_seconds=60, position=now)
    assert end.token == "A1"
    # no event: a quiet stream, the position changes nothing
    assert next_end(start, [], "A8", max_events=None, quiet_seconds=0, quiet_advance_seconds=60, position=now) == start
    # an available-now run's position is its target
    target = StreamOffset(token="A5", cluster_time=Timestamp(5, 1))
    end = next_end(start, _seen("A1"), "A1", max_events=None, quiet_seconds=0, quiet_advance_seconds=60,
                   target="A5", position=target)
    assert end == target


def test_token_range_verdicts() -> None:
    window = TokenRange(StreamOffset(token="A0"), "A5")
    assert window.verdict("A3") is Verdict.KEEP
    assert window.verdict("A5") is Verdict.KEEP_AND_STOP
    assert window.verdict("A6") is Verdict.STOP
    assert window.reached_by("A5") and window.reached_by("A7") and not window.reached_by("A4")
    assert not window.reached_by(None)
    assert TokenRange(StreamOffset(token="A5"), "A5").empty


# --- partitions ------------------------------------------------------------------------------


def _covering(filters: list[dict[str, object]], values: list[object]) -> None:
    matchers = [compile_filter(f) for f in filters]
    for value in values:
        hits = [index for index, match in enumerate(matchers) if match({"_id": value})]
        assert len(hits) == 1, (value, hits, filters)


def test_ranges_of_one_type_cover_every_id_once_including_other_types() -> None:
    sample = list(range(0, 1000, 7))
    boundaries = choose_boundaries(sample, 4, 1000)
    assert len(boundaries) == 3
    filters = range_filters(boundaries)
    assert all("$expr" not in str(f) for f in filters)
    _covering(filters, [-5, 0, 3.5, 500, 999, 10**12, "a string", ObjectId(), None, {"a": 1},
                        datetime.datetime(2024, 1, 1), Decimal128("7"), True])


def test_ranges_of_mixed_types_use_the_total_order() -> None:
    filters = range_filters([10, "m", ObjectId("6" + "0" * 23)])
    assert any("$expr" in str(f) for f in filters)
    for value in [-1, 10, 11, "a", "m", "z", ObjectId(), True, None]:
        hits = [i for i, f in enumerate(filters) if run_pipeline([{"_id": value}], [{"$match": f}])]
        assert len(hits) == 1, (value, hits)


def test_tiny_or_empty_collections_are_one_partition() -> None:
    assert range_filters(choose_boundaries([], 4, 0)) == [{}]
    assert choose_boundaries([1, 2], 4, 2, min_documents_per_partition=2) == []
    assert choose_boundaries([1, 1, 1, 1, 2], 4, 100) == [1, 2] or choose_boundaries([1, 1, 1, 1, 2], 4, 100) == [1]


# --- schema ----------------------------------------------------------------------------------


def test_widening_rules() -> None:
    assert widen(Kind.INT, Kind.LONG) is Kind.LONG
    assert widen(Kind.LONG, Kind.DOUBLE) is Kind.DOUBLE
    assert widen(Kind.DOUBLE, Kind.DECIMAL) is Kind.DECIMAL
    assert widen(Kind.NULL, Kind.DATE) is Kind.DATE
    assert widen(Kind.STRING, Kind.INT) is Kind.JSON
    assert widen(Array(Kind.INT), Array(Kind.NULL)) == Array(Kind.INT)
    assert widen(Array(Kind.INT), Struct()) is Kind.JSON
    merged = widen(kind_of({"a": 1}), kind_of({"b": "x", "a": 2**40}))
    assert spark_type_name(merged) == "struct<`a`: bigint, `b`: string>"


def test_every_bson_type_has_a_column() -> None:
    for value in sample_types():
        column = finalize(kind_of(value))
        convert = converter(column)
        convert(value, "f")  # never a mismatch for the value's own type
        assert spark_type_name(column)


def test_inferred_schema_orders_id_first_and_converts_rows() -> None:
    docs = [
        {"_id": ObjectId("5" * 24), "b": 1, "a": {"x": [1, 2]}, "t": Timestamp(3, 4)},
        {"_id": ObjectId("6" * 24), "b": "two", "a": {"y": None}, "e": {}},
    ]
    schema = finalize(infer_schema(docs))
    assert isinstance(schema, Struct)
    assert schema.names == ["_id", "a", "b", "e", "t"]
    assert spark_type_name(schema) == (
        "struct<`_id`: string, `a`: struct<`x`: array<int>, `y`: string>, `b`: string, "
        "`e`: string, `t`: struct<t: bigint, i: bigint>>"
    )
    row = row_converter(schema)
    assert row(docs[0]) == ["5" * 24, {"x": [1, 2], "y": None}, "1", None, {"t": 3, "i": 4}]
    assert row(docs[1])[2] == "two" and row(docs[1])[3] == "{}"


def test_a_value_that_does_not_fit_names_its_field() -> None:
    schema = infer_schema([{"_id": 1, "n": {"k": 1}}])
    with pytest.raises(SchemaMismatch, match="'n.k'"):
        row_converter(schema)({"_id": 2, "n": {"k": "text"}})


def test_schema_hints() -> None:
    assert parse_hints("a int, `b c` string") == {"a": Kind.INT, "b c": Kind.STRING}
    with pytest.raises(ValueError, match="expected 'name type'"):
        parse_hints("a decimal(3,2)")


# --- the simulator's stages ------------------------------------------------------------------


def test_sample_returns_distinct_documents_of_the_collection() -> None:
    docs = [{"_id": n} for n in range(50)]
    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    picked = run_pipeline(docs, [{"$sample": {"size": 10}}], now=now)
    assert len({d["_id"] for d in picked}) == 10
    assert len(run_pipeline(docs, [{"$sample": {"size": 500}}])) == 50
    with pytest.raises(CommandError):
        run_pipeline(docs, [{"$sample": {"size": -1}}])


def test_bucket_auto_keeps_equal_values_together_and_chains_bounds() -> None:
    docs = [{"_id": n, "v": n // 4} for n in range(40)]
    buckets = run_pipeline(docs, [{"$bucketAuto": {"groupBy": "$v", "buckets": 3}}])
    assert sum(b["count"] for b in buckets) == 40
    for left, right in zip(buckets, buckets[1:], strict=False):
        assert left["_id"]["max"] == right["_id"]["min"]


def test_coll_stats_counts_and_sizes() -> None:
    docs = [{"_id": n, "pad": "x" * 10} for n in range(5)]
    [stats] = run_pipeline(docs, [{"$collStats": {"count": {}, "storageStats": {}}}])
    assert stats["count"] == 5 and stats["storageStats"]["size"] > 50

"""GridFS's pure rules (mongo_sansio.gridfs): chunking an upload, checking a download's chunks,
the files document, indexes and revisions."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.bson.types import Int64
from mongo_sansio.errors import MongoError, ServerError
from mongo_sansio.gridfs import (
    BATCH_BYTES,
    CHUNKS_INDEX,
    FILES_INDEX,
    ChunkReader,
    ChunkWriter,
    CorruptGridFile,
    FileExists,
    GridFSError,
    NoFile,
    by_id,
    check_chunk_size,
    chunk_count,
    files_document,
    index_exists,
    revision_order,
)


def _chunks_of(data: bytes, chunk_size: int, pieces: list[int]) -> list[dict[str, Any]]:
    """Write ``data`` cut at ``pieces`` (sizes) and finish: every chunk document written."""
    writer = ChunkWriter("id", chunk_size)
    written: list[dict[str, Any]] = []
    start = 0
    for size in pieces:
        written += writer.write(data[start : start + size])
        start += size
    written += writer.write(data[start:])
    written += writer.finish()
    assert writer.length == len(data)
    return written


@given(
    data=st.binary(max_size=200),
    chunk_size=st.integers(1, 17),
    pieces=st.lists(st.integers(0, 40), max_size=8),
)
def test_chunks_are_numbered_full_but_the_last_and_read_back_whatever_the_writes(
    data: bytes, chunk_size: int, pieces: list[int]
) -> None:
    chunks = _chunks_of(data, chunk_size, pieces)
    assert [c["n"] for c in chunks] == list(range(chunk_count(len(data), chunk_size)))
    assert all(c["files_id"] == "id" for c in chunks)
    assert all(len(c["data"]) == chunk_size for c in chunks[:-1])
    assert b"".join(c["data"] for c in chunks) == data
    reader = ChunkReader(len(data), chunk_size)
    assert b"".join(reader.accept(c) for c in chunks) == data
    reader.end()
    assert reader.done


def test_an_empty_file_has_no_chunk() -> None:
    assert _chunks_of(b"", 4, []) == []
    assert chunk_count(0, 4) == 0


def test_chunks_are_handed_out_in_batches_once_enough_data_waits() -> None:
    writer = ChunkWriter("id", 1024 * 1024)
    assert writer.write(b"x" * (BATCH_BYTES - 1)) == []
    batch = writer.write(b"x" * (1024 * 1024))
    assert len(batch) == BATCH_BYTES // (1024 * 1024)
    assert [c["n"] for c in batch] == list(range(len(batch)))
    rest = writer.finish()
    assert [c["n"] for c in rest] == [len(batch)]
    assert len(rest[0]["data"]) == 1024 * 1024 - 1


def _chunk(n: Any, data: Any) -> dict[str, Any]:
    return {"files_id": "id", "n": n, "data": data}


@pytest.mark.parametrize(
    ("chunks", "why"),
    [
        ([_chunk(0, b"1234"), _chunk(2, b"99")], "missing chunk: expected chunk #1, found #2"),
        ([_chunk(0, b"1234"), _chunk(1, b"5678")], "missing chunk: expected chunk #2, found none"),
        ([_chunk(0, b"123"), _chunk(1, b"5678")], "chunk #0 has the wrong size"),
        ([_chunk(0, b"1234"), _chunk(1, b"5678"), _chunk(2, b"9")], "chunk #2 has the wrong size"),
        ([_chunk(0, b"1234"), _chunk(1, b"5678"), _chunk(2, b"90"), _chunk(3, b"x")], "extra chunk"),
        ([_chunk(0, "text")], "data is not binary"),
        ([_chunk("0", b"1234")], "n is not a number"),
    ],
)
def test_a_download_whose_chunks_do_not_match_its_files_document_is_corrupt(
    chunks: list[dict[str, Any]], why: str
) -> None:
    reader = ChunkReader(10, 4)
    with pytest.raises(CorruptGridFile, match=why):
        for chunk in chunks:
            reader.accept(chunk)
        reader.end()


def test_an_empty_chunk_past_the_end_is_accepted() -> None:
    # old drivers wrote one empty chunk for an empty file (the spec's download tests keep one)
    reader = ChunkReader(0, 4)
    assert reader.done
    assert reader.accept(_chunk(0, b"")) == b""
    reader.end()


def test_a_reader_can_start_at_a_later_chunk_and_doubles_are_numbers() -> None:
    reader = ChunkReader(10.0, 4, start=2)
    assert reader.accept(_chunk(2, b"90")) == b"90"
    reader.end()


@pytest.mark.parametrize(("length", "chunk_size"), [(-1, 4), ("10", 4), (10, 0), (10, None), (1.5, 4)])
def test_unusable_files_document_numbers_are_corrupt(length: Any, chunk_size: Any) -> None:
    with pytest.raises(CorruptGridFile):
        ChunkReader(length, chunk_size)


def test_an_empty_file_needs_no_chunk_size() -> None:
    assert ChunkReader(0, None).done


def test_the_files_document_has_the_spec_fields_and_no_md5() -> None:
    date = datetime.datetime(2020, 1, 2, tzinfo=datetime.UTC)
    document = files_document("id", "a.txt", 10, 4, date)
    assert document == {"_id": "id", "length": 10, "chunkSize": 4, "uploadDate": date, "filename": "a.txt"}
    assert type(document["length"]) is Int64
    assert files_document("id", "a", 0, 4, date, {"x": 1})["metadata"] == {"x": 1}


@pytest.mark.parametrize(("revision", "expected"), [(0, (0, 1)), (2, (2, 1)), (-1, (0, -1)), (-3, (2, -1))])
def test_revisions_are_a_skip_in_upload_date_order(revision: int, expected: tuple[int, int]) -> None:
    assert revision_order(revision) == expected


def test_a_revision_must_be_an_integer() -> None:
    with pytest.raises(TypeError):
        revision_order("1")
    with pytest.raises(TypeError):
        revision_order(True)


def test_index_keys_compare_in_order_with_numbers_as_numbers() -> None:
    assert FILES_INDEX == {"filename": 1, "uploadDate": 1}
    assert CHUNKS_INDEX == {"files_id": 1, "n": 1}
    assert index_exists([{"key": {"_id": 1}}, {"key": {"files_id": 1.0, "n": Int64(1)}}], CHUNKS_INDEX)
    assert not index_exists([{"key": {"n": 1, "files_id": 1}}], CHUNKS_INDEX)
    assert not index_exists([{"key": {"files_id": 1, "n": -1}}], CHUNKS_INDEX)
    assert not index_exists([{"key": {"files_id": 1}}], CHUNKS_INDEX)
    assert not index_exists([{"key": {"files_id": 1, "n": True}}], CHUNKS_INDEX)
    assert not index_exists([{"name": "no key"}], CHUNKS_INDEX)


def test_an_id_filter_is_the_value_unless_it_is_a_document() -> None:
    assert by_id(5) == {"_id": 5}
    assert by_id({"a": 1}, "files_id") == {"files_id": {"$eq": {"a": 1}}}


def test_chunk_sizes_must_be_positive_integers() -> None:
    assert check_chunk_size(1) == 1
    for bad, error in ((0, ValueError), (-4, ValueError), (1.0, TypeError), (True, TypeError)):
        with pytest.raises(error):
            check_chunk_size(bad)


def test_gridfs_errors_are_client_errors_with_pymongos_names() -> None:
    for error in (NoFile, CorruptGridFile, FileExists):
        assert issubclass(error, GridFSError)
        assert issubclass(error, MongoError)
        assert not issubclass(error, ServerError)

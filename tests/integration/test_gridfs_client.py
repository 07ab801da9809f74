"""GridFS on our clients against the simulated replica set: the blocking client's
GridFSBucket end to end (uploads in pieces and from files, downloads whole, by chunk, by line
and after a seek, revisions, find, rename, delete, drop, the indexes, the errors), the async
AsyncGridFSBucket on asyncio and trio, and PyMongo's gridfs reading what ours wrote and the
reverse."""

from __future__ import annotations

import asyncio
import datetime
import io
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio

import mongo_sansio.adapters.asyncio as asyncio_client
import mongo_sansio.adapters.asyncio.gridfs
import mongo_sansio.adapters.trio as trio_client
import mongo_sansio.adapters.trio.gridfs  # noqa: F401 - the clients' gridfs modules
from mongo_sansio.adapters.blocking import MongoClient, WriteConcern, gridfs, timeout
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.errors import ConfigurationError, InvalidOperation, MongoError

OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000}
DATA = bytes(range(256)) * 3 + b"end"  # 771 bytes: 7 chunks of 100 and one of 71


@pytest.fixture(scope="module")
def one_member() -> Iterator[SimulatedReplicaSet]:
    with SimulatedReplicaSet(members=1) as replica_set:
        yield replica_set


@pytest.fixture
def db(one_member: SimulatedReplicaSet, request: pytest.FixtureRequest) -> Iterator[Any]:
    with MongoClient(one_member.uri, **OPTIONS) as client:
        name = f"gridfs_{request.node.name.split('[')[0][-40:]}"
        client.drop_database(name)
        yield client[name]


def test_upload_and_download_in_every_way(db: Any) -> None:
    bucket = gridfs.GridFSBucket(db, chunk_size_bytes=100)
    file_id = bucket.upload_from_stream("data.bin", io.BytesIO(DATA), metadata={"kind": "test"})
    chunks = list(db["fs.chunks"].find({"files_id": file_id}).sort("n", 1))
    assert [c["n"] for c in chunks] == list(range(8))
    assert [len(c["data"]) for c in chunks] == [100] * 7 + [71]
    files = db["fs.files"].find_one({"_id": file_id})
    assert {k: files[k] for k in ("filename", "length", "chunkSize", "metadata")} == {
        "filename": "data.bin", "length": 771, "chunkSize": 100, "metadata": {"kind": "test"},
    }
    assert "md5" not in files

    with bucket.open_download_stream(file_id) as grid_out:
        assert (grid_out._id, grid_out.filename, grid_out.length, grid_out.chunk_size) == (
            file_id, "data.bin", 771, 100,
        )
        assert grid_out.metadata == {"kind": "test"}
        assert grid_out.upload_date == files["uploadDate"]
        assert grid_out.read(150) == DATA[:150]
        assert grid_out.readchunk() == DATA[150:200]  # the rest of the current chunk
        assert grid_out.tell() == 200
        assert grid_out.seek(-3, io.SEEK_END) == 768
        assert grid_out.read() == b"end"
        assert grid_out.read() == b""
        grid_out.seek(10)
        assert grid_out.read(5) == DATA[10:15]
    destination = io.BytesIO()
    bucket.download_to_stream(file_id, destination)
    assert destination.getvalue() == DATA


def test_an_upload_stream_in_pieces_and_lines_back(db: Any) -> None:
    bucket = gridfs.GridFSBucket(db)
    with bucket.open_upload_stream("lines.txt", chunk_size_bytes=4) as grid_in:
        grid_in.write(b"one\ntw")
        grid_in.writelines([b"o\n", b"three"])
        assert not grid_in.closed
        with pytest.raises(AttributeError):
            grid_in.length  # noqa: B018 - only once closed
    assert grid_in.closed and grid_in.length == 13
    with pytest.raises(ValueError, match="closed"):
        grid_in.write(b"more")
    grid_out = bucket.open_download_stream(grid_in._id)
    assert list(grid_out) == [b"one\n", b"two\n", b"three"]
    with pytest.raises(TypeError):
        bucket.upload_from_stream("text", "a str needs an encoding")


def test_an_empty_file_has_no_chunks(db: Any) -> None:
    bucket = gridfs.GridFSBucket(db)
    file_id = bucket.upload_from_stream("empty", b"")
    assert db["fs.chunks"].count_documents({}) == 0
    assert bucket.open_download_stream(file_id).read() == b""


def test_revisions_find_rename_and_delete(db: Any) -> None:
    bucket = gridfs.GridFSBucket(db, bucket_name="photos")
    ids = [bucket.upload_from_stream("cat.jpg", f"v{n}".encode()) for n in range(3)]
    for n, file_id in enumerate(ids):  # uploads in one millisecond would tie
        db["photos.files"].update_one({"_id": file_id}, {"$set": {"uploadDate": datetime.datetime(2020, 1, 1 + n)}})
    assert bucket.open_download_stream_by_name("cat.jpg").read() == b"v2"
    assert bucket.open_download_stream_by_name("cat.jpg", revision=0).read() == b"v0"
    assert bucket.open_download_stream_by_name("cat.jpg", revision=-2).read() == b"v1"
    with pytest.raises(gridfs.NoFile):
        bucket.open_download_stream_by_name("cat.jpg", revision=3)
    found = bucket.find({"filename": "cat.jpg"}, sort=[("uploadDate", -1)], limit=2)
    assert [grid_out.read() for grid_out in found] == [b"v2", b"v1"]
    assert [g._id for g in bucket.find().sort("uploadDate", 1).skip(1)] == ids[1:]

    bucket.rename(ids[0], "first.jpg")
    bucket.rename_by_name("cat.jpg", "dog.jpg")
    assert sorted(g.filename for g in bucket.find()) == ["dog.jpg", "dog.jpg", "first.jpg"]
    with pytest.raises(gridfs.NoFile):
        bucket.rename(ObjectId(), "x")
    with pytest.raises(gridfs.NoFile):
        bucket.rename_by_name("cat.jpg", "x")

    bucket.delete(ids[0])
    assert db["photos.chunks"].count_documents({"files_id": ids[0]}) == 0
    with pytest.raises(gridfs.NoFile):
        bucket.delete(ids[0])
    bucket.delete_by_name("dog.jpg")
    assert db["photos.files"].count_documents({}) == 0
    assert db["photos.chunks"].count_documents({}) == 0
    with pytest.raises(gridfs.NoFile):
        bucket.delete_by_name("dog.jpg")
    with pytest.raises(gridfs.NoFile):
        bucket.open_download_stream(ids[0])
    bucket.drop()
    assert not {"photos.files", "photos.chunks"} & set(db.list_collection_names())


def test_indexes_are_made_only_while_the_files_collection_is_empty(db: Any) -> None:
    gridfs.GridFSBucket(db).upload_from_stream("a", b"x")
    assert {"filename_1_uploadDate_1"} <= set(db["fs.files"].index_information())
    chunk_index = db["fs.chunks"].index_information()["files_id_1_n_1"]
    assert chunk_index["key"] == [("files_id", 1), ("n", 1)] and chunk_index["unique"]

    db["other.files"].insert_one({"_id": 1, "filename": "legacy", "length": 0, "chunkSize": 4})
    gridfs.GridFSBucket(db, bucket_name="other").upload_from_stream("b", b"y")
    assert set(db["other.files"].index_information()) == {"_id_"}


def test_file_exists_and_corrupt_files(db: Any) -> None:
    bucket = gridfs.GridFSBucket(db, chunk_size_bytes=4)
    bucket.upload_from_stream_with_id(7, "seven", b"12345678")
    with pytest.raises(gridfs.FileExists):
        bucket.upload_from_stream_with_id(7, "again", b"abcd")
    assert bucket.open_download_stream(7).read() == b"12345678"

    db["fs.chunks"].delete_one({"files_id": 7, "n": 1})
    with pytest.raises(gridfs.CorruptGridFile, match="missing chunk"):
        bucket.open_download_stream(7).read()
    db["fs.chunks"].insert_one({"files_id": 7, "n": 1, "data": b"567"})
    with pytest.raises(gridfs.CorruptGridFile, match="wrong size"):
        bucket.download_to_stream(7, io.BytesIO())


def test_chunks_go_in_batches_while_writing_and_abort_removes_them(
    db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mongo_sansio.gridfs.chunks.BATCH_BYTES", 8)  # two 4-byte chunks a batch
    bucket = gridfs.GridFSBucket(db, chunk_size_bytes=4)
    grid_in = bucket.open_upload_stream_with_id(1, "big")
    grid_in.write(b"1234567")
    assert db["fs.chunks"].count_documents({}) == 0  # one whole chunk waits
    grid_in.write(b"89")
    assert [c["n"] for c in db["fs.chunks"].find({"files_id": 1})] == [0, 1]
    grid_in.abort()
    assert grid_in.closed and db["fs.chunks"].count_documents({}) == 0

    bucket.upload_from_stream_with_id(2, "taken", b"12345678")
    with pytest.raises(gridfs.FileExists):  # the chunks' unique index refuses the first batch
        bucket.upload_from_stream_with_id(2, "again", b"abcdefgh")
    assert bucket.open_download_stream(2).read() == b"12345678"


def test_bucket_arguments_and_transactions_are_checked(db: Any) -> None:
    with pytest.raises(TypeError):
        gridfs.GridFSBucket(db.client)
    with pytest.raises(ConfigurationError):
        gridfs.GridFSBucket(db, write_concern=WriteConcern(w=0))
    with pytest.raises(TypeError):
        gridfs.GridFSBucket(db).open_upload_stream(b"name")
    db.create_collection("fs.files")
    with db.client.start_session() as session, session.start_transaction():
        with pytest.raises(InvalidOperation, match="transactions"):
            gridfs.GridFSBucket(db).upload_from_stream("t", b"x", session=session)


def test_a_timeout_caps_a_streams_lifetime(db: Any) -> None:
    """The CSOT spec: a timeoutMS in force when a GridFS stream opens bounds the stream's whole
    life, not each operation it runs."""
    bucket = gridfs.GridFSBucket(db, chunk_size_bytes=1)
    file_id = bucket.upload_from_stream("f", DATA)  # 771 chunks: the first batch has 101
    with timeout(1.0):  # (room for a loaded machine to open both and read the first batch)
        grid_out = bucket.open_download_stream(file_id)
        grid_in = bucket.open_upload_stream("g")
    assert grid_out.read(2) == DATA[:2]  # within the deadline
    time.sleep(1.05)  # past it
    with pytest.raises(MongoError) as raised:
        grid_out.read()
    assert raised.value.timeout
    grid_in.write(b"x" * 8)  # kept until enough for a batch: nothing sent
    with pytest.raises(MongoError) as raised:
        grid_in.close()
    assert raised.value.timeout
    assert bucket.open_download_stream(file_id).read() == DATA  # a new stream: no limit


# -- the async clients ----------------------------------------------------------------------------

ASYNC_RUNTIMES: dict[str, tuple[Any, Callable[[Callable[[], Any]], Any]]] = {
    "asyncio": (asyncio_client, lambda main: asyncio.run(main())),
    "trio": (trio_client, trio.run),
}


@pytest.mark.parametrize("runtime", sorted(ASYNC_RUNTIMES))
def test_the_async_bucket(one_member: SimulatedReplicaSet, runtime: str) -> None:
    client_module, run = ASYNC_RUNTIMES[runtime]
    async_gridfs = client_module.gridfs

    class AsyncSource:
        def __init__(self) -> None:
            self.data = io.BytesIO(DATA)

        async def read(self, size: int) -> bytes:
            return self.data.read(size)

    async def main() -> None:
        async with client_module.AsyncMongoClient(one_member.uri, **OPTIONS) as client:
            await client.drop_database(f"gridfs_{runtime}")
            bucket = async_gridfs.AsyncGridFSBucket(client[f"gridfs_{runtime}"], chunk_size_bytes=100)
            file_id = await bucket.upload_from_stream("a", AsyncSource())
            grid_out = await bucket.open_download_stream(file_id)
            assert (grid_out.length, await grid_out.read(10)) == (771, DATA[:10])
            assert await grid_out.read() == DATA[10:]
            await grid_out.close()
            async with bucket.open_upload_stream("c", metadata={"v": 2}) as grid_in:
                await grid_in.write(b"x\ny")
            latest = await bucket.open_download_stream_by_name("c")
            assert [line async for line in latest] == [b"x\n", b"y"]
            assert [g.metadata async for g in bucket.find({}, sort=[("filename", 1)])] == [None, {"v": 2}]
            await bucket.rename(file_id, "b")
            await bucket.delete_by_name("c")
            destination = io.BytesIO()
            await bucket.download_to_stream_by_name("b", destination)
            assert destination.getvalue() == DATA
            await bucket.delete(file_id)
            with pytest.raises(async_gridfs.NoFile):
                await bucket.open_download_stream(file_id)

    run(main)


# -- side by side with PyMongo ------------------------------------------------------------------


def test_pymongo_reads_what_we_wrote_and_we_read_what_it_wrote(one_member: SimulatedReplicaSet) -> None:
    pymongo = pytest.importorskip("pymongo")
    pymongo_gridfs = pytest.importorskip("gridfs")
    bson = pytest.importorskip("bson")
    with MongoClient(one_member.uri, **OPTIONS) as ours, pymongo.MongoClient(
        one_member.uri, serverSelectionTimeoutMS=5000
    ) as theirs:
        ours.drop_database("gridfs_side_by_side")
        our_bucket = gridfs.GridFSBucket(ours.gridfs_side_by_side, chunk_size_bytes=100)
        their_bucket = pymongo_gridfs.GridFSBucket(theirs.gridfs_side_by_side, chunk_size_bytes=100)

        our_id = our_bucket.upload_from_stream("ours", DATA, metadata={"by": "us"})
        theirs_out = their_bucket.open_download_stream(bson.ObjectId(str(our_id)))
        assert (theirs_out.read(), theirs_out.filename, theirs_out.length) == (DATA, "ours", 771)
        assert (theirs_out.chunk_size, theirs_out.metadata) == (100, {"by": "us"})

        their_id = their_bucket.upload_from_stream("theirs", DATA[::-1], metadata={"by": "them"})
        second = their_bucket.upload_from_stream("theirs", b"second revision")
        later = datetime.datetime.now(tz=datetime.UTC) + datetime.timedelta(seconds=1)
        theirs.gridfs_side_by_side["fs.files"].update_one({"_id": second}, {"$set": {"uploadDate": later}})
        ours_out = our_bucket.open_download_stream(ObjectId(str(their_id)))
        assert (ours_out.read(), ours_out.filename, ours_out.metadata) == (DATA[::-1], "theirs", {"by": "them"})
        assert our_bucket.open_download_stream_by_name("theirs").read() == b"second revision"
        assert our_bucket.open_download_stream_by_name("theirs", revision=0).read() == DATA[::-1]

        our_bucket.delete_by_name("theirs")
        with pytest.raises(pymongo_gridfs.NoFile):
            their_bucket.open_download_stream_by_name("theirs")
        their_bucket.delete(bson.ObjectId(str(our_id)))
        with pytest.raises(gridfs.NoFile):
            our_bucket.open_download_stream(our_id)

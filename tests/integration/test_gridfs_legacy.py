"""PyMongo's legacy GridFS API (``gridfs.GridFS``) on our clients, compared with PyMongo's on
the simulator: the same scenario (put with extra fields, a str with an encoding, a file-like
object and no name; get, versions, list, exists, find_one, find, delete, new_file, the
errors) gives the same outcome; the async ``AsyncGridFS`` on asyncio and trio gives it too.
Our GridFS errors are PyMongo's ``gridfs.errors`` classes once PyMongo is loaded, and PyMongo's
own ``gridfs`` module, given one of our databases, hands it to our GridFS."""

from __future__ import annotations

import io
import warnings
from typing import Any

import pytest
from async_kit import KITS, Kit

pytest.importorskip("pymongo", reason="the comparison needs pymongo")

import gridfs as pymongo_gridfs  # noqa: E402 - after the skip
import pymongo  # noqa: E402

import mongo_sansio.adapters.asyncio as asyncio_client  # noqa: E402
import mongo_sansio.adapters.blocking as blocking  # noqa: E402
import mongo_sansio.adapters.trio as trio_client  # noqa: E402
from mongo_sansio.adapters.asyncio import gridfs as asyncio_gridfs  # noqa: E402
from mongo_sansio.adapters.blocking import gridfs as our_gridfs  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402
from mongo_sansio.adapters.trio import gridfs as trio_gridfs  # noqa: E402


def _raised(call: Any) -> str:
    try:
        call()
    except (pymongo_gridfs.errors.NoFile, pymongo_gridfs.errors.FileExists, TypeError) as error:
        return type(error).__name__
    return "returned"


def scenario(client: Any, gridfs: Any) -> list[Any]:
    client.drop_database("legacygfs")
    fs = gridfs.GridFS(client.legacygfs)
    out: list[Any] = [fs.put(b"hello world", filename="a.txt", contentType="text/plain", _id=1)]
    fs.put(b"v2", filename="a.txt", _id=2)
    fs.put("caf\u00e9", encoding="utf-8", filename="b.txt", _id=3, author="me")
    fs.put(io.BytesIO(b"no name"), _id=4)
    first = fs.get(1)
    out.append((first.read(), first.filename, first.name, first.content_type, first.length))
    out.append((first.chunk_size, first._id, first.metadata, first.aliases))
    out.append(fs.get_last_version("a.txt").read())
    out.append(fs.get_version("a.txt", 0).read())
    out.append(fs.get_version(author="me").read())
    out.append(fs.get(3).author)
    out.append(sorted(fs.list()))
    out.append((fs.exists(1), fs.exists({"filename": "zzz"}), fs.exists(filename="b.txt")))
    out.append((fs.find_one(3).read(), fs.find_one({"filename": "nope"})))
    out.append([f.filename for f in fs.find({"filename": "a.txt"}).sort("uploadDate", 1)])
    fs.delete(1)
    fs.delete(99)  # nothing to delete: no error
    out.append(fs.exists(1))
    out.append(_raised(lambda: fs.get(1)))
    out.append(_raised(lambda: fs.get_version("a.txt", 5)))
    out.append(_raised(lambda: fs.put(b"x", _id=2)))
    out.append(_raised(lambda: fs.put("x")))
    grid_in = fs.new_file(filename="n.txt", _id=7)
    grid_in.write(b"abc")
    grid_in.close()
    out.append(fs.get(7).read())
    out.append(sorted(client.legacygfs["fs.files"].find_one({"_id": 1}) or {}))
    return out


def test_legacy_gridfs_as_pymongos(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    theirs = pymongo.MongoClient(rs.uri)
    ours = blocking.MongoClient(rs.uri)
    clients += [theirs, ours]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PyMongo's contentType
        expected = scenario(theirs, pymongo_gridfs)
    assert scenario(ours, our_gridfs) == expected
    assert expected[-6:-2] == ["NoFile", "NoFile", "FileExists", "TypeError"]


def test_pymongos_gridfs_module_takes_our_database(rs: SimulatedReplicaSet, clients: list[Any]) -> None:
    """Code that keeps ``import gridfs`` (PyMongo's) works with our database: the same scenario
    through PyMongo's module gives PyMongo's outcome; PyMongo's databases still get PyMongo's
    own classes."""
    theirs = pymongo.MongoClient(rs.uri)
    ours = blocking.MongoClient(rs.uri)
    clients += [theirs, ours]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PyMongo's contentType
        expected = scenario(theirs, pymongo_gridfs)
        assert type(pymongo_gridfs.GridFS(theirs.legacygfs)).__module__.startswith("gridfs.")
        assert isinstance(pymongo_gridfs.GridFSBucket(theirs.legacygfs), pymongo_gridfs.GridFSBucket)
    assert scenario(ours, pymongo_gridfs) == expected
    assert isinstance(pymongo_gridfs.GridFSBucket(ours.legacygfs), our_gridfs.GridFSBucket)
    with pytest.raises(TypeError):  # not a database at all: PyMongo's own check, unchanged
        pymongo_gridfs.GridFS("legacygfs")


CLIENTS = {"asyncio": (asyncio_client, asyncio_gridfs), "trio": (trio_client, trio_gridfs)}


@pytest.mark.parametrize(
    "kit",
    [
        pytest.param(
            kit,
            id=kit.name,
            marks=pytest.mark.skipif(not kit.available, reason=f"{kit.name} is not installed"),
        )
        for kit in KITS
    ],
)
@pytest.mark.parametrize("module_of_gridfs", ["ours", "pymongos"])
def test_async_legacy_gridfs(rs: SimulatedReplicaSet, kit: Kit, module_of_gridfs: str) -> None:
    module, gridfs = CLIENTS[kit.family]
    if module_of_gridfs == "pymongos":
        gridfs = pymongo_gridfs  # code that keeps ``import gridfs``

    async def main() -> None:
        client = module.AsyncMongoClient(rs.uri)
        try:
            await client.drop_database("legacygfs")
            fs = gridfs.AsyncGridFS(client.legacygfs)
            assert await fs.put(b"one", filename="a.txt", _id=1, contentType="x/y") == 1
            await fs.put(b"two", filename="a.txt", _id=2)
            grid_out = await fs.get(1)
            assert (await grid_out.read(), grid_out.content_type) == (b"one", "x/y")
            assert await (await fs.get_last_version("a.txt")).read() == b"two"
            assert await (await fs.get_version("a.txt", 0)).read() == b"one"
            assert await fs.list() == ["a.txt"]
            assert await fs.exists(2) and not await fs.exists(3)
            assert (await fs.find_one(2))._id == 2
            await fs.delete(1)
            await fs.delete(1)
            with pytest.raises(pymongo_gridfs.errors.NoFile):
                await fs.get(1)
        finally:
            await client.close()

    kit.run(main)

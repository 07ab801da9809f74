"""Snippets of everyday PyMongo code, GridFS: the legacy ``gridfs.GridFS`` and ``GridFSBucket``
with files put and read back, versions, metadata queries, upload streams written in parts and
the errors.  In the drop-in mode ``ns.gridfs`` is PyMongo's own ``gridfs`` module (code that
keeps ``import gridfs``).  Run by test_pymongo_snippets.py."""

from __future__ import annotations

import io
from typing import Any

from snippet_harness import DB, snippet


@snippet
def gridfs_put_and_get(client: Any, ns: Any) -> Any:
    fs = ns.gridfs.GridFS(client[DB])
    file_id = fs.put(b"hello world", filename="a.txt")
    grid_out = fs.get(file_id)
    return (
        file_id, grid_out.read(), grid_out.filename, grid_out.length,
        f"{grid_out.filename}: {grid_out.length} bytes", grid_out.chunk_size,
        fs.exists(file_id), fs.exists(filename="nope"), fs.list(),
    )


@snippet
def gridfs_versions_and_delete(client: Any, ns: Any) -> Any:
    fs = ns.gridfs.GridFS(client[DB], collection="media")
    first = fs.put(b"v1", filename="report.txt")
    fs.put(b"v2", filename="report.txt")
    latest = fs.get_last_version("report.txt").read()
    oldest = fs.get_version("report.txt", 0).read()
    fs.delete(first)
    try:
        fs.get(first)
    except ns.gridfs.errors.NoFile as exc:
        missing = type(exc).__name__
    return latest, oldest, missing, fs.get_last_version("report.txt").read(), fs.list()


@snippet
def gridfs_find_by_metadata(client: Any, ns: Any) -> Any:
    fs = ns.gridfs.GridFS(client[DB])
    for n, kind in enumerate(["image", "text", "image"]):
        fs.put(io.BytesIO(b"x" * (n + 1)), filename=f"f{n}", metadata={"kind": kind})
    images = [(f.filename, f.length, f.metadata) for f in fs.find({"metadata.kind": "image"}).sort("filename", -1)]
    one = fs.find_one({"filename": "f1"})
    return images, one.read(), fs.find_one({"filename": "none"})


@snippet
def gridfs_bucket_round_trip(client: Any, ns: Any) -> Any:
    bucket = ns.gridfs.GridFSBucket(client[DB], bucket_name="files")
    file_id = bucket.upload_from_stream("b.bin", b"x" * 1000, metadata={"owner": "ann"})
    data = bucket.open_download_stream(file_id).read()
    by_name = bucket.open_download_stream_by_name("b.bin").read()
    found = [(f._id == file_id, f.filename, f.length, f.metadata) for f in bucket.find({"filename": "b.bin"})]
    bucket.delete(file_id)
    try:
        bucket.open_download_stream(file_id)
    except ns.gridfs.errors.NoFile as exc:
        gone = type(exc).__name__
    return len(data), data == by_name, found, gone


@snippet
def gridfs_upload_stream_in_parts(client: Any, ns: Any) -> Any:
    db = client[DB]
    bucket = ns.gridfs.GridFSBucket(db)
    with bucket.open_upload_stream("parts.txt", chunk_size_bytes=4) as grid_in:
        grid_in.write(b"abc")
        grid_in.write(b"defgh")
        grid_in.write(b"ij")
    stored = db["fs.files"].find_one({"_id": grid_in._id})
    chunks = [c["n"] for c in db["fs.chunks"].find({"files_id": grid_in._id}).sort("n", 1)]
    out = io.BytesIO()
    bucket.download_to_stream(grid_in._id, out)
    return stored["length"], stored["chunkSize"], chunks, out.getvalue()

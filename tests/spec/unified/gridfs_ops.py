"""Bucket operations of the unified format (the GridFS spec's API) as calls of PyMongo's
``GridFSBucket`` API, which our buckets share.

``upload`` takes its ``source`` as ``{"$$hexBytes": "..."}`` and returns the new file's id;
``download`` / ``downloadByName`` return the file's bytes (matched with
``$$matchesHexBytes``); ``find`` returns the files documents.  ``disableMD5: true`` asks for
what both clients always do (no md5); any option the API does not have raises
:class:`~.matching.UnsupportedInTest`.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from .entities import call_api
from .matching import UnsupportedInTest

__all__ = ["bucket_operation", "hex_bytes"]

#: the format's upload option names -> the API's keywords
UPLOAD_OPTIONS = {"chunkSizeBytes": "chunk_size_bytes", "metadata": "metadata", "session": "session"}


def hex_bytes(value: Any) -> bytes:
    """An upload's ``source``: ``{"$$hexBytes": "1122"}`` as bytes."""
    if isinstance(value, Mapping) and set(value) == {"$$hexBytes"}:
        return bytes.fromhex(value["$$hexBytes"])
    raise UnsupportedInTest(f"an upload source other than $$hexBytes: {value!r}")


def _keywords(arguments: Mapping[str, Any], allowed: Mapping[str, str], operation: str) -> dict[str, Any]:
    unknown = set(arguments) - set(allowed)
    if unknown:
        raise UnsupportedInTest(f"bucket {operation} option(s) {sorted(unknown)} not supported by this runner")
    return {allowed[key]: value for key, value in arguments.items()}


def _upload(bucket: Any, args: dict[str, Any]) -> Any:
    if args.pop("disableMD5", True) is not True:
        raise UnsupportedInTest("an md5 on upload (neither client writes one)")
    filename = args.pop("filename")
    source = hex_bytes(args.pop("source"))
    if "id" in args:
        file_id = args.pop("id")
        call_api(bucket, "upload_from_stream_with_id", file_id, filename, source,
                 **_keywords(args, UPLOAD_OPTIONS, "upload"))
        return file_id
    return call_api(bucket, "upload_from_stream", filename, source, **_keywords(args, UPLOAD_OPTIONS, "upload"))


def _download(bucket: Any, name: str, args: dict[str, Any]) -> bytes:
    destination = io.BytesIO()
    if name == "download":
        file_id = args.pop("id")
        call_api(bucket, "download_to_stream", file_id, destination, **_keywords(args, {"session": "session"}, name))
    else:
        filename = args.pop("filename")
        allowed = {"session": "session", "revision": "revision"}
        call_api(bucket, "download_to_stream_by_name", filename, destination, **_keywords(args, allowed, name))
    return destination.getvalue()


def _files_document(grid_out: Any) -> Any:
    document = getattr(grid_out, "_file", None)
    return dict(document) if isinstance(document, Mapping) else document


def bucket_operation(bucket: Any, name: str, arguments: Mapping[str, Any]) -> Any:
    """Run the format's bucket operation ``name`` (see the module docstring)."""
    args = dict(arguments)
    session = {"session": args.pop("session")} if "session" in args else {}
    if name == "upload":
        return _upload(bucket, {**args, **session})
    if name in ("download", "downloadByName"):
        return _download(bucket, name, {**args, **session})
    if name == "delete":
        return call_api(bucket, "delete", args.pop("id"), **session)
    if name == "deleteByName":
        return call_api(bucket, "delete_by_name", args.pop("filename"), **session)
    if name == "rename":
        return call_api(bucket, "rename", args.pop("id"), args.pop("newFilename"), **session)
    if name == "renameByName":
        return call_api(bucket, "rename_by_name", args.pop("filename"), args.pop("newFilename"), **session)
    if name == "drop":
        if not hasattr(type(bucket), "drop"):
            raise UnsupportedInTest("the client under test's bucket has no drop()")
        return call_api(bucket, "drop", **session)
    if name == "find":
        filter_ = args.pop("filter", {})
        options = {"batchSize": "batch_size", "limit": "limit", "skip": "skip", "sort": "sort",
                   "noCursorTimeout": "no_cursor_timeout"}
        keywords = _keywords(args, options, name)
        if isinstance(keywords.get("sort"), Mapping):
            keywords["sort"] = list(keywords["sort"].items())
        return [_files_document(grid_out) for grid_out in call_api(bucket, "find", filter_, **keywords, **session)]
    raise UnsupportedInTest(f"bucket operation {name!r} is not implemented by this runner")

"""``mongo-sansio watch [URI] [NAMESPACE]``: tail a change stream and print its events.

Each event is printed as one line of relaxed Extended JSON; its ``_id`` is the event's resume
token.  When the command stops (``--limit`` events printed, or SIGINT), the stream's last resume
token goes to standard error as a ready-made ``--resume-after`` argument, so a later run carries
on where this one stopped.

Without a URI the command starts a simulated three-member replica set on loopback
(:mod:`mongo_sansio.adapters.sim`) and runs a small demo workload against it from a second
client: inserts, an update, a replace and a delete.  The stream is opened before the workload
starts, so every event is seen.

NAMESPACE is ``db.coll`` (a collection stream), ``db`` (a database stream) or empty with
``--cluster`` (every database).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from mongo_sansio.bson import extjson

DEMO_NAMESPACE = "demo.orders"


def add_watch_parser(commands: Any) -> None:
    """Register ``watch`` on the CLI's subcommand parser."""
    watch = commands.add_parser(
        "watch", help="print a change stream's events as relaxed Extended JSON"
    )
    watch.add_argument(
        "uri", nargs="?", default=None,
        help="the deployment to watch; without one, a simulated replica set and a demo workload",
    )
    watch.add_argument(
        "namespace", nargs="?", default=None,
        help=f"db.coll or db (default {DEMO_NAMESPACE} for the demo; required with a URI "
        "unless --cluster)",
    )
    watch.add_argument("--cluster", action="store_true", help="watch every database")
    watch.add_argument(
        "--limit", type=int, default=None,
        help="stop after this many events (the demo stops after its workload by default)",
    )
    watch.add_argument(
        "--full-document", default=None, choices=["updateLookup", "whenAvailable", "required"],
        help="ask for the full document on update events",
    )
    watch.add_argument(
        "--resume-after", default=None, metavar="TOKEN",
        help="a resume token (Extended JSON) printed by an earlier run",
    )
    watch.add_argument(
        "--max-await-ms", type=int, default=1000, help="how long each getMore waits (ms)"
    )
    watch.set_defaults(run=run_watch)


def run_watch(args: argparse.Namespace) -> int:
    from mongo_sansio.errors import MongoError

    try:
        return _watch(args)
    except MongoError as error:
        print(f"mongo-sansio watch: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0


def _watch(args: argparse.Namespace) -> int:
    from .blocking import MongoClient

    options: dict[str, Any] = {"max_await_time_ms": args.max_await_ms}
    if args.full_document:
        options["full_document"] = args.full_document
    if args.resume_after:
        options["resume_after"] = extjson.loads(args.resume_after)
    demo = args.uri is None
    namespace = args.namespace or (DEMO_NAMESPACE if demo else None)
    if namespace is None and not args.cluster:
        print("mongo-sansio watch: name a namespace (db.coll or db) or pass --cluster",
              file=sys.stderr)
        return 2
    limit = args.limit if args.limit is not None else (_DEMO_EVENTS if demo else None)
    with ExitStack() as stack:
        uri = args.uri if not demo else stack.enter_context(_simulator())
        # our value classes, whatever the process imported: events print as our extjson
        client = stack.enter_context(MongoClient(uri, pymongo_types=False))
        target: Any = client
        if not args.cluster and namespace is not None:
            db_name, _, coll_name = namespace.partition(".")
            target = client[db_name][coll_name] if coll_name else client[db_name]
        stream = stack.enter_context(target.watch(**options))
        failures: list[BaseException] = []
        if demo:
            failures = stack.enter_context(_demo_workload(uri))
        printed = 0
        try:
            # A stream that was invalidated (its collection dropped or renamed) is no longer
            # alive, and try_next would return None for ever.
            while stream.alive and (limit is None or printed < limit):
                if failures:
                    raise failures[0]
                event = stream.try_next()
                if event is None:
                    continue
                print(extjson.dumps(event, mode="relaxed"), flush=True)
                printed += 1
        finally:
            token = stream.resume_token
            if token is not None:
                print(f"--resume-after '{extjson.dumps(token)}'", file=sys.stderr)
    return 0


@contextmanager
def _simulator() -> Iterator[str]:
    from .sim import SimulatedReplicaSet

    with SimulatedReplicaSet(members=3, replset="rs0") as rs:
        print(f"# simulated replica set: {rs.uri}", file=sys.stderr)
        yield rs.uri


# What the demo workload does, one change event each.
_DEMO_EVENTS = 6


@contextmanager
def _demo_workload(uri: str) -> Iterator[list[BaseException]]:
    """Write to the demo collection from a second client in a background thread; the list
    yielded receives the workload's failure, if any, for the main loop to raise."""
    from .blocking import MongoClient

    failure: list[BaseException] = []

    def work() -> None:
        try:
            with MongoClient(uri, pymongo_types=False) as client:
                orders = client["demo"]["orders"]
                orders.insert_many(
                    [{"_id": n, "item": item, "qty": qty}
                     for n, (item, qty) in enumerate([("tea", 2), ("cake", 1), ("jam", 4)], 1)]
                )
                orders.update_one({"_id": 1}, {"$inc": {"qty": 1}})
                orders.replace_one({"_id": 2}, {"item": "cake", "qty": 3, "note": "gift"})
                orders.delete_one({"_id": 3})
        except BaseException as error:  # reported by the main thread
            failure.append(error)

    thread = threading.Thread(target=work, name="demo-workload", daemon=True)
    thread.start()
    try:
        yield failure
    finally:
        thread.join(timeout=30)

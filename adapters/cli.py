"""The ``mongo-sansio`` command line.

Subcommands:

* ``bson dump FILE [--canonical] [--indent N]`` -- print each BSON document of FILE (a
  ``mongodump``-style concatenation, or ``-`` for standard input) as one line of Extended JSON.
* ``bson load FILE [-o OUT]`` -- read Extended JSON (one document per line, or one JSON array
  or document) and write the documents as concatenated BSON.
* ``sim [--members N] [--replset NAME] [--standalone] [--host H] [--port P]
  [--auth USER:PASSWORD ...] [--aws ACCESS_KEY:SECRET[:SESSION_TOKEN] ...] [--oidc-secret SECRET]
  [--oidc-jwks FILE] [--oidc-audience AUD] [--load-balanced] [--seed S]`` -- serve a simulated
  replica set (or, with ``--standalone``, one standalone server) on loopback, with
  ``--load-balanced`` behind a load balancer front; the first line of standard output
  is its connection URI (with the first user's credentials when ``--auth`` is given, else the
  first AWS identity's with ``authMechanism=MONGODB-AWS`` when ``--aws`` is). It serves until
  SIGINT or SIGTERM and then exits 0.  ``--oidc-secret`` and ``--oidc-audience`` enable
  MONGODB-OIDC: JWTs signed HS256 with that secret (or RS256 with a key of the JWKS file of
  ``--oidc-jwks``) for that audience authenticate their ``sub``.  ``sim --sharded [--shards N]
  [--mongos M] [--members K]`` serves a sharded cluster instead (:mod:`.cli_sharded`); its URI
  lists every mongos (with ``--load-balanced``, it names the front over the routers).
* ``watch [URI] [db.coll]`` -- print a change stream's events as relaxed Extended JSON with
  their resume tokens; without a URI it starts the simulator and a small demo workload
  (:mod:`.cli_watch`).
* ``pipeline [URI] --ns DB.COLL --out DIR --checkpoint DIR`` -- a Spark streaming query from a
  change stream into files, exactly once; without a URI, a demo on the simulator
  (:mod:`.cli_pipeline`).
* ``chaos --seed N | --seeds A..B`` -- deterministic simulation with faults (:mod:`.chaos.cli`).

Bad input ends the command with a one-line message naming the offset or line and exit status 1,
never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

from mongo_sansio.bson import decode_iter, encode, extjson
from mongo_sansio.bson.errors import BSONError

from .chaos.cli import add_chaos_parser
from .cli_pipeline import add_pipeline_parser
from .cli_sharded import add_sharded_arguments, sharded_cluster
from .cli_watch import add_watch_parser


def _read_input(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        return handle.read()


def _bson_dump(args: argparse.Namespace) -> int:
    data = _read_input(args.file)
    mode = "canonical" if args.canonical else "relaxed"
    out = sys.stdout
    count = 0
    try:
        for document in decode_iter(data):
            out.write(extjson.dumps(document, mode=mode, indent=args.indent))
            out.write("\n")
            count += 1
    except BSONError as exc:
        out.flush()
        print(f"mongo-sansio: {args.file}: document {count + 1}: {exc}", file=sys.stderr)
        return 1
    return 0


def _documents_from_text(text: str) -> Iterator[tuple[int, Any]]:
    """Yield (line number, document) from a JSON array, one document, or JSON lines."""
    stripped = text.strip()
    if not stripped:
        return
    if stripped.startswith("["):
        for value in extjson.loads(stripped):
            yield 1, value
        return
    try:
        yield 1, extjson.loads(stripped)
        return
    except BSONError:
        pass  # not one document: read it as JSON lines
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, extjson.loads(line)


def _bson_load(args: argparse.Namespace) -> int:
    text = _read_input(args.file).decode("utf-8")
    out: BinaryIO
    out = open(args.output, "wb") if args.output != "-" else sys.stdout.buffer  # noqa: SIM115
    line = 0
    try:
        for number, document in _documents_from_text(text):
            line = number
            if not isinstance(document, dict):
                raise BSONError(f"expected a JSON object, got {type(document).__name__}")
            out.write(encode(document))
    except (BSONError, json.JSONDecodeError) as exc:
        print(f"mongo-sansio: {args.file}: line {line}: {exc}", file=sys.stderr)
        return 1
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    return 0


def _user_and_password(text: str) -> tuple[str, str]:
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise argparse.ArgumentTypeError(f"expected USER:PASSWORD, got {text!r}")
    return user, password


def _oidc_issuer(args: argparse.Namespace, jwks: Any) -> Any:
    """The OIDC identity provider the --oidc-* options describe (None without them)."""
    if args.oidc_audience is None:
        return None
    from mongo_sansio.testing.server.oidc import OidcIssuer

    return OidcIssuer(
        secret=args.oidc_secret, audience=args.oidc_audience, jwks=jwks,
        issuer=args.oidc_issuer, client_id=args.oidc_client_id,
    )


def _aws_identity(text: str) -> tuple[str, str, str | None]:
    access_key, sep, rest = text.partition(":")
    secret, _, token = rest.partition(":")
    if not sep or not access_key or not secret:
        raise argparse.ArgumentTypeError(f"expected ACCESS_KEY:SECRET[:SESSION_TOKEN], got {text!r}")
    return access_key, secret, token or None


def _sim(args: argparse.Namespace) -> int:
    # Imported here so that the bson tools never pay for the simulator (or scramp).
    from .sim import SimulatedReplicaSet

    if (args.oidc_secret is None and args.oidc_jwks is None) != (args.oidc_audience is None):
        print(
            "mongo-sansio sim: --oidc-audience goes with --oidc-secret or --oidc-jwks",
            file=sys.stderr,
        )
        return 2
    jwks = None
    if args.oidc_jwks is not None:
        try:
            with open(args.oidc_jwks, encoding="utf-8") as file:
                jwks = json.load(file)
        except (OSError, ValueError) as error:
            print(f"mongo-sansio sim: cannot read --oidc-jwks: {error}", file=sys.stderr)
            return 2
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    stop = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        users = dict(args.auth) if args.auth else None
        rs: Any
        if args.sharded:
            rs = sharded_cluster(args, users)
        else:
            rs = SimulatedReplicaSet(
                members=args.members, replset=args.replset, auth=users, seed=args.seed,
                host=args.host, port=args.port, standalone=args.standalone, aws=args.aws,
                oidc_issuer=_oidc_issuer(args, jwks), load_balanced=args.load_balanced,
            )
        with rs:
            print(rs.uri_with_aws() if args.aws and not users else rs.uri_with_credentials(), flush=True)
            while not stop.wait(0.5):  # a timed wait keeps signal handlers running promptly
                pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mongo-sansio", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    bson_parser = commands.add_parser("bson", help="BSON and Extended JSON tools")
    bson_commands = bson_parser.add_subparsers(dest="bson_command", required=True)

    dump = bson_commands.add_parser("dump", help="print BSON documents as Extended JSON")
    dump.add_argument("file", help="a file of concatenated BSON documents, or - for stdin")
    dump.add_argument("--canonical", action="store_true", help="canonical instead of relaxed")
    dump.add_argument("--indent", type=int, default=None, help="pretty-print with this indent")
    dump.set_defaults(run=_bson_dump)

    load = bson_commands.add_parser("load", help="turn Extended JSON into BSON")
    load.add_argument("file", help="Extended JSON (array, document or JSON lines), or -")
    load.add_argument("-o", "--output", default="-", help="where to write BSON (default stdout)")
    load.set_defaults(run=_bson_load)

    sim = commands.add_parser("sim", help="serve a simulated replica set on loopback")
    sim.add_argument("--members", type=int, default=None, help="how many members (default 3)")
    sim.add_argument("--replset", default="rs0", help="the replica set name (default rs0)")
    sim.add_argument(
        "--standalone", action="store_true",
        help="serve one standalone server (hello without setName; no replicaSet in the URI)",
    )
    sim.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    sim.add_argument(
        "--port", type=int, default=0,
        help="the first member's port; the others take the next ones (0: free ports)",
    )
    sim.add_argument(
        "--auth", action="append", type=_user_and_password, metavar="USER:PASSWORD",
        help="require authentication and add this admin user (repeatable)",
    )
    sim.add_argument(
        "--oidc-secret", metavar="SECRET",
        help="enable MONGODB-OIDC: accept JWTs signed with HS256 and this secret",
    )
    sim.add_argument(
        "--oidc-audience", metavar="AUD", help="the audience (aud) the OIDC tokens must name",
    )
    sim.add_argument(
        "--oidc-issuer", metavar="URL", default="https://simulated-idp.invalid",
        help="the issuer the OIDC IdpInfo announces (human flow)",
    )
    sim.add_argument(
        "--oidc-client-id", metavar="ID", default="mongo-sansio-simulator",
        help="the clientId the OIDC IdpInfo announces (human flow)",
    )
    sim.add_argument(
        "--oidc-jwks", metavar="FILE",
        help="enable MONGODB-OIDC with RS256 tokens verified by this JSON Web Key Set file",
    )
    sim.add_argument(
        "--aws", action="append", type=_aws_identity, metavar="ACCESS_KEY:SECRET[:SESSION_TOKEN]",
        help="require authentication and accept this AWS identity with MONGODB-AWS (repeatable)",
    )
    sim.add_argument(
        "--load-balanced", action="store_true",
        help="also serve a load balancer front (on --port; the members, or with --sharded the "
        "routers, take the next ports); the URI names it with loadBalanced=true",
    )
    sim.add_argument("--seed", type=int, default=0, help="seeds the simulator's ids")
    add_sharded_arguments(sim)
    sim.add_argument("-v", "--verbose", action="store_true", help="log connections to stderr")
    sim.set_defaults(run=_sim)

    add_watch_parser(commands)
    add_pipeline_parser(commands)
    add_chaos_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "standalone", False) and args.members not in (None, 1):
        parser.error("--standalone serves one server: --members must be 1 or left out")
    if getattr(args, "standalone", False) and getattr(args, "load_balanced", False):
        parser.error("--load-balanced serves routers over a replica set: not with --standalone")
    try:
        status: int = args.run(args)
    except OSError as exc:
        print(f"mongo-sansio: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. piped into head
        return 0
    return status


if __name__ == "__main__":
    raise SystemExit(main())

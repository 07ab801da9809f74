"""What the blocking and async clients share: PyMongo's ``MongoClient`` over the core, each
method written once (:mod:`.program`).

A client parses the connection string (keyword options, with PyMongo's names, override the
string's), resolves a ``mongodb+srv`` string through DNS (:mod:`mongo_sansio.transports.dns`
answering :mod:`mongo_sansio.uri.seedlist`'s questions; an async client does it when built, as
the blocking one does), and builds its flavour's engine, which runs every operation's flow.
Nothing connects until the first operation (or an async client's ``async with``): server
selection then discovers the deployment.

The client holds the settings its databases inherit, and they pass them on to their
collections (PyMongo's chain): codec options (from the ``document_class``, ``tz_aware``,
``tzinfo``, ``uuidRepresentation``, ``datetime_conversion`` and
``unicode_decode_error_handler`` keywords, and ``pymongo_types``: values read back as PyMongo's
``bson`` classes, by default when PyMongo's ``bson`` is imported already), read preference, write concern and read concern
(from the connection string).  ``client.db`` / ``client["db"]`` / ``get_database`` give the
flavour's database.

Errors: server errors are :class:`~mongo_sansio.errors.ServerError` subclasses, network faults
:class:`~mongo_sansio.errors.NetworkError`, a deployment that offers no suitable server
:class:`~mongo_sansio.selection.ServerSelectionTimeoutError`, a bad option
:class:`~mongo_sansio.errors.ConfigurationError` (a bad codec keyword: TypeError or ValueError,
as in PyMongo) -- never a raw socket or TLS error.

Each flavour adds its engine (:meth:`ClientBase._new_engine`), closing and the context-manager
protocol.  What waits for discovery (``address``, ``is_primary``, ``is_mongos``) is a property
of a blocking client and an awaitable one of an async client, as in PyMongo; so are
``primary``, ``secondaries`` and ``arbiters``, which PyMongo's async client awaits too.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar

from mongo_sansio.bson import ObjectId, Timestamp
from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.client import ClientSettings
from mongo_sansio.client.srv_polling import SrvSource
from mongo_sansio.connection import ServerApi
from mongo_sansio.cursors import ChangeStreamTarget
from mongo_sansio.errors import ConfigurationError, InvalidOperation
from mongo_sansio.flow import Flow, ServerInfo
from mongo_sansio.ops import crud
from mongo_sansio.ops.client_bulk import client_bulk_write, plan_client_bulk
from mongo_sansio.ops.database import list_database_names, list_databases
from mongo_sansio.ops.decoding import CODEC_KEYWORDS, codec_options_from_keywords
from mongo_sansio.ops.models import WriteModel
from mongo_sansio.ops.results import ClientBulkWriteResult
from mongo_sansio.ops.write_concern import DEFAULT_WRITE_CONCERN, ReadConcern, WriteConcern
from mongo_sansio.sdam.description import ServerDescription, ServerType, TopologyType
from mongo_sansio.sdam.topology import TopologyDescription
from mongo_sansio.selection import ReadPreference
from mongo_sansio.selection.read_preference import PRIMARY
from mongo_sansio.sessions import TransactionOptions
from mongo_sansio.uri import ConnectionString, apply_seedlist, discovery_for

from .._engine_base import EngineBase
from .._publish import LogSettings, Publisher
from .._pymongo_errors import adopt_pymongo_errors
from .._pymongo_gridfs import bridge_pymongo_gridfs
from .._uri import emit_uri_warnings, parse_client_uri
from ..environment import client_metadata
from .change_stream import ChangeStreamBase, watch_options
from .database import DatabaseBase
from .program import Program, Run, driven_property, operation
from .pymongo_objects import (
    adopt,
    adopt_codec_keywords,
    adopt_type_registry,
    adopt_write_models,
)
from .pymongo_values import client_codec_options, plain_codec_options

if TYPE_CHECKING:
    from transports.dns import Resolver

__all__ = ["ClientBase"]

T = TypeVar("T")
DatabaseT = TypeVar("DatabaseT", bound=DatabaseBase[Any, Any, Any, Any])
CommandCursorT = TypeVar("CommandCursorT")
ChangeStreamT = TypeVar("ChangeStreamT", bound=ChangeStreamBase)
SessionT = TypeVar("SessionT")
EngineT = TypeVar("EngineT", bound=EngineBase)

_REPLICA_SET_TYPES = (TopologyType.REPLICA_SET_WITH_PRIMARY, TopologyType.REPLICA_SET_NO_PRIMARY)


def _resolve(
    uri: ConnectionString, resolver: Resolver | None, rescan_ms: Any = None
) -> tuple[ConnectionString, SrvSource | None]:
    """A ``mongodb+srv`` string with its SRV and TXT records applied, and where to poll them
    again (others unchanged, no polling); ``rescan_ms`` is rescanSRVIntervalMS (the shortest
    time between two rescans; the spec's 60 s when None)."""
    if not uri.needs_seedlist:
        return uri, None
    discovery = discovery_for(uri, randbelow=random.SystemRandom().randrange)
    if TYPE_CHECKING:
        from transports.dns import BlockingResolver, resolve_seedlist
    else:  # imported here, when needed: dnspython costs a sixth of the client's import time
        from mongo_sansio.transports.dns import BlockingResolver, resolve_seedlist
    if resolver is None:
        resolver = BlockingResolver()
    seedlist = resolve_seedlist(discovery, resolver)
    source = SrvSource(
        hostname=uri.srv_host or "",
        srv_service_name=uri.srv_service_name,
        srv_max_hosts=uri.srv_max_hosts,
        min_ttl=seedlist.min_ttl,
        **({} if rescan_ms is None else {"rescan_floor": _milliseconds(rescan_ms) / 1000.0}),
    )
    return apply_seedlist(uri, seedlist), source


def _milliseconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigurationError(f"rescanSRVIntervalMS must be a positive number, not {value!r}")
    return float(value)


def _split_codec_keywords(options: dict[str, Any]) -> dict[str, Any]:
    """Take the codec keywords out of ``options`` (the connection string parser does not know
    them) and return them."""
    codec = {key: value for key, value in options.items() if key.lower() in CODEC_KEYWORDS}
    for key in codec:
        del options[key]
    return codec


class ClientBase(Generic[DatabaseT, CommandCursorT, ChangeStreamT, SessionT, EngineT]):
    """A client for one deployment (see the module docstring).

    ``host`` is a ``mongodb://`` or ``mongodb+srv://`` connection string, or a bare host name
    (with ``port``).  ``document_class`` and ``tz_aware`` (and the codec keywords) say how
    documents decode; ``connect`` is accepted for PyMongo's sake (monitoring starts at once
    either way); ``type_registry`` is not supported.  ``options`` are URI options by their
    PyMongo names (``username``, ``password``, ``authSource``, ``authMechanism``, ``tls``,
    ``tlsCAFile``, ``appname``, ``compressors``, ``serverSelectionTimeoutMS``,
    ``connectTimeoutMS``, ``socketTimeoutMS``, ``directConnection``, ``replicaSet``,
    ``readPreference``, ``w`` ...), any case.  ``event_listeners`` are listeners of
    :mod:`mongo_sansio.monitoring` (command, server, heartbeat, topology and pool events,
    dispatched by base class as PyMongo does; anything else is a TypeError);
    ``log_settings`` overrides the ``MONGODB_LOG_*`` variables; ``server_api`` declares a
    Stable API version; ``dns_resolver`` answers a ``mongodb+srv`` string's DNS questions
    (default: the system's name servers through dnspython).  ``pymongo_types`` says whether
    values read back are PyMongo's ``bson`` classes: None (the default) when PyMongo's
    ``bson`` is already imported as the client is made, True always (needs PyMongo), False
    never (:mod:`.pymongo_values`).
    """

    _database_class: Callable[..., DatabaseT]
    _command_cursor_class: Callable[..., CommandCursorT]
    _change_stream_class: Callable[..., ChangeStreamT]
    _session_class: Callable[..., SessionT]

    def __init__(
        self,
        host: str = "mongodb://localhost:27017",
        port: int | None = None,
        document_class: type | None = None,
        tz_aware: bool | None = None,
        connect: bool | None = None,
        type_registry: Any = None,
        *,
        event_listeners: Sequence[object] = (),
        log_settings: LogSettings | None = None,
        server_api: ServerApi | None = None,
        dns_resolver: Resolver | None = None,
        pymongo_types: bool | None = None,
        **options: Any,
    ) -> None:
        adopt_pymongo_errors()  # PyMongo may have been imported after our client module
        bridge_pymongo_gridfs()  # PyMongo's gridfs.GridFS(db) given our database
        if not isinstance(host, str):
            raise ConfigurationError(f"host must be a connection string, not {host!r}")
        adopt_type_registry(type_registry)
        if "://" not in host:
            host = f"mongodb://{host}" + (f":{port}" if port is not None else "")
        elif port is not None:
            raise ConfigurationError("port cannot be given with a connection string")
        codec = _split_codec_keywords(options)
        codec.update(document_class=document_class, tz_aware=tz_aware)
        pymongo_codec = adopt_codec_keywords(codec)  # (PyMongo's document classes: see there)
        # the SRV polling floor: a keyword only (the spec keeps it out of connection strings)
        rescan_ms = options.pop("rescanSRVIntervalMS", None)
        parsed = parse_client_uri(host, options, stacklevel=2)
        uri, srv_source = _resolve(parsed, dns_resolver, rescan_ms)
        emit_uri_warnings(uri.warnings[len(parsed.warnings) :], stacklevel=2)
        # the connection string may name the UUID representation; a keyword wins over it
        in_uri = {"uuidRepresentation": uri.options.get("uuidRepresentation")}
        self._codec_options, self._pymongo_types = client_codec_options(
            pymongo_codec(codec_options_from_keywords({**in_uri, **codec})), pymongo_types
        )
        self._settings = ClientSettings.from_connection_string(uri, server_api=server_api)
        self._write_concern = WriteConcern.from_document(self._settings.write_concern or {})
        self._read_concern = ReadConcern.from_document(self._settings.read_concern or {})
        topology_id = ObjectId()
        metadata = client_metadata(self._settings.handshake.app_name)
        publisher = Publisher(event_listeners, log_settings=log_settings, topology_id=topology_id)
        self._engine: EngineT = self._new_engine(
            self._settings,
            dns_resolver,
            metadata=metadata,
            faas="name" in metadata.get("env", {}),
            publish=publisher.publish if publisher.active else None,
            topology_id=topology_id,
            srv=srv_source,
        )

    def _new_engine(self, settings: ClientSettings, resolver: Any, **common: Any) -> EngineT:
        """The flavour's engine for ``settings``; ``common`` are :class:`EngineBase`'s
        keywords, ``resolver`` the ``dns_resolver`` given."""
        raise NotImplementedError

    # -- settings inherited by databases ----------------------------------------------------------

    @property
    def codec_options(self) -> CodecOptions:
        return self._codec_options

    @property
    def pymongo_types(self) -> bool:
        """Whether this client's values are PyMongo's ``bson`` classes (its ``pymongo_types``
        keyword, None resolved when the client was made)."""
        return self._pymongo_types

    @property
    def plain_codec_options(self) -> CodecOptions:
        """The default codec options, decoding into PyMongo's classes when this client's
        values are PyMongo's (``pymongo_types``): what PyMongo's ``DEFAULT_CODEC_OPTIONS``
        decode (``command``, ``list_databases``...)."""
        return plain_codec_options(self._pymongo_types)

    @property
    def read_preference(self) -> ReadPreference:
        return self._settings.read_preference

    @property
    def write_concern(self) -> WriteConcern:
        return self._write_concern

    @property
    def read_concern(self) -> ReadConcern:
        return self._read_concern

    @property
    def settings(self) -> ClientSettings:
        """Everything the connection string and keywords configured."""
        return self._settings

    @property
    def engine(self) -> EngineT:
        return self._engine

    # -- databases --------------------------------------------------------------------------------

    def get_database(
        self,
        name: str | None = None,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        *,
        timeoutMS: float | None = None,  # noqa: N803 - the option's name (CSOT spec)
    ) -> DatabaseT:
        """The database ``name`` (default: the connection string's); settings not given are
        the client's (``timeoutMS``, milliseconds, bounds each of its operations)."""
        if name is None:
            name = self._settings.database
            if name is None:
                raise ConfigurationError("No default database defined")
        return self._database_class(
            self,
            name,
            codec_options,
            read_preference,
            write_concern,
            read_concern,
            timeoutMS=timeoutMS,
        )

    def get_default_database(
        self,
        default: str | None = None,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
    ) -> DatabaseT:
        """The connection string's database, else ``default``."""
        name = self._settings.database or default
        if name is None:
            raise ConfigurationError("No default database name defined or provided.")
        return self._database_class(
            self, name, codec_options, read_preference, write_concern, read_concern
        )

    def __getitem__(self, name: str) -> DatabaseT:
        return self._database_class(self, name)

    def __getattr__(self, name: str) -> DatabaseT:
        if name.startswith("_"):
            raise AttributeError(
                f"{type(self).__name__} has no attribute {name!r}. To access the {name} "
                f"database, use client[{name!r}]."
            )
        return self[name]

    # PyMongo: a client is not iterable (``for db in client`` would call __getattr__ forever)
    __iter__ = None

    def __next__(self) -> NoReturn:
        raise TypeError(f"'{type(self).__name__}' object is not iterable")

    next = __next__

    @property
    def admin(self) -> DatabaseT:
        return self["admin"]

    def _admin_commands(self) -> DatabaseT:
        """The admin database with the default settings (listDatabases decodes as PyMongo's)."""
        return self.get_database(
            "admin",
            codec_options=self.plain_codec_options,
            read_preference=PRIMARY,
            write_concern=DEFAULT_WRITE_CONCERN,
        )

    @operation
    def list_databases(
        self, /, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Program[CommandCursorT]:
        """A cursor over the ``listDatabases`` documents; ``kwargs`` are the command's fields
        (``nameOnly``, ``filter``, ``authorizedDatabases``)."""
        documents = yield Run(
            list_databases(comment=comment, **kwargs), session, None, self.codec_options
        )
        return self._command_cursor_class(
            self._admin_commands().get_collection("$cmd"),
            documents=documents,
            session=session,
            codec_options=self.plain_codec_options,
        )

    @operation
    def list_database_names(self, session: Any = None, comment: Any = None) -> Program[list[str]]:
        names: list[str] = yield Run(list_database_names(comment=comment), session)
        return names

    @operation
    def drop_database(
        self, name_or_database: Any, session: Any = None, comment: Any = None
    ) -> Program[None]:
        """Drop a database (by name or database object), with the client's write concern."""
        name = name_or_database
        if isinstance(name, DatabaseBase):
            name = name.name
        if not isinstance(name, str):
            raise TypeError(
                f"name_or_database must be an instance of str or a Database, not {type(name)}"
            )
        yield Run(self[name].ops.drop(comment=comment), session)

    @operation
    def server_info(self, session: Any = None) -> Program[dict[str, Any]]:
        """The ``buildInfo`` reply of the primary."""
        reply = yield from DatabaseBase.command.program(
            self.admin, "buildinfo", read_preference=PRIMARY, session=session
        )
        return dict(reply)

    # -- writes on any namespaces -------------------------------------------------------------------

    @operation
    def bulk_write(
        self,
        models: Sequence[WriteModel],
        session: Any = None,
        ordered: bool = True,
        verbose_results: bool = False,
        bypass_document_validation: bool | None = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        write_concern: WriteConcern | None = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
    ) -> Program[ClientBulkWriteResult]:
        """Send InsertOne/UpdateOne/UpdateMany/ReplaceOne/DeleteOne/DeleteMany ``models``,
        each naming its ``namespace`` (``"db.coll"``), as MongoDB 8.0's ``bulkWrite``
        command (:mod:`mongo_sansio.ops.client_bulk`).  ``write_concern`` overrides the
        client's; ``verbose_results`` asks for each model's result.  Failures raise
        ClientBulkWriteException; a server before 8.0 InvalidOperation."""
        ops = plan_client_bulk(adopt_write_models(models), ObjectId)
        flow = client_bulk_write(
            ops,
            ordered=ordered,
            verbose_results=verbose_results,
            bypass_document_validation=bypass_document_validation,
            comment=comment,
            let=let,
            raw_data=rawData,
            write_concern=adopt(write_concern),
            default_write_concern=self._write_concern,
            codec_options=self.codec_options,
        )
        result: ClientBulkWriteResult = yield Run(flow, session, None, self.codec_options)
        return result

    # -- change streams ----------------------------------------------------------------------------

    @operation
    def watch(
        self,
        /,
        pipeline: Sequence[Mapping[str, Any]] | None = None,
        *,
        session: Any = None,
        **options: Any,
    ) -> Program[ChangeStreamT]:
        """A change stream over every database (except admin, config and local), open."""
        stream = self._change_stream_class(
            self._engine,
            ChangeStreamTarget.whole_cluster(),
            pipeline,
            watch_options(**options),
            self._settings.read_preference,
            self._settings.read_concern,
            session=session,
            codec_options=self.codec_options,
        )
        yield from stream._opening()
        return stream

    # -- the deployment as last seen -------------------------------------------------------------

    @property
    def topology_description(self) -> TopologyDescription:
        return self._engine.core.description

    def _address(self, server: ServerDescription) -> tuple[str, int]:
        return self._engine.core.transport_address(server.address)

    def _members(self, kind: ServerType) -> Program[set[tuple[str, int]]]:
        yield from ()
        description = self.topology_description
        if description.type not in _REPLICA_SET_TYPES:
            return set()
        return {self._address(s) for s in description.servers.values() if s.type is kind}

    @property
    def nodes(self) -> frozenset[tuple[str, int]]:
        """The servers the client currently knows (empty before discovery)."""
        return frozenset(
            self._address(server)
            for server in self.topology_description.servers.values()
            if server.type is not ServerType.UNKNOWN
        )

    @driven_property
    def primary(self) -> Program[tuple[str, int] | None]:
        """The replica set's primary as last seen (None before discovery, without one, or
        when the deployment is not a replica set)."""
        yield from ()
        description = self.topology_description
        if description.type is not TopologyType.REPLICA_SET_WITH_PRIMARY:
            return None
        for server in description.servers.values():
            if server.type is ServerType.RS_PRIMARY:
                return self._address(server)
        return None

    @driven_property
    def secondaries(self) -> Program[set[tuple[str, int]]]:
        """The replica set's secondaries as last seen."""
        return (yield from self._members(ServerType.RS_SECONDARY))

    @driven_property
    def arbiters(self) -> Program[set[tuple[str, int]]]:
        """The replica set's arbiters as last seen."""
        return (yield from self._members(ServerType.RS_ARBITER))

    def _writable_server(self) -> Program[tuple[ServerInfo, ServerDescription | None]]:
        """Select a writable server (waiting for discovery, up to serverSelectionTimeoutMS)."""
        server: ServerInfo = yield Run(crud.select_server(for_writes=True))
        sdam_address = self._engine.core.sdam_address(server.address)
        return server, self.topology_description.servers.get(sdam_address)

    @driven_property
    def address(self) -> Program[tuple[str, int] | None]:
        """The standalone, primary or mongos that writes go to (waits for discovery).
        InvalidOperation when the client balances among several mongoses (see :attr:`nodes`)."""
        description = self.topology_description
        if description.type is TopologyType.SHARDED and len(description.servers) > 1:
            raise InvalidOperation(
                'Cannot use "address" property when load balancing among mongoses, use '
                '"nodes" instead.'
            )
        server, _ = yield from self._writable_server()
        return server.address

    @driven_property
    def is_primary(self) -> Program[bool]:
        """Whether the server writes go to accepts writes (waits for discovery)."""
        server, _ = yield from self._writable_server()
        return server.is_writable

    @driven_property
    def is_mongos(self) -> Program[bool]:
        """Whether the client is connected to mongos (waits for discovery)."""
        _, description = yield from self._writable_server()
        return description is not None and description.type is ServerType.MONGOS

    # -- running -----------------------------------------------------------------------------------

    @operation
    def run(self, flow: Flow[T], *, session: Any = None) -> Program[T]:
        """Run a flow of the core (an operation written against :mod:`mongo_sansio.flow`), in
        ``session`` (None: an implicit one)."""
        result: T = yield Run(flow, session, None, self.codec_options)
        return result

    # -- sessions ----------------------------------------------------------------------------------

    def start_session(
        self,
        causal_consistency: bool | None = None,
        default_transaction_options: TransactionOptions | None = None,
        snapshot: bool | None = False,
        snapshot_time: Timestamp | None = None,
    ) -> SessionT:
        """A new explicit session (PyMongo's ``start_session``): pass it as ``session=``; a
        context manager (``with`` / ``async with``) ends it on the way out.  ``snapshot_time``
        (the snapshot sessions spec's ``snapshotTime``): the snapshot a snapshot session
        reads at, instead of the one its first read is given."""
        return self._session_class(
            self,
            self._engine.new_session(
                causal_consistency=causal_consistency,
                default_transaction_options=adopt(default_transaction_options),
                snapshot=bool(snapshot),
                snapshot_time=snapshot_time,
            ),
        )

    def default_transaction_options(self) -> TransactionOptions:
        """The client's read concern, write concern and read preference, the last defaults of
        a transaction's options."""
        settings = self._settings
        return TransactionOptions(
            read_concern=settings.read_concern or None,
            write_concern=settings.write_concern or None,
            read_preference=settings.read_preference,
        )

    def __repr__(self) -> str:
        seeds = ", ".join(f"{h}:{p}" for h, p in self._settings.seeds.addresses)
        return f"{type(self).__name__}([{seeds}], topology={self.topology_description.type.value})"

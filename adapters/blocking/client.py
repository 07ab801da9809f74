"""The blocking ``MongoClient`` and ``Database``: PyMongo-shaped entry points over the core.

``MongoClient(uri, **options)`` parses the connection string (keyword options, with PyMongo's
names, override the string's), resolves a ``mongodb+srv`` string through DNS
(:mod:`mongo_sansio.transports.dns` answering :mod:`mongo_sansio.uri.seedlist`'s questions), and
builds the :class:`~._engine.Engine` that runs every operation's flow.  Nothing connects until
the first operation: server selection then discovers the deployment.

Errors: server errors are :class:`~mongo_sansio.errors.ServerError` subclasses, network faults
:class:`~mongo_sansio.errors.NetworkError`, a deployment that offers no suitable server
:class:`~mongo_sansio.selection.ServerSelectionTimeoutError`, a bad option
:class:`~mongo_sansio.errors.ConfigurationError` -- never a raw socket or TLS error.

Thread safety: a client may be shared by threads; one lock guards its topology and connection
sets, and each operation runs on a connection of its own.  Cursors and change streams belong to
one thread at a time.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mongo_sansio.bson import ObjectId
from mongo_sansio.client import ClientSettings
from mongo_sansio.connection import ServerApi
from mongo_sansio.cursors import ChangeStreamTarget
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.flow import Flow
from mongo_sansio.ops.database import DatabaseOps, list_database_names
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.sdam.description import ServerType
from mongo_sansio.sdam.topology import TopologyDescription
from mongo_sansio.selection import ReadPreference
from mongo_sansio.uri import ConnectionString, apply_seedlist, discovery_for

from .._publish import LogSettings, Publisher
from .._uri import emit_uri_warnings, parse_client_uri
from ..environment import client_metadata
from ._closing import ClosesOnExit
from ._engine import Engine
from .change_stream import ChangeStream, watch_options
from .collection import Collection
from .cursor import Cursor

if TYPE_CHECKING:
    from transports.dns import BlockingResolver, Resolver, resolve_seedlist
else:
    from mongo_sansio.transports.dns import BlockingResolver, Resolver, resolve_seedlist

__all__ = ["MongoClient", "Database"]

T = TypeVar("T")


def _resolve(uri: ConnectionString, resolver: Resolver | None) -> ConnectionString:
    """A ``mongodb+srv`` string with its SRV and TXT records applied (others unchanged)."""
    if not uri.needs_seedlist:
        return uri
    discovery = discovery_for(uri, randbelow=random.SystemRandom().randrange)
    if resolver is None:
        resolver = BlockingResolver()
    return apply_seedlist(uri, resolve_seedlist(discovery, resolver))


class MongoClient(ClosesOnExit):
    """A client for one deployment (see the module docstring).

    ``host`` is a ``mongodb://`` or ``mongodb+srv://`` connection string, or a bare host name
    (with ``port``).  ``options`` are URI options by their PyMongo names (``username``,
    ``password``, ``authSource``, ``authMechanism``, ``tls``, ``tlsCAFile``, ``appname``,
    ``compressors``, ``serverSelectionTimeoutMS``, ``connectTimeoutMS``, ``socketTimeoutMS``,
    ``directConnection``, ``replicaSet``, ``readPreference``, ``w`` ...), any case.
    ``event_listeners`` are listeners of :mod:`mongo_sansio.monitoring` (command, server,
    heartbeat, topology and pool events, dispatched by base class as PyMongo does; anything
    else is a TypeError); ``log_settings`` overrides the ``MONGODB_LOG_*`` variables; ``server_api`` declares a Stable
    API version; ``dns_resolver`` answers a ``mongodb+srv`` string's DNS questions (default:
    the system's name servers through dnspython).
    """

    def __init__(
        self,
        host: str = "mongodb://localhost:27017",
        port: int | None = None,
        *,
        event_listeners: Sequence[object] = (),
        log_settings: LogSettings | None = None,
        server_api: ServerApi | None = None,
        dns_resolver: Resolver | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(host, str):
            raise ConfigurationError(f"host must be a connection string, not {host!r}")
        if "://" not in host:
            host = f"mongodb://{host}" + (f":{port}" if port is not None else "")
        elif port is not None:
            raise ConfigurationError("port cannot be given with a connection string")
        parsed = parse_client_uri(host, options, stacklevel=2)
        uri = _resolve(parsed, dns_resolver)
        emit_uri_warnings(uri.warnings[len(parsed.warnings) :], stacklevel=2)
        self._settings = ClientSettings.from_connection_string(uri, server_api=server_api)
        topology_id = ObjectId()
        metadata = client_metadata(self._settings.handshake.app_name)
        publisher = Publisher(event_listeners, log_settings=log_settings, topology_id=topology_id)
        self._engine = Engine(
            self._settings,
            metadata=metadata,
            faas="name" in metadata.get("env", {}),
            publish=publisher.publish if publisher.active else None,
            topology_id=topology_id,
        )

    # -- databases --------------------------------------------------------------------------------

    def get_database(
        self, name: str | None = None, *, read_preference: ReadPreference | None = None
    ) -> Database:
        """The database ``name`` (default: the connection string's database)."""
        if name is None:
            name = self._settings.database
            if name is None:
                raise ConfigurationError("no database name given and none in the connection string")
        return Database(self, name, read_preference=read_preference)

    def get_default_database(self) -> Database:
        return self.get_database()

    def __getitem__(self, name: str) -> Database:
        return self.get_database(name)

    def __getattr__(self, name: str) -> Database:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get_database(name)

    @property
    def admin(self) -> Database:
        return self.get_database("admin")

    def list_database_names(self, **options: Any) -> list[str]:
        return self.run(list_database_names(**options))

    def drop_database(self, name: str, **options: Any) -> None:
        self.get_database(name).drop(**options)

    # -- change streams ----------------------------------------------------------------------------

    def watch(
        self, pipeline: Sequence[Mapping[str, Any]] | None = None, **options: Any
    ) -> ChangeStream:
        """A change stream over every database (except admin, config and local)."""
        return ChangeStream(
            self._engine,
            ChangeStreamTarget.whole_cluster(),
            pipeline,
            watch_options(**options),
            self._settings.read_preference,
            self._settings.read_concern,
        )

    # -- state -------------------------------------------------------------------------------------

    @property
    def topology_description(self) -> TopologyDescription:
        return self._engine.core.description

    @property
    def primary(self) -> tuple[str, int] | None:
        """The primary's address as last seen (None before discovery or without one)."""
        for server in self.topology_description.servers.values():
            if server.type is ServerType.RS_PRIMARY:
                return self._engine.core.transport_address(server.address)
        return None

    @property
    def read_preference(self) -> ReadPreference:
        return self._settings.read_preference

    @property
    def settings(self) -> ClientSettings:
        return self._settings

    @property
    def engine(self) -> Engine:
        return self._engine

    def run(self, flow: Flow[T]) -> T:
        """Run a flow of the core (an operation written against :mod:`mongo_sansio.flow`)."""
        return self._engine.run(flow)

    def close(self) -> None:
        """Close every idle connection; the client refuses operations afterwards."""
        self._engine.close()

    def __repr__(self) -> str:
        seeds = ", ".join(f"{h}:{p}" for h, p in self._settings.seeds.addresses)
        return f"MongoClient([{seeds}], topology={self.topology_description.type.value})"


class Database:
    """One database of a client: ``db[name]`` / ``db.name`` / :meth:`get_collection`,
    :meth:`command`, :meth:`watch`; methods run :class:`~mongo_sansio.ops.database.DatabaseOps`
    flows."""

    def __init__(
        self, client: MongoClient, name: str, *, read_preference: ReadPreference | None = None
    ) -> None:
        self.client = client
        self.name = name
        settings = client.settings
        self.ops = DatabaseOps(
            name,
            read_preference=read_preference or settings.read_preference,
            read_concern=ReadConcern.from_document(settings.read_concern or {}),
            write_concern=WriteConcern.from_document(settings.write_concern or {}),
        )

    @property
    def read_preference(self) -> ReadPreference:
        return self.ops.read_preference

    def get_collection(
        self, name: str, *, read_preference: ReadPreference | None = None
    ) -> Collection:
        return Collection(self, name, read_preference=read_preference)

    def __getitem__(self, name: str) -> Collection:
        return self.get_collection(name)

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get_collection(name)

    def command(
        self,
        command: str | Mapping[str, Any],
        value: Any = 1,
        *,
        read_preference: ReadPreference | None = None,
        **kwargs: Any,
    ) -> Mapping[str, Any]:
        """Run a command and return its reply (``ok: 0`` raises the typed ServerError).

        ``command`` is a name (its value ``value``, more fields in ``kwargs``) or a whole
        document.  Commands run on the primary unless ``read_preference`` says otherwise.
        """
        return self.client.run(
            self.ops.command(command, value, read_preference=read_preference, **kwargs)
        )

    def aggregate(self, pipeline: list[Mapping[str, Any]], **options: Any) -> Cursor:
        """A database aggregate (``aggregate: 1``)."""
        return Cursor(
            self.client.engine, opened=self.client.run(self.ops.aggregate(pipeline, **options))
        )

    def watch(
        self, pipeline: Sequence[Mapping[str, Any]] | None = None, **options: Any
    ) -> ChangeStream:
        """A change stream over every collection of this database."""
        return ChangeStream(
            self.client.engine,
            ChangeStreamTarget.database(self.name),
            pipeline,
            watch_options(**options),
            self.read_preference,
            self.ops.read_concern.to_document() or None,
        )

    def list_collection_names(self, **options: Any) -> list[str]:
        return self.client.run(self.ops.list_collection_names(**options))

    def create_collection(self, name: str, **options: Any) -> Collection:
        self.client.run(self.ops.create_collection(name, **options))
        return self.get_collection(name)

    def drop_collection(self, name: str, **options: Any) -> None:
        self.client.run(self.ops.drop_collection(name, **options))

    def drop(self, **options: Any) -> None:
        self.client.run(self.ops.drop(**options))

    def __repr__(self) -> str:
        return f"Database({self.name!r})"

"""The simulated replica set's server side: a pure machine, bytes and ``now`` in, bytes out.

Nothing here opens a socket, reads a clock or draws random numbers: the loopback server in
``transports/`` feeds bytes and times in and writes out what comes back.

Construction (the interface the socket server codes against)::

    from mongo_sansio.testing.server import ReplicaSet
    from mongo_sansio.transports.sim_auth import ScramAuthenticator   # only with --auth

    cluster = ReplicaSet(
        ["127.0.0.1:27017", "127.0.0.1:27018", "127.0.0.1:27019"],  # member addresses;
                                                 # the first is the initial primary
        set_name="rs0",                          # replSetName
        seed=0,                                  # makes ObjectIds, processIds, nonces
        wall_offset=time.time() - time.monotonic(),  # wall-clock seconds = now + wall_offset
        max_wire_version=21,                     # 21 answers as mongod 7.0, 25 as 8.0
        authenticator=ScramAuthenticator({"user": "password"}),  # None: no auth required
        now=time.monotonic(),                    # the start time (first oplog entry, elections)
    )
    conn = cluster.connect("127.0.0.1:27017", now)   # one per accepted client connection
    conn.receive_data(data, now)                     # bytes in any chunking; never raises
    out = conn.data_to_send()                        # bytes to write now (maybe b"")
    conn.should_close, conn.close_reason             # after bad input, a failpoint, stop()...
    conn.next_deadline()                             # float | None: call handle_timeout(now)
    conn.handle_timeout(now)                         # at or after that time
    conn.receive_eof()                               # the client closed its side

Fault controls on the cluster: ``cluster.step_down(now, successor=None)`` (the next running
member is elected unless ``successor`` names one), ``cluster.elect(address, now)``,
``cluster.stop(address, now)``, ``cluster.restart(address, now)``, ``cluster.set_lag(address,
seconds)``; replication faults (:mod:`.replication`): ``cluster.isolate(address, now)`` /
``cluster.reconnect(address, now)`` (a member partition; elections follow from ``tick`` after
``cluster.replication.election_timeout``), ``cluster.jump_clock(address, seconds)``,
``cluster.truncate_oplog(ts)``, ``cluster.limit_oplog(entries)``; what was rolled back is in
``cluster.replication.rollbacks``.  They raise :class:`~mongo_sansio.errors.LocalProtocolError` for an unknown
address (or electing a stopped member, or electing while a majority is stopped).  A stop that
leaves fewer than a majority running makes the primary step down; the restart that makes a
majority again elects one.  The cluster is not thread-safe: a threaded server
holds one lock around every call into it and into its connections.  The cluster state a test
may read: ``cluster.primary`` (address or None),
``cluster.term``, ``cluster.election_id``, ``cluster.oplog`` (see :mod:`.oplog` for the entry
shape), ``cluster.databases`` (name -> {collection name -> engine Collection}).  After a fault
control -- or a command on one connection that wakes another (a write waking an awaitData
getMore, a stepdown answering awaiting hellos) -- other connections may have output or be
closed without a call of their own.  Set ``conn.on_ready = callback`` (a no-argument callable,
called with the cluster lock held, after output is queued or the connection is closed) to
wake the thread or task that writes for that connection; it then calls ``data_to_send()`` and
checks ``should_close``.  Without a callback, poll ``data_to_send()`` now and then.

Modules: :mod:`.replset` (cluster state, members, elections), :mod:`.oplog` (the shared oplog),
:mod:`.connection` (:class:`ServerConnection`, one client connection), :mod:`.dispatch` (the
command pipeline: auth, primary checks, failpoints, $clusterTime), :mod:`.handshake` (hello),
:mod:`.auth` (the SASL side the pure code sees), :mod:`.context` (what handlers get and return),
:mod:`.commands_hello` (hello and SASL), :mod:`.commands_crud`, :mod:`.commands_bulk`
(8.0's bulkWrite), :mod:`.commands_admin`,
:mod:`.cursors`, :mod:`.sessions`, :mod:`.failpoints`, :mod:`.changestreams` ($changeStream
cursors), :mod:`.coll_mod` (collMod: validation, index options, pre- and post-images),
:mod:`.resume_tokens`, :mod:`.update_descriptions` (an update event's
``updateDescription``).
"""

from __future__ import annotations

from mongo_sansio.testing.server.auth import Authenticator, SaslConversation, SaslFailure
from mongo_sansio.testing.server.connection import ServerConnection
from mongo_sansio.testing.server.dispatch import COMMANDS
from mongo_sansio.testing.server.oplog import Oplog, OplogEntry
from mongo_sansio.testing.server.replset import PRIMARY, SECONDARY, STOPPED, Member, ReplicaSet

__all__ = [
    "Authenticator",
    "COMMANDS",
    "Member",
    "Oplog",
    "OplogEntry",
    "PRIMARY",
    "ReplicaSet",
    "SECONDARY",
    "STOPPED",
    "SaslConversation",
    "SaslFailure",
    "ServerConnection",
]

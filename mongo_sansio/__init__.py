"""mongo-sansio: a MongoDB client core written as pure state machines.

The core (this package, minus :mod:`mongo_sansio.transports` and
:mod:`mongo_sansio.adapters`) does no I/O and keeps no time: bytes, documents, replies and
``now`` go in; bytes, commands, events and actions come out.
"""

__version__ = "0.1.0"

"""What every client shares, whatever its runtime: PyMongo's API written once.

The classes here (:class:`~.client.ClientBase`, :class:`~.database.DatabaseBase`,
:class:`~.collection.CollectionBase`, the cursor bases, :class:`~.change_stream.ChangeStreamBase`,
:class:`~.session.ClientSessionBase`) hold every method's body, written as a *program*
(:mod:`.program`) that yields "run this flow of the core" steps.  The blocking client
(:mod:`mongo_sansio.adapters.blocking`, and gevent through it) runs those steps and returns the
results; the async wrappers (:mod:`mongo_sansio.adapters._async_api`, for asyncio and trio)
await them.  Each flavour adds only what must differ: iteration, context managers,
``with_transaction``'s callback, its engine and closing.  :mod:`.names` lists the values every
client module exports.
"""

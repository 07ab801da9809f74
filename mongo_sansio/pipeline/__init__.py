"""Pure decisions behind the Spark data source (:mod:`mongo_sansio.adapters.spark`).

Nothing here talks to a server, Spark or Arrow; the adapter feeds in documents, tokens and
options and carries out what comes back.

* :mod:`.jsontext` -- relaxed Extended JSON text of decoded documents through ``json``'s C
  encoder when every value allows it (the stream's document columns).
* :mod:`.chunks` -- chunk-range partitions of a sharded collection (``partitioner``
  ``shardChunks``), one filter per ``config.chunks`` range.
* :mod:`.hashing` -- mongod's hashed-index key of a value (``$toHashedIndexKey``) and the
  ``keyPartitions`` assignment built on it.
* :mod:`.offsets` -- stream offsets made of resume tokens, ``startAt`` parsing, and the rules
  a reader follows between a start and an end token.
* :mod:`.partitions` -- ``_id`` ranges for a partitioned batch read, with no gaps or overlaps.
* :mod:`.schema` -- schema inference from sampled documents, the widening rules, and the
  conversion of BSON values to the inferred column types.
"""

"""Byte streams and name resolution, one small module per runtime (installed as
``mongo_sansio.transports``).  Protocol decisions never live here."""

"""Connection strings: parsing, URI options, credentials (and, beside them, the SRV seedlist).

``parse_uri(text, warn=..., **options)`` turns a ``mongodb://`` or ``mongodb+srv://`` string
into a validated, immutable :class:`ConnectionString`; ``parse_options(text, origin="txt")``
validates a TXT record's options for :meth:`ConnectionString.with_seedlist`.
"""

from mongo_sansio.uri.connection_string import DEFAULT_PORT, ConnectionString, Host
from mongo_sansio.uri.credential import Credential
from mongo_sansio.uri.options import UriOptions, parse_options
from mongo_sansio.uri.parser import parse_uri
from mongo_sansio.uri.seedlist import (
    DnsAnswer,
    DnsFailure,
    DnsFailureKind,
    DnsQuestion,
    Seedlist,
    SeedlistDiscovery,
    SeedlistError,
    SrvAnswer,
    SrvRecord,
    TxtAnswer,
    apply_seedlist,
    discovery_for,
)
from mongo_sansio.uri.srv_polling import SrvPoller, SrvPollResult

__all__ = [
    "DEFAULT_PORT",
    "ConnectionString",
    "Credential",
    "Host",
    "UriOptions",
    "parse_options",
    "parse_uri",
    # the SRV seedlist and polling machines
    "DnsAnswer",
    "DnsFailure",
    "DnsFailureKind",
    "DnsQuestion",
    "Seedlist",
    "SeedlistDiscovery",
    "SeedlistError",
    "SrvAnswer",
    "SrvPollResult",
    "SrvPoller",
    "SrvRecord",
    "TxtAnswer",
    "apply_seedlist",
    "discovery_for",
]

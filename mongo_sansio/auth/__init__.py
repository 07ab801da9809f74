"""Authentication: SASLprep, the SCRAM client, and the conversation a new connection runs.

* :func:`saslprep` -- RFC 4013 string preparation (:mod:`mongo_sansio.auth.saslprep`);
* :class:`ScramClient`, :class:`ScramCache` -- RFC 5802 / RFC 7677 client side with MongoDB's
  rules, bytes in and out (:mod:`mongo_sansio.auth.scram`);
* :class:`Authenticator` -- the MongoDB conversation (negotiation, speculative authentication,
  SCRAM, PLAIN, MONGODB-X509) as a flow of
  :class:`~mongo_sansio.flow.ConnectionCommand` requests (:mod:`mongo_sansio.auth.mechanisms`).

Nothing here draws randomness: the adapter passes the nonce bytes in.
"""

from mongo_sansio.auth.mechanisms import SUPPORTED_MECHANISMS, Authenticator
from mongo_sansio.auth.saslprep import SASLprepError, saslprep
from mongo_sansio.auth.scram import (
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramCache,
    ScramClient,
    ScramKeys,
    ScramMechanism,
    mongodb_password_digest,
)

__all__ = [
    "Authenticator",
    "MIN_ITERATIONS",
    "SASLprepError",
    "SCRAM_MECHANISMS",
    "SUPPORTED_MECHANISMS",
    "ScramCache",
    "ScramClient",
    "ScramKeys",
    "ScramMechanism",
    "mongodb_password_digest",
    "saslprep",
]

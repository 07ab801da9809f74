"""Which authenticator a new connection gets, and the caches a client's connections share.

Input: the client's credential (or None), the nonce source, and the adapter's snapshot of the
AWS_* environment.  Output: one authenticator per new connection (SCRAM, PLAIN or X.509 via
:class:`~mongo_sansio.auth.Authenticator`, MONGODB-AWS via
:class:`~mongo_sansio.auth.aws_credentials.AwsAuthenticator`, MONGODB-OIDC via
:class:`~mongo_sansio.auth.oidc.OidcAuthenticator`), each given the cache its mechanism keeps
for the whole client (SCRAM's salted keys, AWS's temporary credentials, OIDC's tokens).

An unsupported mechanism is refused when the client is built, not at its first connection.
"""

from __future__ import annotations

from collections.abc import Callable

from mongo_sansio.auth import Authenticator, ScramCache
from mongo_sansio.auth.aws_credentials import AwsAuthenticator, AwsCredentialCache, AwsEnvironment
from mongo_sansio.auth.oidc import MECHANISM as OIDC
from mongo_sansio.auth.oidc import OidcAuthenticator, OidcCache
from mongo_sansio.uri.credential import Credential

__all__ = ["AnyAuthenticator", "ClientAuthenticators"]

AnyAuthenticator = Authenticator | AwsAuthenticator | OidcAuthenticator


class ClientAuthenticators:
    """A client's credential and the per-mechanism caches its connections share."""

    def __init__(
        self,
        credential: Credential | None,
        *,
        nonce: Callable[[], bytes],
        aws_environment: Callable[[], AwsEnvironment] | None = None,
    ) -> None:
        self.credential = credential
        self._nonce = nonce
        self._scram_cache = ScramCache()
        #: MONGODB-OIDC's client cache (its tokens), shared by every connection
        self.oidc_cache = OidcCache()
        # MONGODB-AWS: the adapter's snapshot of the AWS_* variables and the wall clock, and
        # the temporary credentials this client fetched
        self._aws_environment = aws_environment
        self._aws_cache = AwsCredentialCache()
        if credential is not None and credential.mechanism != OIDC:
            self.for_connection()  # refuses an unsupported mechanism now

    def for_connection(
        self, *, host: str = "", timeout: float | None = None
    ) -> AnyAuthenticator | None:
        """A new connection's authenticator (None without a credential); ``host`` and
        ``timeout`` are the server's name and the connect timeout, which MONGODB-OIDC uses."""
        credential = self.credential
        if credential is None:
            return None
        if credential.mechanism == OIDC:
            return OidcAuthenticator(credential, self.oidc_cache, host=host, timeout=timeout)
        if credential.mechanism == "MONGODB-AWS":
            return AwsAuthenticator(
                credential,
                random_bytes=self._nonce,
                environment=self._aws_environment,
                cache=self._aws_cache,
            )
        return Authenticator(credential, nonce=self._nonce(), cache=self._scram_cache)

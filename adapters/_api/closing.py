"""``with`` and ``async with`` for the clients' closable objects (clients, cursors, change
streams): the block binds the object itself and closes it on the way out, whether or not the
block raised (the exception, if any, propagates).  The blocking flavour calls ``close()``, the
async one awaits it."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol, Self

__all__ = ["AsyncClosesOnExit", "ClosesOnExit"]


class _Closes(Protocol):
    def close(self) -> Any: ...


class ClosesOnExit:
    """Mixin: ``with obj:`` gives ``obj``, then calls ``obj.close()``."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self: _Closes, *exc_info: object) -> None:
        self.close()


class _ClosesAsync(Protocol):
    def close(self) -> Awaitable[Any]: ...


class AsyncClosesOnExit:
    """Mixin: ``async with obj:`` gives ``obj``, then awaits ``obj.close()``."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self: _ClosesAsync, *exc_info: object) -> None:
        await self.close()

"""``with`` support shared by the blocking client's closable objects.

:class:`ClosesOnExit` gives a class with a ``close()`` method the context-manager protocol:
``with obj:`` binds ``obj`` itself and closes it on the way out, whether or not the block
raised (the exception, if any, propagates).
"""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self


class ClosesOnExit(abc.ABC):
    """Mixin: ``__enter__`` returns ``self``; ``__exit__`` calls :meth:`close`."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release what the object holds."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

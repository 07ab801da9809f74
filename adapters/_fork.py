"""Fork safety, decided once for every runtime: what a client does in a process forked from
the one that built it.

A child made by ``os.fork()`` inherits the parent's memory: the client core with its pools,
whose streams are sockets the kernel now shares between both processes, its sessions and
cursors, and -- under gevent -- the parent's greenlets, still scheduled.  Whatever the child
writes on an inherited socket interleaves with the parent's bytes, whatever it reads is stolen
from the parent, and a ``shutdown`` ends the connection for both.  So the rule is: the child
never touches what it inherited, and builds its own.

* At the fork, in the child (``os.register_at_fork``; the child has one thread then, and a lock
  may still be held by a parent's thread that no longer exists, so nothing is locked and no
  listener called): every object registered with :func:`watch` hears
  ``after_fork_in_child()``.  Runtimes with tasks that survive a fork (gevent's greenlets)
  register themselves, forget their streams and stop their tasks there.
* At the first use in the child (:class:`~._engine_base.EngineBase` compares the process id
  the core was built in with the current one, which costs one system call): the inherited
  core is closed as the child's view only -- its streams forgotten through
  :func:`forget_stream` (the file descriptor closed, nothing sent: no shutdown, no TLS
  goodbye, no ``endSessions`` or ``killCursors``, since the sessions and cursors are the
  parent's), its events not published (:func:`in_process`) -- and a new runtime and core are
  built: monitors and pools start again from the seeds.  Sessions and cursors made before the
  fork are refused in the child, and dropping them there sends nothing.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
import weakref
from collections.abc import Callable
from typing import Any, ParamSpec, Protocol

__all__ = [
    "ForkAware",
    "watch",
    "forget_stream",
    "ignore",
    "in_process",
    "never_start",
    "renewal_lock",
]

P = ParamSpec("P")


class ForkAware(Protocol):
    def after_fork_in_child(self) -> None: ...


_watched: weakref.WeakSet[Any] = weakref.WeakSet()
_renewal_lock = threading.Lock()


def watch(obj: ForkAware) -> None:
    """Call ``obj.after_fork_in_child()`` in every child forked while ``obj`` lives."""
    _watched.add(obj)


def renewal_lock() -> threading.Lock:
    """The lock under which an engine replaces its inherited core (one thread does it); a new
    one in every child, since a thread of the parent may have held it at the fork."""
    return _renewal_lock


def forget_stream(stream: Any) -> None:
    """Drop an inherited stream without a word on the wire (see the module docstring).  A
    stream type without ``forget`` is left to the garbage collector, which closes the file
    descriptor and nothing more."""
    forget = getattr(stream, "forget", None)
    if forget is not None:
        forget()


def in_process(
    pid: int, action: Callable[P, None], elsewhere: Callable[P, None]
) -> Callable[P, None]:
    """``action`` in process ``pid``, ``elsewhere`` in any process forked from it."""

    def dispatch(*args: P.args, **kwargs: P.kwargs) -> None:
        if os.getpid() == pid:
            action(*args, **kwargs)
        else:
            elsewhere(*args, **kwargs)

    return dispatch


def ignore(_: object) -> None:
    """What an inherited core's events become in a child: nobody there asked for them."""


def never_start(task: Any, name: str) -> None:
    """What an inherited core's new background tasks become in a child: closed unstarted."""
    task.close()


def _after_fork_in_child() -> None:
    global _renewal_lock
    _renewal_lock = threading.Lock()
    for obj in list(_watched):
        try:
            obj.after_fork_in_child()
        except Exception:  # noqa: BLE001 - the fork itself must not fail; the bug must be seen
            print("mongo-sansio: after fork:", file=sys.stderr)
            traceback.print_exc()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)

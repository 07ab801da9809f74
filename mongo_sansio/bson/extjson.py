"""Extended JSON (being written)."""

from __future__ import annotations

from typing import Any


def dumps(obj: Any, mode: str = "relaxed") -> str:
    raise NotImplementedError


def loads(text: str) -> Any:
    raise NotImplementedError

"""Plug-ins by name: one registry type for retriever families, judges, LLM backends and datasets.

Each kind of plug-in has one :class:`Registry`, declared where its package starts together with the modules that
fill it; each plug-in registers itself with :meth:`Registry.register` beside its code. The modules are imported on
the first lookup, so naming a plug-in costs only its own imports (retriever families pull in torch, judges the
LLM stack), and an unknown name gets one error that lists the known ones.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from typing import Generic, TypeVar

from bridge.core.errors import BridgeError

T = TypeVar("T")
log = logging.getLogger(__name__)


class Registry(Generic[T]):
    """Named entries of one kind of plug-in, in registration order."""

    def __init__(self, kind: str, modules: Sequence[str] = (), entry_points: str | None = None) -> None:
        self.kind = kind
        """What an entry is, for errors: "judge", "LLM backend", "retriever family", "dataset"."""
        self.modules = tuple(modules)
        """The modules whose import registers the entries (imported on the first lookup)."""
        self.entry_points = entry_points
        """An entry point group whose modules register more entries (another package's plug-ins), loaded after
        ``modules``: PyTerrier's way of finding extensions."""
        self._entries: dict[str, T] = {}
        self._loaded = not self.modules and entry_points is None

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name`` (a name is taken once: see :meth:`add`)."""

        def add(entry: T) -> T:
            self.add(name, entry)
            return entry

        return add

    def add(self, name: str, entry: T) -> None:
        """Register ``entry`` under ``name``; a second, different entry under a taken name is refused, so that a
        plug-in cannot silently replace another (registering the same entry again is harmless)."""
        if name in self._entries and self._entries[name] is not entry and self._entries[name] != entry:
            raise BridgeError(f"{self.kind} {name!r} is registered twice (a name can be taken once)")
        self._entries[name] = entry

    def remove(self, name: str) -> None:
        """Unregister ``name`` (an entry registered for a while only: a test's own plug-in)."""
        self._load().pop(name, None)

    def _load(self) -> dict[str, T]:
        if not self._loaded:
            self._loaded = True
            for module in self.modules:
                importlib.import_module(module)
            if self.entry_points is not None:
                for point in metadata.entry_points(group=self.entry_points):
                    try:
                        point.load()
                    except Exception as exc:  # another package's plug-in: a broken one costs its entries only
                        log.warning("%s plug-in %s (%s) was not loaded: %s", self.kind, point.name, point.value, exc)
        return self._entries

    def __getitem__(self, name: str) -> T:
        entries = self._load()
        if name not in entries:
            raise BridgeError(f"unknown {self.kind} {name!r}; choose from {', '.join(sorted(entries))}")
        return entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._load()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._load()))

    def __len__(self) -> int:
        return len(self._load())

    def names(self) -> tuple[str, ...]:
        return tuple(self._load())

    def values(self) -> list[T]:
        return list(self._load().values())

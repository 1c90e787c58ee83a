"""The one way rag-eval is extended: a named registry of things of one kind (judges, retriever kinds,
answer sources, system kinds), filled by ``REGISTRY.register(thing)`` (also a class decorator) and by
the entry points of installed plug-ins (group ``rag_eval.<kind>s``, read on the first lookup).

A registry is a mapping from a name to its thing, so ``name in JUDGES`` and ``JUDGES[name]`` read
as before; the name of a thing comes from the thing itself (a judge's ``name``, a retriever kind's
``type`` tag, a source's ``kind``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, MutableMapping
from importlib import metadata
from types import ModuleType
from typing import Generic, TypeVar

from rag_eval.errors import did_you_mean

T = TypeVar("T")


class PluginError(ValueError):
    """An installed plug-in's entry point that does not load or does not give what its group holds."""


class Registry(MutableMapping[str, T], Generic[T]):
    """The things of one kind by name, the shipped ones first, then those registered since.

    ``kind`` names one thing in messages ("judge"); ``name_of`` reads a thing's name; ``group`` is
    the entry-point group of installed plug-ins; ``check`` (optional) rejects a thing before it is
    added (raise ValueError); ``changed`` (optional) runs after the registry changes (a pydantic
    union rebuilt, a derived table updated)."""

    def __init__(
        self,
        kind: str,
        name_of: Callable[[T], str],
        group: str | None = None,
        check: Callable[[T], None] | None = None,
        changed: Callable[[], None] | None = None,
    ):
        self.kind = kind
        self.name_of = name_of
        self.group = group if group is not None else f"rag_eval.{kind.replace(' ', '_')}s"
        self.check = check
        self.changed = changed
        self._items: dict[str, T] = {}
        self._plugins_loaded = False

    # -- registering -------------------------------------------------------------------------------

    def register(self, thing: T) -> T:
        """Add ``thing`` under its own name and return it (so it also decorates a class); ValueError
        if the name is taken."""
        name = self.name_of(thing)
        if name in self._items:
            raise ValueError(f"a {self.kind} named '{name}' exists already")
        if self.check is not None:
            self.check(thing)
        self._items[name] = thing
        self._changed()
        return thing

    @contextlib.contextmanager
    def registered(self, *things: T) -> Iterator[None]:
        """``things`` registered for the duration of a ``with`` block (a plug-in's tests, a notebook);
        the registry as it was afterwards."""
        self.load_plugins()  # a plug-in loaded inside the block stays registered after it
        before = dict(self._items)
        try:
            for thing in things:
                self.register(thing)
            yield
        finally:
            self._items.clear()
            self._items.update(before)
            self._changed()

    def unknown(self, name: str) -> str:
        """The message for a name that is no registered thing, with the closest one."""
        return f"unknown {self.kind} '{name}'; " + did_you_mean(name, tuple(self))

    def so_far(self) -> dict[str, T]:
        """The things registered so far, without reading the plug-ins (for what is built while the
        package imports, before a plug-in could import it)."""
        return dict(self._items)

    # -- installed plug-ins --------------------------------------------------------------------------

    def load_plugins(self) -> None:
        """Register the things of the installed distributions' entry points in ``group`` (once).

        An entry point ``name = package.module:thing`` registers ``thing``; ``name = package.module``
        imports the module, which registers its things itself (``REGISTRY.register`` as a decorator).
        Either way a thing named ``name`` must be registered afterwards."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True  # set first: a plug-in's module may look things up as it loads
        for ep in sorted(metadata.entry_points(group=self.group), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist is not None else "an installed distribution"
            where = f"entry point '{ep.name} = {ep.value}' of {dist} (group {self.group})"
            try:
                thing = ep.load()
            except Exception as exc:
                raise PluginError(f"{where} does not load: {type(exc).__name__}: {exc}") from exc
            if not isinstance(thing, ModuleType) and ep.name not in self._items:
                try:
                    self.register(thing)
                except ValueError as exc:
                    raise PluginError(f"{where}: {exc}") from exc
            if ep.name not in self._items:
                raise PluginError(
                    f"{where} registers no {self.kind} named '{ep.name}'; name the entry point as the "
                    f"{self.kind} is named (registered now: {', '.join(self._items)})"
                )

    # -- the mapping -----------------------------------------------------------------------------

    def __getitem__(self, name: str) -> T:
        self.load_plugins()
        return self._items[name]

    def __setitem__(self, name: str, thing: T) -> None:
        if self.name_of(thing) != name:
            raise ValueError(f"the {self.kind} '{self.name_of(thing)}' cannot be registered as '{name}'")
        old = self._items.pop(name, None)
        try:
            self.register(thing)
        except ValueError:
            if old is not None:
                self._items[name] = old
            raise

    def __delitem__(self, name: str) -> None:
        del self._items[name]
        self._changed()

    def __iter__(self) -> Iterator[str]:
        self.load_plugins()
        return iter(list(self._items))

    def __len__(self) -> int:
        self.load_plugins()
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        self.load_plugins()
        return name in self._items

    def __repr__(self) -> str:
        return f"Registry({self.kind}: {', '.join(self._items)})"

    def _changed(self) -> None:
        if self.changed is not None:
            self.changed()

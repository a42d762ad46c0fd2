"""One small generic registry: name -> spec, filled by decorators in the modules of one
package, which are all imported on the first lookup (so adding a loss or a method is one
module, with no list to edit).  Every name table of spmlkit is one: losses
(:data:`spmlkit.losses.LOSSES`), methods (:data:`spmlkit.methods.METHODS`), datasets
(:data:`spmlkit.data.DATASETS`), backbones (:data:`spmlkit.features.BACKBONES`), heads
(:data:`spmlkit.models.heads.HEADS`) and analyses
(:data:`spmlkit.experiments.analyses.ANALYSES`); each kind has a ``register_<kind>``
decorator and a contract test (tests/test_registry.py).  A registry may pin the order it
lists its entries in (``order``): the methods' is :data:`spmlkit.methods.order.ORDER`, so
that moving a method's module reorders nothing.

>>> r = Registry("colour", package=None)
>>> r.add("red", 1, owner="a")
>>> r.lookup("red")
1
>>> r.lookup("blue")
Traceback (most recent call last):
...
spmlkit.errors.UnknownNameError: unknown colour 'blue'; expected one of: red
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Iterator

from .errors import UnknownNameError


def import_submodules(package: str, skip: tuple[str, ...] = ("base",)) -> None:
    """Import every public module of ``package`` (names not starting with ``_``)."""
    pkg = importlib.import_module(package)
    for m in pkgutil.iter_modules(pkg.__path__):
        if not m.name.startswith("_") and m.name not in skip:
            importlib.import_module(f"{package}.{m.name}")


class Registry(dict):
    """A ``dict`` of specs by name.  ``add`` refuses a second, different registration of a
    name; ``lookup`` and ``discover`` import the package's modules first.

    ``order`` pins the order the registry lists its entries in, whatever order their
    modules are imported in: the names of ``order`` first, in that order, then any other
    name in the order it was registered (a plug-in's).

    >>> r = Registry("colour", package=None, order=("red", "green"))
    >>> for name in ("blue", "green", "red"):
    ...     r.add(name, name.upper(), owner=None)
    >>> list(r)
    ['red', 'green', 'blue']
    """

    def __init__(self, kind: str, package: str | None, order: tuple[str, ...] = ()):
        super().__init__()
        self.kind = kind
        self.package = package
        self.order = tuple(order)
        self._owners: dict[str, Any] = {}
        self._discovered = package is None

    def add(self, name: str, spec: Any, *, owner: Any) -> None:
        if name in self and self._owners.get(name) is not owner:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self[name] = spec
        self._owners[name] = owner
        if self.order:
            self._keep_order()

    def _keep_order(self) -> None:
        """Re-seat the entries in the pinned order (a stable sort: unpinned names keep
        their registration order, after the pinned ones)."""
        rank = {n: i for i, n in enumerate(self.order)}
        items = sorted(self.items(), key=lambda kv: rank.get(kv[0], len(rank)))
        if [k for k, _ in items] != list(self):
            self.clear()
            self.update(items)

    def discover(self) -> "Registry":
        if not self._discovered:
            self._discovered = True
            import_submodules(self.package)
        return self

    @classmethod
    def of(cls, kind: str, specs: dict, *, package: str | None = None) -> "Registry":
        """A registry holding ``specs`` (each spec registers itself as its owner)."""
        reg = cls(kind, package)
        for name, spec in specs.items():
            reg.add(name, spec, owner=spec)
        return reg

    def remove(self, name: str) -> None:
        """Unregister ``name`` (a plug-in withdrawn, or a test cleaning up)."""
        self.pop(name, None)
        self._owners.pop(name, None)

    def lookup(self, name: str) -> Any:
        self.discover()
        try:
            return self[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self) from None

    def names(self) -> Iterator[str]:
        return iter(sorted(self.discover()))

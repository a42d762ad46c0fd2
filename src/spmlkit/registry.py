"""One small generic registry: name -> spec, filled by decorators in the modules of one
package, which are all imported on the first lookup (so adding a loss or a method is one
module, with no list to edit).  Every name table of spmlkit is one: losses
(:data:`spmlkit.losses.LOSSES`), methods (:data:`spmlkit.methods.METHODS`), datasets
(:data:`spmlkit.data.DATASETS`), backbones (:data:`spmlkit.features.BACKBONES`), heads
(:data:`spmlkit.models.heads.HEADS`) and analyses
(:data:`spmlkit.experiments.analyses.ANALYSES`); each kind has a ``register_<kind>``
decorator and a contract test (tests/test_registry.py).

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
    name; ``lookup`` and ``discover`` import the package's modules first."""

    def __init__(self, kind: str, package: str | None):
        super().__init__()
        self.kind = kind
        self.package = package
        self._owners: dict[str, Any] = {}
        self._discovered = package is None

    def add(self, name: str, spec: Any, *, owner: Any) -> None:
        if name in self and self._owners.get(name) is not owner:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self[name] = spec
        self._owners[name] = owner

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

"""Hyper-parameter constraints, declared once and checked in one place.

As scikit-learn's ``_parameter_constraints``: every name a loss, a method, a component or
the configuration takes has a list of constraints, and a value is valid when it meets
**one** of them.  The constraints come from two places:

* the signature: a keyword argument annotated ``float`` must be a finite number,
  ``int`` a whole number, ``bool`` true or false, ``str`` text; ``X | None`` (or a
  default of ``None``) also accepts ``None`` (:func:`constraints_from_signature`);
* the registration, for what a type cannot say: ranges and choices
  (``register_method(..., constraints={"storage": [Options(*STORAGES)]})``), merged over
  the ones from the signature.

:func:`check_params` is the one function that checks them.  The losses
(:meth:`spmlkit.losses.LossSpec.check_params`), the methods
(:func:`spmlkit.methods.build_method`, before the factory runs), the configuration
(:class:`spmlkit.config.TrainConfig`), ``spml train --param`` (through the two) and
``spml bench`` (its rows and ``--param`` values, before any dataset is prepared) all call
it, so an unknown name or a bad value gets the same one-line :class:`ConfigError`
wherever it is given.

>>> check_params({"gamma": 0.5}, {"gamma": [Interval(float, 0, 1)]}, owner="loss 'wan'")
{'gamma': 0.5}
>>> check_params({"storage": "f64"}, {"storage": [Options("float32", "float16")]}, owner="method 'role'")
Traceback (most recent call last):
  ...
spmlkit.errors.ConfigError: method 'role': storage must be one of 'float32', 'float16', got 'f64'
"""
from __future__ import annotations

import inspect
import math
import numbers
import typing
from typing import Any, Callable, Iterable

from .errors import ConfigError, did_you_mean

__all__ = ["Interval", "Options", "ANY", "TEXT", "check_params", "constraints_from_signature", "describe"]

#: a constraint that every value meets (a name whose type says nothing checkable)
ANY = "any"
#: text, or a number standing for its text: a hyper-parameter annotated ``str`` (a
#: ``NAME=VALUE`` option's value is parsed, so ``lrs=1e-3`` arrives as a number)
TEXT = "text"


class Interval:
    """A finite number of ``kind`` (``int`` or ``float``; a float accepts whole numbers
    too, never a bool) between ``low`` and ``high`` (``None``: unbounded); ``closed`` is
    ``"both"``, ``"left"``, ``"right"`` or ``"neither"``.

    >>> Interval(float, 0, None, closed="neither").accepts(0.0), Interval(int, 1).accepts(3)
    (False, True)
    """

    def __init__(self, kind: type, low: float | None = None, high: float | None = None, *, closed: str = "both"):
        if kind not in (int, float):
            raise TypeError(f"Interval kind must be int or float, got {kind!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be both, left, right or neither, got {closed!r}")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int and not isinstance(value, numbers.Integral):
            return False
        if not isinstance(value, numbers.Real) or not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or (value == self.low and self.closed in ("right", "neither"))):
            return False
        if self.high is not None and (value > self.high or (value == self.high and self.closed in ("left", "neither"))):
            return False
        return True

    def __str__(self) -> str:
        what = "a whole number" if self.kind is int else "a finite number"
        if self.low is None and self.high is None:
            return what
        if self.high is None:
            return f"{what} {'>=' if self.closed in ('both', 'left') else '>'} {self.low:g}"
        if self.low is None:
            return f"{what} {'<=' if self.closed in ('both', 'right') else '<'} {self.high:g}"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        return f"{what} in {left}{self.low:g}, {self.high:g}{right}"

    def __repr__(self) -> str:
        return f"Interval({self.kind.__name__}, {self.low!r}, {self.high!r}, closed={self.closed!r})"


class Options:
    """One of the given values (compared with ``==``; a bool never stands for 1 or 0).

    >>> Options("dense", "rowwise").accepts("dense"), Options(1, 2).accepts(True)
    (True, False)
    """

    def __init__(self, *values):
        if not values:
            raise ValueError("Options needs at least one value")
        self.values = tuple(values)

    def accepts(self, value: Any) -> bool:
        return any(type(value) is type(v) and value == v for v in self.values) or (
            not isinstance(value, bool) and isinstance(value, numbers.Real)
            and any(not isinstance(v, (bool, str)) and value == v for v in self.values))

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def __repr__(self) -> str:
        return f"Options{self.values!r}"


def _accepts(constraint, value) -> bool:
    if constraint is None:
        return value is None
    if constraint == ANY:
        return True
    if constraint is bool:
        return isinstance(value, bool)
    if constraint is int:
        return Interval(int).accepts(value)
    if constraint is float:
        return Interval(float).accepts(value)
    if constraint is str:
        return isinstance(value, str)
    if constraint == TEXT:  # a number given as NAME=VALUE text arrives parsed (lrs=1e-3): it stands for its text
        return isinstance(value, str) or (isinstance(value, numbers.Real) and not isinstance(value, bool))
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return constraint.accepts(value)


def describe(constraint) -> str:
    """What a value meeting ``constraint`` is, in words (for the error messages)."""
    if constraint is None:
        return "None"
    if constraint in (ANY, TEXT):
        return "anything" if constraint == ANY else "text"
    return {bool: "true or false", int: "a whole number", float: "a finite number", str: "text"}.get(
        constraint, getattr(constraint, "__name__", None) if isinstance(constraint, type) else str(constraint))


def check_params(params: dict, constraints: dict, *, owner: str = "") -> dict:
    """Check ``params`` against ``constraints`` (name -> list of constraints, one of
    which a value must meet) and return ``params`` unchanged.

    A name without constraints is refused (``owner`` has no such hyper-parameter); a
    value that meets none of its constraints is refused with what it must be.  One line
    each, a :class:`ConfigError`; ``owner`` (e.g. ``"method 'role'"``) starts it.

    >>> check_params({"k": None}, {"k": [Interval(float, 0, None, closed="neither"), None]})
    {'k': None}
    >>> check_params({"alpha": 1}, {"k": [float]}, owner="method 'epr'")
    Traceback (most recent call last):
      ...
    spmlkit.errors.ConfigError: method 'epr' has no hyper-parameter(s) ['alpha']; it takes ['k']
    """
    unknown = set(params) - set(constraints)
    if unknown:
        raise ConfigError(f"{owner or 'this'} has no hyper-parameter(s) {sorted(unknown)}"
                          f"{did_you_mean(sorted(unknown)[0], constraints)}; it takes {sorted(constraints) or 'none'}")
    for name, value in params.items():
        allowed = constraints[name]
        if not any(_accepts(c, value) for c in allowed):
            wanted = " or ".join(describe(c) for c in allowed)
            raise ConfigError(f"{owner + ': ' if owner else ''}{name} must be {wanted}, got {value!r}")
    return params


def _from_annotation(annotation, default, text) -> list:
    """The constraints a type annotation (and the default) say; ``str`` is ``text``."""
    args = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, _UnionType) else ()
    types = [a for a in args if a is not type(None)] if args else (
        [annotation] if annotation is not inspect.Parameter.empty else [])
    out: list = []
    for t in types:
        if t in (bool, int, float, str):
            out.append(text if t is str else t)
        else:  # a type a value cannot be checked against simply (a tuple, a tensor, a callable)
            return [ANY]
    if not types:  # no annotation: the default's type, when it is a plain one
        if isinstance(default, (bool, int, float, str)):
            out.append(text if isinstance(default, str) else type(default))
        else:
            return [ANY]
    if (args and type(None) in args) or default is None:
        out.append(None)
    return out


try:  # ``int | None`` (PEP 604) has its own origin type
    from types import UnionType as _UnionType
except ImportError:  # pragma: no cover - Python < 3.10
    _UnionType = typing.Union


def constraints_from_signature(fn: Callable, names: Iterable[str] | None = None,
                               declared: dict | None = None, *, text=TEXT) -> dict:
    """``{name: constraints}`` for the keyword arguments ``names`` of ``fn`` (default:
    every one with a default), from their annotations and defaults, with ``declared``
    constraints replacing those of the names they list.  A ``str`` annotation becomes
    ``text`` (:data:`TEXT`, default: numbers stand for their text; ``str`` for fields read
    from a file, where a number is a mistake).

    >>> def f(k: float | None = None, *, storage: str = "float32", soft: bool = True): ...
    >>> c = constraints_from_signature(f)
    >>> c["k"], c["soft"], c["storage"]
    ([<class 'float'>, None], [<class 'bool'>], ['text'])
    """
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: fall back to the defaults
        hints = {}
    params = [p for p in sig.parameters.values() if p.default is not inspect.Parameter.empty] \
        if names is None else [sig.parameters[n] for n in names]
    out = {p.name: _from_annotation(hints.get(p.name, inspect.Parameter.empty), p.default, text) for p in params}
    declared = dict(declared or {})
    extra = set(declared) - set(out)
    if extra:
        raise TypeError(f"{getattr(fn, '__qualname__', fn)}: constraints declared for names it does not take: "
                        f"{sorted(extra)}")
    out.update({k: list(v) for k, v in declared.items()})
    return out

"""User-facing errors.

Every error that bad *input* can cause (a malformed file, an unknown name, a shape
mismatch) is raised as :class:`SpmlError` (or a subclass).  The CLI prints its message
on one line and exits with status 2; the Python API lets it propagate.  Messages name
the file, the row or option, and what was expected.
"""
from __future__ import annotations

import difflib
from pathlib import Path


class SpmlError(Exception):
    """An error caused by the user's input, with a message meant for the user."""


class DataFormatError(SpmlError, ValueError):
    """A data file does not follow its format.

    Parameters
    ----------
    path : file that is malformed.
    message : what is wrong and what was expected.
    line : 1-based line number in ``path`` (or row number for binary formats), if known.
    """

    def __init__(self, path: str | Path | None, message: str, *, line: int | None = None):
        where = str(path) if path is not None else "<input>"
        if line is not None:
            where += f", line {line}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


def did_you_mean(name, known) -> str:
    """`` (did you mean 'wan'?)`` when ``name`` is close to one or two of ``known`` (a
    typo), else ``""``: the one suggestion every unknown-name message appends (methods,
    datasets, losses, regimes, hyper-parameters, loggers, ...).

    >>> did_you_mean("wna", ["an", "wan", "role"]), did_you_mean("xyz", ["an", "wan"])
    (" (did you mean 'wan'?)", '')
    """
    known = [str(k) for k in known]
    text = str(name)
    same = [k for k in known if k.lower() == text.lower()]  # only the case differs: that one
    close = same[:1] or difflib.get_close_matches(text, known, n=2, cutoff=0.6)
    if not close:  # a different case ('WAN', 'Yeast') is a typo too
        low = {k.lower(): k for k in known}
        close = [low[m] for m in difflib.get_close_matches(text.lower(), list(low), n=2, cutoff=0.6)]
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


class UnknownNameError(SpmlError, KeyError):
    """An unknown method, loss, dataset, regime, ... name (with a "did you mean" when the
    name is close to a known one: :func:`did_you_mean`)."""

    def __init__(self, kind: str, name: str, known):
        known = sorted(known)
        super().__init__(f"unknown {kind} {name!r}{did_you_mean(name, known)}; expected one of: {', '.join(known)}")
        self.kind, self.name, self.known = kind, name, known

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.args[0]


class ConfigError(SpmlError, ValueError):
    """An option has a value that cannot be used."""


class CorruptFileError(SpmlError):
    """A checkpoint or saved model failed its integrity check."""

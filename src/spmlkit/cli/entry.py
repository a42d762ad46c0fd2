"""The ``spml`` command as a whole: :func:`build_parser` (one sub-command per module of
:data:`COMMANDS`) and :func:`main`, which turns input errors into one ``spml: error:`` line
and exit status 2, Ctrl-C into status 130 and a closed pipe into a quiet exit."""
from __future__ import annotations

import argparse
import contextlib
import errno
import importlib.abc
import os
import sys
import warnings

from .._version import __version__
from ..errors import SpmlError
from . import (
    analyze,
    bench,
    clean,
    datasets,
    demo,
    diagnose,
    estimate_k,
    evaluate,
    explain,
    features,
    figures,
    methods,
    predict,
    prepare,
    train,
)
from .common import _Parser

#: the commands in the order ``spml --help`` lists them
COMMANDS = (datasets, methods, clean, prepare, train, features, evaluate, predict, explain, diagnose, estimate_k,
            demo, bench, figures, analyze)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="spml", description="Single-positive multi-label learning toolkit.")
    parser.add_argument("--version", action="version", version=f"spmlkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="command")
    sub.required = True
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # recorded by commands that report their command line

    try:
        with warnings.catch_warnings(), _announce_torch(args.command):
            warnings.showwarning = _one_line_warning  # a library's warning is one 'spml: warning:' line
            return int(args.func(args) or 0)
    except SpmlError as exc:
        print(f"spml: error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"spml: error: {exc.filename or exc}: file not found", file=sys.stderr)
        return 2
    except OSError as exc:  # read-only filesystem, no permission, disk full, file too large, ...
        where = exc.filename or "output"
        what = exc.strerror or str(exc).splitlines()[0]
        hint = {errno.ENOSPC: "; free some space and run the command again (finished work is kept)",
                errno.EROFS: "; write to another folder with -o",
                errno.EACCES: "; check the permissions or write to another folder with -o",
                errno.EFBIG: "; the file size limit (ulimit -f) is too small"}.get(exc.errno, "")
        print(f"spml: error: {where}: {what}{hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spml: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `spml datasets | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


class _TorchAnnouncer(importlib.abc.MetaPathFinder):
    """Prints one progress line the first time ``torch`` is imported (it takes seconds, a
    minute on a loaded machine, with nothing else on the screen), then steps aside: it
    finds nothing itself, so the import goes on as usual."""

    def __init__(self, command: str):
        self.command, self.done = command, False

    def find_spec(self, name, path=None, target=None):
        if not self.done and (name == "torch" or name.startswith("torch.")):
            self.done = True
            print(f"spml {self.command}: loading torch (a few seconds; longer on a busy machine)...",
                  file=sys.stderr, flush=True)
        return None


@contextlib.contextmanager
def _announce_torch(command: str):
    """While a command runs: a line on stderr before torch is imported, unless it already is
    or progress lines are off (``SPML_NO_PROGRESS=1``); under torchrun, rank 0 only."""
    if "torch" in sys.modules or os.environ.get("SPML_NO_PROGRESS") == "1" or os.environ.get("RANK", "0") != "0":
        yield
        return
    finder = _TorchAnnouncer(command)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning (spmlkit's, or a library's) as one line on stderr — never Python's
    ``file:line: Category`` form with the source line under it."""
    print(f"spml: warning: {' '.join(str(message).split())}", file=sys.stderr if file is None else file)


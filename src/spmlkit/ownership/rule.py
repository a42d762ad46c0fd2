"""The ownership rule itself: the names spmlkit's bookkeeping files have, the folder kinds, the
errors, and the checks that need no manifest (an output is never an input; the root, home and
current folders are never replaced).  The rule as a whole: :mod:`spmlkit.ownership`."""
from __future__ import annotations

import fnmatch
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from .. import io as _io
from ..errors import ConfigError


#: written into every folder spmlkit makes: ``{"written_by": "spmlkit", "kind": KIND, "manifest": MANIFEST}``
MARKER = ".spml-output.json"

#: append-only list of what spmlkit wrote into the folder: ``f DEV:INO REL`` (a file),
#: ``d DEV:INO REL`` (a folder), ``o DEV:INO REL`` (a folder owned on its own: its own
#: marker and manifest), ``- 0:0 REL`` (removed)
MANIFEST = ".spml-manifest"

LOCK = _io.FolderLock.NAME

#: the file a :func:`build` folder holds (locked) while it is being written
BUILD_OWNER = ".spml-owner"

_SPECIAL = frozenset({MARKER, MANIFEST, LOCK, BUILD_OWNER})

#: the temporaries :func:`spmlkit.io.atomic_path` writes beside a file (``.NAME.spml-XXXXXXXX.tmp``, 8 random
#: characters or 10 hex digits; :func:`spmlkit.io._new_temporary`): spmlkit's by name
_TMP = re.compile(r"^\.(?P<name>.+)\.spml-[A-Za-z0-9_]+\.tmp$")


class OwnershipError(ConfigError):
    """A write, replacement or deletion that the ownership rule refuses (one line)."""


class UnownedPathError(RuntimeError):
    """A programming error: something in spmlkit tried to write a path that no folder
    claimed in this process owns (every writer must claim its folder first)."""


@dataclass(frozen=True)
class Kind:
    """A kind of folder spmlkit writes: its name in messages (``what``: "a run folder"),
    how an older spmlkit's folder of it is recognised (``is_ours``, its own metadata) and
    which top-level names of such a folder are spmlkit's (``layout``: glob patterns; a
    matching folder is spmlkit's with everything in it)."""

    name: str
    what: str
    is_ours: Callable[[Path], bool] | None = None
    layout: tuple[str, ...] = ()

_KINDS: dict[str, Kind] = {}


def register_kind(name: str, what: str, *, is_ours: Callable[[Path], bool] | None = None,
                  layout: Iterable[str] = ()) -> Kind:
    """Declare a folder kind (the modules that write each kind call this at import)."""
    k = Kind(name, what, is_ours, tuple(layout))
    _KINDS[name] = k
    return k


def _kind(name: str) -> Kind:
    return _KINDS.get(name) or Kind(name, f"{'an' if name[:1] in 'aeiou' else 'a'} {name} folder")


def _in_layout(name: str, k: Kind) -> bool:
    return any(fnmatch.fnmatchcase(name, pat) for pat in k.layout)


def _abs(path) -> str:
    return os.path.abspath(os.fspath(path))


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None


def _link_text(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _refuse_link(path: str, option: str = "-o", shown: str | None = None) -> OwnershipError:
    return OwnershipError(f"{shown or path} is a symbolic link (to {_link_text(path)}) inside a folder spmlkit wrote; "
                          f"spmlkit never writes through links — remove the link or choose another {option}")


def _chain(path: str) -> list[tuple[int, int]]:
    """(device, inode) of ``path`` (its nearest existing ancestor when it does not exist)
    and of every folder above it, following links as the system does."""
    p = os.path.realpath(path)
    out = []
    while True:
        try:
            st = os.stat(p)
            out.append((st.st_dev, st.st_ino))
        except OSError:
            pass
        parent = os.path.dirname(p)
        if parent == p:
            return out
        p = parent


def refuse_inputs(out: str | Path, inputs: Iterable, *, option: str = "-o/--out", inside_ok: bool = False) -> None:
    """Refuse (one line) an output ``out`` that is, contains or lies inside one of
    ``inputs`` (paths; None skipped), compared by device and inode — a hard link, a
    symbolic link or another spelling of an input is the input.  ``inside_ok``: ``out``
    may lie inside them (a ``--data-root`` that datasets are looked up in)."""
    out_s = _abs(out)
    out_chain = _chain(out_s)
    try:
        so = os.stat(out_s)
        out_id = (so.st_dev, so.st_ino)
    except OSError:
        out_id = None
    for src in inputs:
        if src is None or not str(src):
            continue
        try:
            si = os.stat(os.fspath(src))
        except OSError:
            continue
        sid = (si.st_dev, si.st_ino)
        if out_id is not None and out_id == sid:
            raise OwnershipError(f"{option} {out} is an input of this command ({src}); spmlkit never writes over "
                                 "what it reads — choose another output")
        above = out_chain[1:] if out_id is not None else out_chain  # the folders out lies in
        if stat.S_ISDIR(si.st_mode) and sid in above and not inside_ok:
            raise OwnershipError(f"{option} {out} lies inside {src}, which this command reads; spmlkit never writes "
                                 "into its inputs — choose an output outside it")
        if out_id is not None and stat.S_ISDIR(so.st_mode) and out_id in _chain(os.fspath(src))[1:]:
            raise OwnershipError(f"{option} {out}: {src}, which this command reads, lies inside it; spmlkit never "
                                 "writes over (or removes) its inputs — choose another output")


def _is_protected(path: str) -> str | None:
    """Why ``path`` may never be replaced or emptied (None when it may)."""
    p = Path(path).resolve()
    cwd = Path.cwd().resolve()
    if p == Path(p.anchor):
        return "it is the filesystem root"
    if p == cwd:
        return "it is the current directory"
    if p in cwd.parents:
        return "it contains the current directory"
    try:
        if p == Path.home().resolve():
            return "it is your home directory"
    except RuntimeError:  # no home directory
        pass
    return None


def check_output_folder(path: str | Path, *, option: str = "-o/--out") -> Path:
    """``path`` as an output folder: refused (one line) when it is a dangling link or an
    existing file."""
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise OwnershipError(f"{option} {p} is a symbolic link to {os.readlink(p)}, which does not exist; expected a "
                             "folder (remove the link or create its target)")
    if p.exists() and not p.is_dir():
        raise OwnershipError(f"{option} {p} is a file; expected a folder (a new one, or one spmlkit wrote)")
    return p

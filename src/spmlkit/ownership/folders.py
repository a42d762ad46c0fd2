"""Owned folders: a command's output folder (:func:`claim`), a folder inside one or a library
call's own (:func:`folder`, :func:`mkdir`, :func:`new_folder`), a scratch folder
(:func:`temporary_folder`)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable

from .rule import (
    LOCK, MANIFEST, OwnershipError, UnownedPathError, _abs, _is_protected, _kind, _lstat,
    check_output_folder, refuse_inputs
)
from .manifest import _ROOTS, _Root, _read_marker, _registered, _validate, _write_marker
from .adopt import _adopt_layout
from .walks import _ensure_dir


def claim(path: str | Path, kind: str, *, inputs: Iterable = (), option: str = "-o/--out",
          create: bool = True, own: bool = False) -> Path:
    """``path`` as a folder of ``kind`` that this process writes: created (with its marker
    and manifest) when new; accepted when empty, holding spmlkit's marker of ``kind``, or
    written by an older spmlkit (see :class:`Kind`); otherwise
    refused in one line before anything is written.  ``inputs``: what the command reads
    (see :func:`refuse_inputs`).  ``create=False`` checks only.  Inside a folder this process
    owns already, ``path`` becomes a checked sub-folder of it, unless ``own`` (a folder of its
    own there: :func:`build`'s previous folder, renamed beside the new one).  Returns ``path``."""
    p = check_output_folder(path, option=option)
    a = _abs(p)
    refuse_inputs(p, inputs, option=option)
    k = _kind(kind)
    if a in _ROOTS:
        _validate(_ROOTS[a])
        if _ROOTS[a].kind == kind:
            return p
    reg = None if own else _registered(a)
    if reg is not None and reg[1]:
        if create:
            _ensure_dir(reg[0], reg[1])
        return p
    if os.path.isdir(a):
        mark = _read_marker(a)
        if mark is not None:
            if mark["kind"] != kind:
                raise OwnershipError(f"refusing to write into {p}: it holds spmlkit's {mark['kind']} output, not "
                                     f"{k.what}; choose a new (or empty) folder with {option}")
            if not create:
                return p
            legacy = _lstat(os.path.join(a, MANIFEST)) is None
            if legacy and mark.get("manifest"):  # this version's folder, its list gone: nothing is adopted
                raise OwnershipError(f"{p}: spmlkit's list of what it wrote there ({MANIFEST}) is missing; the folder "
                                     f"was changed by someone else — choose another {option}")
            if legacy:  # a marker of an older spmlkit (no manifest): list what follows the layout
                fd = os.open(os.path.join(a, MANIFEST), os.O_WRONLY | os.O_CREAT | os.O_APPEND |
                             getattr(os, "O_NOFOLLOW", 0), 0o666)
                os.close(fd)
            root = _Root(a, mark["kind"], False, str(p))
            if legacy:
                _adopt_layout(root, _kind(mark["kind"]))
            _ROOTS[a] = root
            return p
        try:
            entries = [e for e in os.listdir(a) if e not in (LOCK,)]
        except OSError as exc:
            raise OwnershipError(f"{p}: cannot be read ({exc.strerror or exc})") from None
        if entries:
            if k.is_ours is None or not k.is_ours(Path(a)):
                raise OwnershipError(f"refusing to write into {p}: it holds files that are not {k.what} written by "
                                     f"spmlkit (no spmlkit marker); choose a new (or empty) folder with {option}")
        else:
            why = _is_protected(a)
            if why is not None and Path(a).resolve() != Path.cwd().resolve():
                raise OwnershipError(f"refusing to write into {p}: {why}; choose a new folder with {option}")
        if not create:
            return p
        _write_marker(a, kind)
        root = _Root(a, kind, False, str(p))
        if entries:
            _adopt_layout(root, k)
        _ROOTS[a] = root
        return p
    if not create:
        return p
    os.makedirs(a, exist_ok=True)
    _write_marker(a, kind)
    _ROOTS[a] = _Root(a, kind, True, str(p))
    return p


def folder(path: str | Path, kind: str, **kw) -> Path:
    """``path`` as a folder to write: a checked sub-folder when it lies inside a folder
    this process owns, else :func:`claim`-ed as a folder of ``kind``."""
    a = _abs(path)
    reg = _registered(a)
    if reg is not None:
        if reg[1]:
            _ensure_dir(reg[0], reg[1])
        return Path(path)
    return claim(path, kind, **kw)


def created(path: str | Path) -> bool:
    """True when this process made the owned folder ``path`` (it did not exist before)."""
    root = _ROOTS.get(_abs(path))
    return bool(root is not None and root.created)


def mkdir(path: str | Path) -> Path:
    """Make (or check) the folder ``path`` inside an owned folder; returns ``path``."""
    a = _abs(path)
    reg = _registered(a)
    if reg is None:
        raise UnownedPathError(f"{path}: not inside a folder this process claimed")
    if reg[1]:
        _ensure_dir(*reg)
    return Path(path)


def temporary_folder(prefix: str, kind: str = "scratch", dir: str | Path | None = None) -> Path:
    """A fresh private folder (``tempfile.mkdtemp``) owned by this process."""
    p = tempfile.mkdtemp(prefix=prefix, dir=dir)
    _write_marker(p, kind)
    _ROOTS[p] = _Root(p, kind, True)
    return Path(p)


def new_folder(path: str | Path, kind: str) -> Path:
    """``path`` (which must not exist: a unique name) made as a folder of its own."""
    a = _abs(path)
    reg = _registered(os.path.dirname(a))
    if reg is not None:
        if reg[1]:
            _ensure_dir(*reg)
        mkdir(path)
        return Path(path)
    os.makedirs(os.path.dirname(a), exist_ok=True)
    try:
        os.mkdir(a)
    except FileExistsError:
        raise OwnershipError(f"{path} exists already; spmlkit makes a new folder there and never reuses one "
                             "it did not make") from None
    _write_marker(a, kind)
    _ROOTS[a] = _Root(a, kind, True)
    return Path(path)

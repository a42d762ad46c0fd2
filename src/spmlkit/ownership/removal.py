"""Removal: only what a manifest lists is ever removed; ``--overwrite`` (:func:`check_clearable`)
refuses a folder holding anything else."""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Iterable

from ..errors import SpmlError
from .rule import (
    BUILD_OWNER, LOCK, MANIFEST, MARKER, OwnershipError, UnownedPathError, _SPECIAL, _TMP, _abs, _in_layout,
    _is_protected, _kind, _lstat, check_output_folder, refuse_inputs
)
from .manifest import _ROOTS, _Root, _read_marker, _registered, _validate
from .walks import _walk_dirs, lstat_at, open_parent


def remove(path: str | Path, *, only_if_empty: bool = False) -> bool:
    """Remove what spmlkit wrote at ``path`` (a file, or a folder with everything it
    wrote in it); a link, or anything not listed, is left where it is — and so is a folder
    still holding it.  ``only_if_empty``: a folder only when nothing is in it.  True when
    nothing is left at ``path``."""
    a = _abs(path)
    reg = _registered(a)
    if reg is None:
        raise UnownedPathError(f"{path}: not inside a folder this process claimed")
    root, rel = reg
    if not rel:
        return discard(path, only_if_empty=only_if_empty)
    walked = _walk_dirs(root, rel, create=False)
    if walked is None:
        return True
    root, rel = walked
    if only_if_empty:
        p = os.path.join(root.path, *rel.split("/"))
        st = _lstat(p)
        if st is not None and stat.S_ISDIR(st.st_mode) and os.listdir(p):
            return False
    return _remove_entry(root, rel)


def prune(path: str | Path) -> None:
    """Remove the empty folders spmlkit made inside the owned folder ``path`` (deepest first)."""
    a = _abs(path)
    if _registered(a) is None or not os.path.isdir(a):
        return
    for d, subdirs, _files in os.walk(a, topdown=False):
        for name in subdirs:
            p = os.path.join(d, name)
            if not os.path.islink(p):
                with contextlib.suppress(OSError, SpmlError):
                    remove(p, only_if_empty=True)


def _remove_entry(root: _Root, rel: str) -> bool:
    a = os.path.join(root.path, *rel.split("/"))
    st = _lstat(a)
    if st is None:
        if root.entry_type(rel) is not None:
            root.record("-", rel)
        return True
    if stat.S_ISREG(st.st_mode) and root.owns(rel, st, "f"):
        if not _remove_checked(root, rel, st):
            return False
        root.record("-", rel)
        return True
    if stat.S_ISDIR(st.st_mode) and root.owns(rel, st, "d"):
        left = False
        for name in os.listdir(a):
            if _TMP.match(name):
                with contextlib.suppress(OSError):
                    _unlink_tmp(os.path.join(a, name))
                continue
            left |= not _remove_entry(root, f"{rel}/{name}")
        if left or not _remove_checked(root, rel, st):
            return False
        root.record("-", rel)
        return True
    if stat.S_ISDIR(st.st_mode) and root.owns(rel, st, "o"):
        ok = discard(a)
        if ok:
            root.record("-", rel)
        return ok
    return False


def _remove_checked(root: _Root, rel: str, st: os.stat_result) -> bool:
    """Remove ``rel`` (a file, or an empty folder), checked as ``st``, inside its folder
    opened as a descriptor (:func:`~spmlkit.ownership.walks.open_parent`): a folder on the
    way swapped for a link since the check is refused, and the entry is removed only when
    it is still the one checked (False, and left, when it is not)."""
    fd = open_parent(root, rel)
    try:
        name = rel.rsplit("/", 1)[-1]
        now = lstat_at(fd, name)
        if now is None:
            return True
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False
        if stat.S_ISDIR(st.st_mode):
            os.rmdir(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
        return True
    finally:
        os.close(fd)


def _unlink_tmp(p: str) -> bool:
    """Remove a temporary spmlkit left (a regular file with one name); True when removed."""
    st = os.lstat(p)
    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
        os.unlink(p)
        return True
    return False


def discard(path: str | Path, *, only_if_empty: bool = False) -> bool:
    """Remove everything spmlkit wrote in the owned folder ``path`` (its marker, manifest
    and lock too), then the folder when nothing else is left in it.  ``only_if_empty``:
    only when it holds nothing but that bookkeeping.  True when it is gone."""
    a = _abs(path)
    root = _ROOTS.get(a)
    if root is None:
        mark = _read_marker(a)
        if mark is None:
            return False
        root = _Root(a, mark["kind"], False)
    else:
        _validate(root)
    root.refresh()
    if only_if_empty and any(n not in _SPECIAL for n in os.listdir(a)):
        return False
    left = False
    for name in os.listdir(a):
        if name in _SPECIAL:
            continue
        if _TMP.match(name):
            with contextlib.suppress(OSError):
                _unlink_tmp(os.path.join(a, name))
            continue
        left |= not _remove_entry(root, name)
    if left:
        return False
    for name in (MARKER, LOCK, BUILD_OWNER, MANIFEST):
        p = os.path.join(a, name)
        st = _lstat(p)
        if st is not None and stat.S_ISREG(st.st_mode):
            os.unlink(p)
    _ROOTS.pop(a, None)
    try:
        os.rmdir(a)
    except OSError:
        return False
    return True


def foreign(path: str | Path) -> list[str]:
    """What lies in the owned folder ``path`` that spmlkit did not write (relative paths;
    links and files with other names count as foreign)."""
    a = _abs(path)
    root = _ROOTS.get(a) or _Root(a, (_read_marker(a) or {}).get("kind", "?"), False)
    root.refresh()
    out: list[str] = []

    def walk(d: str, rel: str, r: _Root) -> None:
        for e in sorted(os.scandir(d), key=lambda e: e.name):
            name = f"{rel}/{e.name}" if rel else e.name
            if not rel and e.name in _SPECIAL:
                continue
            if _TMP.match(e.name):  # spmlkit's own temporary (a writer's, or a killed writer's)
                continue
            st = e.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode) and r.owns(name, st, "d"):
                walk(e.path, name, r)
            elif stat.S_ISDIR(st.st_mode) and r.owns(name, st, "o"):
                out.extend(f"{name}/{x}" for x in foreign(e.path))
            elif stat.S_ISREG(st.st_mode) and r.owns(name, st, "f"):
                continue
            else:
                out.append(name)

    walk(a, "", root)
    return out


def check_clearable(path: str | Path, kind: str, *, inputs: Iterable = (), option: str = "--overwrite") -> None:
    """``--overwrite`` of the folder ``path``: refused (one line) unless it is empty or a
    folder of ``kind`` spmlkit wrote that holds nothing else (a file of anyone's in it is
    named); never a link, the filesystem root, the home or current folder or one of its
    ancestors, and never a folder holding an input."""
    p = check_output_folder(path)
    if not p.exists():
        return
    a = _abs(p)
    k = _kind(kind)
    why = _is_protected(a)
    if why is not None:
        raise OwnershipError(f"refusing to replace {p}: {why}; pass a new folder to -o")
    if p.is_symlink():
        raise OwnershipError(f"refusing to replace {p}: it is a symbolic link; pass a new folder to -o")
    refuse_inputs(p, inputs, option=option)
    try:
        names = [n for n in os.listdir(a) if n != LOCK]
    except OSError as exc:
        raise OwnershipError(f"{p}: cannot be read ({exc.strerror or exc})") from None
    if not names:
        return
    mark = _read_marker(a)
    if mark is None:
        if k.is_ours is None or not k.is_ours(Path(a)):
            raise OwnershipError(f"refusing to replace {p}: it is not {k.what} written by spmlkit (its own metadata "
                                 "is missing) and may hold your files; pass a new folder to -o")
        bad = [n for n in names if not _in_layout(n, k)]
    else:
        if mark["kind"] != kind:
            raise OwnershipError(f"refusing to replace {p}: it holds spmlkit's {mark['kind']} output, not {k.what}; "
                                 "pass a new folder to -o")
        if _lstat(os.path.join(a, MANIFEST)) is None and mark.get("manifest"):
            raise OwnershipError(f"refusing {option}: {p} has spmlkit's marker but its list of what spmlkit wrote "
                                 f"there ({MANIFEST}) is missing, so nothing in it is known to be spmlkit's; spmlkit "
                                 "removes only what that list names — move your files out (or choose another -o)")
        if _lstat(os.path.join(a, MANIFEST)) is None:  # an older spmlkit's marker (no manifest yet): by its layout
            bad = [n for n in names if n not in _SPECIAL and not _in_layout(n, k)]
        else:
            bad = foreign(a)
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise OwnershipError(f"refusing {option}: {os.path.join(str(p), bad[0])}{more} was not written by spmlkit; "
                             f"spmlkit removes only what it wrote — move it out of {p} (or choose another -o)")


def remove_stale_temporaries(path: str | Path, *, recursive: bool = False) -> int:
    """Delete the ``.NAME.spml-XXXXXXXX.tmp`` files a killed writer left in the owned
    folder ``path`` (regular files with one name; ``recursive``: in the folders spmlkit made
    inside it too).  Call while holding the folder's lock.  Returns how many."""
    a = _abs(path)
    reg = _registered(a)
    if reg is None or not os.path.isdir(a):
        return 0
    root, rel = reg
    n = 0

    def walk(d: str, rel: str) -> None:
        nonlocal n
        for e in os.scandir(d):
            name = f"{rel}/{e.name}" if rel else e.name
            st = e.stat(follow_symlinks=False)
            if _TMP.match(e.name):
                with contextlib.suppress(OSError):
                    n += _unlink_tmp(e.path)  # (a link or a folder under such a name is left, and not counted)
            elif recursive and stat.S_ISDIR(st.st_mode) and root.owns(name, st, "d"):
                walk(e.path, name)

    walk(a, rel)
    return n

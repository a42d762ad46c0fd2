"""The walks from an owned folder down to a path inside it: every folder on the way a real folder
spmlkit made (listed in the manifest), made where missing."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from .rule import OwnershipError, UnownedPathError, _abs, _lstat, _refuse_link
from .manifest import _ROOTS, _Root, _read_marker, _refuse_foreign, _registered, _validate


def _nested(root: _Root, rel: str) -> _Root:
    """The folder owned on its own at ``rel`` inside ``root`` (an ``o`` entry)."""
    a = os.path.join(root.path, *rel.split("/"))
    if a in _ROOTS:
        _validate(_ROOTS[a])
        return _ROOTS[a]
    mark = _read_marker(a)
    if mark is None:
        raise OwnershipError(f"{a}: spmlkit's marker is missing; the folder was changed by someone else — choose "
                             "another -o")
    r = _ROOTS[a] = _Root(a, mark["kind"], False)
    return r


def _walk_dirs(root: _Root, rel: str, *, create: bool) -> tuple[_Root, str] | None:
    """Check (and with ``create``, make) the folders of ``rel`` below ``root``: every one a
    real folder spmlkit made; returns the owning folder and the path relative to it (None
    when a folder is missing and not created)."""
    parts = rel.split("/")
    cur, base = root, []
    for part in parts[:-1]:
        base.append(part)
        r = "/".join(base)
        d = os.path.join(cur.path, *base)
        shown = cur.show(r)
        st = _lstat(d)
        if st is None:
            if not create:
                return None
            try:
                os.mkdir(d)
            except FileExistsError:  # another process (a parallel worker) made it just now:
                st = _lstat(d)       # checked below like any folder found there
            else:
                cur.record("d", r, os.lstat(d))
                continue
            if st is None:
                raise OwnershipError(f"{shown}: made and removed by someone else while spmlkit made it — "
                                     "choose another -o")
        if stat.S_ISLNK(st.st_mode):
            raise _refuse_link(d, shown=shown)
        if not stat.S_ISDIR(st.st_mode):
            raise OwnershipError(f"{shown} is a file where spmlkit writes a folder; it was not written by spmlkit — "
                                 "move it away or choose another -o")
        t = cur.entry_type(r)
        if t == "o" and cur.owns(r, st, "o"):
            cur, base = _nested(cur, r), []
            continue
        if not cur.owns(r, st, "d"):
            if create and not os.listdir(d):  # an empty folder holds nothing of anyone's
                cur.record("d", r, st)
                continue
            raise _refuse_foreign(shown, cur, "folder")
    return cur, "/".join(base + parts[-1:])


def _locate(path) -> tuple[_Root, str]:
    """The owned folder of ``path`` and ``path`` relative to it, its folders made and checked."""
    a = _abs(path)
    reg = _registered(a)
    if reg is None:
        raise UnownedPathError(f"{path}: not inside a folder this process claimed (spmlkit.ownership.claim/folder/"
                               "build must be called first)")
    root, rel = reg
    if not rel:
        raise UnownedPathError(f"{path}: is an owned folder itself, not a path inside one")
    return _walk_dirs(root, rel, create=True)


def ensure_parent(path: str | Path) -> Path:
    """Make (or check, inside an owned folder) the folder ``path`` will be created in."""
    a = os.path.dirname(_abs(path))
    reg = _registered(a)
    if reg is not None:
        if reg[1]:
            _ensure_dir(*reg)
    else:
        os.makedirs(a, exist_ok=True)
    return Path(path).parent


def _ensure_dir(root: _Root, rel: str) -> None:
    """Make (or check) the folder ``rel`` of ``root`` and every folder above it."""
    _walk_dirs(root, rel + "/x", create=True)


NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


def open_parent(root: _Root, rel: str) -> int:
    """The folder that holds ``rel`` (a path below ``root``, walked by :func:`_walk_dirs`),
    opened as a descriptor for the write that follows the check (``dir_fd=``): ``root`` by
    its path, checked to be the folder registered, then each folder below it opened inside
    the one above without following a link and checked against the manifest.  A folder
    swapped for a link (or anything else) between the check and the write is refused in
    one line, and nothing is written; the caller closes the descriptor."""
    fd = os.open(root.path, _DIR)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != root.ident:
            raise OwnershipError(f"{root.show()} was removed or replaced by someone else while spmlkit was using it; "
                                 "nothing more is written there")
        parts = rel.split("/")[:-1]
        for i, part in enumerate(parts):
            r = "/".join(parts[:i + 1])
            try:
                sub = os.open(part, _DIR | NOFOLLOW, dir_fd=fd)
            except OSError:
                raise OwnershipError(f"{root.show(r)} changed into a link or a file while spmlkit wrote in it; "
                                     "nothing was written there") from None
            os.close(fd)
            fd = sub
            if not root.owns(r, os.fstat(fd), "d"):
                raise _refuse_foreign(root.show(r), root, "folder")
        return fd
    except BaseException:
        os.close(fd)
        raise


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` inside the folder open as ``dir_fd`` (None when nothing is there)."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None

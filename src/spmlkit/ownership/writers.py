"""The path-based writers: each checks its path against the owned folder it lies in before
anything is written, and lists what it wrote in that folder's manifest."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .. import io as _io
from .rule import OwnershipError, _SPECIAL, _TMP, _lstat, _refuse_link
from .manifest import _refuse_foreign
from .walks import NOFOLLOW, _locate, lstat_at, open_parent
from .removal import remove


def target(path: str | Path, *, inplace: bool = False) -> Path:
    """``path`` checked for writing (its folders made): nothing there yet, or a regular
    file spmlkit wrote; a link, a folder or a file of anyone else's is refused in one line.
    ``inplace``: the file is modified where it is (appended, memory-mapped), so it must
    also have no other name (a hard link)."""
    root, rel = _locate(path)
    a = os.path.join(root.path, *rel.split("/"))
    st = _lstat(a)
    if st is None:
        return Path(path)
    if stat.S_ISLNK(st.st_mode):
        raise _refuse_link(a, shown=str(path))
    if stat.S_ISDIR(st.st_mode):
        raise OwnershipError(f"{path} is a folder where spmlkit writes a file; it was not written by spmlkit — move "
                             "it away or choose another -o")
    if not stat.S_ISREG(st.st_mode) or not root.owns(rel, st, "f"):
        raise _refuse_foreign(str(path), root)
    if inplace and st.st_nlink > 1:
        raise OwnershipError(f"{path} has {st.st_nlink} names (hard links); spmlkit never modifies a file shared "
                             "with another path in place — remove the other names or choose another -o")
    return Path(path)


def _check_at(root, rel: str, dir_fd: int, shown, *, inplace: bool = False) -> os.stat_result | None:
    """What is at ``rel`` now, looked up in its folder open as ``dir_fd`` (the write's own
    step): nothing, or a regular file spmlkit wrote (with ``inplace``, one with no other
    name); a link, a folder or anyone else's file is refused, as :func:`target` does."""
    st = lstat_at(dir_fd, rel.rsplit("/", 1)[-1])
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise _refuse_link(os.path.join(root.path, *rel.split("/")), shown=str(shown))
    if not stat.S_ISREG(st.st_mode) or not root.owns(rel, st, "f"):
        raise _refuse_foreign(str(shown), root)
    if inplace and st.st_nlink > 1:
        raise OwnershipError(f"{shown} has {st.st_nlink} names (hard links); spmlkit never modifies a file shared "
                             "with another path in place — remove the other names or choose another -o")
    return st


@contextlib.contextmanager
def _opened_parent(path) -> Iterator[tuple]:
    """``(root, rel, dir_fd)``: ``path``'s owned folder, ``path`` relative to it and the
    folder that holds it, open (:func:`~spmlkit.ownership.walks.open_parent`)."""
    root, rel = _locate(path)
    fd = open_parent(root, rel)
    try:
        yield root, rel, fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """:func:`spmlkit.io.atomic_path` for a path inside an owned folder: checked first,
    then written and renamed inside its folder opened once (``dir_fd``: a folder or a file
    swapped for a link meanwhile is refused, never followed), listed (with the new file's
    inode) just before it is renamed into place."""
    target(path)
    with _opened_parent(path) as (root, rel, fd):
        def before(tmp: Path) -> None:
            _check_at(root, rel, fd, path)
            root.record("f", rel, os.lstat(tmp), at=str(tmp))

        with _io.atomic_path(path, before_replace=before, dir_fd=fd) as tmp:
            yield tmp


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, obj: Any) -> None:
    write_text(path, _io.dumps_json(obj))


def write_json_gz(path: str | Path, obj: Any) -> None:
    """``obj`` as gzip-compressed JSON (``path`` ends in ``.json.gz``), atomically
    (:func:`spmlkit.io.dumps_json_gz`: the same ``obj`` gives the same bytes)."""
    write_bytes(path, _io.dumps_json_gz(obj))


def save_npy(path: str | Path, array) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(array), allow_pickle=False)


def append_jsonl(path: str | Path, record: dict) -> None:
    """Append one JSON line to a file spmlkit wrote (or a new one), opened inside its
    folder (open as a descriptor, checked) without following a link, and checked again
    once open.  A file with other names (a hard link) is not appended to: it is rewritten
    atomically, so the other name keeps its bytes."""
    line = (json.dumps(record, default=_io._json_default) + "\n").encode("utf-8")
    target(path, inplace=False)
    with _opened_parent(path) as (root, rel, dfd):
        name = rel.rsplit("/", 1)[-1]
        st = _check_at(root, rel, dfd, path)
        if st is not None and st.st_nlink > 1:
            fd = os.open(name, os.O_RDONLY | NOFOLLOW, dir_fd=dfd)
            with os.fdopen(fd, "rb") as fh:
                old = fh.read()
            write_bytes(path, old + line)
            return
        if st is None:  # created here, listed before anything is written into it
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o666, dir_fd=dfd)
        else:
            try:
                fd = os.open(name, os.O_WRONLY | os.O_APPEND | NOFOLLOW, dir_fd=dfd)
            except OSError:  # (a link swapped in since the check: ELOOP)
                raise _refuse_link(os.path.join(root.path, *rel.split("/")), shown=str(path)) from None
        try:
            now = os.fstat(fd)
            if st is None:
                root.record("f", rel, now, inplace=True)
            elif (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or now.st_nlink > 1:
                raise OwnershipError(f"{path} was replaced while spmlkit appended to it; nothing was written")
            else:
                root.inplace(rel, now)
            try:
                os.write(fd, line)
                os.fsync(fd)
            except OSError as exc:  # a failed write names no file: name it (a full disk says where)
                raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        finally:
            os.close(fd)


def open_memmap(path: str | Path, *, mode: str, dtype=None, shape=None):
    """``np.lib.format.open_memmap`` of a file inside an owned folder: ``w+`` creates it
    new (an existing file of spmlkit's is replaced), ``r+`` opens one spmlkit wrote that has
    no other name; links and files of anyone else's are refused.  The file is opened
    through its folder's descriptor (never through a link swapped in after the check)."""
    if mode == "w+":
        target(path)
        root, rel = _locate(path)
        if _lstat(os.path.join(root.path, *rel.split("/"))) is not None:
            remove(path)
        with _opened_parent(path) as (root, rel, dfd):
            name = rel.rsplit("/", 1)[-1]
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o666, dir_fd=dfd)
            try:
                root.record("f", rel, os.fstat(fd), inplace=True)
            finally:
                os.close(fd)
            return np.lib.format.open_memmap(_io.fd_path(dfd, name) or path, mode="w+", dtype=dtype, shape=shape)
    target(path, inplace=True)
    with _opened_parent(path) as (root, rel, dfd):
        st = _check_at(root, rel, dfd, path, inplace=True)
        if st is None:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
        if mode != "r":
            root.inplace(rel, st)
        return _io.load_numpy(_io.fd_path(dfd, rel.rsplit("/", 1)[-1]) or path, mmap=mode)


def copy_file(src: str | Path, dst: str | Path) -> None:
    """Copy ``src`` (a file spmlkit reads) to ``dst`` inside an owned folder, atomically."""
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def _create_at(path, *, exists_ok: bool) -> bool:
    """Create the empty file ``path`` inside its folder (open as a descriptor; ``O_EXCL``,
    never through a link) and list it.  False when something is there already and
    ``exists_ok``."""
    with _opened_parent(path) as (root, rel, dfd):
        try:
            fd = os.open(rel.rsplit("/", 1)[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o666, dir_fd=dfd)
        except FileExistsError:
            if exists_ok:
                return False
            raise OwnershipError(f"{os.path.join(root.path, *rel.split('/'))} exists already; spmlkit writes a new "
                                 "file there and never reuses one") from None
        try:
            root.record("f", rel, os.fstat(fd), inplace=True)
        finally:
            os.close(fd)
    return True


def new_file(path: str | Path) -> Path:
    """Create ``path`` (which must not exist) empty inside an owned folder, listed, and
    return it for the caller to write — for folders renamed into place whole
    (:func:`build`), whose files need no rename of their own."""
    _create_at(path, exists_ok=False)
    return Path(path)


def touch(path: str | Path) -> Path:
    """Create the empty file ``path`` inside an owned folder (listed) unless spmlkit's is there."""
    target(path)
    root, rel = _locate(path)
    a = os.path.join(root.path, *rel.split("/"))
    if _lstat(a) is None and not _create_at(path, exists_ok=True):
        for _ in range(100):  # a parallel worker made it just now: it lists it at once
            st = _lstat(a)
            if st is not None and stat.S_ISREG(st.st_mode) and root.owns(rel, st, "f"):
                break
            time.sleep(0.01)
        return target(path)  # listed by then, or refused like any file of anyone else's
    return Path(path)


def record_new(folder_path: str | Path) -> None:
    """List the regular files another library created directly in the owned folder
    ``folder_path`` (TensorBoard's event files), which spmlkit made empty: they are its."""
    root, rel = _locate(Path(folder_path) / "x")
    a = os.path.join(root.path, *rel.split("/")[:-1]) if "/" in rel else root.path
    prefix = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
    for e in os.scandir(a):
        st = e.stat(follow_symlinks=False)
        r = prefix + e.name
        if stat.S_ISREG(st.st_mode) and root.entry_type(r) is None and not _TMP.match(e.name) \
                and e.name not in _SPECIAL:
            root.record("f", r, st, inplace=True)  # (still being written by its library)


def rename(src: str | Path, dst: str | Path) -> None:
    """Rename a file spmlkit wrote to ``dst`` in the same owned folder (checked like a
    write; both folders open as descriptors, so neither is followed through a link)."""
    rs, rel_s = _locate(src)
    a = os.path.join(rs.path, *rel_s.split("/"))
    st = _lstat(a)
    if st is None or not stat.S_ISREG(st.st_mode) or not rs.owns(rel_s, st, "f"):
        raise _refuse_foreign(a, rs)
    target(dst)
    with _opened_parent(src) as (rs, rel_s, sfd), _opened_parent(dst) as (rd, rel_d, dfd):
        now = lstat_at(sfd, rel_s.rsplit("/", 1)[-1])
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise _refuse_foreign(a, rs)
        _check_at(rd, rel_d, dfd, dst)
        rd.record("f", rel_d, st, at=a)
        os.replace(rel_s.rsplit("/", 1)[-1], rel_d.rsplit("/", 1)[-1], src_dir_fd=sfd, dst_dir_fd=dfd)
    rs.record("-", rel_s)

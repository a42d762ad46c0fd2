"""The path-based writers: each checks its path against the owned folder it lies in before
anything is written, and lists what it wrote in that folder's manifest."""
from __future__ import annotations

import contextlib
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
from .walks import _locate
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


def _record_file(path, tmp: str | Path | None = None) -> None:
    root, rel = _locate(path)
    st = os.lstat(tmp if tmp is not None else path)
    root.record("f", rel, st, at=None if tmp is None else str(tmp))


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """:func:`spmlkit.io.atomic_path` for a path inside an owned folder: checked first,
    listed (with the new file's inode) just before it is renamed into place."""
    target(path)
    with _io.atomic_path(path, before_replace=lambda tmp: _record_file(path, tmp)) as tmp:
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
    """Append one JSON line to a file spmlkit wrote (or a new one).  A file with other
    names (a hard link) is not appended to: it is rewritten atomically, so the other name
    keeps its bytes."""
    root, rel = _locate(path)
    a = os.path.join(root.path, *rel.split("/"))
    st = _lstat(a)
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1 and root.owns(rel, st, "f"):
        with open(a, "rb") as fh:
            old = fh.read()
        write_bytes(path, old + (json.dumps(record, default=_io._json_default) + "\n").encode("utf-8"))
        return
    target(path, inplace=True)
    if st is None:  # created here, listed before anything is written into it
        fd = os.open(a, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        os.close(fd)
        root.record("f", rel, os.lstat(a), inplace=True)
    else:
        root.inplace(rel, st)
    _io.append_jsonl(a, record)


def open_memmap(path: str | Path, *, mode: str, dtype=None, shape=None):
    """``np.lib.format.open_memmap`` of a file inside an owned folder: ``w+`` creates it
    new (an existing file of spmlkit's is replaced), ``r+`` opens one spmlkit wrote that has
    no other name; links and files of anyone else's are refused."""
    root, rel = _locate(path)
    a = os.path.join(root.path, *rel.split("/"))
    if mode == "w+":
        target(path)
        if _lstat(a) is not None:
            remove(path)
        fd = os.open(a, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        os.close(fd)
        root.record("f", rel, os.lstat(a), inplace=True)
        return np.lib.format.open_memmap(a, mode="w+", dtype=dtype, shape=shape)
    target(path, inplace=True)
    if mode != "r":
        root.inplace(rel, os.lstat(a))
    return _io.load_numpy(a, mmap=mode)


def copy_file(src: str | Path, dst: str | Path) -> None:
    """Copy ``src`` (a file spmlkit reads) to ``dst`` inside an owned folder, atomically."""
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)


def new_file(path: str | Path) -> Path:
    """Create ``path`` (which must not exist) empty inside an owned folder, listed, and
    return it for the caller to write — for folders renamed into place whole
    (:func:`build`), whose files need no rename of their own."""
    root, rel = _locate(path)
    a = os.path.join(root.path, *rel.split("/"))
    try:
        fd = os.open(a, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except FileExistsError:
        raise OwnershipError(f"{a} exists already; spmlkit writes a new file there and never reuses one") from None
    os.close(fd)
    root.record("f", rel, os.lstat(a), inplace=True)
    return Path(path)


def touch(path: str | Path) -> Path:
    """Create the empty file ``path`` inside an owned folder (listed) unless spmlkit's is there."""
    target(path)
    root, rel = _locate(path)
    a = os.path.join(root.path, *rel.split("/"))
    if _lstat(a) is None:
        try:
            fd = os.open(a, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        except FileExistsError:  # a parallel worker made it just now: it lists it at once
            for _ in range(100):
                st = _lstat(a)
                if st is not None and stat.S_ISREG(st.st_mode) and root.owns(rel, st, "f"):
                    break
                time.sleep(0.01)
            return target(path)  # listed by then, or refused like any file of anyone else's
        os.close(fd)
        root.record("f", rel, os.lstat(a), inplace=True)  # (a lock file: its holder writes its pid)
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
    """Rename a file spmlkit wrote to ``dst`` in the same owned folder (checked like a write)."""
    rs, rel_s = _locate(src)
    a = os.path.join(rs.path, *rel_s.split("/"))
    st = _lstat(a)
    if st is None or not stat.S_ISREG(st.st_mode) or not rs.owns(rel_s, st, "f"):
        raise _refuse_foreign(a, rs)
    target(dst)
    rd, rel_d = _locate(dst)
    rd.record("f", rel_d, st, at=a)
    os.replace(a, os.path.join(rd.path, *rel_d.split("/")))
    rs.record("-", rel_s)

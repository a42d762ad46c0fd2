"""Single output files (``spml predict -o FILE.csv``, ``spml clean -o FILE``, a map),
which have no folder of their own, under the folder rule: an existing file is replaced
only with ``--overwrite``, or when spmlkit's own record says spmlkit wrote it — never
because its content looks like spmlkit's.

The record is a sidecar beside the file, ``.NAME.spml-file`` (:data:`SIDECAR`):
``{"written_by": "spmlkit", "file": NAME, "ident": "DEV:INO:GEN:MTIME:SIZE"}``, the
identity of the file spmlkit renamed into place, as a manifest line records it
(:mod:`spmlkit.ownership.manifest`): a file replaced, edited or copied over by anyone
since is not spmlkit's any more.  The write itself happens inside the file's folder,
opened once and checked to be the folder that was checked (``dir_fd``), so a folder or a
file swapped for a link meanwhile is never written through."""
from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Iterable, Iterator

from .. import io as _io
from .manifest import _generation
from .rule import OwnershipError, UnownedPathError, _abs, _link_text, _lstat, refuse_inputs
from .walks import NOFOLLOW, lstat_at
from .writers import atomic_path

#: the owner record of a single output file ``NAME``: ``.NAME.spml-file`` beside it
SIDECAR = ".{}.spml-file"
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)

#: single output files checked by :func:`output_file`: path -> (the folder's (dev, ino), the file's or None, record)
_FILES: dict[str, tuple] = {}


def _ident(path: str, st: os.stat_result) -> str:
    return ":".join(str(v) for v in (st.st_dev, st.st_ino, _generation(path, st), st.st_mtime_ns, st.st_size))


def _read_record(dir_fd: int, name: str) -> dict | None | bool:
    """The owner record of ``name`` in the folder open as ``dir_fd``: the record (a dict),
    None when there is none, False when the name is taken by something not spmlkit's."""
    side = SIDECAR.format(name)
    st = lstat_at(dir_fd, side)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size > 4096:
        return False
    try:
        fd = os.open(side, os.O_RDONLY | NOFOLLOW, dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as fh:
            rec = json.loads(fh.read(4096).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    if isinstance(rec, dict) and rec.get("written_by") == "spmlkit" and rec.get("file") == name:
        return rec
    return False


def written_by_spmlkit(path: str | Path) -> bool:
    """True when ``path`` is a regular file that spmlkit's record beside it names: the same
    device, inode, generation, modification time and size as when spmlkit wrote it."""
    a = _abs(path)
    st = _lstat(a)
    if st is None or not stat.S_ISREG(st.st_mode):
        return False
    try:
        dfd = os.open(os.path.dirname(a), _DIR)
    except OSError:
        return False
    try:
        rec = _read_record(dfd, os.path.basename(a))
    finally:
        os.close(dfd)
    return isinstance(rec, dict) and rec.get("ident") == _ident(a, st)


def output_file(path: str | Path, *, inputs: Iterable = (), overwrite: bool = False, option: str = "-o/--out",
                what: str = "file", record: bool = True) -> Path:
    """``path`` as a single output file (``spml predict -o FILE.csv``): refused (one line)
    when it is a folder, a symbolic link, an input or inside one (:func:`refuse_inputs`,
    even with ``overwrite``), or an existing file that spmlkit's record does not name
    (:func:`written_by_spmlkit`), unless ``overwrite``.  The path is then writable with
    :func:`write_output_file` (replaced atomically: a hard link's other names keep their
    bytes), which leaves the record beside it (``record=False``: none, for a file only
    ever written with ``overwrite``, such as the repository's catalogue)."""
    p = Path(path)
    a = _abs(p)
    st = _lstat(a)
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise OwnershipError(f"{option} {p} is a symbolic link (to {_link_text(a)}); spmlkit never writes "
                             "through links — give the real path or remove the link")
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OwnershipError(f"{option} {p} is a folder; expected the path of the {what} to write")
    refuse_inputs(p, inputs, option=option)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OwnershipError(f"{option} {p} is not a regular file; choose another path")
    if st is not None and not overwrite and not written_by_spmlkit(a):
        raise OwnershipError(f"refusing to replace {p}: it is not a {what} spmlkit wrote (no record of spmlkit's "
                             f"names it: {SIDECAR.format(p.name)}); choose a new file with {option} or pass --overwrite")
    parent = os.path.dirname(a)
    pst = _lstat(parent)
    if pst is not None and stat.S_ISLNK(pst.st_mode):
        pst = os.stat(parent)  # (a folder given through a link of the user's: the folder it names now)
    if record and pst is not None:
        side = _lstat(os.path.join(parent, SIDECAR.format(p.name)))
        if side is not None and not _side_is_ours(parent, p.name):
            raise OwnershipError(f"{option} {p}: {os.path.join(os.path.dirname(str(p)), SIDECAR.format(p.name))}, "
                                 "where spmlkit records the files it writes, is not spmlkit's; move it away")
    _FILES[a] = (None if pst is None else (pst.st_dev, pst.st_ino), None if st is None else (st.st_dev, st.st_ino),
                 record)
    return p


def _side_is_ours(parent: str, name: str) -> bool:
    dfd = os.open(parent, _DIR)
    try:
        return isinstance(_read_record(dfd, name), dict)
    finally:
        os.close(dfd)


def is_checked_file(path: str | Path) -> bool:
    """True when :func:`output_file` accepted ``path`` in this process."""
    return _abs(path) in _FILES


@contextlib.contextmanager
def write_output_file(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (checked by :func:`output_file`), renamed over it
    at the end inside the folder checked then (open as a descriptor: a folder swapped
    meanwhile is refused) — unless what is there changed (a link, a folder, another file)
    meanwhile.  spmlkit's record of the new file is then written beside it."""
    a = _abs(path)
    if a not in _FILES:
        raise UnownedPathError(f"{path}: not checked by spmlkit.ownership.output_file")
    folder, ident, record = _FILES[a]
    name = os.path.basename(a)
    if folder is None:  # a new folder (made now, as for any output; nothing of anyone's is in it)
        os.makedirs(os.path.dirname(a), exist_ok=True)
        fst = os.stat(os.path.dirname(a))
        folder = (fst.st_dev, fst.st_ino)
    dfd = os.open(os.path.dirname(a), _DIR)
    try:
        pst = os.fstat(dfd)
        if (pst.st_dev, pst.st_ino) != folder:
            raise OwnershipError(f"the folder of {path} was replaced while spmlkit wrote it; nothing was written")

        def before(tmp: Path) -> None:
            st = lstat_at(dfd, name)
            if st is not None and (not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != ident):
                raise OwnershipError(f"{path} became a link, a folder or another file while spmlkit wrote it; "
                                     "nothing was replaced")

        with _io.atomic_path(path, before_replace=before, dir_fd=dfd) as tmp:
            yield tmp
        st = lstat_at(dfd, name)
        _FILES[a] = (folder, (st.st_dev, st.st_ino), record)
        if record:
            _write_record(dfd, a, name, st)
    finally:
        os.close(dfd)


def _write_record(dfd: int, a: str, name: str, st: os.stat_result) -> None:
    if _read_record(dfd, name) is False:  # (a file of anyone's under the record's name meanwhile)
        raise OwnershipError(f"{os.path.join(os.path.dirname(a), SIDECAR.format(name))}: not spmlkit's; the record "
                             f"of {a} was not written")
    gen = _generation(_io.fd_path(dfd, name) or a, st)
    ident = ":".join(str(v) for v in (st.st_dev, st.st_ino, gen, st.st_mtime_ns, st.st_size))
    text = json.dumps({"written_by": "spmlkit", "file": name, "ident": ident}) + "\n"
    side = Path(os.path.dirname(a), SIDECAR.format(name))
    with _io.atomic_path(side, dir_fd=dfd) as tmp:
        tmp.write_bytes(text.encode("utf-8"))


def replace_file(path: str | Path):
    """The context that writes ``path`` atomically: :func:`write_output_file` for a single
    output file :func:`output_file` checked, else :func:`atomic_path` (a file inside a folder
    this process owns)."""
    return write_output_file(path) if is_checked_file(path) else atomic_path(path)

"""One ownership rule for every file or folder spmlkit creates, replaces or deletes.

The rule (docs/files.md):

* **A folder is spmlkit's only if spmlkit made it.**  Making a folder (an output folder
  given with ``-o``, a bundle, a model folder, a scratch folder) writes a marker
  (:data:`MARKER`, ``{"written_by": "spmlkit", "kind": ...}``) and an append-only
  manifest (:data:`MANIFEST`) into it.  The manifest lists every file and folder spmlkit
  wrote there, with the device and inode each had: a file replaced by someone else under
  the same name is not spmlkit's any more.  An existing folder is accepted only when it is
  empty, holds spmlkit's marker of the same kind, or is a folder of that kind written by
  an older spmlkit (recognised by its own metadata; its entries that follow that kind's
  layout are listed, anything else stays foreign).
* **Nothing inside an owned folder is followed.**  A symbolic link, or a file or folder
  that is not listed (someone else's), met where spmlkit writes is refused in one line and
  left untouched; a file that has other names (a hard link) is replaced by name (atomic
  writes) and never modified in place.
* **Only what the manifest lists is ever removed**; ``--overwrite`` (:func:`check_clearable`)
  refuses when anything else is there.
* **An output is never an input**: an output path that is, contains or lies inside a
  file or folder the command reads is refused (:func:`refuse_inputs`), compared by device
  and inode, not by name.

Every writer in spmlkit calls this module: :func:`claim` (a command's output folder),
:func:`folder` (a folder inside one, or a library call's own folder), :func:`build` (a
folder written beside its target and renamed into place: ``spml prepare``), and the
path-based writers :func:`write_bytes`, :func:`write_text`, :func:`write_json`,
:func:`save_npy`, :func:`append_jsonl`, :func:`atomic_path`, :func:`open_memmap`,
:func:`copy_file`, :func:`rename`, :func:`mkdir`, :func:`remove`, which check the path
against the folder that owns it (registered in this process by one of the three calls
above) before anything is written, and record what they write.  The only other code that
touches the file system is :mod:`spmlkit.io` (the atomic-write helpers these call, and
the lock files of :class:`spmlkit.io.FolderLock`) and :func:`output_file` here (a single
file such as ``spml predict -o FILE.csv``, which has no folder of its own).
"""
from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import shutil
import stat
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from . import io as _io
from .io import check_input_paths  # noqa: F401  (an input check; kept in io, named here too)
from .errors import ConfigError, SpmlError

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
#: the temporaries :func:`spmlkit.io.atomic_path` writes beside a file (``.NAME.spml-XXXXXXXX.tmp``): spmlkit's by name
_TMP = re.compile(r"^\.(?P<name>.+)\.spml-[A-Za-z0-9_]+\.tmp$")


class OwnershipError(ConfigError):
    """A write, replacement or deletion that the ownership rule refuses (one line)."""


class UnownedPathError(RuntimeError):
    """A programming error: something in spmlkit tried to write a path that no folder
    claimed in this process owns (every writer must claim its folder first)."""


# --------------------------------------------------------------------------- kinds
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


# ------------------------------------------------------------------------ manifest
@dataclass
class _Entry:
    type: str                      # 'f', 'd' or 'o'
    #: (device, inode) -> (generation, stamp): the inode's generation number where the file
    #: system has one (``FS_IOC_GETVERSION``: a freed inode number given to someone else's new
    #: file or folder gets another), and for a file written whole its (mtime_ns, size) — None
    #: for a file spmlkit modifies in place (appended, memory-mapped) or a folder
    inodes: dict = field(default_factory=dict)


_GETVERSION = 0x80087601 if struct.calcsize("l") == 8 else 0x80047601  # _IOR('v', 1, long)


def _generation(path: str, st: os.stat_result | None) -> int | None:
    """The generation number of the inode at ``path`` (a regular file or a folder, opened
    without following links), or None where the file system (or the platform) has none."""
    if st is None or not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return None
    try:
        import fcntl  # lazy: POSIX only
    except ImportError:  # pragma: no cover - not POSIX
        return None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | (getattr(os, "O_DIRECTORY", 0) if stat.S_ISDIR(st.st_mode) else 0))
    except OSError:
        return None
    try:
        if os.fstat(fd).st_ino != st.st_ino:
            return None
        return struct.unpack("l", fcntl.ioctl(fd, _GETVERSION, b"\0" * struct.calcsize("l")))[0]
    except OSError:
        return None
    finally:
        os.close(fd)


class _Root:
    """A folder this process owns (registered by :func:`claim`, :func:`folder` or :func:`build`)."""

    def __init__(self, path: str, kind: str, created: bool, shown: str | None = None):
        self.path = path
        self.shown = shown or path  # as the user spelled it (messages)
        self.kind = kind
        self.created = created
        st = os.stat(path)
        self.ident = (st.st_dev, st.st_ino)
        self.entries: dict[str, _Entry] = {}
        self._mkey = None
        self._offset = 0
        mark = _read_marker(path)
        if mark is not None and mark.get("folder") not in (None, f"{st.st_dev}:{st.st_ino}"):
            self._copied()

    def _copied(self) -> None:
        """The folder was copied (or moved to another file system) whole since spmlkit
        wrote it: every file and folder in it has another inode.  What the manifest lists
        by name, found as a regular file or a real folder, is spmlkit's (the copy's), and
        the marker records the folder's new identity."""
        self.refresh()
        for rel, e in sorted(self.entries.items()):
            st = _lstat(os.path.join(self.path, *rel.split("/")))
            if st is None or (e.type == "f" and not stat.S_ISREG(st.st_mode)) or \
                    (e.type != "f" and not stat.S_ISDIR(st.st_mode)):
                continue
            if not self.owns(rel, st):
                self.record(e.type, rel, st)
        _write_marker(self.path, self.kind)

    # ---- the manifest file
    @property
    def manifest(self) -> str:
        return os.path.join(self.path, MANIFEST)

    def _missing(self) -> OwnershipError:
        return OwnershipError(f"{self.path}: spmlkit's list of what it wrote there ({MANIFEST}) is missing; "
                              "the folder was changed by someone else — choose another -o")

    def refresh(self) -> None:
        try:
            st = os.lstat(self.manifest)
        except FileNotFoundError:
            raise self._missing() from None
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise OwnershipError(f"{self.manifest}: is not spmlkit's manifest (a link or not a regular file); "
                                 "refusing to use the folder — choose another -o")
        key = (st.st_dev, st.st_ino)
        if key != self._mkey or st.st_size < self._offset:  # another file, or rewritten: read it all
            self.entries, self._offset, self._mkey = {}, 0, key
        if st.st_size == self._offset:
            return
        fd = os.open(self.manifest, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            data = os.pread(fd, st.st_size - self._offset, self._offset)
        finally:
            os.close(fd)
        end = data.rfind(b"\n") + 1  # a partial last line (a writer mid-append) is read next time
        for line in data[:end].decode("utf-8", "replace").splitlines():
            parts = line.split(" ", 2)
            if len(parts) != 3 or parts[0] not in ("f", "d", "o", "-"):
                continue
            t, ident, rel = parts
            if t == "-":
                self.entries.pop(rel, None)
                continue
            try:  # DEV:INO:GEN:MTIME:SIZE, '-' where there is none
                nums = [None if x == "-" else int(x) for x in ident.split(":")]
            except ValueError:
                continue
            if len(nums) != 5 or nums[0] is None or nums[1] is None:
                continue
            e = self.entries.get(rel)
            if e is None or e.type != t:
                e = self.entries[rel] = _Entry(t)
            e.inodes[(nums[0], nums[1])] = (nums[2], None if nums[3] is None else (nums[3], nums[4]))
        self._offset += end

    def record(self, t: str, rel: str, st: os.stat_result | None = None, *, inplace: bool = False,
               at: str | None = None) -> None:
        """List ``rel`` (``t``: 'f', 'd', 'o'; '-': removed) with its inode, the inode's
        generation and, for a file written whole (not ``inplace``), its modification time and
        size.  ``at``: where the inode is now, when not at ``rel`` yet (a temporary file)."""
        if "\n" in rel or "\r" in rel:
            raise OwnershipError(f"{os.path.join(self.path, rel)}: spmlkit does not write names holding a line break")
        stamp = (st.st_mtime_ns, st.st_size) if st is not None and t == "f" and not inplace else None
        gen = _generation(at or os.path.join(self.path, *rel.split("/")), st) if st is not None else None
        ident = "0:0:-:-:-" if st is None else ":".join("-" if v is None else str(v) for v in (
            st.st_dev, st.st_ino, gen, *(stamp or (None, None))))
        line = f"{t} {ident} {rel}\n".encode("utf-8")
        try:
            fd = os.open(self.manifest, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:  # (a folder removed and made again at the same inode number: one line)
            raise self._missing() from None
        try:
            if os.fstat(fd).st_nlink != 1:
                raise OwnershipError(f"{self.manifest}: has other names (a hard link); refusing to write it")
            os.write(fd, line)
        finally:
            os.close(fd)
        if t == "-":
            self.entries.pop(rel, None)
        else:
            e = self.entries.get(rel)
            if e is None or e.type != t:
                e = self.entries[rel] = _Entry(t)
            e.inodes[(st.st_dev, st.st_ino)] = (gen, stamp)

    def show(self, rel: str = "") -> str:
        return os.path.join(self.shown, *rel.split("/")) if rel else self.shown

    def owns(self, rel: str, st: os.stat_result, types: str = "fdo") -> bool:
        self.refresh()
        e = self.entries.get(rel)
        if e is None or e.type not in types or (st.st_dev, st.st_ino) not in e.inodes:
            return False
        gen, stamp = e.inodes[(st.st_dev, st.st_ino)]
        if stamp is not None and stamp != (st.st_mtime_ns, st.st_size):
            return False
        if gen is not None:
            now = _generation(os.path.join(self.path, *rel.split("/")), st)
            if now is not None and now != gen:
                return False
        return True

    def inplace(self, rel: str, st: os.stat_result) -> None:
        """``rel`` (spmlkit's file) is about to be modified in place: listed without a stamp."""
        e = self.entries.get(rel)
        if e is None or e.inodes.get((st.st_dev, st.st_ino), (None, ()))[1] is not None:
            self.record("f", rel, st, inplace=True)

    def entry_type(self, rel: str) -> str | None:
        self.refresh()
        e = self.entries.get(rel)
        return None if e is None else e.type


_ROOTS: dict[str, _Root] = {}
_FILES: dict[str, tuple[int, int] | None] = {}  # single output files checked by output_file()


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


def _refuse_foreign(path: str, root: _Root, what: str = "file") -> OwnershipError:
    return OwnershipError(f"{path}: this {what} was not written by spmlkit (it is not listed in "
                          f"{root.show(MANIFEST)}); refusing to replace it — move it away or choose another -o")


# --------------------------------------------------------------------------- markers
def _read_marker(path: str) -> dict | None:
    """The marker of folder ``path`` when it is spmlkit's (a regular single-name file with
    ``written_by: spmlkit`` and a kind), else None."""
    m = os.path.join(path, MARKER)
    st = _lstat(m)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size > 4096:
        return None
    try:
        fd = os.open(m, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            mark = json.loads(os.read(fd, 4096).decode("utf-8"))
        finally:
            os.close(fd)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if isinstance(mark, dict) and mark.get("written_by") == "spmlkit" and isinstance(mark.get("kind"), str):
        return mark
    return None


def folder_kind(path: str | Path) -> str | None:
    """The kind recorded in ``path``'s marker (None when it has none)."""
    mark = _read_marker(_abs(path))
    return None if mark is None else mark["kind"]


def _write_marker(path: str, kind: str) -> None:
    st = os.stat(path)
    _io.write_text(os.path.join(path, MARKER),
                   json.dumps({"written_by": "spmlkit", "kind": kind, "manifest": MANIFEST,
                               "folder": f"{st.st_dev}:{st.st_ino}"}) + "\n")
    fd = os.open(os.path.join(path, MANIFEST), os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0),
                 0o666)
    os.close(fd)


def _adopt_layout(root: _Root, kind: Kind) -> None:
    """List the entries of an older spmlkit's folder that follow ``kind``'s layout (regular
    files with one name, real folders; never links): they are spmlkit's from now on."""
    root.refresh()

    def adopt(path: str, rel: str) -> None:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            if not root.owns(rel, st, "d"):
                root.record("d", rel, st)
            for e in os.scandir(path):
                adopt(e.path, f"{rel}/{e.name}")
        elif stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and not root.owns(rel, st, "f"):
            root.record("f", rel, st)

    for e in os.scandir(root.path):
        if e.name not in _SPECIAL and _in_layout(e.name, kind):
            adopt(e.path, e.name)


# --------------------------------------------------------------------- inputs
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


def _registered(a: str) -> tuple[_Root, str] | None:
    """The registered folder owning absolute path ``a`` (the innermost) and ``a`` relative to it."""
    p = a
    while True:
        root = _ROOTS.get(p)
        if root is not None:
            _validate(root)
            rel = os.path.relpath(a, p)
            return root, ("" if rel == "." else rel.replace(os.sep, "/"))
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent


def _validate(root: _Root) -> None:
    """The folder at ``root.path`` is still the one registered (it may have been removed,
    or replaced by ``spml prepare --overwrite`` or by someone else)."""
    try:
        st = os.stat(root.path)
        same = (st.st_dev, st.st_ino) == root.ident
    except OSError:
        same = False
    if same:
        return
    mark = _read_marker(root.path) if os.path.isdir(root.path) else None
    if mark is None or mark.get("kind") != root.kind:
        _ROOTS.pop(root.path, None)
        raise OwnershipError(f"{root.path} was removed or replaced by someone else while spmlkit was using it; "
                             "nothing more is written there")
    fresh = _Root(root.path, root.kind, False)
    root.__dict__.update(fresh.__dict__)


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


def mkdir(path: str | Path) -> Path:
    """Make (or check) the folder ``path`` inside an owned folder; returns ``path``."""
    a = _abs(path)
    reg = _registered(a)
    if reg is None:
        raise UnownedPathError(f"{path}: not inside a folder this process claimed")
    if reg[1]:
        _ensure_dir(*reg)
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
        os.unlink(a)
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
        if left:
            return False
        os.rmdir(a)
        root.record("-", rel)
        return True
    if stat.S_ISDIR(st.st_mode) and root.owns(rel, st, "o"):
        ok = discard(a)
        if ok:
            root.record("-", rel)
        return ok
    return False


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


def _in_layout(name: str, k: Kind) -> bool:
    return any(fnmatch.fnmatchcase(name, pat) for pat in k.layout)


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
        if _lstat(os.path.join(a, MANIFEST)) is None:
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


# --------------------------------------------------------------- build and rename
def _remove_abandoned_builds(out: str) -> None:
    """Delete the temporary ``.NAME.XXXX/`` build folders that :func:`build` left in
    ``out``'s parent folder when its process was killed (of any target there): only
    folders holding the owner file, and only when no process holds it locked (a running
    build keeps it locked; the kernel releases it when the process dies).  Owner files of
    older versions hold a pid alone: removed when that process no longer exists."""
    try:
        import fcntl  # lazy: POSIX only
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None
    parent = os.path.dirname(out)
    for name in os.listdir(parent):
        if not name.startswith("."):
            continue
        d = os.path.join(parent, name)
        owner = os.path.join(d, BUILD_OWNER)
        sd, so = _lstat(d), _lstat(owner)
        if sd is None or not stat.S_ISDIR(sd.st_mode) or so is None or not stat.S_ISREG(so.st_mode):
            continue
        try:
            with open(owner, encoding="ascii") as fh:
                words = fh.read(64).split()
            pid = int(words[0])
        except (ValueError, OSError, IndexError, UnicodeDecodeError):
            continue
        if "flock" in words[1:]:
            if fcntl is None:
                continue
            try:
                fd = os.open(owner, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)  # its build is still running
                continue
            try:
                _discard_build(d)
            finally:
                os.close(fd)
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            _discard_build(d)
        except OSError:
            continue


def _discard_build(d: str) -> None:
    """Remove an abandoned build folder: by its manifest when it has one (a build of this
    version), else (an older version's, made by ``mkdtemp`` and never anyone else's) whole."""
    if _read_marker(d) is not None and _lstat(os.path.join(d, MANIFEST)) is not None:
        discard(d)
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(d, BUILD_OWNER))
            os.rmdir(d)
    else:
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def build(out: str | Path, kind: str, *, replace: bool = False, inputs: Iterable = (),
          option: str = "-o/--out") -> Iterator[Path]:
    """Write a folder of ``kind`` into a temporary sibling ``.NAME.XXXX/`` (owned, yielded)
    and rename it to ``out`` at the end: over nothing, an empty folder, or (``replace``)
    the folder of ``kind`` spmlkit wrote there, which must hold nothing else
    (:func:`check_clearable`, checked again under the lock: a folder that appeared meanwhile
    is never removed).  The old folder is removed by its manifest after the rename.  On an
    exception the temporary folder is removed and ``out`` is left as it was."""
    import fcntl  # lazy: POSIX only

    out_a = _abs(out)
    parent_a = os.path.dirname(out_a)
    reg = _registered(parent_a)
    ensure_parent(out_a)
    _remove_abandoned_builds(out_a)
    tmp = _io.mkdtemp_like_umask(prefix=f".{os.path.basename(out_a)}.", dir=parent_a)
    owner = tmp / BUILD_OWNER
    _io.write_text(owner, f"{os.getpid()}\nflock\n")  # held locked while building
    owner_fd = os.open(owner, os.O_RDONLY)
    fcntl.flock(owner_fd, fcntl.LOCK_EX)
    tmp_a = str(tmp)
    old = None
    try:
        _write_marker(tmp_a, kind)
        _ROOTS[tmp_a] = _Root(tmp_a, kind, True)
        yield tmp
        os.unlink(owner)
        if os.path.lexists(out_a):
            if (replace and not os.path.islink(out_a) and os.path.isdir(out_a)
                    and (folder_kind(out_a) == kind or (folder_kind(out_a) is None and _kind(kind).is_ours
                                                        and _kind(kind).is_ours(Path(out_a))))):
                check_clearable(out_a, kind, inputs=inputs)  # again, under the lock
                old = tmp_a + ".old"
                os.rename(out_a, old)
            elif os.path.isdir(out_a) and not os.path.islink(out_a) and not os.listdir(out_a):
                os.rmdir(out_a)  # an empty folder (nothing of anyone's is in it)
            else:
                raise OwnershipError(f"{out} appeared (or changed) while it was being built and is not {_kind(kind).what}"
                                     f" spmlkit wrote; nothing was replaced — choose another {option}")
        try:
            os.rename(tmp_a, out_a)
        except OSError as exc:
            raise OwnershipError(f"{out}: cannot move the new folder into place ({exc.strerror or exc}); nothing "
                                 "was replaced") from None
        root = _ROOTS.pop(tmp_a)
        root.path, root.shown = out_a, str(out)
        _ROOTS[out_a] = root
        if reg is not None:  # a folder owned on its own inside another owned folder (a bench's bundles/NAME)
            preg = _registered(parent_a)
            prel = (preg[1] + "/" if preg[1] else "") + os.path.basename(out_a)
            proot, pr = _walk_dirs(preg[0], prel, create=True)
            proot.record("o", pr, os.lstat(out_a))
    except BaseException:
        if old is not None and not os.path.lexists(out_a):
            os.rename(old, out_a)  # put the previous folder back
            old = None
        _ROOTS.pop(tmp_a, None)
        if os.path.isdir(tmp_a):
            _discard_build(tmp_a)
        raise
    finally:
        os.close(owner_fd)
    if old is not None:
        _ROOTS.pop(old, None)
        if folder_kind(old) is None or _lstat(os.path.join(old, MANIFEST)) is None:
            claim(old, kind, own=True)  # an older spmlkit's folder: what follows the layout is listed first
        if not discard(old):
            print(f"spml: warning: {old}: kept — it holds files spmlkit did not write", file=sys.stderr)


# ---------------------------------------------------------------- single files
def output_file(path: str | Path, *, inputs: Iterable = (), overwrite: bool = False,
                is_ours: Callable[[Path], bool] | None = None, option: str = "-o/--out",
                what: str = "file") -> Path:
    """``path`` as a single output file (``spml predict -o FILE.csv``): refused (one line)
    when it is a folder, a symbolic link, an input or inside one (:func:`refuse_inputs`,
    even with ``overwrite``), or an existing file that ``is_ours`` does not recognise as
    one spmlkit wrote, unless ``overwrite``.  The path is then writable with
    :func:`write_output_file` (replaced atomically: a hard link's other names keep their bytes)."""
    p = Path(path)
    st = _lstat(_abs(p))
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise OwnershipError(f"{option} {p} is a symbolic link (to {_link_text(_abs(p))}); spmlkit never writes "
                             "through links — give the real path or remove the link")
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OwnershipError(f"{option} {p} is a folder; expected the path of the {what} to write")
    refuse_inputs(p, inputs, option=option)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OwnershipError(f"{option} {p} is not a regular file; choose another path")
    if st is not None and not overwrite and not (is_ours is not None and is_ours(p)):
        raise OwnershipError(f"refusing to replace {p}: it is not a {what} spmlkit wrote; choose a new file with "
                             f"{option} or pass --overwrite")
    _FILES[_abs(p)] = None if st is None else (st.st_dev, st.st_ino)
    return p


def is_checked_file(path: str | Path) -> bool:
    """True when :func:`output_file` accepted ``path`` in this process."""
    return _abs(path) in _FILES


@contextlib.contextmanager
def write_output_file(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (checked by :func:`output_file`), renamed over it
    at the end — unless what is there changed into a link or a folder meanwhile."""
    a = _abs(path)
    if a not in _FILES:
        raise UnownedPathError(f"{path}: not checked by spmlkit.ownership.output_file")
    with _io.atomic_path(path, before_replace=lambda tmp: _recheck_file(path)) as tmp:
        yield tmp


def replace_file(path: str | Path):
    """The context that writes ``path`` atomically: :func:`write_output_file` for a single
    output file :func:`output_file` checked, else :func:`atomic_path` (a file inside a folder
    this process owns)."""
    return write_output_file(path) if is_checked_file(path) else atomic_path(path)


def _recheck_file(path) -> None:
    st = _lstat(_abs(path))
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OwnershipError(f"{path} became a link or a folder while spmlkit wrote it; nothing was replaced")


# ------------------------------------------------------------- temporary folders
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

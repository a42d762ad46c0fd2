"""The marker and the append-only manifest of an owned folder (:data:`~spmlkit.ownership.rule.MARKER`,
:data:`~spmlkit.ownership.rule.MANIFEST`): their format, and the folders this process owns
(:data:`_ROOTS`).  A manifest line is ``T DEV:INO:GEN:MTIME:SIZE REL`` (``-`` where a field has
no value); ``T`` is ``f`` (a file), ``d`` (a folder), ``o`` (a folder owned on its own: its own
marker and manifest) or ``-`` (removed)."""
from __future__ import annotations

import json
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .. import io as _io
from .rule import MANIFEST, MARKER, OwnershipError, _abs, _lstat


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


def _refuse_foreign(path: str, root: _Root, what: str = "file") -> OwnershipError:
    return OwnershipError(f"{path}: this {what} was not written by spmlkit (it is not listed in "
                          f"{root.show(MANIFEST)}); refusing to replace it — move it away or choose another -o")


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

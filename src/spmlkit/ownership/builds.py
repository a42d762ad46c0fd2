"""Folders written beside their target and renamed into place (:func:`build`: ``spml prepare``),
and the abandoned build folders of killed processes."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .. import io as _io
from ..errors import SpmlError
from .rule import BUILD_OWNER, MANIFEST, OwnershipError, _abs, _kind, _lstat
from .manifest import _ROOTS, _Root, _read_marker, _registered, _write_marker, folder_kind
from .walks import _walk_dirs, ensure_parent
from .folders import claim
from .removal import check_clearable, discard


#: the names :func:`build` gives its temporary folders (``.TARGET.XXXXXXXX``): a hidden folder of
#: another name (``.cache``, ``.git``) is never taken for one, whatever it holds
_BUILD_NAME = re.compile(r"^\.[^.].*\.[^.]+$")


def _remove_abandoned_builds(out: str) -> None:
    """Delete what spmlkit wrote in the temporary ``.NAME.XXXXXXXX/`` build folders that
    :func:`build` left in ``out``'s parent folder when its process was killed (of any
    target there): only folders of that name holding the owner file, only when no process
    holds it locked (a running build keeps it locked; the kernel releases it when the
    process dies), and only what their manifest lists (:func:`_discard_build`).  Owner files
    of older versions hold a pid alone: considered when that process no longer exists."""
    try:
        import fcntl  # lazy: POSIX only
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None
    parent = os.path.dirname(out)
    for name in os.listdir(parent):
        if not _BUILD_NAME.match(name):
            continue
        d = os.path.join(parent, name)
        owner = os.path.join(d, BUILD_OWNER)
        sd, so = _lstat(d), _lstat(owner)
        if sd is None or not stat.S_ISDIR(sd.st_mode) or so is None or not stat.S_ISREG(so.st_mode):
            continue
        try:
            fd = os.open(owner, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                words = fh.read(64).decode("ascii").split()
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


def _discard_build(d: str, *, made_here: tuple[int, int] | None = None) -> None:
    """Remove an abandoned build folder by its manifest (what it lists, then the folder
    when nothing else is left).  A folder without one (an older version's, or anything
    else holding an owner file) is left as it is: a marker or an owner file alone never
    makes a folder removable.  ``made_here``: the (device, inode) of the folder this process
    made for its own build, which failed — removed whole when its manifest cannot do it
    (the failure came before the manifest existed, or it cannot be written: a full disk, a
    file-size limit)."""
    if _read_marker(d) is not None and _lstat(os.path.join(d, MANIFEST)) is not None:
        try:
            discard(d)
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(d, BUILD_OWNER))
                os.rmdir(d)
        except (OSError, SpmlError):
            if made_here is None:
                raise
    st = _lstat(d) if made_here is not None else None
    if st is not None and stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == made_here:
        shutil.rmtree(d, ignore_errors=True)  # (rmtree never follows a link)


def _file_size_errors() -> Callable[[], None]:
    """A file-size limit (``ulimit -f``) reached while building: an ``OSError`` (EFBIG) that
    removes the build folder like any failure, not the ``SIGXFSZ`` that would kill the
    process and leave it behind.  Returns the call that restores the previous handler
    (signals are set only in the main thread; elsewhere nothing changes)."""
    sig = getattr(signal, "SIGXFSZ", None)
    if sig is None or threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(sig, signal.SIG_IGN)
    return lambda: signal.signal(sig, previous)


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
    tmp_a = str(tmp)
    made = os.lstat(tmp_a)
    old = owner_fd = None
    restore = _file_size_errors()
    try:
        _io.write_text(owner, f"{os.getpid()}\nflock\n")  # held locked while building
        owner_fd = os.open(owner, os.O_RDONLY)
        fcntl.flock(owner_fd, fcntl.LOCK_EX)
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
            _discard_build(tmp_a, made_here=(made.st_dev, made.st_ino))
        raise
    finally:
        if owner_fd is not None:
            os.close(owner_fd)
        restore()
    if old is not None:
        _ROOTS.pop(old, None)
        if folder_kind(old) is None or _lstat(os.path.join(old, MANIFEST)) is None:
            claim(old, kind, own=True)  # an older spmlkit's folder: what follows the layout is listed first
        if not discard(old):
            print(f"spml: warning: {old}: kept — it holds files spmlkit did not write", file=sys.stderr)

"""Atomic file output, checksums, JSON helpers, lock files and checked readers.

Nothing the toolkit writes is ever left half-written: every file goes to a temporary
file in the same directory, is flushed and fsync'ed, and is then renamed over the
target (``os.replace`` is atomic on POSIX and Windows).

The writers here are the low-level helpers of :mod:`spmlkit.ownership`, which checks
every path against the folder that owns it first; the rest of spmlkit writes through
that module, never through these directly.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import gzip
import hashlib
import io
import json
import os
import pickle
import stat
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from . import reading
from .errors import ConfigError, CorruptFileError, DataFormatError


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def fd_path(dir_fd: int, name: str) -> Path:
    """A path to ``name`` inside the folder open as ``dir_fd`` that every later open resolves
    through that descriptor (Linux's ``/proc/self/fd/N/NAME``): a folder swapped for a link
    after it was opened is not followed.  Where there is no such path, the folder's own path
    is not known here: ``name`` relative to the descriptor is then unavailable (None)."""
    d = f"/proc/self/fd/{dir_fd}"
    return Path(d, name) if os.path.isdir(d) else None


def _new_temporary(path: Path, dir_fd: int | None) -> tuple[Path, str]:
    """A new, empty ``.NAME.spml-XXXXXXXX.tmp`` beside ``path`` (inside ``dir_fd`` when
    given, created with ``O_EXCL | O_NOFOLLOW``): ``(its path, its name)``.  ``XXXXXXXX`` is
    mkstemp's 8 random characters, or inside ``dir_fd`` 10 random hex digits: the temporary's
    name is at most 21 bytes longer than ``path``'s, so names of up to NAME_MAX − 21 bytes
    are written this way."""
    if dir_fd is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # '.NAME.spml-XXXXXXXX.tmp': spmlkit's by its name (spmlkit.ownership removes those a killed writer left)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.spml-", suffix=".tmp", dir=path.parent)
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; give results the usual permissions
        return Path(tmp), os.path.basename(tmp)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        name = f".{path.name}.spml-{os.urandom(5).hex()}.tmp"
        try:
            fd = os.open(name, flags, 0o666, dir_fd=dir_fd)  # (the umask applies, as for any new file)
        except FileExistsError:
            continue
        os.close(fd)
        return (fd_path(dir_fd, name) or path.with_name(name)), name
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(path))


@contextlib.contextmanager
def atomic_path(path: str | Path, *, before_replace: "Callable[[Path], None] | None" = None,
                dir_fd: int | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it is renamed to ``path``.

    On an exception the temporary file is removed and ``path`` is left untouched.
    ``before_replace(tmp)`` runs once the temporary file is complete, just before the
    rename (:mod:`spmlkit.ownership` lists the new file there).  ``dir_fd``: ``path``'s
    folder, opened (and checked) by the caller: the temporary file is created in it and
    renamed within it, and the yielded path resolves through it (:func:`fd_path`), so a
    folder swapped for a link between the check and the write is never written through.
    """
    path = Path(path)
    tmp_path, tmp_name = _new_temporary(path, dir_fd)
    rel = {} if dir_fd is None else {"src_dir_fd": dir_fd, "dst_dir_fd": dir_fd}
    src, dst = (tmp_path, path) if dir_fd is None else (tmp_name, path.name)
    try:
        try:
            yield tmp_path
            fd = os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=dir_fd)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            if exc.errno is None:  # numpy's short write ("N requested and M written") names no cause
                raise OSError(errno.EIO, f"write failed ({exc}): the disk is full or a file size limit "
                                         "(ulimit -f) was reached", str(path)) from None
            if exc.filename is None or str(exc.filename) in (str(tmp_path), tmp_name):  # name the file written
                raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
            raise
        if before_replace is not None:
            before_replace(tmp_path)
        os.replace(src, dst, **rel)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(src, dir_fd=dir_fd)
        raise


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def _json_default(obj: Any):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "__dataclass_fields__"):
        return dataclasses.asdict(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, default=_json_default, allow_nan=True) + "\n"


def write_json(path: str | Path, obj: Any) -> None:
    write_text(path, dumps_json(obj))


def dumps_json_gz(obj: Any) -> bytes:
    """``obj`` as gzip-compressed JSON bytes.  The archive records no time and no file name,
    so the same ``obj`` gives the same bytes (re-running a bench on finished groups leaves its
    record unchanged).  Large run records (a bench's ``runs.json.gz``) are stored so: JSON of
    floats compresses about 5:1.  Written by :func:`spmlkit.ownership.write_json_gz`."""
    return gzip.compress(dumps_json(obj).encode("utf-8"), compresslevel=9, mtime=0)


def write_json_gz(path: str | Path, obj: Any) -> None:
    """:func:`dumps_json_gz` written atomically to a path outside spmlkit's owned folders
    (tests, benchmark scratch); the package writes through :mod:`spmlkit.ownership`."""
    write_bytes(path, dumps_json_gz(obj))


def read_json(path: str | Path) -> Any:
    """The JSON in ``path``; ``*.gz`` files are decompressed first (:func:`write_json_gz`).
    Read under the reader rule (:func:`spmlkit.reading.read_json`: a regular file, a
    capped decompression, no recursion without end); invalid JSON or a damaged archive:
    :class:`~spmlkit.errors.DataFormatError` naming the file."""
    return reading.read_json(path)


def json_record_path(path: str | Path) -> Path:
    """The stored form of the record ``path`` names (``F/runs.json``): ``F/runs.json.gz``,
    the compressed form the writers use, when it exists, else ``F/runs.json`` when that
    exists (written before records were compressed), else the ``.gz`` path (where a new
    record goes)."""
    path = Path(path)
    gz = path if path.suffix == ".gz" else path.with_name(path.name + ".gz")
    plain = path.with_name(gz.name[:-3])
    if gz.exists() or not plain.exists():
        return gz
    return plain


def read_json_record(path: str | Path) -> Any:
    """The record ``path`` names (``F/runs.json``), read from ``F/runs.json.gz`` or, for a
    folder written before records were compressed, ``F/runs.json``
    (:func:`json_record_path`).  ``FileNotFoundError`` (naming the ``.gz``) when neither exists."""
    return read_json(json_record_path(path))


def append_jsonl(path: str | Path, record: dict) -> None:
    """Append one JSON line. Appends are line-atomic for small records on POSIX; the
    readers in this package ignore a trailing partial line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=_json_default) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        if exc.filename is None:  # a failed write names no file: name it (a full disk says where)
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise


def read_jsonl(path: str | Path) -> list[dict]:
    out = []
    path = Path(path)
    if not path.exists():
        return out
    for line in reading.read_bytes(path).decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a partial last line from a killed writer
            break
        if not isinstance(rec, dict):  # not a record spmlkit wrote: read no further
            break
        out.append(rec)
    return out


def save_npy(path: str | Path, array: np.ndarray) -> None:
    """Atomically save an array in ``.npy`` format (loadable with ``mmap_mode``)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(array), allow_pickle=False)


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def torch_save_atomic(obj: Any, path: str | Path) -> str:
    """``torch.save`` to ``path`` atomically; returns the SHA-256 of the written bytes."""
    import torch  # lazy: torch-free CLI start-up

    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    write_bytes(path, data)
    return sha256_bytes(data)


# ------------------------------------------------------------ folders and locks
def check_input_paths(paths) -> None:
    """Every input path given (None: not given) that exists must be a regular file or a
    folder: a device or a pipe (``/dev/zero``) would be read until memory runs out."""
    for p in paths:
        if p is None:
            continue
        q = Path(p)
        if q.exists() and not q.is_file() and not q.is_dir():
            raise ConfigError(f"{q}: not a regular file or folder (a device, a pipe or a socket); give a data file")


def mkdtemp_like_umask(prefix: str, dir: str | Path) -> Path:
    """``tempfile.mkdtemp`` (a fresh private folder) given the permissions a normal
    ``mkdir`` would have (mkdtemp creates 0700): the folder becomes a user's output."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=dir))
    os.chmod(tmp, 0o777 & ~_UMASK)
    return tmp


class FolderLock:
    """An exclusive advisory lock on ``folder/.spml.lock`` (``fcntl.flock``): a second
    spmlkit process writing the same folder is refused with a one-line
    :class:`ConfigError`; the kernel drops the lock when its process dies (even by
    SIGKILL), so a killed run never leaves it stuck.  A no-op where ``fcntl`` is missing.

    The lock file is opened with ``O_NOFOLLOW`` and must be a regular file with one link
    holding nothing but spmlkit's ``pid N`` line: a symbolic link, a hard link or a file
    of someone else's planted under that name is refused, never truncated or written.
    ``lock_file`` (a path) locks that file instead of ``folder/.spml.lock`` (``spml
    prepare`` locks a sibling of the bundle it builds); ``remove=True`` deletes it on
    release (safely: a waiting process re-checks that the file it locked is still the
    one on disk)."""

    NAME = ".spml.lock"

    def __init__(self, folder: str | Path, *, what: str = "folder", lock_file: str | Path | None = None,
                 remove: bool = False, shared: bool = False, block: bool = False, busy: str | None = None):
        self.folder = Path(folder)
        self.what = what
        self.path = Path(lock_file) if lock_file is not None else self.folder / self.NAME
        self.remove = remove
        self.shared = shared  # a shared lock (bench shards): any number together, none beside an exclusive one
        self.block = block    # wait for the lock instead of refusing
        self.busy = busy      # the message when it is held (default: "... in use by another spml process")
        self._fd: int | None = None

    def _open(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags, 0o666)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW on a symbolic link
                raise ConfigError(f"{self.path}: is a symbolic link, not spmlkit's lock file; refusing to follow "
                                  "it (remove the link, or choose another -o)") from None
            raise
        st = os.fstat(fd)

        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            raise ConfigError(f"{self.path}: is not spmlkit's lock file ("
                              + ("not a regular file" if not stat.S_ISREG(st.st_mode) else "a hard link to another "
                                 "file") + "); refusing to use it (remove it, or choose another -o)")
        head = os.pread(fd, 64, 0)
        if st.st_size > 32 or (head and not _LOCK_TEXT.match(head)):
            os.close(fd)
            raise ConfigError(f"{self.path}: holds something other than spmlkit's lock ('pid N'); refusing to "
                              "overwrite it (move it away, or choose another -o)")
        return fd

    def acquire(self) -> "FolderLock":
        try:
            import fcntl  # lazy: POSIX only
        except ImportError:  # pragma: no cover - not POSIX
            return self
        # (the folder exists: spmlkit.ownership made or checked it); a holder that removes its
        # lock file on release: retry on the new file
        for _ in range(20):
            fd = self._open()
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | (0 if self.block else fcntl.LOCK_NB))
            except OSError:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "another process"
                os.close(fd)
                raise ConfigError((self.busy or "{folder} is in use by another spml process ({holder}); wait for it "
                                   "to finish or choose another -o").format(folder=self.folder, holder=holder)) from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path, follow_symlinks=False))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # removed (or replaced) by its previous holder between our open and flock
        else:  # pragma: no cover - a lock file replaced twenty times in a row
            raise ConfigError(f"{self.path}: keeps changing; is another spml process using {self.folder}?")
        if not self.shared:  # (a shared lock's holders would overwrite each other's line)
            text = f"pid {os.getpid()}\n".encode("ascii")
            os.pwrite(fd, text, 0)  # the file is ours (a regular spmlkit lock file, checked above)
            os.ftruncate(fd, len(text))
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            if self.remove:
                with contextlib.suppress(OSError):
                    if os.path.samestat(os.fstat(self._fd), os.stat(self.path, follow_symlinks=False)):
                        self.path.unlink()
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


_LOCK_TEXT = __import__("re").compile(rb"^(pid \d+\n?)?\Z")


def load_numpy(path: str | Path, *, mmap: bool | str = False):
    """``np.load`` of a user's ``.npy``/``.npz`` under the reader rule
    (:func:`spmlkit.reading.load_array`): never unpickles, declared shapes checked before
    anything is allocated, every failure a one-line
    :class:`~spmlkit.errors.DataFormatError` naming the file (object arrays, truncated
    files, bad or lying headers)."""
    return reading.load_array(path, mmap=mmap)


def npz_array(archive, key: str, path: str | Path):
    """``archive[key]`` of an ``np.load``-ed ``.npz``, with the same one-line errors as
    :func:`load_numpy` (members are only decoded when read)."""
    try:
        return archive[key]
    except ValueError as exc:
        msg = (str(exc).splitlines() or [""])[0]
        if "allow_pickle" in msg or "Object arrays" in msg:
            raise DataFormatError(path, f"array {key!r} holds Python objects (an object array); spmlkit never "
                                        "unpickles input files — save plain numeric arrays") from None
        raise DataFormatError(path, f"array {key!r} cannot be read ({msg})") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataFormatError(path, f"array {key!r} cannot be read ({exc})") from None


def safe_torch_load(path: str | Path, *, map_location="cpu") -> Any:
    """``torch.load(path, weights_only=True)`` with errors as one-line
    :class:`CorruptFileError` messages; a file that holds arbitrary Python objects (a
    pickle payload) is refused and nothing in it is executed."""
    import torch  # lazy: torch-free CLI start-up

    path = Path(path)
    try:
        with warnings.catch_warnings():  # torch's remarks on a foreign file ("pickle protocol 4 ...") precede
            warnings.simplefilter("ignore")  # the refusal below, which says what matters in one line
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        detail = next((ln.strip() for ln in str(exc).splitlines() if "Unsupported" in ln or "GLOBAL" in ln), "")
        detail = detail.split(" was not an allowed global")[0].replace("WeightsUnpickler error: ", "")
        raise CorruptFileError(f"{path}: refused to load: it holds Python objects other than tensors and plain "
                               f"values ({detail or 'not a weights-only file'}); spmlkit never unpickles them — "
                               "delete the file if you did not write it") from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CorruptFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except Exception as exc:  # truncated zip, wrong format, ...
        msg = (str(exc).splitlines() or [""])[0]
        raise CorruptFileError(f"{path}: cannot be loaded ({type(exc).__name__}: {msg})") from None


def safe_filename(name: str) -> str:
    """``name`` with every character other than letters, digits, ``-``, ``_`` and ``.``
    replaced by ``_`` (dataset names in file names)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)

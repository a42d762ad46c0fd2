"""The one rule for every file spmlkit reads (as :mod:`spmlkit.ownership` is the one rule
for every file it writes).

Whatever the format, a file is read only when

* it is a **regular file**: a FIFO, a device or a socket is refused in one line before
  anything is read (opening a FIFO would block forever, ``/dev/zero`` never ends);
  the file is opened non-blocking and checked on its descriptor, so a pipe swapped in
  after the check is refused too;
* what it **declares** fits before anything is allocated: a ``.npy`` header's shape must
  fit in the bytes the file holds (a lying header), an ``.npz``/zip archive's members are
  counted and their declared sizes summed, a gzip stream is decompressed with a cap, a
  JSON document nested deeper than the parser recurses is refused;
* the whole stays within the **read budget** (:func:`read_limit_bytes`): the machine's
  physical memory, or ``SPML_READ_LIMIT_MB`` when set;
* its **text** is UTF-8 (a byte-order mark allowed), else Latin-1, and the reader says
  which (:func:`decode_text`).

Environment variables that size something (``SPML_DENSE_LIMIT_MB``,
``SPML_STATE_BUDGET_MB``, ``SPML_READ_LIMIT_MB``) are parsed by one function,
:func:`env_megabytes`, with one message.  Numbers in text files are parsed by
:func:`parse_number`, which refuses what Python's ``float`` accepts but no data file
means (``1_0`` read as 10).

Every refusal is a one-line :class:`~spmlkit.errors.DataFormatError` (or
:class:`~spmlkit.errors.ConfigError` for an environment variable) naming the file.
"""
from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
import stat
import zipfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .errors import ConfigError, DataFormatError

#: most members an ``.npz`` archive may hold (spmlkit's and numpy's use a handful)
NPZ_MAX_MEMBERS = 4096
#: the bytes read to find a ``.npy`` header
_NPY_HEADER_BYTES = 1 << 16
_NUMBER = re.compile(r"^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)$", re.IGNORECASE | re.ASCII)


# ------------------------------------------------------------------ environment
def env_megabytes(name: str, default: int | None = None) -> int | None:
    """The size in bytes the environment variable ``name`` gives in megabytes, or
    ``default`` when it is unset or empty.  Anything but a positive, finite number
    (``abc``, ``nan``, ``inf``, ``1e400``, ``-5``, ``0``) is a one-line
    :class:`ConfigError` naming the variable (``SPML_X_MB=1.5`` gives 1,572,864)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = None
    if _NUMBER.match(raw):
        value = float(raw)
    if value is None or not math.isfinite(value) or value <= 0 or value * 2 ** 20 >= 2 ** 62:
        raise ConfigError(f"environment variable {name}={raw!r} is not a usable size: expected a positive, finite "
                          f"number of megabytes (e.g. {name}=2048), or unset it")
    return max(1, int(value * 2 ** 20))


def env_count(name: str, default: int | None = None) -> int | None:
    """The whole count the environment variable ``name`` gives (``1e9`` allowed), or
    ``default`` when it is unset or empty; the same refusal as :func:`env_megabytes`."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = float(raw) if _NUMBER.match(raw) else None
    if value is None or not math.isfinite(value) or value < 1 or value >= 2 ** 62:
        raise ConfigError(f"environment variable {name}={raw!r} is not a usable count: expected a positive, finite "
                          f"number (e.g. {name}=1e9), or unset it")
    return int(value)


def read_limit_bytes() -> int:
    """The most bytes one file may make spmlkit allocate (declared array sizes, archive
    members, decompressed streams): ``SPML_READ_LIMIT_MB`` when set, else the machine's
    physical memory (an array larger than memory cannot be read at all)."""
    try:
        phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        phys = 16 * 2 ** 30
    return env_megabytes("SPML_READ_LIMIT_MB", phys)


def _mb(n: int) -> str:
    return f"{n / 2 ** 20:,.0f} MB" if n >= 2 ** 20 else f"{n:,} bytes"


def _over_budget(path, what: str, need: int) -> DataFormatError:
    return DataFormatError(path, f"{what} would take {_mb(need)}, more than the read budget "
                                 f"({_mb(read_limit_bytes())}: the machine's memory, or SPML_READ_LIMIT_MB); "
                                 "refusing to read it")


# ------------------------------------------------------------------ regular files
def check_regular(path: str | Path) -> os.stat_result:
    """``os.stat(path)`` of a regular file; a folder, FIFO, device or socket is a one-line
    :class:`DataFormatError`.  ``FileNotFoundError`` propagates (callers word it)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise DataFormatError(path, f"is {_kind(st.st_mode)}, not a regular file; give a data file")
    return st


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def open_bytes(path: str | Path) -> BinaryIO:
    """``path`` opened for binary reading after its descriptor was checked to be a
    regular file (opened non-blocking, so a FIFO is refused rather than waited on)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DataFormatError(path, f"is {_kind(st.st_mode)}, not a regular file; give a data file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_text(path: str | Path, *, encoding: str = "utf-8-sig", newline: str | None = "",
              errors: str = "strict") -> io.TextIOWrapper:
    """``path`` opened for text reading under the rule of :func:`open_bytes`."""
    return io.TextIOWrapper(open_bytes(path), encoding=encoding, newline=newline, errors=errors)


def read_bytes(path: str | Path, *, what: str = "the file") -> bytes:
    """All of a regular file's bytes, within the read budget."""
    with open_bytes(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > read_limit_bytes():
            raise _over_budget(path, what, size)
        return fh.read()


def decode_text(data: bytes) -> tuple[str, str]:
    """``(text, encoding)``: ``data`` decoded as UTF-8 (a byte-order mark is dropped), else
    as Latin-1 (every byte is a Latin-1 character, so a file saved by a Latin-1 or
    Windows tool reads as its producer meant); ``encoding`` is ``"UTF-8"`` or ``"Latin-1"``,
    for the reader's note."""
    try:
        return data.decode("utf-8-sig"), "UTF-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "Latin-1"


def read_text(path: str | Path) -> tuple[str, str]:
    """``(text, encoding)`` of a regular text file (:func:`decode_text`)."""
    return decode_text(read_bytes(path))


# ------------------------------------------------------------------ numbers in text
def parse_number(text: str) -> float:
    """``float(text)`` for the spellings a data file uses (``1``, ``-2.5``, ``3e-4``,
    ``inf``, ``nan``); Python's extras (``1_0`` read as 10, surrounding Unicode digits)
    raise ``ValueError`` like any other non-number.

    >>> parse_number(" -2.5e1 "), parse_number("1_0")
    Traceback (most recent call last):
    ValueError: not a number: '1_0'
    """
    t = text.strip()
    if not _NUMBER.match(t):
        raise ValueError(f"not a number: {text!r}")
    return float(t)


# ------------------------------------------------------------------ numpy files
def _npy_header(fh, path, where: str = "") -> tuple[tuple[int, ...], np.dtype, int]:
    """``(shape, dtype, header_length)`` of the ``.npy`` stream at ``fh``'s position."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(fh, max_header_size=_NPY_HEADER_BYTES)
        elif version in ((2, 0), (3, 0)):
            shape, _, dtype = fmt.read_array_header_2_0(fh, max_header_size=_NPY_HEADER_BYTES)
        else:
            raise ValueError(f"unknown .npy version {version}")
    except DataFormatError:
        raise
    except Exception as exc:  # numpy parses the header with Python's tokenizer: SyntaxError, TokenError, ...
        msg = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DataFormatError(path, f"{where}not a readable numpy file (damaged header: {msg})") from None
    return tuple(int(s) for s in shape), dtype, fh.tell()


def _declared_bytes(path, shape, dtype, where: str = "") -> int:
    if any(s < 0 for s in shape):
        raise DataFormatError(path, f"{where}the array header declares a negative shape {shape}")
    n = 1
    for s in shape:
        n *= s
    return n * max(dtype.itemsize, 1)


def check_npy(path: str | Path, *, mapped: bool = False) -> None:
    """Refuse a ``.npy`` whose header declares more data than the file holds (a lying or
    truncated header) or, unless it is memory-mapped (``mapped``: pages are read on
    demand, so an array larger than memory is fine), more than the read budget — before
    anything is allocated."""
    with open_bytes(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        shape, dtype, offset = _npy_header(fh, path)
    need = _declared_bytes(path, shape, dtype)
    if dtype.hasobject:
        return  # refused by np.load (allow_pickle=False) with its own message
    if need > size - offset:
        raise DataFormatError(path, f"the array header declares shape {shape} of {dtype} ({_mb(need)}) but the file "
                                    f"holds {_mb(max(size - offset, 0))} of data: truncated or damaged")
    if not mapped and need > read_limit_bytes():
        raise _over_budget(path, f"the array ({shape} of {dtype})", need)


def check_npz(path: str | Path) -> None:
    """Refuse an ``.npz``/zip archive with too many members, members whose ``.npy``
    headers declare more than the member holds, or declared sizes beyond the read
    budget — before anything is decompressed in full."""
    with open_bytes(path) as raw:
        try:
            zf = zipfile.ZipFile(raw)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise DataFormatError(path, f"is not a readable .npz archive ({exc}); expected a file written by "
                                        "np.savez") from None
        with zf:
            infos = zf.infolist()
            if len(infos) > NPZ_MAX_MEMBERS:
                raise DataFormatError(path, f"the archive lists {len(infos):,} members (at most {NPZ_MAX_MEMBERS:,} "
                                            "are read); not an array archive spmlkit reads")
            total = sum(i.file_size for i in infos)
            if total > read_limit_bytes():
                raise _over_budget(path, "the archive's members", total)
            for info in infos:
                if not info.filename.endswith(".npy"):
                    continue
                where = f"member {info.filename!r}: "
                try:
                    with zf.open(info) as member:
                        shape, dtype, offset = _npy_header(member, path, where)
                except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
                    raise DataFormatError(path, f"{where}cannot be read ({exc})") from None
                need = _declared_bytes(path, shape, dtype, where)
                if not dtype.hasobject and need > info.file_size - offset:
                    raise DataFormatError(path, f"{where}the array header declares shape {shape} of {dtype} "
                                                f"({_mb(need)}) but the member holds {_mb(max(info.file_size - offset, 0))}"
                                                ": damaged or a lying header")


def load_array(path: str | Path, *, mmap: bool | str = False):
    """``np.load`` under the reader rule: a regular file, its declared shapes checked
    (:func:`check_npy`, :func:`check_npz`), never unpickled; every failure a one-line
    :class:`DataFormatError` naming the file."""
    path = Path(path)
    try:
        with open_bytes(path) as fh:
            magic = fh.read(6)
        if magic == b"\x93NUMPY":
            check_npy(path, mapped=bool(mmap))
        elif magic[:2] == b"PK":
            check_npz(path)
        return np.load(path, mmap_mode=("r" if mmap is True else mmap) or None, allow_pickle=False)
    except FileNotFoundError:
        raise DataFormatError(path, "file not found") from None
    except ValueError as exc:
        if isinstance(exc, DataFormatError):
            raise
        msg = (str(exc).splitlines() or [""])[0]
        if "allow_pickle" in msg or "Object arrays" in msg or "pickled" in msg or "Python objects" in msg:
            raise DataFormatError(path, "holds Python objects (an object array); spmlkit never unpickles input "
                                        "files — save plain numeric arrays") from None
        raise DataFormatError(path, f"not a readable numpy file ({msg})") from None
    except (OSError, EOFError, zipfile.BadZipFile, MemoryError) as exc:
        msg = getattr(exc, "strerror", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DataFormatError(path, f"not a readable numpy file ({msg})") from None


# ------------------------------------------------------------------ gzip and JSON
def gunzip(data: bytes, path: str | Path, *, limit: int | None = None, what: str = "gzip-compressed file") -> bytes:
    """``data`` (a gzip stream) decompressed in pieces, refused as soon as it passes
    ``limit`` bytes (default: the read budget) — a gzip bomb never fills memory."""
    limit = read_limit_bytes() if limit is None else limit
    out = io.BytesIO()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
            while True:
                block = gz.read(1 << 20)
                if not block:
                    break
                out.write(block)
                if out.tell() > limit:
                    raise DataFormatError(path, f"decompresses to more than {_mb(limit)} (the read budget: the "
                                                "machine's memory, or SPML_READ_LIMIT_MB); refusing to read it")
    except (gzip.BadGzipFile, EOFError, zlib.error, OSError) as exc:
        raise DataFormatError(path, f"not a readable {what} ({exc})") from None
    return out.getvalue()


def loads_json(text: str, path: str | Path) -> Any:
    """``json.loads(text)``; invalid JSON, or JSON nested deeper than the parser recurses
    (``[[[[...]]]]`` a hundred thousand deep), is a one-line error naming ``path``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    except RecursionError:
        raise DataFormatError(path, "JSON nested too deeply to read; not a file spmlkit wrote") from None


def read_json(path: str | Path) -> Any:
    """The JSON document in ``path`` under the reader rule; ``*.gz`` is decompressed with
    the cap of :func:`gunzip`.  ``FileNotFoundError`` propagates."""
    path = Path(path)
    data = read_bytes(path)
    if path.suffix == ".gz":
        data = gunzip(data, path, what="gzip-compressed JSON file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFormatError(path, f"not UTF-8 JSON ({exc.reason} at byte {exc.start})") from None
    return loads_json(text, path)

"""Single output files (``spml predict -o FILE.csv``), which have no folder of their own."""
from __future__ import annotations

import contextlib
import stat
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .. import io as _io
from .rule import OwnershipError, UnownedPathError, _abs, _link_text, _lstat, refuse_inputs
from .writers import atomic_path


_FILES: dict[str, tuple[int, int] | None] = {}  # single output files checked by output_file()


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

"""File formats by name: one :class:`spmlkit.registry.Registry`.

A format declares, when it registers, how it is **detected** and how it is **loaded**::

    @register_format("myformat", suffixes=(".myf",), description="...")
    def load_myformat(path, *, name=None, test=None, observed=False, log=None, **options):
        return MultiLabelDataset(...)

* ``suffixes``: file extensions (lower case, with the dot; a trailing ``.gz`` is looked
  through) that make a file this format;
* ``folder``: for formats that are folders, ``folder(path) -> bool`` says whether a
  folder has this format's layout; folders are tried in ``order`` (lower first: the more
  specific layouts before the looser ones);
* ``observed_auto``: the format reads ``observed=None`` as "decide from the data"
  (one-label-per-row tables); for the others ``None`` means ``False``.

The loader gets the path and every option of :func:`spmlkit.data.load_any`
(``name``, ``test``, ``observed``, ``labels_xml``, ``images``, ``test_images``, ``log``
and the table options); it takes the ones it uses and ignores the rest (``**options``).
A module in this package is found by itself (the registry imports the package's modules
on the first lookup): a new format is one module, with no list to edit.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import ConfigError, DataFormatError
from ...registry import Registry


@dataclass(frozen=True)
class FormatSpec:
    name: str
    load: Callable[..., object]  # load(path, **options) -> MultiLabelDataset
    suffixes: tuple[str, ...] = ()
    folder: Callable[[Path], bool] | None = None
    order: int = 100
    observed_auto: bool = False
    description: str = ""


#: the file formats by name (``spml prepare --format``)
FILE_FORMATS: Registry = Registry("file format", package=__package__)


def register_format(name: str, *, suffixes: tuple[str, ...] = (), folder: Callable[[Path], bool] | None = None,
                    order: int = 100, observed_auto: bool = False, description: str = ""):
    """Register ``load(path, **options) -> MultiLabelDataset`` as format ``name`` (see the
    module docstring)."""
    bad = [s for s in suffixes if not s.startswith(".") or s != s.lower()]
    if bad or (not suffixes and folder is None):
        raise ValueError(f"format {name!r}: give lower-case suffixes starting with '.' and/or a folder test")

    def deco(load):
        FILE_FORMATS.add(name, FormatSpec(name, load, tuple(suffixes), folder, int(order), bool(observed_auto),
                                          description), owner=load)
        return load

    return deco


def format_names() -> list[str]:
    """The registered format names, sorted."""
    return list(FILE_FORMATS.names())


def detect_format(path: Path) -> str:
    """The format of ``path``: a folder by its layout, a file by its extension."""
    path = Path(path)
    specs = sorted(FILE_FORMATS.discover().values(), key=lambda s: (s.order, s.name))
    if path.is_dir():
        for spec in specs:
            if spec.folder is not None and spec.folder(path):
                return spec.name
        raise ConfigError(f"cannot tell the format of folder {path}; pass --format ({', '.join(format_names())})")
    suffix = path.suffix.lower()
    if suffix == ".gz":
        suffix = Path(path.stem).suffix.lower()
    for spec in specs:
        if suffix in spec.suffixes:
            return spec.name
    raise ConfigError(f"cannot tell the format of {path} from its extension; pass --format "
                      f"({', '.join(format_names())})")


def read_xml(path: Path, *, missing: str):
    """The root element of the XML file ``path`` (:mod:`xml.etree.ElementTree`), with the
    two failures every XML reader words the same way: a missing file is
    ``DataFormatError(path, missing)`` (the caller says what the file was for), malformed
    XML is ``DataFormatError(path, "invalid XML: ...")`` naming the line."""
    try:
        return ET.parse(path).getroot()
    except FileNotFoundError:
        raise DataFormatError(path, missing) from None
    except ET.ParseError as exc:
        raise DataFormatError(path, f"invalid XML: {exc}", line=exc.position[0]) from None

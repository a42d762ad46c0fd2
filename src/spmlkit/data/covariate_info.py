"""Covariate sidecar: the names, units and class names of a model's covariates, given by the
user (``spml explain --covariate-info FILE``), for figures and legends.

Raster and table covariates are often bare codes — WorldClim's ``bio1`` is the annual mean
temperature in °C × 10, a biome layer holds class numbers.  A sidecar says what they are,
in one of two forms (UTF-8):

JSON — an object keyed by covariate; each value an object with any of ``name`` (text),
``units`` (text) and ``classes`` (an object: level -> class name; levels as numbers or
numeric strings)::

    {"bio1": {"name": "annual mean temperature", "units": "°C × 10"},
     "biome": {"name": "biome", "classes": {"1": "tropical moist forest", "2": "tropical dry forest"}}}

CSV — a header ``covariate,name,units,classes`` (``name``, ``units`` and ``classes`` may be
left out or empty); ``classes`` as ``level=class name`` pairs joined by ``;``::

    covariate,name,units,classes
    bio1,annual mean temperature,°C × 10,
    biome,biome,,1=tropical moist forest;2=tropical dry forest

Covariates the sidecar does not name keep their code.  A covariate the model does not
have, a key or column other than these, a level that is not a number, a file that is not
valid JSON or CSV: one line naming the file (and the line), exit status 2.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ..errors import DataFormatError

FIELDS = ("name", "units", "classes")


def _level(v, path: Path, where: str, line=None) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise DataFormatError(path, f"{where}: class level {v!r} is not a number", line=line) from None
    if x != x:
        raise DataFormatError(path, f"{where}: class level {v!r} is not a number", line=line)
    return x


def _entry(cov: str, d, path: Path, covariates, line=None) -> dict:
    if covariates is not None and cov not in covariates:
        raise DataFormatError(path, f"covariate {cov!r} is not one of the model's ({', '.join(covariates)})", line=line)
    if not isinstance(d, dict):
        raise DataFormatError(path, f"covariate {cov!r}: expected an object with name, units, classes", line=line)
    extra = [k for k in d if k not in FIELDS]
    if extra:
        raise DataFormatError(path, f"covariate {cov!r}: unknown key {extra[0]!r} (the keys: {', '.join(FIELDS)})",
                              line=line)
    out = {}
    for k in ("name", "units"):
        if d.get(k) not in (None, ""):
            if not isinstance(d[k], str):
                raise DataFormatError(path, f"covariate {cov!r}: {k} must be text", line=line)
            out[k] = d[k].strip()
    classes = d.get("classes")
    if classes not in (None, "", {}):
        if not isinstance(classes, dict) or not all(isinstance(v, str) for v in classes.values()):
            raise DataFormatError(path, f"covariate {cov!r}: classes must map levels to class names", line=line)
        out["classes"] = {_level(k, path, f"covariate {cov!r}", line): v.strip() for k, v in classes.items()}
    return out


def _read_csv(text: str, path: Path, covariates) -> dict:
    rows = list(csv.reader(io.StringIO(text)))
    header = [h.strip() for h in (rows[0] if rows else [])]
    if not header or header[0] != "covariate" or any(h not in FIELDS for h in header[1:]) or len(set(header)) != \
            len(header):
        raise DataFormatError(path, "expected the header covariate,name,units,classes (name, units, classes "
                                    f"optional), got {','.join(header)!r}", line=1)
    out = {}
    for n, row in enumerate(rows[1:], 2):
        if not any(c.strip() for c in row):
            continue
        if len(row) > len(header):
            raise DataFormatError(path, f"{len(row)} cells but the header has {len(header)}", line=n)
        d = dict(zip(header, (c.strip() for c in row)))
        cov = d.pop("covariate")
        if cov in out:
            raise DataFormatError(path, f"covariate {cov!r} is described twice", line=n)
        pairs = {}
        for item in filter(None, (p.strip() for p in (d.get("classes") or "").split(";"))):
            level, eq, name = item.partition("=")
            if not eq:
                raise DataFormatError(path, f"classes: {item!r} is not level=class name", line=n)
            pairs[level.strip()] = name.strip()
        d["classes"] = pairs
        out[cov] = _entry(cov, d, path, covariates, line=n)
    return out


def read_covariate_info(path, covariates=None) -> dict:
    """``{covariate: {"name", "units", "classes": {level: class name}}}`` (each key only
    when given) from the sidecar ``path`` (module docstring); ``covariates``: the model's,
    checked against."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataFormatError(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(path, f"cannot be read as UTF-8 text ({type(exc).__name__})") from None
    covariates = None if covariates is None else list(covariates)
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, f"not valid JSON ({exc.msg})", line=exc.lineno) from None
        if not isinstance(data, dict):
            raise DataFormatError(path, "expected a JSON object keyed by covariate")
        return {str(c): _entry(str(c), d, path, covariates) for c, d in data.items()}
    return _read_csv(text, path, covariates)


def covariate_label(info: dict | None, cov: str) -> str:
    """``name (code) [units]`` as far as the sidecar says, else the code."""
    d = (info or {}).get(cov) or {}
    text = f"{d['name']} ({cov})" if d.get("name") and d["name"] != cov else cov
    return f"{text}, {d['units']}" if d.get("units") else text


def class_label(info: dict | None, cov: str, level: float) -> str:
    """The class name of ``level`` of ``cov`` when the sidecar names it, else the level."""
    name = ((info or {}).get(cov) or {}).get("classes", {}).get(float(level))
    return f"{level:g} {name}" if name else f"{level:g}"

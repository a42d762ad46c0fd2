"""Occurrence records as users get them (GBIF exports, a field table) and their covariates
from rasters.

Cleaning (:func:`clean_records`, ``spml clean``)
------------------------------------------------
A raw export is read whatever its encoding (UTF-8, else Latin-1, said in a note) and its
column names (species: ``species``, ``scientificName``, ``spid``, ...; longitude:
``x``, ``lon``, ``longitude``, ``decimalLongitude``, ...; latitude likewise).  Each row
is kept or dropped for one counted reason, in this order:

``no species name``            the species cell is empty or ``NA``
``not identified to species``  one word, or ``Genus sp.`` / ``spp.``
``no coordinates``             x or y empty or ``NA``
``coordinates not numbers``    x or y does not parse as a number
``coordinates out of range``   longitude outside [-180, 180] or latitude outside [-90, 90]
                               (only for records in longitude/latitude)
``coordinates 0, 0``           both exactly 0 — GBIF's most common placeholder
``duplicate``                  same species at the same x, y as a record kept before

Names are reduced to the species, ``Genus epithet`` (genus capitalised, epithet lower
case): authors, subspecies, varieties and forms fall off, so ``Solanum acaule Bitter``,
``solanum acaule acaule`` and ``Solanum acaule subsp. aemulans`` are one species,
``Solanum acaule`` (``rank="as-is"`` keeps each spelling instead).  A **hybrid** keeps its
formula and stays apart from its parents (``Bradypus variegatus × tridactylus``, also
written with a lone ``x``; ``Solanum × ajanhuiri``).  A name with an **abbreviated genus**
(``B. variegatus``) is kept as written, never merged by guess, with a warning naming the
full names it may stand for.  The spellings merged into each name are reported.

On rasters (:func:`records_on_rasters`, ``spml prepare records.csv --rasters DIR``)
----------------------------------------------------------------------------------
The cleaned records' covariates are read from the raster stack at their places
(:mod:`spmlkit.data.rasters`); a record outside the rasters or on a nodata cell is
dropped and counted (``off_raster="error"`` stops instead); with ``one_per_cell``, a
species keeps one record per raster cell.  Background rows are drawn from the valid
cells (seeded; an optional mask and bias raster).  Categorical layers are declared
(``categorical=[...]``) or detected as integer layers with at most ``max_levels`` (6)
values over the training rows; they are one-hot encoded and the encoding is stored
(:class:`~spmlkit.data.encoding.CovariateEncoding`), with the rasters' grid and CRS
(``MultiLabelDataset.places``), so the model predicts maps on that grid
(``spml predict RUN --rasters DIR``).  The records' CRS (``crs``, default ``EPSG:4326``)
must be the rasters' (:func:`spmlkit.data.rasters.check_crs`).  There are no surveyed
sites: the test split is a hold-out of records and background (``spml prepare``'s
``--test-fraction``), and validation is a random 20% or whole spatial blocks
(``val_blocks``).
"""
from __future__ import annotations

import csv
import io
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ... import ownership
from ...errors import ConfigError, DataFormatError
from ...labels import normalize_label
from ...reading import parse_number, read_text
from ...sparse_labels import SparseLabels
from ..dataset import MultiLabelDataset, Split
from ..encoding import CovariateEncoding
from ..spatial_splits import spatial_split

MISSING = ("", "NA", "NaN", "nan", "NULL", "null")
SPECIES_COLUMNS = ("species", "scientificName", "scientific_name", "spid", "name", "taxon")
X_COLUMNS = ("x", "lon", "longitude", "decimalLongitude", "long", "lng")
Y_COLUMNS = ("y", "lat", "latitude", "decimalLatitude")
ID_COLUMNS = ("id", "gbifID", "siteid")
#: the reasons a record is dropped, in the order they are checked
REASONS = ("no species name", "not identified to species", "no coordinates", "coordinates not numbers",
           "coordinates out of range", "coordinates 0, 0", "duplicate")
RASTER_REASONS = ("outside the rasters", "on a nodata cell", "same species in the same cell")
RANKS = ("species", "as-is")
#: the hybrid sign (a lone "x" between names is read as it)
HYBRID = "×"


def read_table_text(path) -> tuple[list[str], list[list[str]], str]:
    """``(header, rows, encoding)`` of a CSV/TSV, decoded as UTF-8, else Latin-1 (every
    byte is a Latin-1 character, so a GBIF export in Latin-1 reads as its producer meant)."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, "file not found")
    text, encoding = read_text(path)  # (the reader rule: a regular file; UTF-8, else Latin-1)
    delim = "\t" if path.suffix.lower() in (".tsv", ".tab", ".txt") else ","
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delim))
    except csv.Error as exc:
        raise DataFormatError(path, f"not a readable CSV table ({exc})") from None
    if not rows:
        raise DataFormatError(path, "empty file; expected a header line", line=1)
    return [h.strip() for h in rows[0]], rows[1:], encoding


def _pick(path, header, given, candidates, what, option) -> int:
    if given is not None:
        if given not in header:
            raise DataFormatError(path, f"no column {given!r} ({what}); the columns are {', '.join(header[:12])}",
                                  line=1)
        return header.index(given)
    lower = {h.lower(): i for i, h in enumerate(header)}
    for c in candidates:
        if c.lower() in lower:
            return lower[c.lower()]
    raise DataFormatError(path, f"no {what} column (looked for {', '.join(candidates)}); name it with {option}",
                          line=1)


def species_name(raw: str, rank: str = "species") -> str | None:
    """The species of a name as written: ``Genus epithet`` (``rank="species"``), or the
    name stripped (``"as-is"``); None when it names no species (one word, ``sp.``).

    >>> [species_name(n) for n in ("Solanum acaule f. acaule", "solanum acaule acaule", "Solanum sp.")]
    ['Solanum acaule', 'Solanum acaule', None]
    """
    words = raw.replace("_", " ").replace("×", " × ").split()
    if rank == "as-is":
        return " ".join(raw.replace("_", " ").split()) or None
    words = [HYBRID if w.lower() == "x" and i else w for i, w in enumerate(words)]
    if len(words) < 2 or words[1].lower().rstrip(".") in ("sp", "spp", "cf", "aff", "indet"):
        return None
    genus, rest = words[0], words[1:]
    if rest[0] == HYBRID:  # "Genus × epithet": a hybrid species (nothospecies)
        if len(rest) < 2:
            return None
        kept, at = [HYBRID, rest[1].lower()], 2
    else:
        kept, at = [rest[0].lower()], 1
    if at + 1 < len(rest) and rest[at] == HYBRID:  # "Genus epithet × epithet2": a hybrid, not its first parent
        other = rest[at + 1]
        full = other[:1].isupper() and at + 2 < len(rest)  # the other parent named in full: "× Genus epithet"
        kept += [HYBRID, f"{other} {rest[at + 2].lower()}" if full else other.lower()]
    if not kept or not genus[:1].isalpha() or not kept[-1][:1].isalpha():
        return None
    return genus[:1].upper() + genus[1:].lower() + " " + " ".join(kept)


def abbreviated_genus_notes(spellings: dict) -> list[str]:
    """A warning per name whose genus is abbreviated (``B. variegatus``): it is kept as a
    species of its own, never merged by guess, and the full names it may stand for are named.

    >>> abbreviated_genus_notes({"B. variegatus": {"B. variegatus": 3}, "Bradypus variegatus": {}})
    ["warning: 'B. variegatus' (3 records) has an abbreviated genus: kept apart from 'Bradypus variegatus'; write the genus in full in the input to merge them"]
    """
    out = []
    for name, spell in sorted(spellings.items()):
        genus, _, epithet = name.partition(" ")
        if not (genus.endswith(".") and 2 <= len(genus) <= 3):
            continue
        like = [n for n in sorted(spellings) if n != name and n.startswith(genus[:-1])
                and n.partition(" ")[2] == epithet]
        out.append(f"warning: {name!r} ({sum(spell.values())} records) has an abbreviated genus: kept apart"
                   + (f" from {', '.join(repr(n) for n in like)}; write the genus in full in the input to merge them"
                      if like else " as a species of its own"))
    return out


@dataclass
class CleanRecords:
    """Records kept by :func:`clean_records` and the count of each drop reason."""

    species: list[str]
    xy: np.ndarray  # (n, 2)
    ids: list[str]
    read: int = 0
    dropped: dict = field(default_factory=lambda: OrderedDict((r, 0) for r in REASONS))
    spellings: dict = field(default_factory=dict)  # kept name -> Counter of the spellings merged into it
    notes: list = field(default_factory=list)

    @property
    def kept(self) -> int:
        return len(self.species)

    def report(self) -> list[str]:
        """The cleaning as lines: read, kept, dropped per reason, names merged."""
        lines = [f"records: {self.read} read, {self.kept} kept, {self.read - self.kept} dropped"]
        lines += [f"  dropped, {r}: {n}" for r, n in self.dropped.items() if n]
        for name, spell in sorted(self.spellings.items()):
            n = sum(spell.values())
            if len(spell) > 1 or next(iter(spell)) != name:
                shown = "; ".join(f"{s!r} ({c})" for s, c in spell.most_common())
                lines.append(f"  species {name!r}: {n} records, from {len(spell)} spelling(s): {shown}")
            else:
                lines.append(f"  species {name!r}: {n} records")
        return self.notes + lines


def select_species(clean: CleanRecords, names, source) -> CleanRecords:
    """Only the records of the species ``names`` (``spml prepare --species``), before
    anything else reads them: a species' bundle made from a shared file is then the bundle
    of a file of that species' records alone (same background, same split, same model).  A
    name no record has is a one-line :class:`DataFormatError` listing those there are."""
    want = list(dict.fromkeys(str(n).strip() for n in names if str(n).strip()))
    have = sorted(set(clean.species))
    missing = [n for n in want if n not in have]
    if not want or missing:
        shown = ", ".join(map(repr, have[:8])) + (", ..." if len(have) > 8 else "")
        raise DataFormatError(source, f"--species {missing[0] if missing else ''!r}: no record of that species "
                                      f"(the species here: {shown})")
    keep = [i for i, s in enumerate(clean.species) if s in want]
    out = CleanRecords(species=[clean.species[i] for i in keep], xy=clean.xy[keep], ids=[clean.ids[i] for i in keep],
                       read=clean.read, dropped=clean.dropped,
                       spellings={k: v for k, v in clean.spellings.items() if k in want}, notes=list(clean.notes))
    out.notes.append(f"--species: the records of {', '.join(map(repr, want))} only ({len(keep)} of {clean.kept}; "
                     "the other species' records are not read)")
    return out


def clean_records(paths, *, species_column: str | None = None, x_column: str | None = None,
                  y_column: str | None = None, id_column: str | None = None, rank: str = "species",
                  geographic: bool = True) -> CleanRecords:
    """Read and clean occurrence records from one or more CSV files (module docstring).
    ``geographic``: x, y are longitude and latitude (the range check applies)."""
    if rank not in RANKS:
        raise ConfigError(f"rank must be one of {', '.join(RANKS)}, got {rank!r}")
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out = CleanRecords(species=[], xy=np.empty((0, 2)), ids=[])
    xs, seen = [], set()
    spell: dict = {}
    for path in paths:
        path = Path(path)
        header, rows, enc = read_table_text(path)
        if enc != "UTF-8":
            out.notes.append(f"note: {path.name} is not UTF-8; read as {enc}")
        si = _pick(path, header, species_column, SPECIES_COLUMNS, "species", "--label-column")
        xi = _pick(path, header, x_column, X_COLUMNS, "x (longitude)", "--x-column")
        yi = _pick(path, header, y_column, Y_COLUMNS, "y (latitude)", "--y-column")
        ii = header.index(id_column) if id_column and id_column in header else None
        if id_column and ii is None:
            raise DataFormatError(path, f"no id column {id_column!r}", line=1)
        if id_column is None:  # an id column by its usual name (a cleaned file's 'id', GBIF's 'gbifID'), else FILE:LINE
            ii = next((header.index(c) for c in ID_COLUMNS if c in header), None)
        width = max(si, xi, yi, ii or 0) + 1
        for n, r in enumerate(rows):
            line = n + 2
            if not any(c.strip() for c in r):
                continue
            out.read += 1
            if len(r) < width:
                raise DataFormatError(path, f"{len(r)} fields, the header has {len(header)}", line=line)
            raw = normalize_label(r[si])
            if raw in MISSING:
                out.dropped["no species name"] += 1
                continue
            name = species_name(raw, rank)
            if name is None:
                out.dropped["not identified to species"] += 1
                continue
            xv, yv = r[xi].strip(), r[yi].strip()
            if xv in MISSING or yv in MISSING:
                out.dropped["no coordinates"] += 1
                continue
            try:
                x, y = parse_number(xv), parse_number(yv)  # ('1_0' is not 10)
            except ValueError:
                out.dropped["coordinates not numbers"] += 1
                continue
            if not (np.isfinite(x) and np.isfinite(y)) or (geographic and (abs(x) > 180 or abs(y) > 90)):
                out.dropped["coordinates out of range"] += 1
                continue
            if x == 0 and y == 0:
                out.dropped["coordinates 0, 0"] += 1
                continue
            key = (name, x, y)
            if key in seen:
                out.dropped["duplicate"] += 1
                continue
            seen.add(key)
            spell.setdefault(name, Counter())[raw] += 1
            out.species.append(name)
            xs.append((x, y))
            out.ids.append(r[ii].strip() if ii is not None else f"{path.name}:{line}")
    out.xy = np.asarray(xs, dtype=np.float64).reshape(-1, 2)
    out.spellings = spell
    out.notes += abbreviated_genus_notes(spell)
    if not out.species:
        raise DataFormatError(", ".join(map(str, paths)), "no record left after cleaning ("
                              + ", ".join(f"{r}: {n}" for r, n in out.dropped.items() if n) + ")")
    return out


def is_clean_records_file(path) -> bool:
    """True when ``path`` starts with the header :func:`write_clean_records` writes."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline().strip() == "id,species,x,y"
    except (OSError, UnicodeDecodeError):
        return False


def write_clean_records(records: CleanRecords, out) -> Path:
    """The cleaned records as ``id,species,x,y`` (UTF-8), written atomically (a single output
    file: :func:`spmlkit.ownership.output_file` checks it first — ``spml clean`` does, with
    its inputs; called alone, a file of anyone's that is not a records file is refused)."""
    out = Path(out)
    if not ownership.is_checked_file(out):
        ownership.output_file(out, what="cleaned-records file")
    with ownership.write_output_file(out) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["id", "species", "x", "y"])
            for i, s, (x, y) in zip(records.ids, records.species, records.xy.tolist()):
                w.writerow([i, s, repr(x), repr(y)])
    return out


def _detect_categorical(stack, values: np.ndarray, max_levels: int) -> list[str]:
    out = []
    for j, layer in enumerate(stack.layers):
        v = values[:, j]
        if np.dtype(layer.dtype).kind in "iu" and len(np.unique(v)) <= max_levels:
            out.append(layer.name)
    return out


def _integer_layer_notes(stack, values: np.ndarray, categorical: list, most: int = 50) -> list[str]:
    """A note per integer layer read as continuous with few values (at most ``most``, over
    the records and background): it may be a class map (a biome, a land-cover code)."""
    out = []
    for j, layer in enumerate(stack.layers):
        if layer.name in categorical or np.dtype(layer.dtype).kind not in "iu":
            continue
        n = len(np.unique(values[:, j]))
        if n <= most:
            out.append(f"note: layer {layer.name!r} holds whole numbers with {n} values and is read as continuous "
                       f"(ordered); if its values are classes (a biome, a land-cover code), declare it: --categorical "
                       f"{layer.name}")
    return out


def spatial_blocks(xy: np.ndarray, blocks: int, fraction: float = 0.2, seed: int = 0,
                   bounds: tuple | None = None) -> np.ndarray:
    """Rows of ``xy`` in held-out spatial blocks: the bounding box cut into ``blocks`` ×
    ``blocks`` cells, a random ``fraction`` of the occupied cells (seeded) held out.
    Validation on blocks measures transfer to places the model has not seen, which
    held-out records from the same places do not (Zbinden et al. 2024 set their loss
    weights by spatial block cross-validation on presence-only data; Valavi et al. 2019)."""
    lo, hi = bounds if bounds is not None else (xy.min(0), xy.max(0))
    span = np.where(hi > lo, hi - lo, 1.0)
    cell = np.clip(((xy - lo) / span * blocks).astype(int), 0, blocks - 1)
    ids = cell[:, 0] * blocks + cell[:, 1]
    occupied = np.unique(ids)
    rng = np.random.default_rng(seed)
    out = rng.choice(occupied, size=max(1, int(round(fraction * len(occupied)))), replace=False)
    return np.isin(ids, out)


def records_on_rasters(records, rasters, *, crs: str | None = None, categorical=None, covariates=None,
                       max_levels: int = 6, background: int = 10000, mask=None, bias=None, seed: int = 0,
                       val_blocks: int | None = None, split: str = "blocks", folds: int = 5,
                       spatial_test: bool = False, buffer: float = 0.0, min_train_records: int = 10,
                       one_per_cell: bool = False, off_raster: str = "drop",
                       window_rows: int | None = None, name: str | None = None, label_column: str | None = None,
                       x_column: str | None = None, y_column: str | None = None, rank: str = "species",
                       species=None, log=None) -> MultiLabelDataset:
    """The :class:`MultiLabelDataset` of records on a raster stack (module docstring):
    training = the records (one observed positive each) + ``background`` rows drawn from
    the valid cells; validation (and with ``spatial_test`` the test split) by whole blocks of
    a ``val_blocks`` × ``val_blocks`` grid when given (:func:`spmlkit.data.spatial_splits.spatial_split`:
    ``split`` blocks or checkerboard, ``folds``, ``buffer``, ``min_train_records``).  ``log``
    hears the counts (records read, kept, dropped per reason; records per species and split).
    ``species``: the species to keep (:func:`select_species`); default every species.

    The steps: open the rasters and clean the records, read the covariates under them and
    keep the records on valid cells (:func:`_records_on_valid_cells`), draw the background,
    encode the layers (:func:`_layer_kinds`), count what was kept (:func:`_count_lines`),
    then split by blocks when asked."""
    from .. import rasters as R  # lazy: torch-free CLI start-up

    if off_raster not in ("drop", "error"):
        raise ConfigError(f"off_raster must be 'drop' or 'error', got {off_raster!r}")
    stack = R.open_stack(rasters if isinstance(rasters, (list, tuple)) else [rasters])
    if covariates is not None:
        stack = stack.select(list(covariates))
    rec_crs = R.parse_crs(crs or R.DEFAULT_RECORDS_CRS, what="--crs")
    R.check_crs(rec_crs, stack, records=f"the records ({Path(records).name}, {'--crs' if crs else 'default'})")
    clean = clean_records(records, species_column=label_column, x_column=x_column, y_column=y_column, rank=rank,
                          geographic=bool(rec_crs.is_geographic))
    if species:  # one species (or a few) from a shared file: as if the file held only theirs
        clean = select_species(clean, species, records)
    values, status = R.extract(stack, clean.xy, window_rows=window_rows)
    keep, dropped = _records_on_valid_cells(R, records, stack, clean, status, off_raster, one_per_cell)
    idx = np.flatnonzero(keep)
    species = [clean.species[i] for i in idx]
    label_names = sorted(set(species))
    lost = sorted(set(clean.species) - set(label_names))
    index = {n: k for k, n in enumerate(label_names)}
    bg_xy, bg_values, info = R.sample_background(stack, background, seed=seed, mask=mask, bias=bias,
                                                 window_rows=window_rows)
    raw = np.concatenate([values[idx], bg_values])
    categorical, lines_before = _layer_kinds(stack, raw, categorical, max_levels)
    enc = CovariateEncoding.fit(raw, stack.names, categorical=categorical, passthrough=("id", "species", "x", "y"))
    X = enc.transform(raw)
    # one label index per record, the background rows none (sparse: O(N) whatever the species count)
    Z = SparseLabels.single(np.concatenate([[index[s] for s in species], np.full(len(bg_xy), -1)]).astype(np.int64),
                            len(label_names))
    xy = np.concatenate([clean.xy[idx], bg_xy])
    ids = [clean.ids[i] for i in idx] + [f"background:{k}" for k in range(len(bg_xy))]
    train = Split(X=X, Z=Z, ids=ids, xy=xy)
    lines = _count_lines(clean, dropped, species, label_names, lost, info, seed, categorical) + lines_before
    splits = {"train": train}
    if val_blocks:
        sp = np.concatenate([[index[s] for s in species], np.full(len(bg_xy), -1)]).astype(np.int64)
        parts, split_lines = spatial_split(xy, sp, label_names, kind=split, blocks=val_blocks, folds=folds, seed=seed,
                                           spatial_test=spatial_test, buffer=buffer, min_records=min_train_records)
        splits = {name: train.subset(np.flatnonzero(m)) for name, m in parts.items()}
        lines += split_lines
    elif spatial_test or buffer or split != "blocks":
        raise ConfigError("--spatial-test, --buffer and --split go with --val-blocks G (the grid of spatial blocks)")
    if log is not None:
        for line in lines:
            log(line)
    notes = list(lines)
    places = {"columns": ["x", "y"], "crs": R.crs_name(stack.crs), "rasters": {**stack.grid(), "layers": stack.names,
              "sources": stack.sources, "nodata": stack.nodata}}
    return MultiLabelDataset(name=name or Path(records).stem, label_names=label_names, splits=splits,
                             source=str(records), feature_names=enc.feature_names, notes=notes, background=True,
                             encoding=enc.to_dict(), places=places)


def _records_on_valid_cells(R, records, stack, clean, status, off_raster: str, one_per_cell: bool):
    """Which records are kept: those on a valid raster cell (none is an error naming the
    extents; with ``off_raster='error'`` any other is one) and, with ``one_per_cell``, one
    per species and cell.  ``R`` is the lazily imported rasters module.  Returns ``(keep,
    dropped counts per reason)``."""
    dropped = OrderedDict((r, 0) for r in RASTER_REASONS)
    dropped["outside the rasters"] = int((status == R.OFF_RASTER).sum())
    dropped["on a nodata cell"] = int((status == R.NODATA).sum())
    keep = status == R.VALID
    if not keep.any():
        lo, hi = clean.xy.min(0), clean.xy.max(0)
        t = stack.transform
        x0, x1 = sorted((t.c, t.c + t.a * stack.width))
        y0, y1 = sorted((t.f, t.f + t.e * stack.height))
        raise DataFormatError(records, f"no record falls on a valid raster cell (records: x {lo[0]:g}..{hi[0]:g}, "
                                       f"y {lo[1]:g}..{hi[1]:g}; rasters: x {x0:g}..{x1:g}, y {y0:g}..{y1:g}); are "
                                       "x and y swapped, or in another CRS than --crs says?")
    if off_raster == "error" and not keep.all():
        i = int(np.flatnonzero(~keep)[0])
        raise DataFormatError(records, f"record {clean.ids[i]} ({clean.species[i]}, x {clean.xy[i, 0]:g}, y "
                                       f"{clean.xy[i, 1]:g}) is {R.STATUS_NAMES[int(status[i])]} (and "
                                       f"{int((~keep).sum()) - 1} more); drop such records with --off-raster drop")
    if one_per_cell:
        rows, cols = stack.cells(clean.xy)
        seen = set()
        for i in np.flatnonzero(keep):
            key = (clean.species[i], int(rows[i]), int(cols[i]))
            if key in seen:
                keep[i] = False
                dropped["same species in the same cell"] += 1
            seen.add(key)
    return keep, dropped


def _layer_kinds(stack, raw: np.ndarray, categorical, max_levels: int):
    """The categorical layers (named ones must be layers; else detected from the values
    ``raw``) and the notes on integer layers left numeric.  Returns ``(categorical, notes)``."""
    if categorical is None:
        categorical = _detect_categorical(stack, raw, max_levels)
        lines_before = _integer_layer_notes(stack, raw, categorical)
    else:
        lines_before = []
        unknown = [c for c in categorical if c not in stack.names]
        if unknown:
            raise ConfigError(f"--categorical {unknown[0]!r} is not a raster layer ({', '.join(stack.names)})")
    return categorical, lines_before


def _count_lines(clean, dropped, species: list, label_names: list, lost: list, info: dict, seed: int,
                 categorical) -> list[str]:
    """The counts said to the user: the cleaning report, the records dropped per reason and
    kept per species, the background drawn and the one-hot encoded layers."""
    lines = clean.report() + [f"  dropped, {r}: {n}" for r, n in dropped.items() if n]
    lines.append(f"records on the rasters: {len(species)} of {clean.kept} cleaned records kept "
                 f"({', '.join(f'{n}: {sum(1 for s in species if s == n)}' for n in label_names)})")
    if lost:
        lines.append(f"  species left without records (not labels): {', '.join(lost)}")
    lines.append(f"background: {info['drawn']} cells drawn from {info['valid_cells']} valid cells (seed {seed}"
                 + (", weighted by the bias raster" if info["weighted"] else "")
                 + (", inside the mask" if info["masked"] else "")
                 + ("; every valid cell taken" if info["all_taken"] else "") + ")")
    if categorical:
        lines.append(f"one-hot encoded categorical layers: {', '.join(categorical)}")
    return lines

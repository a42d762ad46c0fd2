"""``spml clean``: occurrence records as exported (GBIF) -> one clean ``id,species,x,y`` CSV,
every dropped row counted by reason (:func:`spmlkit.data.formats.occurrences.clean_records`)."""
from __future__ import annotations

import sys
from pathlib import Path

from .. import ownership
from ..data.formats.occurrences import clean_records, write_clean_records
from ..io import check_input_paths


def run(args) -> int:
    check_input_paths(args.records)
    out = Path(args.out)
    # a folder, a link, an input (or inside one): refused; an existing file only when spmlkit's record names it, or
    # --overwrite
    ownership.output_file(out, inputs=args.records, overwrite=args.overwrite, option="-o",
                          what="cleaned-records file")
    clean = clean_records(args.records, species_column=args.label_column, x_column=args.x_column,
                          y_column=args.y_column, id_column=args.id_column, rank=args.rank,
                          geographic=not args.projected)
    for line in clean.report():
        print(line, file=sys.stderr if line.startswith("note:") else sys.stdout)
    write_clean_records(clean, out)
    print(f"wrote {clean.kept} records of {len(clean.spellings)} species to {out}")
    return 0


def add_parser(sub) -> None:
    """``spml clean``: its options (``spml clean --help``)."""
    p = sub.add_parser("clean", help="clean occurrence records (GBIF exports): one id,species,x,y CSV, drops counted",
                       description="Read occurrence records (CSV/TSV, UTF-8 or Latin-1; species and coordinate "
                                   "columns found by their usual names), reduce names to 'Genus epithet', drop rows "
                                   "without a species, without coordinates or with impossible ones, and duplicates "
                                   "(each reason counted), and write one id,species,x,y CSV for 'spml prepare "
                                   "--rasters' (docs/presence_only.md).")
    p.add_argument("records", nargs="+", help="records CSV file(s); several are merged")
    p.add_argument("-o", "--out", required=True, help="the cleaned CSV to write (id,species,x,y)")
    p.add_argument("--label-column", help="the species column (default: species, scientificName, spid, ...)")
    p.add_argument("--x-column", help="the x (longitude) column (default: x, lon, longitude, decimalLongitude, ...)")
    p.add_argument("--y-column", help="the y (latitude) column (default: y, lat, latitude, decimalLatitude, ...)")
    p.add_argument("--id-column", help="a column of record identifiers to keep (default: FILE:LINE)")
    p.add_argument("--rank", choices=("species", "as-is"), default="species",
                   help="reduce names to 'Genus epithet' (default) or keep them as written")
    p.add_argument("--projected", action="store_true",
                   help="x, y are projected coordinates, not longitude/latitude (no range check)")
    p.add_argument("--overwrite", action="store_true", help="replace -o even when it is not a file spmlkit wrote")
    p.set_defaults(func=run)

"""``spml datasets``: the datasets that can be named instead of a path."""
from __future__ import annotations

import os

from ..errors import SpmlError


def run(args) -> int:
    from ..data import DATASETS, load_dataset
    from ..labels import label_stats

    rows = []
    from ..data.registry import found_mulan_datasets

    found = found_mulan_datasets(args.data_root)  # Mulan folders under the data root, found by their names
    for name, spec in sorted({**found, **DATASETS}.items(), key=lambda kv: (not kv[1].builtin, kv[0])):
        if not spec.builtin and not (args.data_root or os.environ.get("SPMLKIT_DATA")):
            rows.append((name, spec.kind, "needs --data-root", "", "", "", spec.description))
            continue
        if not args.stats:
            rows.append((name, spec.kind, "built-in" if spec.builtin else "data root", "", "", "", spec.description))
            continue
        try:
            ds = load_dataset(name, data_root=args.data_root)
        except SpmlError as exc:
            rows.append((name, spec.kind, "not found", "", "", "", str(exc)[:60]))
            continue
        sizes = "/".join(f"{k} {len(v)}" for k, v in ds.splits.items())
        st = label_stats(ds.splits["train"].Y)
        dim = ds.splits["train"].X.shape[1] if ds.is_features else "images"
        rows.append((name, spec.kind, "built-in" if spec.builtin else "data root", sizes, ds.n_labels, dim,
                     f"train cardinality {st['cardinality']:.2f}; {spec.description}"
                     + "".join(f"; {n}" for n in ds.notes if n.startswith("dropped "))))
    header = ("name", "kind", "where", "splits", "labels", "features", "description")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(6)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  " + header[6])
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)) + "  " + str(r[6]))
    if not args.stats:
        print("\n(--no-stats: sizes and label statistics not loaded)")
    return 0


def add_parser(sub) -> None:
    """``spml datasets``: its options (``spml datasets --help``)."""
    p = sub.add_parser("datasets", help="list built-in and data-root datasets",
                       description="List the datasets that can be named instead of a path.")
    p.add_argument("--data-root", help="folder holding standard datasets (or set SPMLKIT_DATA)")
    p.add_argument("--no-stats", dest="stats", action="store_false",
                   help="only list names (default: load each dataset and show its sizes and label statistics)")
    p.set_defaults(func=run)

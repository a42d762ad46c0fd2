"""Checks of a user's table that keep its labels meaning one thing (used by
:mod:`spmlkit.data.formats.tabular`): class codes where label names belong, an id
repeated with different labels, and the list of header columns a message shows."""
from __future__ import annotations

from ...errors import DataFormatError


def columns_listed(header: list[str], most: int = 40) -> str:
    """``the columns are: a, b, c`` — every column of ``header`` (the first ``most`` and a
    count beyond), so the one meant is never cut off."""
    shown = ", ".join(repr(h) for h in header[:most])
    return f"the columns are: {shown}" + (f" and {len(header) - most} more" if len(header) > most else "")


#: what a single-label column of class codes holds (not label names)
CLASS_CODES = frozenset({"-1", "0", "1", "+1"})


def refuse_contradicting_ids(path, ids, rows, cols, vals, lines) -> None:
    """Rows of a label-set or wide table that repeat an id with different labels: one
    example described two ways is refused, naming the ids (never read as two examples)."""
    first: dict = {}
    dup = [i for i, k in enumerate(ids) if first.setdefault(k, i) != i]
    if not dup:
        return
    sets: dict = {}
    for r, c, v in zip(rows.tolist(), cols.tolist(), vals.tolist()):
        sets.setdefault(r, set()).add((c, v))
    bad = [i for i in dup if sets.get(i, set()) != sets.get(first[ids[i]], set())]
    if bad:
        shown = ", ".join(f"{ids[i]!r} (lines {lines[first[ids[i]]]} and {lines[i]})" for i in bad[:3])
        raise DataFormatError(path, f"id{'s' if len(bad) > 1 else ''} {shown}{' and more' if len(bad) > 3 else ''} "
                                    "repeated with different labels; give each example one row (or one label set)")

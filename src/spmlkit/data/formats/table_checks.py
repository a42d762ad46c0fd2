"""Checks of a user's table that keep its labels meaning one thing (used by
:mod:`spmlkit.data.formats.tabular`): a header of distinct names, class codes where label
names belong, an id repeated with different labels, the list of header columns a message
shows and how two lists of names differ."""
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


def check_header(header: list[str], path) -> None:
    """Column names must be distinct and not empty, and a header of numbers only is a
    data line read as a header (a file without its header line)."""

    def number(h):
        try:
            float(h)
            return True
        except ValueError:
            return False

    if header and all(number(h) for h in header):
        raise DataFormatError(path, f"the first line holds numbers ({', '.join(header[:4])}"
                                    f"{', ...' if len(header) > 4 else ''}), not column names: add a header line",
                              line=1)
    for i, h in enumerate(header):
        if not h:
            raise DataFormatError(path, f"column {i + 1} of the header has no name (a saved row index? write the "
                                        "table without it); every column needs a distinct name", line=1)
    if len(set(header)) != len(header):
        seen: set = set()
        dup = next(h for h in header if h in seen or seen.add(h))
        raise DataFormatError(path, f"column {dup!r} appears {header.count(dup)} times in the header; every column "
                                    "needs a distinct name", line=1)


def describe_name_difference(expected: list, got: list, what: str) -> str:
    """How two name lists differ, in words: the same names in another order, or which are
    missing and which are unexpected (a count alone — "4 vs 4" — says nothing)."""
    missing = [n for n in expected if n not in got]
    extra = [n for n in got if n not in expected]

    def shown(names):
        return ", ".join(repr(n) for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    if not missing and not extra:
        first = next(i for i, (a, b) in enumerate(zip(expected, got)) if a != b) if len(expected) == len(got) else 0
        return (f"the same {what}s in another order (position {first + 1}: {expected[first]!r} expected, "
                f"{got[first]!r} found)") if len(expected) == len(got) else f"{what}s repeated"
    return "; ".join(p for p in (f"missing {shown(missing)}" if missing else "",
                                 f"unexpected {shown(extra)}" if extra else "") if p)

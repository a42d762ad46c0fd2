"""``spml methods``: every registered method with its regime, paper and hyper-parameters."""
from __future__ import annotations

from ..catalogue import method_names, method_rows
from ..errors import UnknownNameError
from ..labels import get_regime

#: ``spml methods`` order: the default recipe, then the papers as the README lists them
_FAMILY_ORDER = ("recipe", "cole2021", "zhou2022", "kim2022", "li2023", "su2022", "xie2022", "zhang2021", "chen2024",
                 "vision-language", "kim2023")


#: methods whose loss is the same function as another's at the default hyper-parameters (same
#: regime, no component): their bench rows are identical, so they are listed as aliases
#: (tests/integration/test_practitioner_day.py checks the losses agree)
SAME_AT_DEFAULTS = {"dw": "wan", "ls": "an-ls", "n-ls": "an-ls-asym", "opml": "zlpr"}


def run(args) -> int:
    rows = method_rows()
    first = ("auto", "bce", "an")
    rows.sort(key=lambda r: (_FAMILY_ORDER.index(r["family"]) if r["family"] in _FAMILY_ORDER else len(_FAMILY_ORDER),
                             first.index(r["name"]) if r["name"] in first else len(first)))  # (stable: by name)
    if args.name:
        rows = [r for r in rows if r["name"] in args.name]
        if not rows:
            raise UnknownNameError("method", args.name[0], method_names())
    for r in rows:
        hp = ", ".join(f"{k}={v!r}" for k, v in r["hyperparameters"].items()) or "none"
        same = (f" (= {SAME_AT_DEFAULTS[r['name']]} at the default hyper-parameters)"
                if r["name"] in SAME_AT_DEFAULTS else "")
        print(f"{r['name']:12s} [{get_regime(r['regime']).table_label}; {r['setting']}] {r['summary']}{same}")
        if args.verbose or args.name:
            print(f"{'':12s} reference: {r['reference']}\n{'':12s} hyper-parameters: {hp}")
    return 0


def add_parser(sub) -> None:
    """``spml methods``: its options (``spml methods --help``)."""
    p = sub.add_parser("methods", help="list methods with their label regime, paper and hyper-parameters",
                       description="List every registered method (loss + regime + training-time components).")
    p.add_argument("name", nargs="*", help="show only these methods, with references and hyper-parameters")
    p.add_argument("-v", "--verbose", action="store_true", help="show references and hyper-parameters of all")
    p.set_defaults(func=run)

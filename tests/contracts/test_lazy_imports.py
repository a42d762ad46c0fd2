"""Imports sit at the top of their module unless they say why they are lazy: an import
inside a function carries ``# lazy: <reason>`` on its line or the line before (one
reason covers the imports directly below it in the same block).  The reasons in use:

``torch-free CLI start-up``  ``spml --help``, ``spml methods`` and ``spml datasets`` import
                             no torch (tests/cli/test_entry.py), so the modules they load
                             import the library inside the functions that need it
``optional dependency``      a package of an extra (images, tensorboard, mlflow, ray, geo)
``matplotlib, only when a figure is drawn``
``POSIX only``               ``fcntl``
``import circle``            the import would close a circle at import time
"""
from __future__ import annotations

import ast
import re

from tests.helpers import REPO

SRC = REPO / "src" / "spmlkit"
MARK = re.compile(r"#.*\blazy\b")

#: modules whose function-level imports are not yet moved or marked, with the reason: the
#: list may only shrink
PENDING: dict[str, str] = {}


def unmarked_imports(text: str) -> list[tuple[int, str]]:
    """(line, statement) of every import inside a function without a ``lazy`` reason."""
    lines = text.splitlines()
    out = []

    def body_of(fn_or_block_body, in_function):
        prev_ok = None  # the previous statement of this block, if it is a marked import
        for st in fn_or_block_body:
            if isinstance(st, (ast.Import, ast.ImportFrom)) and in_function:
                here = lines[st.lineno - 1]
                before = lines[st.lineno - 2] if st.lineno >= 2 else ""
                ok = bool(MARK.search(here) or MARK.search(before)) or (
                    prev_ok is not None and prev_ok.end_lineno + 1 == st.lineno)
                if not ok:
                    out.append((st.lineno, ast.unparse(st)))
                prev_ok = st if ok else None
                continue
            prev_ok = None
            visit(st, in_function)

    def visit(node, in_function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body_of(node.body, True)
            return
        for field in ("body", "orelse", "finalbody"):
            b = getattr(node, field, None)
            if isinstance(b, list) and b and isinstance(b[0], ast.stmt):
                body_of(b, in_function)
        for h in getattr(node, "handlers", []) or []:
            body_of(h.body, in_function)
        for c in getattr(node, "cases", []) or []:
            body_of(c.body, in_function)

    body_of(ast.parse(text).body, False)
    return out


def test_every_import_inside_a_function_says_why_it_is_lazy():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel in PENDING:
            continue
        found += [f"{rel}:{n}: {s}" for n, s in unmarked_imports(path.read_text(encoding="utf-8"))]
    assert not found, ("imports inside functions without '# lazy: <reason>' (move them to the top of the module, "
                       "or give the reason):\n" + "\n".join(found))


def test_the_pending_list_only_shrinks():
    for rel in PENDING:
        path = SRC / rel
        if not path.is_file():
            assert "absent until" in PENDING[rel], f"PENDING names a module that no longer exists: {rel}"
            continue
        assert unmarked_imports(path.read_text(encoding="utf-8")), f"{rel} is clean now: remove it from PENDING"


def test_the_check_sees_an_unmarked_import_and_accepts_a_marked_block():
    code = ("import os\n\n\ndef f():\n    import json\n    return json\n\n\n"
            "def g():\n    # lazy: optional dependency\n    import ray\n    import ray.util\n\n    x = 1\n    import re\n"
            "    return ray, x, re\n\n\ndef h():\n    try:\n        import fcntl  # lazy: POSIX only\n"
            "    except ImportError:\n        import msvcrt\n")
    assert unmarked_imports(code) == [(5, "import json"), (15, "import re"), (23, "import msvcrt")]

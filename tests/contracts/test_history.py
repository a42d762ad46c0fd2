"""History belongs in commit messages: the package's docstrings and comments say what the
code does and why, never which issue asked for it ("issue 24", "issue 28, item 5")."""
from __future__ import annotations

import re

from tests.helpers import REPO

SRC = REPO / "src" / "spmlkit"
ISSUE = re.compile(r"\b[Ii]ssues? \d+")

#: modules still carrying issue numbers, with the reason: the list may only shrink
PENDING: dict[str, str] = {}


def test_no_issue_numbers_in_the_package():
    found = [f"{p.relative_to(SRC)}:{n}: {line.strip()}" for p in sorted(SRC.rglob("*.py"))
             if str(p.relative_to(SRC)) not in PENDING
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if ISSUE.search(line)]
    assert not found, "issue numbers in src/ (say what and why; the history is in the commits):\n" + "\n".join(found)


def test_the_pending_list_only_shrinks():
    for rel, reason in PENDING.items():
        path = SRC / rel
        if not path.is_file():
            assert "absent until" in reason, f"PENDING names a module that no longer exists: {rel}"
            continue
        assert ISSUE.search(path.read_text(encoding="utf-8")), f"{rel} has no issue number now: remove it from PENDING"

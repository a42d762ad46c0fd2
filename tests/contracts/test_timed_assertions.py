"""No test asserts a wall-clock duration: a limit such as ``wall < 240`` fails the README's
test command on a loaded machine (it did at load 16) while measuring nothing the test is
about.  Times belong to the benchmarks under ``benchmarks/``, which record the load.

A *duration* is an expression subtracting from a clock reading (``time.perf_counter() -
t0``) or a name assigned from one; an ``assert`` comparing a duration is refused.  Waiting
for something with a deadline (``assert time.monotonic() < deadline`` inside a polling
loop) compares a timestamp, a guard against a hang, and is allowed."""
from __future__ import annotations

import ast

from tests.helpers import REPO

CLOCKS = {"perf_counter", "time", "monotonic", "process_time", "perf_counter_ns", "monotonic_ns", "time_ns"}


def _reads_clock(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in CLOCKS
               and isinstance(n.func.value, ast.Name) and n.func.value.id == "time" for n in ast.walk(node))


def _is_duration(node: ast.AST, durations: set[str]) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and _reads_clock(n.left):
            return True
        if isinstance(n, ast.Name) and n.id in durations:
            return True
    return False


def timed_assertions(source: str) -> list[int]:
    """Line numbers of the asserts of ``source`` that compare a wall-clock duration."""
    tree = ast.parse(source)
    durations: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None \
                and _is_duration(n.value, set()):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            durations |= {t.id for t in targets if isinstance(t, ast.Name)}
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert)
            and any(isinstance(c, ast.Compare) and _is_duration(c, durations) for c in ast.walk(n.test))]


def test_the_detector_finds_the_shapes_that_failed():
    assert timed_assertions("import time\nt0 = time.perf_counter()\nwall = time.perf_counter() - t0\n"
                            "assert wall < 240\n") == [4]
    assert timed_assertions("import time\nt0 = time.monotonic()\nassert ok and time.monotonic() - t0 < 30\n") == [3]
    assert timed_assertions("import time\ndeadline = time.monotonic() + 120\n"
                            "assert time.monotonic() < deadline\n") == []


def test_no_test_asserts_a_wall_clock_duration():
    found = [f"{p.relative_to(REPO)}:{line}" for p in sorted((REPO / "tests").rglob("test_*.py"))
             for line in timed_assertions(p.read_text(encoding="utf-8"))]
    assert not found, "timed assertions (move the timing to a benchmark): " + ", ".join(found)

"""Every fast path ships with its plain twin (tests/twins/registry.py).

A public function, method or class of ``src/spmlkit`` whose name contains ``stream``,
``chunk``, ``block`` or ``sparse``, or whose docstring says it streams or works chunk by
chunk, block by block or in blocks/chunks (the rule in the registry's docstring), must
be listed in the registry: as a fast path with its dense reference and the tests that
compare them, or as not a fast path with the reason.  Every listed name and test must
exist, so the registry cannot go stale."""
from __future__ import annotations

import ast
import functools
import re

from tests.helpers import REPO
from tests.twins.registry import NOT_FAST_PATHS, TWINS

SRC = REPO / "src" / "spmlkit"
NAME = re.compile(r"stream|chunk|block|sparse", re.I)
DOC = re.compile(r"\bstream(ed|s|ing)?\b|chunk by chunk|block by block|\bin (row )?(blocks|chunks)\b", re.I)


@functools.lru_cache(maxsize=1)
def public_definitions() -> dict[str, ast.AST]:
    """``module:qualname`` -> node of every public function, method and class under src/spmlkit."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts)
        module = module.removesuffix(".__init__")

        def walk(node, prefix):
            for n in getattr(node, "body", []):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not n.name.startswith("_"):
                    out[f"{module}:{prefix}{n.name}"] = n
                    if isinstance(n, ast.ClassDef):
                        walk(n, f"{prefix}{n.name}.")
        walk(ast.parse(path.read_text(encoding="utf-8")), "")
    return out


def fast_path_candidates() -> set[str]:
    found = set()
    for name, node in public_definitions().items():
        if NAME.search(node.name) or DOC.search(ast.get_docstring(node) or ""):
            found.add(name)
    return found


def test_every_streamed_chunked_sparse_or_block_wise_function_has_a_twin():
    listed = {t.fast for t in TWINS} | set(NOT_FAST_PATHS)
    missing = sorted(fast_path_candidates() - listed)
    assert not missing, ("fast paths without a twin (add a property test against the dense reference and an entry "
                         "to tests/twins/registry.py, or list it in NOT_FAST_PATHS with the reason): "
                         + ", ".join(missing))


def test_the_registry_names_what_exists():
    defined = public_definitions()
    stale = sorted(n for n in [t.fast for t in TWINS] + list(NOT_FAST_PATHS) if n not in defined)
    assert not stale, f"registry entries naming nothing in src/spmlkit: {stale}"
    assert not {t.fast for t in TWINS} & set(NOT_FAST_PATHS)
    assert len({t.fast for t in TWINS}) == len(TWINS), "a fast path listed twice"
    for twin in TWINS:
        assert twin.reference.strip() and twin.tests, twin.fast


def _test_functions(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_twin_test_exists_and_every_twin_test_is_registered():
    used = set()
    for twin in TWINS:
        for node in twin.tests:
            path, _, name = node.partition("::")
            assert (REPO / path).is_file(), f"{twin.fast}: no test file {path}"
            assert name in _test_functions(REPO / path), f"{twin.fast}: {path} defines no {name}"
            used.add(node)
    for path in sorted((REPO / "tests" / "twins").glob("test_*.py")):
        rel = path.relative_to(REPO).as_posix()
        unused = sorted(n for n in _test_functions(path) if f"{rel}::{n}" not in used)
        assert not unused, f"{rel}: tests no registry entry names: {unused}"


def test_the_rule_finds_the_known_fast_paths():
    """The rule is not vacuous: it finds the streamed metrics, the device blocks and
    the chunked writers, and leaves an ordinary function alone."""
    found = fast_path_candidates()
    assert {"rank_counts:stream_rank_counts", "sparse_labels:DeviceLabels.block", "labels:observe",
            "practitioner.inference:write_top_k_chunks", "practitioner.inference:predict_to_file"} <= found
    assert "metrics:average_precision" not in found

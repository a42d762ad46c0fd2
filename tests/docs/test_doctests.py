"""Every docstring example in the package runs and holds (issue 17): the modules are
found by walking ``src/spmlkit``, so a new module's examples are tested without a list."""
import doctest
import importlib

import pytest

from tests.helpers import REPO

SRC = REPO / "src" / "spmlkit"


def modules_with_examples() -> list[str]:
    out = []
    for p in sorted(SRC.rglob("*.py")):
        if ">>> " in p.read_text(encoding="utf-8"):
            rel = p.relative_to(SRC.parent).with_suffix("")
            out.append(".".join(part for part in rel.parts if part != "__init__"))
    return out


MODULES = modules_with_examples()


def test_the_walk_finds_the_examples():
    assert len(MODULES) >= 20 and "spmlkit.losses.role" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0

"""``__init__.py`` files only re-export: a docstring, relative imports and an explicit
``__all__`` that is exactly what they import (no logic, no names written into
``globals()``).  ``from . import module`` lines import the modules that register a
package's in-tree entries, so each registry is complete as soon as its package is
imported; a registered name whose module is missing from the list fails here."""
from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys

import pytest

from tests.helpers import REPO

PACKAGE = REPO / "src" / "spmlkit"
INITS = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("__init__.py"))

#: __init__ files that may hold more than re-exports, each with the reason
EXCEPTIONS = {
    "__init__.py": "``import spmlkit`` stays light: ``load`` and ``SPMLClassifier`` import the practitioner layer "
                   "(and torch) on first use, through a function and a module-level __getattr__",
}

#: registries filled by the modules of one package: (the package to import, the registry's home, its name)
REGISTRIES = [("spmlkit.losses", "spmlkit.losses.base", "LOSSES"),
              ("spmlkit.methods", "spmlkit.methods.base", "METHODS"),
              ("spmlkit.data", "spmlkit.data.formats.base", "FILE_FORMATS"),
              ("spmlkit.experiments.analyses", "spmlkit.experiments.analyses.base", "ANALYSES")]


def _parts(rel: str):
    tree = ast.parse((PACKAGE / rel).read_text(encoding="utf-8"))
    exported, modules, declared, other = [], [], None, []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            names = [a.asname or a.name for a in node.names]
            (modules if node.module is None else exported).extend(names)
            continue
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "__all__" and isinstance(node.value, ast.List) and \
                all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts):
            declared = [e.value for e in node.value.elts]
            continue
        other.append(f"line {node.lineno}: {ast.unparse(node).splitlines()[0]}")
    return exported, modules, declared, other


@pytest.mark.parametrize("rel", [r for r in INITS if r not in EXCEPTIONS])
def test_an_init_only_re_exports_what_its_all_lists(rel):
    exported, modules, declared, other = _parts(rel)
    assert not other, f"src/spmlkit/{rel} holds more than re-exports (move it into a module): {other}"
    assert declared is not None, f"src/spmlkit/{rel}: no explicit __all__ list"
    assert len(declared) == len(set(declared)), f"src/spmlkit/{rel}: a name twice in __all__"
    assert set(declared) == set(exported), (
        f"src/spmlkit/{rel}: __all__ and the imports differ: imported, not in __all__: "
        f"{sorted(set(exported) - set(declared))}; in __all__, not imported: {sorted(set(declared) - set(exported))}")
    package = importlib.import_module("spmlkit" + "".join("." + p for p in rel.split("/")[:-1]))
    for m in modules:
        assert importlib.import_module(f"{package.__name__}.{m}") is getattr(package, m), (rel, m)


def test_the_exceptions_are_still_needed():
    for rel in EXCEPTIONS:
        assert _parts(rel)[3], f"src/spmlkit/{rel} only re-exports now: remove it from EXCEPTIONS"


def test_each_registry_is_complete_when_its_package_is_imported():
    """In a fresh interpreter with discovery switched off, importing the package registers
    every entry that discovering its modules would: the package's import list is complete."""
    code = ("import importlib, json, sys\nimport spmlkit.registry as r\nreal = r.import_submodules\n"
            "r.import_submodules = lambda *a, **k: None\nout = {}\n"
            "for pkg, home, attr in json.loads(sys.argv[1]):\n"
            "    importlib.import_module(pkg)\n"
            "    reg = getattr(importlib.import_module(home), attr)\n"
            "    before = set(reg)\n"
            "    real(reg.package)\n"
            "    out[attr] = sorted(set(reg) - before)\n"
            "print(json.dumps(out))\n")
    p = subprocess.run([sys.executable, "-c", code, json.dumps(REGISTRIES)], capture_output=True, text=True,
                       timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr[-2000:]
    missing = {k: v for k, v in json.loads(p.stdout).items() if v}
    assert not missing, f"registered only by discovery (add their modules to the package's __init__.py): {missing}"


def test_every_registered_loss_is_a_plain_function_of_the_package():
    import spmlkit.losses as losses

    for name, spec in losses.LOSSES.items():
        py = name.replace("-", "_")
        assert getattr(losses, f"{py}_loss", None) is spec.fn, f"spmlkit.losses does not export {py}_loss"
        if not (PACKAGE / "losses" / f"{py}.py").exists():
            assert getattr(losses, py, None) is spec.fn, f"spmlkit.losses does not export {py}"

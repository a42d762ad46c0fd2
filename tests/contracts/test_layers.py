"""Imports flow one way (ARCHITECTURE.md, issues 17 and 26): the core packages never import
the practitioner layer, the experiments or the CLI, nor the package ``__init__``; and every
other import-direction rule of ARCHITECTURE.md holds (:data:`RULES`: losses import neither
training nor data, data and metrics never import training, nothing below the CLI imports
it, ...); the training modules import each other without a circle.

Walks every module's ``import`` statements (top level and inside functions) with ``ast``.
"""
from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO

SRC = REPO / "src" / "spmlkit"

CORE = ("data", "features", "models", "losses", "methods", "training", "metrics", "rank_counts", "labels", "io", "reading", "ownership", "errors",
        "config", "registry", "_version", "device", "progress", "params")
#: the user-facing layer (run folders, saved models, label sets, reports, the estimator)
PRACTITIONER = ("practitioner",)
UPPER = PRACTITIONER + ("experiments", "cli", "__main__")

#: Known upward imports, as (importing module, imported module).  Empty: the test fails on
#: any upward arrow, and on a listed one that no longer exists (so the list only shrinks).
PENDING: set[tuple[str, str]] = set()


def module_name(path: Path, root: Path = SRC) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts)


def package_imports(path: Path, root: Path = SRC):
    """``(target, names)`` for every import of the package in ``path`` (function-level ones
    too): ``target`` the module imported from, relative to the package ('' for the package
    itself; relative imports resolved), ``names`` the names imported from it, or None for
    a plain ``import spmlkit.x``."""
    mod = module_name(path, root)
    pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                yield ".".join([*base, *(node.module.split(".") if node.module else [])]), [a.name for a in node.names]
            elif node.module and node.module.split(".")[0] == "spmlkit":
                yield node.module[len("spmlkit"):].lstrip("."), [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "spmlkit":
                    yield a.name[len("spmlkit"):].lstrip("."), None


def imports_of(path: Path, root: Path = SRC) -> set[str]:
    out = set()
    for target, imported in package_imports(path, root):
        if imported is None:
            out.add(target)
            continue
        names = [f"{target}.{n}" if target else n for n in imported]
        if target == "":  # `from .. import io`: the names are the package's submodules
            out.update(n for n in names if (SRC / n).is_dir() or (SRC / f"{n}.py").exists())
            out.update("" for n in names if not ((SRC / n).is_dir() or (SRC / f"{n}.py").exists()))
            continue
        out.add(target)
        out.update(names)
    return out


def in_layer(name: str, layer: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in layer)


def upward_arrows() -> set[tuple[str, str]]:
    arrows = set()
    for path in SRC.rglob("*.py"):
        mod = module_name(path)
        if not in_layer(mod, CORE) or in_layer(mod, UPPER):
            continue
        for target in imports_of(path):
            if target == "" or target in ("__version__", "SpmlError", "load", "SPMLClassifier"):
                arrows.add((mod, "spmlkit (package __init__)"))
            elif in_layer(target, UPPER):
                arrows.add((mod, target.rsplit(".", 1)[0] if target.count(".") and not in_layer(
                    target.rsplit(".", 1)[0], ("training", "models")) else target))
    return arrows


def test_core_never_imports_upward():
    found = upward_arrows()
    new = sorted(found - PENDING)
    assert not new, "upward imports from the core: " + ", ".join(f"{a} -> {b}" for a, b in new)
    gone = sorted(PENDING - found)
    assert not gone, "remove from PENDING (fixed): " + ", ".join(f"{a} -> {b}" for a, b in gone)


def test_the_walker_sees_relative_and_function_level_imports(tmp_path):
    p = SRC / "losses" / "base.py"
    assert "registry.Registry" in imports_of(p) and "params.check_params" in imports_of(p)


# ------------------------------------------------------------------ every rule of ARCHITECTURE.md
#: (importing layer, layers it must not import, the rule).  A layer is a top-level module or
#: package of spmlkit; the rules are ARCHITECTURE.md's ("Layers, and which way imports go",
#: "The flow a reader should see": files -> labels/bundle -> features -> model + method ->
#: metrics -> tables).
FLOW = "data flows one way: files -> labels/bundle -> features -> model + method -> metrics -> tables"
RULES: list[tuple[str, tuple[str, ...], str]] = [
    ("losses", ("training", "data"), "nothing in losses/ imports training/ or data/ (a loss is a pure function)"),
    ("data", ("training",), "data/ never imports training/"),
    ("metrics", ("training",), "metrics never imports training/"),
    ("rank_counts", ("training",), "metrics never imports training/ (rank_counts: the streamed metrics)"),
    ("practitioner", ("cli", "__main__"), "nothing below the CLI imports it"),
    ("experiments", ("cli", "__main__"), "nothing below the CLI imports it"),
    ("practitioner", ("experiments",), "the experiments use the user-facing layer, not the other way"),
    ("models", ("training", "methods", "losses", "data"), "models/ holds nn.Modules only"),
    ("methods", ("training",), "the trainer calls a method's hooks and knows no method; a method knows no trainer"),
    ("labels", ("data", "features", "models", "losses", "methods", "training", "metrics"), FLOW),
    ("data", ("features", "models", "losses", "methods", "metrics"), FLOW),
    ("features", ("models", "losses", "methods", "training", "metrics"), FLOW),
    ("losses", ("models", "methods", "features", "metrics"), FLOW),
    ("metrics", ("data", "features", "models", "losses", "methods", "labels"), FLOW),
    ("rank_counts", ("data", "features", "models", "losses", "methods", "labels"), FLOW),
]


def rule_violations(root: Path = SRC) -> list[str]:
    """Every import that breaks a rule of :data:`RULES`, as ``"module -> target (rule)"``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        mod = module_name(path, root)
        for importer, forbidden, why in RULES:
            if not in_layer(mod, (importer,)):
                continue
            for target in sorted(imports_of(path, root)):
                if in_layer(target, forbidden):
                    out.append(f"{mod} -> {target} ({why})")
    return out


def test_every_import_direction_rule_holds():
    found = rule_violations()
    assert not found, "imports against ARCHITECTURE.md:\n" + "\n".join(found)


def test_each_rule_catches_an_import_against_it(tmp_path):
    """A planted import of every forbidden pair is reported (the rules are not vacuous)."""
    for importer, forbidden, _ in RULES:
        for target in forbidden:
            root = tmp_path / f"{importer}-{target}"
            (root / importer).mkdir(parents=True)
            (root / importer / "__init__.py").write_text("")
            # a function-level, relative import: the least visible kind
            (root / importer / "planted.py").write_text(f"def f():\n    from ..{target} import thing\n")
            found = rule_violations(root)
            assert any(v.startswith(f"{importer}.planted -> {target}") for v in found), (importer, target, found)


def training_import_graph(root: Path = SRC) -> dict[str, set[str]]:
    """``training.X -> {training.Y, ...}``: the imports between the training modules (an
    import of the package itself, e.g. ``from . import distributed``, counts as the module)."""
    pkg = root / "training"
    mods = {module_name(p, root) for p in pkg.glob("*.py") if p.name != "__init__.py"}
    graph = {}
    for m in mods:
        targets = set()
        for t in imports_of(root / (m.replace(".", "/") + ".py"), root):
            parts = t.split(".")
            for i in range(len(parts), 1, -1):
                if ".".join(parts[:i]) in mods:
                    targets.add(".".join(parts[:i]))
                    break
        graph[m] = targets - {m}
    return graph


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (as a path that returns to its start), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        stack.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_the_training_modules_import_without_a_circle():
    """Issue 26: linear -> recipe -> linear was a circle; training.run chooses the trainer
    once, and the trainers import the run assembly (training.prepare), never each other's
    callers."""
    graph = training_import_graph()
    assert "training.prepare" in graph["training.linear"] and "training.recipe" not in graph["training.linear"]
    circle = cycle_in(graph)
    assert circle is None, " -> ".join(circle)
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]  # the finder finds one


# ------------------------------------------------------------------ no circle anywhere
def import_graph(root: Path = SRC) -> dict[str, set[str]]:
    """``module -> {modules it imports}`` over every module of the package (a package is its
    ``__init__``, named by the package).  ``from P import x`` imports the module ``P.x``
    when there is one, else ``P``; imports inside functions count (a lazy import is still
    an arrow between the two modules)."""
    mods = {module_name(p, root): p for p in root.rglob("*.py")}

    def resolve(name: str) -> str | None:
        parts = name.split(".") if name else []
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in mods:
                return ".".join(parts[:i])
        return "" if "" in mods else None

    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        targets = set()
        for target, imported in package_imports(path, root):
            if imported is None:
                found = [resolve(target)]
            else:  # `from P import x`: the module P.x when there is one, else P
                subs = [f"{target}.{n}" if target else n for n in imported]
                found = [sub if sub in mods else resolve(target) for sub in subs]
            targets.update(f for f in found if f is not None)
        graph[mod] = targets - {mod}
    return graph


def test_no_module_of_the_package_imports_itself_through_a_circle():
    """Issue 34: every package and module imports without a circle (the bench and its
    executors, data/__init__ and data/observed were circles)."""
    circle = cycle_in(import_graph())
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_circle_finder_sees_a_circle_through_a_package_init_and_a_lazy_import(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("from .a import f\n")
    (root / "sub" / "a.py").write_text("def f():\n    from . import g\n")  # the package's name, not a module
    (root / "sub" / "b.py").write_text("")
    (root / "sub" / "__init__.py").write_text("from .a import f\ng = 1\n")
    assert cycle_in(import_graph(root)) == ["sub", "sub.a", "sub"]
    (root / "sub" / "a.py").write_text("def f():\n    from . import b\n")  # a module of the package: no circle
    assert cycle_in(import_graph(root)) is None

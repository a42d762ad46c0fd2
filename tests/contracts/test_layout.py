"""The tests mirror the package (issue 26): ``src/spmlkit/<path>/<module>.py`` is tested in
``tests/<path>/test_<module>.py``, so the test of a module is found by its name and a new
module without one fails here.  Tests of no single module live in the named folders of
CROSS_CUTTING; shared factories and helpers in ``tests/helpers/`` (docs/extending.md, "Tests").
"""
from __future__ import annotations

import sys

from tests.helpers import REPO

PACKAGE = REPO / "src" / "spmlkit"
TESTS = REPO / "tests"
NOT_MODULES = {"__init__.py", "__main__.py", "_version.py"}

#: modules allowed to have no test file of their own, each with the reason.  This list
#: may only shrink: a listed module that gets its test file fails
#: test_the_allow_list_only_shrinks until it is removed from here.
WITHOUT_TESTS: dict[str, str] = {}

#: folders of tests that exercise no single module (contracts over every registered loss
#: and method and the import rules, the documentation's examples, whole workflows, the
#: safety suites, the device suites, the fast paths against their dense twins)
CROSS_CUTTING = {"contracts", "docs", "integration", "safety", "devices", "helpers", "twins"}

#: test files in a package folder that are named after no module, with the reason
#: (the planted-bug edge tests of benchmarks/plants.py round 2, written beside the module's own test file
#: while other work edited it: each tests the module its name starts with)
_EDGES = "edge cases of the module named before _edges (benchmarks/plants.py round 2); may move into its test file"
EXTRA_TEST_FILES: dict[str, str] = {f: _EDGES for f in (
    "data/formats/test_label_rule_edges.py", "data/test_covariate_info_edges.py",
    "data/test_spatial_splits_edges.py", "ownership/test_rename_edges.py", "practitioner/test_refit_edges.py",
    "practitioner/test_sdm_cv_edges.py", "practitioner/test_sdm_metrics_edges.py", "training/test_ensemble_edges.py",
    "training/test_tree_objective_edges.py", "training/test_validation_edges.py", "training/test_trees_edges.py",
    "data/formats/test_table_checks_edges.py", "data/test_rasters_edges.py")}
EXTRA_TEST_FILES["practitioner/test_maps_pinned.py"] = (
    "practitioner/maps.py's figure and option plumbing, pinned for its mutation score (benchmarks/mutation.py)")
EXTRA_TEST_FILES["training/test_recipe_survivors.py"] = (
    "training/recipe.py's helpers on stubs (weighing, probabilities, rows' logits, tree budget), pinned for its "
    "mutation score (benchmarks/mutation.py)")


def _modules() -> list[str]:
    return sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if p.name not in NOT_MODULES)


def _test_file(module: str) -> str:
    parent, _, name = module.rpartition("/")
    return f"{parent + '/' if parent else ''}test_{name}"


def test_every_module_has_its_test_file():
    missing = [m for m in _modules() if m not in WITHOUT_TESTS and not (TESTS / _test_file(m)).is_file()]
    assert not missing, "modules without tests/<path>/test_<module>.py: " + ", ".join(
        f"{m} (-> tests/{_test_file(m)})" for m in missing)


def test_the_allow_list_only_shrinks():
    modules = set(_modules())
    gone = [m for m in WITHOUT_TESTS if m not in modules]
    tested = [m for m in WITHOUT_TESTS if (TESTS / _test_file(m)).is_file()]
    assert not gone, f"WITHOUT_TESTS names modules that no longer exist: {gone}"
    assert not tested, f"these modules have their test file now: remove them from WITHOUT_TESTS: {tested}"
    assert all(reason.strip() for reason in WITHOUT_TESTS.values())


def test_every_test_file_is_mirrored_or_cross_cutting():
    """A flat ``tests/test_<topic>.py`` or ``tests/<package>/test_<topic>.py`` that names no
    module is refused: put it in its module's file or in a CROSS_CUTTING folder."""
    stray = []
    for f in sorted(TESTS.rglob("test_*.py")):
        rel = f.relative_to(TESTS)
        if rel.parts[0] in CROSS_CUTTING or str(rel) in EXTRA_TEST_FILES:
            continue
        module = PACKAGE.joinpath(*rel.parts[:-1], rel.name[len("test_"):])
        if not module.is_file():
            stray.append(str(rel))
    assert not stray, f"test files named after no module of src/spmlkit: {stray}"
    assert all((TESTS / f).is_file() for f in EXTRA_TEST_FILES)


def test_every_test_folder_is_a_package():
    """``tests/`` and its folders are packages, so test files of the same name in two
    folders (tests/losses/test_base.py, tests/methods/test_base.py) import as different
    modules, and helpers import as ``tests.helpers.<module>`` from any depth."""
    folders = [TESTS, *(p for p in TESTS.rglob("*") if p.is_dir() and p.name != "__pycache__")]
    assert [str(d.relative_to(REPO)) for d in folders if not (d / "__init__.py").is_file()] == []


def test_the_guard_sees_a_module_without_a_test(tmp_path, monkeypatch):
    """The check above is not vacuous: a module with no test file is reported."""
    fake = tmp_path / "spmlkit"
    (fake / "losses").mkdir(parents=True)
    (fake / "losses" / "new_loss.py").write_text("")
    (fake / "losses" / "__init__.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    try:
        test_every_module_has_its_test_file()
    except AssertionError as e:
        assert "losses/new_loss.py (-> tests/losses/test_new_loss.py)" in str(e)
    else:
        raise AssertionError("a module without a test file was not reported")

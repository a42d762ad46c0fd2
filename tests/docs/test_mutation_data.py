"""The hand-kept lists of benchmarks/mutation.py are data (benchmarks/mutation_survivors.toml):
every entry well formed, naming a known module, a known reason and, for a survivor killed
since, an existing test file; and the staleness check of mutation.md reads git history."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib

import pytest

from tests.helpers import REPO


@pytest.fixture(scope="module")
def mutation():
    spec = importlib.util.spec_from_file_location("bench_mutation", REPO / "benchmarks" / "mutation.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_mutation"] = mod
    spec.loader.exec_module(mod)
    return mod


def _known(mutation, module: str) -> bool:
    return module in mutation.MODULES or (module.startswith("losses/"))


def test_every_entry_of_the_data_file_is_well_formed(mutation):
    with open(mutation.SURVIVORS, "rb") as fh:
        data = tomllib.load(fh)
    assert set(data) == {"reasons", "equivalent", "killed_since"}
    reasons = data["reasons"]
    assert reasons and all(isinstance(v, str) and v.strip() for v in reasons.values())
    used = set()
    for i, e in enumerate(data["equivalent"]):
        where = f"[[equivalent]] #{i + 1} ({e.get('module')}: {e.get('before')!r})"
        assert set(e) <= {"module", "before", "after", "reason", "why", "context"}, where
        assert {"module", "before", "after"} <= set(e) and ("reason" in e) != ("why" in e), where
        assert _known(mutation, e["module"]), where
        assert e["before"].strip() and e["before"] != e["after"], where
        if "reason" in e:
            assert e["reason"] in reasons, f"{where}: no reason named {e['reason']!r}"
            used.add(e["reason"])
        assert all(isinstance(c, str) and c.strip() for c in e.get("context", [])), where
    for i, e in enumerate(data["killed_since"]):
        where = f"[[killed_since]] #{i + 1} ({e.get('module')}: {e.get('before')!r})"
        assert set(e) == {"module", "before", "after", "test"}, where
        assert _known(mutation, e["module"]) and e["before"].strip(), where
        path = e["test"].split("::")[0]
        assert (REPO / path).is_file(), f"{where}: no test file {path}"
    generic = {"FLAGDEFAULT", "CODEC", "FALSYKW", "SPLITSLASH", "TYPELETTER", "EXCL"}  # read by _generic_reason
    assert generic <= set(reasons)
    assert not set(reasons) - used - generic, "reasons no entry uses"


def test_the_script_reads_the_lists_from_the_data_file(mutation):
    reasons, equivalent, killed = mutation.load_survivors()
    assert mutation.EQUIVALENT == equivalent and mutation.KILLED_SINCE == killed and mutation._WHY == reasons
    mod, before, after, why, *_ = equivalent[0]
    diff = f"--- a\n+++ b\n-    {before}\n+    {after}\n"
    assert mutation.reason_for(mod, diff) == why


def test_a_row_is_stale_once_its_module_changed_after_the_measurement(mutation):
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    git = lambda *a: subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True).stdout.strip()  # noqa: E731
    first = git("log", "--format=%h", "--reverse", "--", "src/spmlkit/metrics.py").splitlines()[0]
    assert mutation.stale_since("metrics.py", first, worktree=False).startswith("changed in ")
    last = git("log", "-1", "--format=%h", "--", "src/spmlkit/metrics.py")
    assert mutation.stale_since("metrics.py", last, worktree=False) is None
    assert "not in this history" in mutation.stale_since("metrics.py", "0" * 40)


def test_a_package_is_measured_under_its_folder_key_and_its_former_key_is_read_as_it(mutation):
    assert "ownership/" in mutation.MODULES and "ownership.py" not in mutation.MODULES
    assert mutation.module_key("src/spmlkit/ownership/") == mutation.module_key("ownership.py") == "ownership/"
    assert mutation.module_key("ownership/files.py") == "ownership/files.py"
    assert mutation.tests_for("ownership/files.py") == mutation.tests_for("ownership/") == ["tests/ownership"]
    assert mutation.tests_for("losses/focal.py") == mutation.tests_for("losses/")
    assert mutation.mutate_pattern("ownership/") == "src/spmlkit/ownership/*"
    with pytest.raises(SystemExit, match="ownership/<file>.py"):
        mutation.module_key("ownership/files.txt")
    old = {"module": "ownership.py", "commit": "230d791"}
    assert mutation.migrate({"ownership.py": old}) == {"ownership/": {**old, "module": "ownership/"}}
    new = {"module": "ownership/", "commit": "abc1234"}
    assert mutation.migrate({"ownership.py": old, "ownership/": new}) == {"ownership/": new}


def test_a_package_survivor_is_planted_against_its_mirroring_test_file_first(mutation):
    assert mutation._mirror_test("ownership/", "spmlkit/ownership/files.py") == "tests/ownership/test_files.py"
    assert mutation._mirror_test("ownership/", "spmlkit/ownership/nowhere.py") is None  # no such test file
    assert mutation._mirror_test("io.py", "spmlkit/io.py") is None  # a single module: its covering tests only

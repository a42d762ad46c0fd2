"""docs/extending.md's "Methods are named by mechanism" table says where each registered
method lives: every method of the package once, in the module that registers it."""
import re

from spmlkit.methods import METHODS, get_method_spec
from tests.helpers import REPO

DOC = REPO / "docs" / "extending.md"
ROW = re.compile(r"^\| ([^|]+) \| ((?:`[^`]+` ?)+) \| `([a-z_0-9]+)\.py`")


def _table() -> dict[str, str]:
    """method -> the module the table names for it."""
    out: dict[str, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            for name in re.findall(r"`([^`]+)`", m.group(2)):
                assert name not in out, f"docs/extending.md lists {name} twice"
                out[name] = m.group(3)
    return out


def test_every_method_is_listed_with_its_module():
    get_method_spec("an")  # discovers every method module
    own = {n: s.factory.__module__ for n, s in METHODS.items() if s.factory.__module__.startswith("spmlkit.")}
    table = _table()
    assert sorted(table) == sorted(own), "docs/extending.md's method table and the registry differ"
    wrong = {n: (table[n], own[n]) for n in own if own[n] != f"spmlkit.methods.{table[n]}"}
    assert not wrong, f"docs/extending.md names the wrong module for: {wrong}"

"""The method catalogue: what ``spml methods`` lists, read without importing torch.

Every method module imports torch (its loss works on tensors), and importing torch takes
seconds (15 s on a busy 2-core machine), so a command that only *lists* methods reads
``catalogue.json`` beside this module instead: one row per registered method (name,
regime, setting, family, reference, summary, hyper-parameters with their defaults), as
:func:`spmlkit.methods.describe_methods` returns them.  The file is written by

    python -m spmlkit.catalogue

and a test (tests/test_catalogue.py) fails, naming that command, whenever it differs from
the registry (a method added, renamed, or given another default).
"""
from __future__ import annotations

import json
from pathlib import Path

from . import ownership

#: the catalogue file (package data)
CATALOGUE = Path(__file__).with_name("catalogue.json")


def method_rows() -> list[dict]:
    """The catalogue's rows (no torch import): ``[{"name", "regime", "setting", "family",
    "reference", "summary", "hyperparameters"}, ...]`` sorted by family then name."""
    return json.loads(CATALOGUE.read_text(encoding="utf-8"))["methods"]


def method_names() -> list[str]:
    """The registered method names, sorted (no torch import)."""
    return sorted(r["name"] for r in method_rows())


def registry_rows() -> list[dict]:
    """The rows the registry gives now for spmlkit's own methods (imports every method
    module, and torch); a method registered from outside the package (a plug-in, a test)
    is not part of the catalogue."""
    from .methods import METHODS, describe_methods  # lazy: torch-free CLI start-up

    own = {n for n, s in METHODS.items() if getattr(s.factory, "__module__", "").startswith("spmlkit.")}
    return json.loads(json.dumps([r for r in describe_methods() if r["name"] in own]))  # (as JSON reads them back)


def write_catalogue(path: Path = CATALOGUE) -> Path:
    """Write the catalogue from the registry (``python -m spmlkit.catalogue``)."""
    text = json.dumps({"written_by": "python -m spmlkit.catalogue", "methods": registry_rows()}, indent=1,
                      ensure_ascii=False) + "\n"

    ownership.output_file(path, overwrite=True, what="catalogue", record=False)  # (never through a link)
    with ownership.write_output_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


if __name__ == "__main__":  # pragma: no cover - exercised by tests/test_catalogue.py through write_catalogue
    print(f"wrote {write_catalogue()}")

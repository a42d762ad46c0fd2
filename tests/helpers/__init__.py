"""Helpers shared by the tests (not collected by pytest: no ``test_`` file names).

Import them as ``tests.helpers.<module>`` from a test at any depth: ``tests/`` and every
folder under it is a package, so pytest puts the repository root on ``sys.path``.
``REPO`` is the repository root, for tests that read the README, docs or examples, or
start a subprocess that must import this checkout's ``src`` (``SRC``)."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"

"""Adoption of an older spmlkit's folder (a marker without a manifest, or a kind's own metadata):
its entries that follow the kind's layout are listed once, and are spmlkit's from then on."""
from __future__ import annotations

import os
import stat

from .rule import Kind, _SPECIAL, _in_layout
from .manifest import _Root


def _adopt_layout(root: _Root, kind: Kind) -> None:
    """List the entries of an older spmlkit's folder that follow ``kind``'s layout (regular
    files with one name, real folders; never links): they are spmlkit's from now on."""
    root.refresh()

    def adopt(path: str, rel: str) -> None:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            if not root.owns(rel, st, "d"):
                root.record("d", rel, st)
            for e in os.scandir(path):
                adopt(e.path, f"{rel}/{e.name}")
        elif stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and not root.owns(rel, st, "f"):
            root.record("f", rel, st)

    for e in os.scandir(root.path):
        if e.name not in _SPECIAL and _in_layout(e.name, kind):
            adopt(e.path, e.name)

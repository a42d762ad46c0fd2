"""Files a test plants inside a folder spmlkit wrote, made spmlkit's own (listed in the
folder's manifest, :mod:`spmlkit.ownership`) — as if spmlkit had written them and they
were damaged or tampered with afterwards.  Planted without this, they are someone
else's files: spmlkit refuses to touch them before it ever reads them."""
from __future__ import annotations

from pathlib import Path


def spmlkit_wrote(root: Path, kind: str, *paths: Path) -> None:
    """Re-write ``paths`` (files the test wrote inside ``root``, a folder of ``kind``)
    through spmlkit's ownership module, byte for byte."""
    from spmlkit import ownership

    root = Path(root)
    data = {Path(p): Path(p).read_bytes() for p in paths}
    for p in data:
        p.unlink()
    for p in data:  # folders the test made for them, now empty
        d = p.parent
        while d != root and d.is_dir() and not any(d.iterdir()):
            d.rmdir()
            d = d.parent
    ownership.claim(root, kind)
    for p, b in data.items():
        ownership.write_bytes(p, b)


def seal_feature_cache(folder: Path) -> None:
    """A feature cache a test wrote by hand (``BUNDLE/features/NAME/{split}.npy``) gets the
    SHA-256 sidecars ``spml features`` writes (the reader refuses an array without one)."""
    import hashlib

    for p in sorted(Path(folder).glob("*.npy")):
        p.with_name(p.name + ".sha256").write_text(hashlib.sha256(p.read_bytes()).hexdigest() + "\n")

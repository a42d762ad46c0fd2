"""Checkpoints written atomically, verified by SHA-256, and read without unpickling.

``save_checkpoint`` writes ``<path>`` and ``<path>.sha256`` (the digest of the bytes);
``load_checkpoint`` recomputes it and raises :class:`~spmlkit.errors.CorruptFileError`
on a mismatch instead of loading a truncated or altered file.

**Nothing is unpickled.**  A checksum is no defence against a planted file (whoever
writes the file writes its sidecar too), so every checkpoint is read with
``torch.load(weights_only=True)``: tensors, plain containers (dict, list, tuple),
numbers, strings, booleans and ``None`` only.  A file holding any other Python object
— a pickle payload — is refused with a one-line error before anything in it runs.
Numpy arrays (e.g. numpy's global RNG state) are stored as tensors under the
marker key :data:`_NDARRAY` and turned back into arrays on load; any other object is
refused already when *writing* (:func:`encode_state`), so a checkpoint spmlkit writes
can always be read back safely.

Each file is replaced atomically, but two files cannot be replaced at once: a process
killed between the rename of ``<path>`` and the rewrite of its sidecar would leave a
good checkpoint next to the previous digest (or, for the first checkpoint, next to no
digest at all).  So the sidecar is updated in two steps — first it lists the old (if
any) *and* the new digest, then the checkpoint is renamed into place, then the sidecar
is rewritten with the new digest only — and a file is accepted when its digest is one
of the listed ones.  A kill at any point leaves a loadable pair (or, before the first
checkpoint exists, a sidecar alone, which resuming ignores).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import ownership
from ..errors import CorruptFileError, SpmlError
from ..io import read_json, safe_torch_load, sha256_bytes, sha256_file
from ..ownership import write_text

_NDARRAY = "__spmlkit_ndarray__"
_PLAIN = (bool, int, float, str, bytes, type(None))


def encode_state(obj: Any, where: str = "state") -> Any:
    """``obj`` with every numpy array/scalar replaced by a tensor form that
    ``torch.load(weights_only=True)`` reads and every tensor on the CPU (files are
    device-free: a checkpoint written on a GPU loads anywhere); raises ``TypeError`` on
    anything else that is not a tensor, a plain container or a plain value (so an unsafe
    object is caught when the checkpoint is written, not when it is read)."""
    if isinstance(obj, torch.Tensor):
        return obj.cpu()  # the tensor itself when it is on the CPU already
    if isinstance(obj, _PLAIN):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError(f"{where}: object arrays cannot be checkpointed")
        return {_NDARRAY: torch.from_numpy(np.array(obj, copy=True, order="C"))}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: encode_state(v, f"{where}[{k!r}]") for k, v in obj.items()}
    if isinstance(obj, list):
        return [encode_state(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, tuple):
        return tuple(encode_state(v, f"{where}[{i}]") for i, v in enumerate(obj))
    if isinstance(obj, torch.Size):
        return tuple(obj)
    raise TypeError(f"{where}: a {type(obj).__module__}.{type(obj).__qualname__} cannot be checkpointed "
                    "(only tensors, numpy arrays, plain containers and plain values can)")


def decode_state(obj: Any) -> Any:
    """Inverse of :func:`encode_state`."""
    if isinstance(obj, dict):
        if len(obj) == 1 and _NDARRAY in obj:
            return obj[_NDARRAY].numpy()
        return {k: decode_state(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode_state(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(decode_state(v) for v in obj)
    return obj


def save_checkpoint(obj, path: str | Path) -> str:
    path = Path(path)
    sidecar = path.with_name(path.name + ".sha256")
    ownership.target(path)  # both spmlkit's (or new): a link or a file of anyone else's is refused before
    ownership.target(sidecar)  # anything is read or written
    buf = io.BytesIO()
    torch.save(encode_state(obj), buf)
    data = buf.getvalue()
    digest = sha256_bytes(data)
    old = sidecar.read_text().split() if sidecar.exists() and path.exists() else []
    if old != [digest]:  # phase 1 (also for the first checkpoint): the new digest is listed before the file exists
        write_text(sidecar, "\n".join(dict.fromkeys([*old, digest])) + "\n")
    ownership.write_bytes(path, data)  # through the module: tests simulate a kill here
    write_text(sidecar, digest + "\n")  # phase 2: only the new one
    return digest


def load_checkpoint(path: str | Path, *, map_location="cpu"):
    """Verify ``path`` against its sidecar, then load it with :func:`spmlkit.io.safe_torch_load`
    (tensors and plain values only; tensors on ``map_location``, the CPU by default, so a
    checkpoint written on a GPU loads on a CPU-only machine)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(path)
    sidecar = path.with_name(path.name + ".sha256")
    if not sidecar.exists():
        raise CorruptFileError(f"{path}: checksum file {sidecar.name} is missing; refusing to load an unverified checkpoint")
    try:
        expected = sidecar.read_text().split()
        actual = sha256_file(path)
    except OSError as exc:
        raise CorruptFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if actual not in expected:
        shown = expected[-1][:12] if expected else "nothing"
        raise CorruptFileError(f"{path}: checksum mismatch (expected {shown}..., got {actual[:12]}...); "
                               "the file is truncated or corrupted — delete it to start over")
    return decode_state(safe_torch_load(path, map_location=map_location))


#: the advice of every damaged-checkpoint message (resuming is what reads a checkpoint)
RESTART_ADVICE = "delete it, or start over with --no-resume"


def run_checkpoint_problem(state: Any, epochs: int | None = None) -> str | None:
    """What is wrong with a training checkpoint (``last.pt`` of a run, an ``auto`` member or
    a bench work folder, as :func:`spmlkit.training.loop.fit` writes it), None when its
    schema is sound: a dict with ``epoch`` (a whole number from 1 to ``epochs``),
    ``learner``, ``method`` and ``tracker`` (dicts), ``active`` (whole numbers) and ``rng``
    (a dict or None)."""
    if not isinstance(state, dict):
        return f"expected a dict of training state, found {type(state).__name__}"
    missing = [k for k in ("epoch", "learner", "method", "tracker") if k not in state]
    if missing:
        return f"missing {', '.join(repr(k) for k in missing)}"
    epoch = state["epoch"]
    if isinstance(epoch, torch.Tensor) and epoch.numel() == 1 and not epoch.is_floating_point():
        epoch = int(epoch)
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        return f"'epoch' is {type(epoch).__name__}, expected a whole number"
    if epoch < 1 or (epochs is not None and epoch > int(epochs)):
        return f"'epoch' is {epoch}, expected 1 to {epochs if epochs is not None else 'the number of epochs'}"
    for k in ("learner", "method", "tracker"):
        if not isinstance(state[k], dict):
            return f"{k!r} is {type(state[k]).__name__}, expected a dict"
    active = state.get("active", [])
    if not isinstance(active, (list, tuple)) or not all(isinstance(a, int) and not isinstance(a, bool) and a >= 0
                                                        for a in active):
        return "'active' is not a list of member numbers"
    rng = state.get("rng")
    if rng is not None and (not isinstance(rng, dict) or any(k not in rng for k in ("torch", "numpy", "random"))):
        return "'rng' is not the saved random generator states"
    return None


def load_run_checkpoint(path: str | Path, *, epochs: int | None = None, map_location="cpu") -> dict:
    """:func:`load_checkpoint` of a training checkpoint, its schema checked
    (:func:`run_checkpoint_problem`): a file that loads safely but is not what spmlkit
    wrote (an empty dict, a list, a bare tensor, ``epoch`` −5 or ``'abc'``, no
    ``learner``) is a one-line :class:`CorruptFileError` naming the file, with the advice
    to start over."""
    state = load_checkpoint(path, map_location=map_location)
    problem = run_checkpoint_problem(state, epochs)
    if problem is not None:
        raise CorruptFileError(f"{path}: not a usable training checkpoint ({problem}); {RESTART_ADVICE}")
    state["epoch"] = int(state["epoch"])
    return state


def is_run_folder(path) -> bool:
    """True when ``path`` holds a training run spmlkit wrote before folders carried its
    marker: a run's ``config.json`` (``spml train``), or a ``last.pt`` whose SHA-256 its
    ``last.pt.sha256`` records (a run of the training loop called from Python, a bench
    group's checkpoint)."""
    path = Path(path)
    try:
        cfg = read_json(path / "config.json")
        if isinstance(cfg, dict) and "config" in cfg and "bundle" in cfg:
            return True
    except (OSError, SpmlError):
        pass
    ckpt, sidecar = path / "last.pt", path / "last.pt.sha256"
    if ckpt.is_symlink() or sidecar.is_symlink() or not (ckpt.is_file() and sidecar.is_file()):
        return False
    try:
        return sha256_file(ckpt) in sidecar.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return False


# the folder of a training run (spml train's, a recipe member's, a bench group's work folder)
ownership.register_kind("run", "a spmlkit run", is_ours=is_run_folder,
                        layout=("config.json", "metrics.jsonl", "last.pt", "last.pt.sha256", "result.json", "report.md",
                                "*.png", "model", "members", "member*-lr*", "linear-init", ".spml-scratch",
                                "tensorboard", "key.json", "hist.jsonl", "worker.json"))


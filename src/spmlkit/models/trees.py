"""The tree head: ``G`` gradient-boosted tree models (XGBoost boosters) behind the
stacked-head interface, ``(B, D)`` or ``(G, B, D)`` -> ``(G, B, L)`` margins.

The boosters are trained elsewhere (:mod:`spmlkit.training.trees`); this module only
holds them, so that saving, loading and prediction go through the same paths as the
linear and MLP heads (``build_head("tree", ...)`` then ``load_state_dict``).

**State, no pickle.**  Each member's booster is kept in XGBoost's own UBJSON model format
(``Booster.save_raw("ubj")``: a data format of tree arrays, read by XGBoost's parser, which
runs no code — unlike pickling a ``Booster``) and stored as a float32 tensor of its byte
values, so a saved model is a plain tensor file like every other head's (spmlkit's saved
models hold floating-point tensors only).  State keys, member axis first:

* ``booster`` ``(G, n_bytes)``: the UBJSON bytes (0..255), zero-padded to the longest member;
* ``length`` ``(G,)``: each member's byte count;
* ``intercept`` ``(G, L)``: the per-label constant added to the booster's margin;
* ``n_features`` ``(G,)``: the number of input features (a saved model reads it there).

Prediction is the booster's raw margin (``predict_type="margin"``) plus the intercept.
The module has no trainable parameter (``nn.Module`` for the interface only).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..errors import ConfigError

KEYS = ("booster", "length", "intercept", "n_features")


def xgboost_module():
    """The ``xgboost`` module, or one line naming the extra to install."""
    try:
        import xgboost  # lazy: optional dependency (the trees extra)
    except ImportError as exc:  # pragma: no cover - the extra is installed in the test environment
        raise ConfigError("the tree head needs XGBoost: pip install 'spmlkit[trees]' (the xgboost-cpu wheel, "
                          "about 6 MB)") from exc
    return xgboost


def booster_to_tensor(booster) -> torch.Tensor:
    """A booster as a float32 tensor of its UBJSON bytes."""
    raw = np.frombuffer(bytes(booster.save_raw(raw_format="ubj")), dtype=np.uint8)
    return torch.from_numpy(raw.astype(np.float32))


def booster_from_tensor(values: torch.Tensor, length: int):
    """The booster stored by :func:`booster_to_tensor` (its first ``length`` values),
    loaded by XGBoost's own model loader (no pickle)."""
    arr = values[: int(length)].detach().cpu().numpy()
    if arr.size == 0 or not np.all((arr >= 0) & (arr <= 255) & (arr == np.round(arr))):
        raise ValueError("a tree head's booster state is not a byte string")
    booster = xgboost_module().Booster()
    booster.load_model(bytearray(arr.astype(np.uint8).tobytes()))
    return booster


def stack_member_states(states: list[dict]) -> dict:
    """Members' tree states ``{"booster": (n_g,), "length": (), "intercept": (L,)}`` ->
    the stacked state (boosters zero-padded to the longest)."""
    width = max(int(s["booster"].shape[0]) for s in states)
    booster = torch.zeros((len(states), width), dtype=torch.float32, device="cpu")
    for g, s in enumerate(states):
        booster[g, : s["booster"].shape[0]] = s["booster"].cpu()
    return {"booster": booster,
            "length": torch.stack([torch.as_tensor(s["length"], dtype=torch.float32, device="cpu") for s in states]),
            "intercept": torch.stack([torch.as_tensor(s["intercept"], dtype=torch.float32, device="cpu")
                                      for s in states]),
            "n_features": torch.stack([torch.as_tensor(s["n_features"], dtype=torch.float32, device="cpu")
                                       for s in states])}


class TreeHead(nn.Module):
    """``G`` boosters: ``(B, D)`` (shared inputs) or ``(G, B, D)`` -> ``(G, B, L)`` margins."""

    def __init__(self, in_features: int, out_features: int, n_members: int):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        self._n = int(n_members)
        self.boosters: list = []
        # (on the CPU: XGBoost predicts there; the outputs move to the inputs' device)
        self.register_buffer("booster", torch.zeros((self._n, 0), dtype=torch.float32, device="cpu"))
        self.register_buffer("length", torch.zeros((self._n,), dtype=torch.float32, device="cpu"))
        self.register_buffer("intercept", torch.zeros((self._n, self.out_features), dtype=torch.float32, device="cpu"))
        self.register_buffer("n_features", torch.full((self._n,), float(self.in_features), device="cpu"))

    @property
    def n_members(self) -> int:
        return self._n

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # the boosters' byte length differs per model: take the stored shapes, then parse
        have = {k: state_dict[prefix + k] for k in KEYS if prefix + k in state_dict}
        missing_keys.extend(prefix + k for k in KEYS if k not in have)
        if len(have) < len(KEYS):
            return
        booster, length, intercept, n_features = (have[k].detach().to("cpu", torch.float32) for k in KEYS)
        if booster.dim() != 2 or length.shape != (booster.shape[0],) or n_features.shape != length.shape or \
                intercept.shape != (booster.shape[0], self.out_features):
            error_msgs.append(f"tree head state: shapes booster {tuple(booster.shape)}, length {tuple(length.shape)}, "
                              f"intercept {tuple(intercept.shape)} do not fit {self.out_features} labels")
            return
        try:
            boosters = [booster_from_tensor(booster[g], int(length[g])) for g in range(booster.shape[0])]
        except Exception as exc:  # XGBoost's parser rejects a damaged model  # noqa: BLE001
            error_msgs.append(f"tree head state: a booster could not be read ({str(exc).splitlines()[0][:200]})")
            return
        self.booster, self.length, self.intercept, self.n_features = booster, length, intercept, n_features
        self.boosters, self._n = boosters, booster.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.boosters:
            raise RuntimeError("the tree head holds no booster yet (load a trained state first)")
        shared = x.dim() == 2
        out = []
        for g, booster in enumerate(self.boosters):
            rows = (x if shared else x[g]).detach().to("cpu", torch.float32).numpy()
            margin = np.asarray(booster.inplace_predict(rows, predict_type="margin"), dtype=np.float32)
            margin = margin.reshape(len(rows), self.out_features)
            out.append(torch.from_numpy(margin) + self.intercept[g].cpu())
        return torch.stack(out).to(x.device)


def build_tree_head(in_features: int, out_features: int, generators, *, hidden: int) -> TreeHead:
    """An empty tree head of ``len(generators)`` members, for ``load_state_dict``."""
    return TreeHead(in_features, out_features, len(generators))

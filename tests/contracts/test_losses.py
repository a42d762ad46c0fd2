"""The loss contract (src/spmlkit/losses/base.py), held against EVERY registered loss:
a new loss gets these checks for free (issue 17).

shape ``(..., B, L)`` or ``(..., B, 1)``; members along the leading axis independent;
finite values and gradients at |logit| = 100; float64 and bfloat16 inputs; deterministic;
losses whose paper ignores unobserved entries give them no gradient."""
from __future__ import annotations

import pytest
import torch

from spmlkit.losses import LOSSES, get_loss

get_loss("an")  # discovers every loss module
NAMES = sorted(LOSSES)
G, B, L = 2, 6, 5


def observations(full: bool = False, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if full:
        Z = torch.where(torch.rand(G, B, L, generator=g) < 0.4, 1, -1)
    else:
        Z = torch.zeros(G, B, L, dtype=torch.int64)
        Z[..., :] = torch.where(torch.rand(G, B, L, generator=g) < 0.2, -1, 0)  # some observed negatives
        pos = torch.randint(0, L, (G, B), generator=g)
        Z.scatter_(-1, pos.unsqueeze(-1), 1)
    return Z.to(torch.int8)


def method_inputs(spec, like: torch.Tensor, seed: int = 1) -> dict:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name in spec.inputs:
        if "logits" in name:
            out[name] = torch.randn(like.shape, generator=g).to(like.dtype)
        elif "frequency" in name:  # a label's share of the examples (Zbinden's n_s / n): inside (0, 1)
            out[name] = (0.05 + 0.9 * torch.rand(like.shape, generator=g)).to(like.dtype)
        else:  # targets, pseudo-labels, weights: values in [0, 1]
            out[name] = torch.rand(like.shape, generator=g).to(like.dtype)
    return out


def call(name: str, logits: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
    spec = LOSSES[name]
    # k (expected positives, Cole §5.3) has no default: the method supplies it from the data
    params = {"k": 2.0} if spec.hyperparameters.get("k", 0) is None else {}
    return spec.fn(logits, Z, **params, **method_inputs(spec, logits.detach()))


def logits_for(dtype=torch.float32, scale: float = 1.0, seed: int = 2) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(G, B, L, generator=g) * scale).to(dtype).requires_grad_(True)


@pytest.mark.parametrize("name", NAMES)
def test_shape_finite_and_deterministic(name):
    x, Z = logits_for(), observations()
    out = call(name, x, Z)
    assert out.shape in ((G, B, L), (G, B, 1)), out.shape
    assert torch.isfinite(out).all()
    assert torch.equal(out, call(name, x, Z))  # no hidden randomness


@pytest.mark.parametrize("name", NAMES)
def test_members_are_independent(name):
    x, Z = logits_for(), observations()
    base = call(name, x, Z).detach()
    y = x.detach().clone()
    y[1] += 3.0  # another member's scores change ...
    moved = call(name, y, Z).detach()
    assert torch.equal(base[0], moved[0])  # ... member 0's loss does not


@pytest.mark.parametrize("name", NAMES)
def test_finite_values_and_gradients_at_large_logits(name):
    x = logits_for(scale=1.0)
    with torch.no_grad():
        x.copy_(torch.sign(x) * 100.0)
    out = call(name, x, observations())
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_other_dtypes(name, dtype):
    x = logits_for(dtype)
    out = call(name, x, observations())
    assert torch.isfinite(out.float()).all()
    ref = call(name, logits_for(torch.float32), observations()).detach()
    tol = 1e-5 if dtype == torch.float64 else 0.1
    assert torch.allclose(out.detach().float(), ref, atol=tol, rtol=tol)


# Losses that, by their paper, use observed entries only (Cole et al. Table 1: "IUN"/"IU"
# ignore unobserved labels; full-label BCE is defined on observed entries).
OBSERVED_ONLY = [n for n in ("bce", "bce-ls", "iu", "iun") if n in LOSSES]


@pytest.mark.parametrize("name", OBSERVED_ONLY)
def test_unobserved_entries_contribute_nothing(name):
    x, Z = logits_for(), observations()
    call(name, x, Z).sum().backward()
    assert (x.grad[Z == 0] == 0).all()

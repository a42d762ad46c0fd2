"""The generalized robust loss as a method, ``gr``: GR-Loss with its epoch schedule (Chen
et al., IJCAI 2024, "Boosting Single Positive Multi-label Classification with Generalized
Robust Loss", arXiv:2405.03501).

The loss (:func:`spmlkit.losses.generalized_robust.generalized_robust`) needs, for every
unobserved entry, a soft pseudo-label ``k̂`` and a weight ``v``, both functions of the
detached prediction ``p`` whose parameters move linearly over training (Chen §3.3):

    k̂(p; β) = σ(w·p + b)                          β = (w, b)
    v(p; α) = exp(−(p − μ)² / (2σ²))              α = (μ, σ)

    w_t = w₀ + (w_T − w₀)·(t − 1)/T,   b_t = b₀ + (b_T − b₀)·(t − 1)/T
    μ_t = μ₀ + (μ_T − μ₀)·t/T,         σ_t = σ₀ + (σ_T − σ₀)·t/T

for epoch ``t = 1..T`` (the authors' schedule, without their optional LinearInit
offset).  ``k̂`` grows with ``p``: a label the model already believes in is pulled up
(pseudo-positive, loss L₂), one it rejects is pushed down (L₃); early in training
(``w₀ = 0``) every unobserved label gets the same small ``k̂ = σ(b₀) ≈ 0.12``.  ``v`` is a
Gaussian bump over ``p`` whose centre moves from 0.5 to 0.8 and whose width shrinks
from 2 (almost flat) to 0.5: late in training, entries with very low or very high
``p`` — the likely true negatives and the likely missing positives — count less,
which the paper motivates as handling the positive/negative imbalance.

Defaults: the official code's (β = [w₀, w_T, b₀, b_T] = [0, 2, −2, −2],
α = [μ₀, σ₀, μ_T, σ_T] = [0.5, 2, 0.8, 0.5], q₂ = 0.01, q₃ = 1).  The paper's alternative
of *learning* ``k̂`` with a per-class logistic regression (``is_train``) is off in the
released configuration and left out.
"""
from __future__ import annotations

import math

import torch

from ..errors import ConfigError
from .base import Batch, Component, Method, TrainContext, register_method

FAMILY = "chen2024"
REF = "Chen et al. 2024 (IJCAI), GR-Loss (arXiv:2405.03501)"


class GRSchedule(Component):
    """Supplies GR-Loss's ``soft_targets`` (k̂) and ``weights`` (v) for each batch from the
    detached logits, with the parameters of the current epoch (Chen §3.3)."""

    supports_members = True
    supports_compaction = True  # no per-member state

    def __init__(self, *, w0: float = 0.0, w_max: float = 2.0, b0: float = -2.0, b_max: float = -2.0,
                 mu0: float = 0.5, sigma0: float = 2.0, mu_max: float = 0.8, sigma_max: float = 0.5):
        if sigma0 <= 0 or sigma_max <= 0:
            raise ConfigError(f"gr: sigma0 and sigma_max must be > 0, got {sigma0}, {sigma_max}")
        self.w0, self.w_max, self.b0, self.b_max = float(w0), float(w_max), float(b0), float(b_max)
        self.mu0, self.sigma0, self.mu_max, self.sigma_max = float(mu0), float(sigma0), float(mu_max), float(sigma_max)
        self.epoch = 1
        self.total_epochs = 1

    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        self.total_epochs = max(1, int(ctx.epochs))
        self.epoch = 1

    def on_epoch_start(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def parameters_at(self, epoch: int | None = None) -> dict:
        """``w, b, mu, sigma`` of epoch ``epoch`` (default: the current one)."""
        t = self.epoch if epoch is None else int(epoch)
        T = self.total_epochs
        kb = max(t - 1, 0) / T
        ka = max(t, 0) / T
        return {"w": self.w0 + (self.w_max - self.w0) * kb, "b": self.b0 + (self.b_max - self.b0) * kb,
                "mu": self.mu0 + (self.mu_max - self.mu0) * ka,
                "sigma": self.sigma0 + (self.sigma_max - self.sigma0) * ka}

    @staticmethod
    def soft_label(p: torch.Tensor, w: float, b: float) -> torch.Tensor:
        """``k̂(p; β) = σ(w·p + b)``."""
        return torch.sigmoid(w * p + b)

    @staticmethod
    def weight(p: torch.Tensor, mu: float, sigma: float) -> torch.Tensor:
        """``v(p; α) = exp(−(p − μ)²/(2σ²))``."""
        return torch.exp(-0.5 * ((p - mu) / sigma) ** 2)

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        par = self.parameters_at()
        p = torch.sigmoid(logits.detach())
        return {"soft_targets": self.soft_label(p, par["w"], par["b"]),
                "weights": self.weight(p, par["mu"], par["sigma"])}

    def on_epoch_end(self, epoch: int, predict_train) -> dict:
        par = self.parameters_at(epoch)
        return {f"gr_{k}": round(v, 6) for k, v in par.items()}

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "total_epochs": self.total_epochs}

    def load_state_dict(self, state: dict) -> None:
        self.epoch = int(state.get("epoch", 1))


def gr_schedule(w0, w_max, b0, b_max, mu0, sigma0, mu_max, sigma_max) -> GRSchedule:
    for name, v in (("w0", w0), ("w_max", w_max), ("b0", b0), ("b_max", b_max), ("mu0", mu0), ("mu_max", mu_max)):
        if not math.isfinite(float(v)):
            raise ConfigError(f"gr: {name} must be a finite number, got {v}")
    return GRSchedule(w0=w0, w_max=w_max, b0=b0, b_max=b_max, mu0=mu0, sigma0=sigma0, mu_max=mu_max,
                      sigma_max=sigma_max)


@register_method("gr", reference=f"{REF}, §3", family=FAMILY, in_default_bench=False,
                 epoch_cost=3.4)  # (k̂, v and two losses per entry: benchmarks/results/method_cost.md)
def build_gr(q2: float = 0.01, q3: float = 1.0, w0: float = 0.0, w_max: float = 2.0, b0: float = -2.0,
             b_max: float = -2.0, mu0: float = 0.5, sigma0: float = 2.0, mu_max: float = 0.8,
             sigma_max: float = 0.5) -> Method:
    """GR-Loss: −log p on the positive, v·[k̂·GCE₊ + (1−k̂)·GCE₋] on unobserved labels, soft k̂ and v scheduled over epochs."""
    return Method("gr", "gr", loss_params={"q2": q2, "q3": q3},
                  components=[gr_schedule(w0, w_max, b0, b_max, mu0, sigma0, mu_max, sigma_max)])

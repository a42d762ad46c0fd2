"""Every registered loss against an independent reference (issue 39).

For each loss in the registry, ``REFERENCES`` holds the paper's equation written again
here, in plain torch arithmetic on probabilities (``f = 1/(1 + e^{-s})``, ``log f``,
``log(1 - f)``; never the implementation's ``softplus`` / ``logsigmoid`` / BCE helpers),
with the paper's defaults and the limits the parameters allow.  Each is checked on one
batch that has every kind of entry:

* observed positives (one per row, and a row with two),
* observed negatives (−1: real absences, partial labels),
* unobserved entries,
* a row with nothing observed (a background row, an unlabelled image),
* a label observed only as a negative and a label never observed at all (its
  frequency is 0 for the presence-only losses),

plus, for the presence-only losses (SINR, full-weighted), the background rows of the
method contract (``background_logits``).  Values and gradients (also with respect to the
background and estimator logits) must agree with the reference, so a custom backward
(ROLE, ZLPR/OPML) is held to the formula too.

The gradient-sign contract of docs/extending.md: descending the loss raises an observed
positive's logit and lowers an observed negative's (d loss / d logit < 0 at an observed
positive, > 0 at an observed negative), for every loss except those in
``SIGN_EXCEPTIONS``, each with its reason.

A new loss is covered automatically: without an entry in ``REFERENCES`` (or a value for
a new method input in ``INPUTS``) it fails ``test_every_registered_loss_has_a_reference``
with a message saying what to add.
"""
from __future__ import annotations

import math

import pytest
import torch

from spmlkit.losses import LOSSES, get_loss, reduce_mean

get_loss("an")  # discovers every loss module
NAMES = sorted(LOSSES)
D = torch.float64

# ----------------------------------------------------------------------------- the batch
S = torch.tensor([[1.2, -0.7, 0.3, -1.5, 0.1],
                  [-0.4, 0.9, -1.1, 0.6, -0.3],
                  [0.8, 1.7, -0.2, -0.9, 0.7],
                  [-1.3, 0.5, 1.4, -0.6, -1.0],
                  [0.2, -1.8, 1.0, 0.4, 1.9],
                  [-0.8, 0.4, -1.6, 1.3, 0.6]], dtype=D)
Z = torch.tensor([[1, -1, 0, 0, 0],
                  [0, 1, 0, -1, 0],
                  [1, 1, 0, 0, 0],  # two observed positives
                  [0, 0, 0, 0, 0],  # nothing observed: a background row
                  [-1, 0, 1, 0, 0],
                  [0, 1, -1, 0, 0]], dtype=torch.int8)  # label 3: only a negative; label 4: never observed
B, L = S.shape
NAN = float("nan")
INPUTS = {
    # one background row per example (SINR's r, Zbinden's random background)
    "background_logits": torch.tensor([[-1.0, 2.0, 0.5, -0.3, 1.1], [0.4, -0.2, 1.3, -1.6, 0.0],
                                       [1.7, -0.8, -0.1, 0.9, -1.2], [-0.5, 0.6, -1.9, 0.2, 1.4],
                                       [0.3, 1.0, -0.7, -1.1, 0.8], [-1.4, 0.7, 0.2, 1.8, -0.9]], dtype=D),
    # n_s / n over the labelled rows: labels 3 and 4 have no presence (frequency 0)
    "label_frequency": torch.tensor([0.4, 0.6, 0.2, 0.0, 0.0], dtype=D),
    # APL's soft targets: NaN where no pseudo-label; one on an observed entry (ignored)
    "pseudo_targets": torch.tensor([[0.8, NAN, 0.3, NAN, NAN], [0.7, NAN, NAN, NAN, NAN],
                                    [NAN, NAN, NAN, NAN, 0.6], [NAN, 0.9, NAN, 0.1, NAN],
                                    [NAN, NAN, NAN, NAN, 0.05], [0.5, NAN, NAN, 0.95, NAN]], dtype=D),
    # soft targets / estimated probabilities of the unobserved labels, 0 and 1 included
    "soft_targets": torch.tensor([[0.9, 0.2, 0.0, 0.5, 1.0], [0.3, 0.6, 0.25, 0.8, 0.1],
                                  [0.4, 0.4, 1.0, 0.0, 0.7], [0.2, 0.9, 0.5, 0.05, 0.35],
                                  [0.6, 0.15, 0.75, 0.45, 0.0], [0.85, 0.05, 0.3, 0.65, 0.55]], dtype=D),
    # GR's re-weighting v in [0, 1], 0 and 1 included
    "weights": torch.tensor([[1.0, 0.5, 0.0, 0.8, 0.3], [0.2, 0.9, 1.0, 0.6, 0.4],
                             [0.7, 0.1, 0.55, 0.0, 0.95], [0.65, 0.35, 0.25, 1.0, 0.5],
                             [0.45, 0.85, 0.6, 0.3, 0.75], [0.15, 0.05, 0.9, 0.4, 0.6]], dtype=D),
    # external pseudo-labels in {-1, 0, +1}, also on observed entries (ignored there)
    "pseudo_labels": torch.tensor([[1, 1, 1, -1, 0], [-1, -1, 0, 1, 1], [0, 1, -1, 1, -1],
                                   [1, -1, 0, 1, -1], [1, 1, 0, -1, 1], [-1, 1, 1, 0, -1]], dtype=torch.int8),
    # SLDS's uniform draws; row 0's largest non-positive draw falls on its observed negative
    "label_draw": torch.tensor([[0.05, 0.95, 0.3, 0.6, 0.2], [0.4, 0.99, 0.7, 0.1, 0.5],
                                [0.9, 0.8, 0.15, 0.35, 0.25], [0.45, 0.55, 0.65, 0.75, 0.05],
                                [0.3, 0.2, 0.97, 0.6, 0.8], [0.7, 0.1, 0.85, 0.2, 0.4]], dtype=D),
    # PLC's weak view: σ >= 0.9, in (0.6, 0.9), 0.5, in (0.1, 0.4), <= 0.1
    "weak_logits": torch.tensor([[2.5, -2.5, 0.0, 0.8, -0.8], [-0.8, 2.5, 2.5, -2.5, 0.0],
                                 [0.8, 0.0, -0.8, 2.5, -2.5], [2.5, 0.8, -2.5, -0.8, 0.0],
                                 [0.0, 2.5, -0.8, 0.8, -2.5], [0.8, -0.8, 0.0, 2.5, -2.5]], dtype=D),
    # ROLE's label-estimator logits
    "estimator_logits": torch.tensor([[0.5, -1.2, 0.9, 0.1, -0.4], [-0.6, 1.4, 0.2, -1.8, 0.7],
                                      [1.1, 0.3, -0.5, 0.6, -1.0], [-0.2, 0.8, -1.3, 1.6, 0.4],
                                      [0.9, -0.7, 1.2, -0.1, 0.05], [-1.1, 0.6, 0.3, -0.8, 1.5]], dtype=D),
}
LOGIT_INPUTS = ("background_logits", "estimator_logits")  # inputs the loss also differentiates


# ----------------------------------------------------- the formulas, on probabilities
def f(s):
    return 1.0 / (1.0 + torch.exp(-s))


def nlog_f(s):  # −log f
    return -torch.log(f(s))


def nlog_1f(s):  # −log(1 − f)
    return -torch.log(1.0 - f(s))


def entropy(s):  # H(f) = −f log f − (1 − f) log(1 − f)
    p = f(s)
    return -(p * torch.log(p) + (1.0 - p) * torch.log(1.0 - p))


def bce(s, t):  # −[t log f + (1 − t) log(1 − f)]
    return -(t * torch.log(f(s)) + (1.0 - t) * torch.log(1.0 - f(s)))


def masks(z):
    return z == 1, z == -1, z == 0


def where(*pairs_and_default):
    """``where(m1, v1, m2, v2, ..., default)``: the first mask that holds picks its value."""
    *pairs, out = pairs_and_default
    out = torch.as_tensor(out, dtype=D).expand(B, L).clone() if not torch.is_tensor(out) else out.clone()
    for m, v in reversed(list(zip(pairs[::2], pairs[1::2]))):
        v = torch.as_tensor(v, dtype=D) if not torch.is_tensor(v) else v
        out = torch.where(m, v.expand(B, L) if v.dim() == 0 else v, out)
    return out


def penalty(s, k):  # Cole Eq. 10: R_k = ((k̂ − k)/L)², k̂ = mean over the batch of Σ_i f
    return ((f(s).sum(-1).mean() - k) / L) ** 2


# Cole et al. 2021 ----------------------------------------------------------------------
def ref_observed_bce(s, z, p, x):  # Eq. 5-7: BCE on observed entries only
    pos, neg, _ = masks(z)
    return where(pos, nlog_f(s), neg, nlog_1f(s), 0.0)


def ref_an(s, z, p, x):  # Eq. 8
    pos, _, _ = masks(z)
    return where(pos, nlog_f(s), nlog_1f(s))


def ref_wan(s, z, p, x):  # §5.1: γ on every entry that is not an observed positive
    g = 1.0 / (L - 1) if p["gamma"] is None else p["gamma"]
    pos, _, _ = masks(z)
    return where(pos, nlog_f(s), g * nlog_1f(s))


def ref_dw(s, z, p, x):  # Zhou Table 1 DW: only assumed (unobserved) negatives down-weighted
    w = 1.0 / (L - 1) if p["weight"] is None else p["weight"]
    pos, neg, _ = masks(z)
    return where(pos, nlog_f(s), neg, nlog_1f(s), w * nlog_1f(s))


def ref_an_ls(s, z, p, x):  # Eq. 9: targets 1 − ε/2 / ε/2
    pos, _, _ = masks(z)
    return where(pos, bce(s, 1 - p["epsilon"] / 2), bce(s, p["epsilon"] / 2))


def ref_an_ls_asym(s, z, p, x):  # appendix A: AN-LS(ε_p, ε_n)
    pos, _, _ = masks(z)
    return where(pos, bce(s, 1 - p["epsilon_p"] / 2), bce(s, p["epsilon_n"] / 2))


def ref_bce_ls(s, z, p, x):  # Table 1 BCE-LS: smoothed observed labels, nothing on unobserved
    pos, neg, _ = masks(z)
    return where(pos, bce(s, 1 - p["epsilon"] / 2), neg, bce(s, p["epsilon"] / 2), 0.0)


def ref_epr(s, z, p, x):  # Eq. 10 in the code's B·L scaling: −log f on positives + λ R_k on every entry
    pos, _, _ = masks(z)
    return where(pos, nlog_f(s), 0.0) + p["lam"] * penalty(s, p["k"])


def ref_role(s, z, p, x):  # Eq. 11: (L'(F|Ŷ) + L'(Ŷ|F)) / 2, L'(F|Ŷ) = BCE(f, sg ŷ) + EPR(F, Z)
    g = x["estimator_logits"]
    pos, _, _ = masks(z)

    def lprime(a, b):
        return bce(a, f(b).detach()) + where(pos, nlog_f(a), 0.0) + p["lam"] * penalty(a, p["k"])

    return 0.5 * (lprime(s, g) + lprime(g, s))


def ref_pr(s, z, p, x):  # appendix A, literally: Σ_{i positive, j not positive} max(0, 1 − f_i + f_j)
    pos, _, _ = masks(z)
    out = torch.zeros(B, L, dtype=D)
    rows = []
    for n in range(B):
        row = []
        for i in range(L):
            if pos[n, i]:
                row.append(sum(torch.clamp(1 - f(s[n, i]) + f(s[n, j]), min=0.0)
                               for j in range(L) if not pos[n, j]))
            else:
                row.append(torch.zeros((), dtype=D))
        rows.append(torch.stack(row))
    return out + torch.stack(rows)


# Zhou et al. 2022 ----------------------------------------------------------------------
def ref_em(s, z, p, x):  # Eq. 3: −α H(f) on unobserved entries
    pos, neg, _ = masks(z)
    return where(pos, nlog_f(s), neg, nlog_1f(s), -p["alpha"] * entropy(s))


def ref_em_apl(s, z, p, x):  # Eq. 8: β·BCE(f, s) on pseudo-labelled unobserved entries
    t = x["pseudo_targets"]
    pos, neg, unk = masks(z)
    has = unk & ~torch.isnan(t)
    return where(pos, nlog_f(s), neg, nlog_1f(s), has, p["beta"] * bce(s, torch.nan_to_num(t)),
                 -p["alpha"] * entropy(s))


def ref_entmin(s, z, p, x):  # Grandvalet & Bengio: + λ H(f) on unobserved entries (on AN, or alone)
    pos, neg, _ = masks(z)
    unobserved = (p["weight"] * entropy(s) + (nlog_1f(s) if p["assume_negative"] else 0.0))
    return where(pos, nlog_f(s), neg, nlog_1f(s), unobserved)


def ref_ls(s, z, p, x):  # Zhou Table 1 LS = Cole's AN-LS
    return ref_an_ls(s, z, p, x)


def ref_n_ls(s, z, p, x):  # N-LS: only the assumed negatives smoothed
    pos, neg, _ = masks(z)
    return where(pos, nlog_f(s), neg, nlog_1f(s), bce(s, p["epsilon"] / 2))


def ref_focal(s, z, p, x):  # Lin Eq. 5 on AN targets: −α_t (1 − p_t)^γ log p_t
    pos, _, _ = masks(z)
    pt = where(pos, f(s), 1 - f(s))
    a = 1.0 if p["alpha"] is None else p["alpha"]
    at = where(pos, a, 1 - a) if p["alpha"] is not None else 1.0
    return -at * (1 - pt) ** p["gamma"] * torch.log(pt)


def ref_asl(s, z, p, x):  # Ridnik Eq. 4-7: shifted probability p_m = max(f − m, 0) on negatives
    pos, _, _ = masks(z)
    pm = torch.clamp(f(s) - p["margin"], min=0.0)
    neg_term = -(pm ** p["gamma_neg"]) * torch.log(1 - pm)
    return where(pos, -(1 - f(s)) ** p["gamma_pos"] * torch.log(f(s)), neg_term)


# Zhang et al. 2021 (SPLC / Hill) ---------------------------------------------------------
def focal_margin_pos(s, m, g):  # Eq. 8: −(1 − p_m)^γ log p_m, p_m = σ(s − m)
    pm = f(s - m)
    return -(1 - pm) ** g * torch.log(pm)


def ref_focal_margin(s, z, p, x):
    pos, _, _ = masks(z)
    return where(pos, focal_margin_pos(s, p["margin"], p["gamma"]), -(f(s) ** p["gamma"]) * torch.log(1 - f(s)))


def ref_hill(s, z, p, x):  # Eq. 11: (λ − p) p² on every entry that is not an observed positive
    pos, _, _ = masks(z)
    return where(pos, focal_margin_pos(s, p["margin"], p["gamma"]), (p["lam"] - f(s)) * f(s) ** 2)


# ZLPR (Su et al. 2022) and OPML (Li et al. 2023): one value per example --------------------
def pairwise(s, t, a, b):  # log(a + Σ (1 − t_j) e^{s_j}) + log(b + Σ t_j e^{−s_j})
    return (torch.log(a + ((1 - t) * torch.exp(s)).sum(-1, keepdim=True))
            + torch.log(b + (t * torch.exp(-s)).sum(-1, keepdim=True)))


def soft_t(z, soft):
    pos, neg, _ = masks(z)
    return where(pos, 1.0, neg, 0.0, torch.zeros(B, L, dtype=D) if soft is None else soft.clamp(0, 1))


def ref_zlpr(s, z, p, x):
    return pairwise(s, (z == 1).to(D), 1.0, 1.0)


def ref_zlpr_soft(s, z, p, x):
    return pairwise(s, soft_t(z, x.get("soft_targets")), 1.0, 1.0)


def ref_opml(s, z, p, x):  # a = α/(1 − α), b = β/(1 − β)
    a, b = p["alpha"] / (1 - p["alpha"]), p["beta"] / (1 - p["beta"])
    return pairwise(s, (z == 1).to(D), a, b)


def ref_opml_soft(s, z, p, x):
    a, b = p["alpha"] / (1 - p["alpha"]), p["beta"] / (1 - p["beta"])
    return pairwise(s, soft_t(z, x.get("soft_targets")), a, b)


# Xie et al. 2022: PLC ----------------------------------------------------------------------
def ref_plc(s, z, p, x):  # Eq. 4, unobserved entries only; both indicators may hold at δ = ½
    pw = f(x["weak_logits"])
    _, _, unk = masks(z)
    up = (unk & (pw >= p["threshold"])).to(D)
    down = (unk & (pw <= 1 - p["threshold"])).to(D)
    return up * nlog_f(s) + down * nlog_1f(s)


# Chen et al. 2024 (GR) and Tran et al. 2025 (GPR) --------------------------------------------
def box_cox(x, q):  # (1 − x^q)/q, and −log x at q = 0
    return -torch.log(x) if q == 0 else (1 - x ** q) / q


def gr_unobserved(s, k, v, q2, q3):
    return v * (k * box_cox(f(s), q2) + (1 - k) * box_cox(1 - f(s), q3))


def ref_gr(s, z, p, x):
    pos, neg, _ = masks(z)
    return where(pos, nlog_f(s), neg, nlog_1f(s),
                 gr_unobserved(s, x["soft_targets"], x["weights"], p["q2"], p["q3"]))


def ref_gpr(s, z, p, x):
    pos, neg, unk = masks(z)
    v, pl = x["weights"], x["pseudo_labels"]
    w_pos = 1 - v.clamp(1 - p["lam1"], 1 - p["lam2"])
    out = where(pos, nlog_f(s), neg, nlog_1f(s),
                unk & (pl == 1), w_pos * (p["rho"] * nlog_f(s) + (1 - p["rho"]) * nlog_1f(s)),
                unk & (pl == -1), v * nlog_1f(s),
                gr_unobserved(s, x["soft_targets"], v, p["q2"], p["q3"]))
    return out + (p["reg"] * penalty(s, p["k"]) if p["reg"] else 0.0)


# Xing et al. 2023: VLPL ----------------------------------------------------------------------
def ref_vlpl(s, z, p, x):
    pos, neg, unk = masks(z)
    pl = x["pseudo_labels"]
    e = p["epsilon"]
    return where(pos, nlog_f(s), neg, nlog_1f(s),
                 unk & (pl == 1), p["beta_pos"] * ((1 - e) * nlog_f(s) + e * nlog_1f(s)),
                 unk & (pl == -1), p["beta_neg"] * nlog_1f(s),
                 -p["alpha"] * entropy(s))


# SINR (Cole et al. 2023) and Zbinden et al. 2024: presence-only -------------------------------
def assumed(s, me):  # the assume-negative term, or the ME variants' negative entropy
    return -entropy(s) if me else nlog_1f(s)


def ref_ssdl(me):  # Eq. 3: −log f_z(x) − log(1 − f_z(r)) per observed positive z
    def ref(s, z, p, x):
        r = x["background_logits"]
        pos, neg, _ = masks(z)
        return where(pos, nlog_f(s) + assumed(r, me), neg, nlog_1f(s), 0.0)
    return ref


def ref_slds(me):  # Eq. 4: z′ = the non-positive label with the largest draw; an observed
    def ref(s, z, p, x):  # negative there already has its −log(1 − f), nothing is added
        d = x["label_draw"]
        pos, neg, _ = masks(z)
        other = torch.zeros(B, L, dtype=torch.bool)
        for n in range(B):
            cands = [j for j in range(L) if not pos[n, j]]
            if cands:
                j = max(cands, key=lambda c: float(d[n, c]))
                other[n, j] = bool(z[n, j] == 0)
        return where(pos, nlog_f(s), neg, nlog_1f(s), other, assumed(s, me), 0.0)
    return ref


def ref_full(me):  # Eq. 5: λ·(−log f) on positives, −log(1 − f) elsewhere at x, −log(1 − f) at r
    def ref(s, z, p, x):
        r = x["background_logits"]
        pos, neg, _ = masks(z)
        return where(pos, p["pos_weight"] * nlog_f(s), neg, nlog_1f(s), assumed(s, me)) + assumed(r, me)
    return ref


def ref_full_weighted(s, z, p, x):  # Zbinden §2.3, w_s = n/n_s = 1/q; 1/(1 − 1/w_s) = 1/(1 − q)
    q = x["label_frequency"].clamp(1e-6, 1 - 1e-6)  # the documented clamp: both weights finite
    r = x["background_logits"]
    pos, _, _ = masks(z)
    # a label alone (q = 1: no other species' presences) gives its background the whole weight 1,
    # not 1 − λ2 (the module docstring's "A label alone")
    w_bg = torch.where(x["label_frequency"] >= 1 - 1e-6, torch.ones_like(q), torch.full_like(q, 1 - p["lambda2"]))
    return (where(pos, p["lambda1"] / q * nlog_f(s), p["lambda2"] / (1 - q) * nlog_1f(s))
            + w_bg * nlog_1f(r))


# ----------------------------------------------------------------------------- the table
def R(fn, defaults: dict, *cases: dict):
    """A reference: the formula, the paper's defaults (checked against the registry) and the
    cases to check besides the defaults (parameter limits; ``inputs`` overrides inputs)."""
    return {"fn": fn, "defaults": defaults, "cases": [{}] + list(cases)}


REFERENCES = {
    "bce": R(ref_observed_bce, {}),
    "iu": R(ref_observed_bce, {}),
    "iun": R(ref_observed_bce, {}),
    "an": R(ref_an, {}),
    "wan": R(ref_wan, {"gamma": None}, {"gamma": 0.0}, {"gamma": 1.0}),
    "dw": R(ref_dw, {"weight": None}, {"weight": 0.0}, {"weight": 1.0}),
    "an-ls": R(ref_an_ls, {"epsilon": 0.2}, {"epsilon": 0.0}, {"epsilon": 1.0}),
    "an-ls-asym": R(ref_an_ls_asym, {"epsilon_p": 0.0, "epsilon_n": 0.2}, {"epsilon_p": 0.3, "epsilon_n": 0.0},
                    {"epsilon_p": 1.0, "epsilon_n": 1.0}),
    "bce-ls": R(ref_bce_ls, {"epsilon": 0.2}, {"epsilon": 0.0}, {"epsilon": 1.0}),
    "epr": R(ref_epr, {"k": None, "lam": 1.0}, {"k": 2.0}, {"k": float(L)}, {"k": 0.5, "lam": 0.0}),
    "role": R(ref_role, {"k": None, "lam": 1.0}, {"k": 2.0}, {"k": 1.0, "lam": 0.0}, {"k": float(L), "lam": 3.0}),
    "pr": R(ref_pr, {}),
    "em": R(ref_em, {"alpha": 0.1}, {"alpha": 0.0}, {"alpha": 1.0}),
    "em-apl": R(ref_em_apl, {"alpha": 0.1, "beta": 0.2}, {"beta": 0.0}, {"alpha": 1.0, "beta": 1.0}),
    "entmin": R(ref_entmin, {"weight": 0.1, "assume_negative": True}, {"weight": 0.0},
                {"weight": 1.0, "assume_negative": False}),
    "ls": R(ref_ls, {"epsilon": 0.2}, {"epsilon": 0.0}, {"epsilon": 1.0}),
    "n-ls": R(ref_n_ls, {"epsilon": 0.2}, {"epsilon": 0.0}, {"epsilon": 1.0}),
    "focal": R(ref_focal, {"gamma": 2.0, "alpha": None}, {"gamma": 0.0}, {"gamma": 1.0}, {"gamma": 0.5, "alpha": 0.25},
               {"alpha": 0.0}, {"alpha": 1.0}),
    "asl": R(ref_asl, {"gamma_pos": 0.0, "gamma_neg": 4.0, "margin": 0.05},
             {"gamma_pos": 0.0, "gamma_neg": 0.0, "margin": 0.0}, {"gamma_pos": 1.0, "gamma_neg": 2.0, "margin": 0.0},
             {"gamma_neg": 1.0, "margin": 0.0}, {"gamma_neg": 1.0, "margin": 0.3}, {"margin": 0.3}),
    "focal-margin": R(ref_focal_margin, {"margin": 1.0, "gamma": 2.0}, {"margin": 0.0}, {"gamma": 0.0},
                      {"gamma": 1.0}),
    "hill": R(ref_hill, {"lam": 1.5, "margin": 1.0, "gamma": 2.0}, {"lam": 1.0}, {"margin": 0.0, "gamma": 0.0},
              {"gamma": 1.0}),
    "zlpr": R(ref_zlpr, {}),
    "zlpr-soft": R(ref_zlpr_soft, {}, {"inputs": {"soft_targets": None}},
                   {"inputs": {"soft_targets": INPUTS["soft_targets"] * 2 - 0.5}}),  # clamped to [0, 1]
    "opml": R(ref_opml, {"alpha": 0.5, "beta": 0.5}, {"alpha": 0.2}, {"alpha": 0.01, "beta": 0.99},
              {"alpha": 0.99, "beta": 0.01}),
    "opml-soft": R(ref_opml_soft, {"alpha": 0.5, "beta": 0.5}, {"alpha": 0.2, "beta": 0.7},
                   {"inputs": {"soft_targets": None}}),
    "plc": R(ref_plc, {"threshold": 0.6}, {"threshold": 0.5}, {"threshold": 0.9}, {"threshold": 1.0}),
    "gr": R(ref_gr, {"q2": 0.01, "q3": 1.0}, {"q2": 0.0, "q3": 0.0}, {"q2": 1.0, "q3": 1.0}, {"q2": 0.5, "q3": 0.3}),
    "gpr": R(ref_gpr, {"q2": 0.01, "q3": 1.0, "lam1": 0.7, "lam2": 0.5, "rho": 0.9, "reg": 0.001, "k": None},
             {"k": 2.0}, {"reg": 0.0}, {"lam1": 1.0, "lam2": 0.0, "rho": 1.0, "reg": 0.0},
             {"lam1": 0.5, "lam2": 0.5, "rho": 0.0, "reg": 1.0, "k": 1.0}, {"q2": 0.5, "q3": 0.3, "reg": 0.0}),
    "vlpl": R(ref_vlpl, {"alpha": 0.1, "beta_pos": 0.7, "beta_neg": 0.0, "epsilon": 0.1},
              {"beta_neg": 1.0, "epsilon": 0.0}, {"epsilon": 1.0, "alpha": 0.0}, {"alpha": 1.0, "beta_pos": 0.0}),
    "an-ssdl": R(ref_ssdl(False), {}),
    "an-ssdl-me": R(ref_ssdl(True), {}),
    "an-slds": R(ref_slds(False), {}),
    "an-slds-me": R(ref_slds(True), {}),
    "an-full": R(ref_full(False), {"pos_weight": 2048.0}, {"pos_weight": 1.0}),
    "an-full-me": R(ref_full(True), {"pos_weight": 2048.0}, {"pos_weight": 1.0}),
    "full-weighted": R(ref_full_weighted, {"lambda1": 1.0, "lambda2": 0.8}, {"lambda2": 0.0}, {"lambda2": 1.0},
                       {"lambda1": 0.5},
                       # one species in every presence row (frequency 1) and labels never observed (0)
                       {"inputs": {"label_frequency": torch.tensor([1.0, 0.6, 0.2, 0.0, 0.0], dtype=D)}},
                       {"inputs": {"label_frequency": torch.ones(L, dtype=D)}}),
}

#: losses whose gradient at an observed entry does not have the contract's sign, and why
SIGN_EXCEPTIONS = {
    "epr": "EPR (Cole Eq. 10) has no term for an observed negative: its only gradient there is the batch "
           "penalty's, whose sign is that of k̂ − k",
    "role": "ROLE (Cole Eq. 11) has no term for an observed negative, and the BCE towards the estimator's "
            "probability can outweigh an observed positive's term (2f − ŷ > 1): the positive's sign is checked "
            "with the estimator agreeing with the classifier",
    "plc": "PLC (Xie Eq. 4) is defined on unobserved entries only: observed entries have no gradient (checked "
           "to be exactly 0)",
}


def case_id(name, i, case):
    return f"{name}-{i}:" + ",".join(f"{k}={v}" for k, v in case.items() if k != "inputs") + (
        ",inputs" if "inputs" in case else "")


CASES = [pytest.param(n, case, id=case_id(n, i, case))
         for n in NAMES if n in REFERENCES for i, case in enumerate(REFERENCES[n]["cases"])]


def call(name, case, *, requires_grad=False):
    """The loss and its reference on the batch: (impl, ref, logits, logit inputs) in float64."""
    spec = LOSSES[name]
    ref = REFERENCES[name]
    params = {k: v for k, v in case.items() if k != "inputs"}
    inputs = {k: INPUTS[k] for k in spec.inputs if k in INPUTS}
    inputs.update({k: v for k, v in case.get("inputs", {}).items() if k in spec.inputs})
    s = S.clone().requires_grad_(requires_grad)
    x = {k: (v.clone().requires_grad_(requires_grad) if k in LOGIT_INPUTS else v) for k, v in inputs.items()}
    impl = spec.fn(s, Z, **params, **{k: v for k, v in x.items()})
    s_ref = S.clone().requires_grad_(requires_grad)
    x_ref = {k: (v.clone().requires_grad_(requires_grad) if k in LOGIT_INPUTS else v) for k, v in inputs.items()}
    want = ref["fn"](s_ref, Z, {**ref["defaults"], **params}, x_ref)
    return impl, want, (s, x), (s_ref, x_ref)


# ----------------------------------------------------------------------------- the tests
def reference_problem(name: str, spec) -> str | None:
    """Why the registered loss ``spec`` is not covered by the reference tests (None: it is)."""
    if name not in REFERENCES:
        return (f"loss {name!r} has no reference value: add REFERENCES[{name!r}] to "
                "tests/contracts/test_loss_references.py — its paper's equation written again on probabilities, "
                "its paper's defaults, and cases at the limits of its parameters (docs/extending.md, 'What a new "
                "loss must test')")
    missing = [i for i in spec.inputs if i not in INPUTS]
    if missing:
        return (f"loss {name!r} takes method input(s) {missing} that the reference batch lacks: add a value for "
                "each to INPUTS in tests/contracts/test_loss_references.py")
    if spec.hyperparameters != REFERENCES[name]["defaults"]:
        return (f"loss {name!r}: registered defaults {spec.hyperparameters} differ from the paper's defaults "
                f"recorded in REFERENCES: {REFERENCES[name]['defaults']}")
    return None


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_loss_has_a_reference(name):
    problem = reference_problem(name, LOSSES[name])
    assert problem is None, problem


def test_a_new_loss_without_a_reference_fails_with_what_to_add():
    from spmlkit.losses import LossSpec

    new = LossSpec("an-capped", lambda s, z, *, cap=2.0: s, {"cap": 2.0}, ())
    assert "add REFERENCES['an-capped'] to tests/contracts/test_loss_references.py" in reference_problem("an-capped",
                                                                                                          new)
    odd = LossSpec("an", lambda s, z, *, prior: s, {}, ("prior",))
    assert "add a value for each to INPUTS" in reference_problem("an", odd)
    moved = LossSpec("wan", lambda s, z, *, gamma=0.5: s, {"gamma": 0.5}, ())
    assert "differ from the paper's defaults" in reference_problem("wan", moved)


def test_the_batch_has_every_kind_of_entry():
    pos, neg, unk = masks(Z)
    assert pos.any(1).sum() == B - 1 and (pos.sum(1) == 2).any() and B != L  # B ≠ L: a transposed axis shows  # rows with one and two positives
    assert neg.any() and unk.any() and not (Z[3] != 0).any()  # negatives, unobserved, a row with nothing
    assert not pos[:, 3].any() and neg[:, 3].any() and not (Z[:, 4] != 0).any()
    assert (INPUTS["label_frequency"] == 0).any()
    assert S.abs().max() < 2.5  # moderate logits: the smoothed losses' sign contract holds (f in (0.1, 0.9))


@pytest.mark.parametrize("name, case", CASES)
def test_value_and_gradient_equal_the_reference(name, case):
    if "k" in REFERENCES[name]["defaults"] and REFERENCES[name]["defaults"]["k"] is None and "k" not in case:
        if name == "gpr" and case.get("reg") == 0:
            pass  # k only feeds the penalty: not needed without it
        else:
            from spmlkit.errors import ConfigError

            with pytest.raises(ConfigError, match="k"):  # k has no default: the method supplies it from the data
                call(name, case)
            return
    impl, want, (s, x), (s_ref, x_ref) = call(name, case, requires_grad=True)
    assert impl.shape == want.shape, f"{name}: shape {tuple(impl.shape)}, the reference's {tuple(want.shape)}"
    assert torch.isfinite(impl).all()
    torch.testing.assert_close(impl, want, rtol=1e-9, atol=1e-12, msg=lambda m: f"{name} {case}: value\n{m}")
    # the gradient the methods descend (mean over B·L), against the reference's through autograd
    reduce_mean(impl).backward()
    reduce_mean(want).backward()
    torch.testing.assert_close(s.grad, s_ref.grad, rtol=1e-7, atol=1e-12,
                               msg=lambda m: f"{name} {case}: gradient\n{m}")
    for k in x:
        if k in LOGIT_INPUTS:
            torch.testing.assert_close(x[k].grad, x_ref[k].grad, rtol=1e-7, atol=1e-12,
                                       msg=lambda m: f"{name} {case}: gradient w.r.t. {k}\n{m}")


@pytest.mark.parametrize("name", [n for n in NAMES if n in REFERENCES])
def test_gradient_signs_at_observed_entries(name):
    """docs/extending.md: descending the loss raises every observed positive's logit and
    lowers every observed negative's (at the paper's defaults)."""
    case = {"k": 2.0} if REFERENCES[name]["defaults"].get("k", 0) is None else {}
    impl, _, (s, _), _ = call(name, case, requires_grad=True)
    reduce_mean(impl).backward()
    pos, neg, _ = masks(Z)
    if name == "plc":
        assert (s.grad[Z != 0] == 0).all()
        return
    if name == "role":  # the sign holds where the estimator agrees with the classifier (its BCE target)
        impl = LOSSES[name].fn(s, Z, k=2.0, estimator_logits=S.clone())
        s.grad = None
        reduce_mean(impl).backward()
    assert (s.grad[pos] < 0).all(), f"{name}: d loss / d logit >= 0 at an observed positive: {s.grad[pos]}"
    if name in SIGN_EXCEPTIONS:
        return
    assert (s.grad[neg] > 0).all(), f"{name}: d loss / d logit <= 0 at an observed negative: {s.grad[neg]}"


@pytest.mark.parametrize("name", [n for n in NAMES if "background_logits" in LOSSES[n].inputs])
def test_background_rows_are_pushed_towards_absence(name):
    """A background row's logits go down under the AN terms (d loss / d r > 0 wherever the
    loss uses r); the ME variants push them towards f = ½ instead (d/dr has the sign of r)."""
    impl, _, (s, x), _ = call(name, {}, requires_grad=True)
    reduce_mean(impl).backward()
    g, r = x["background_logits"].grad, INPUTS["background_logits"]
    used = (Z == 1) if name.startswith("an-ssdl") else torch.ones(B, L, dtype=torch.bool)
    assert (g[~used] == 0).all()
    if name.endswith("-me"):
        assert (torch.sign(g[used]) == torch.sign(r[used])).all()
    else:
        assert (g[used] > 0).all()


def test_the_references_are_not_the_implementation():
    """A reference that called the implementation would check nothing: the formulas here use
    only elementary arithmetic (no spmlkit import besides the registry)."""
    import inspect
    import sys

    src = inspect.getsource(sys.modules[__name__])
    body = src.split("# ----------------------------------------------------- the formulas", 1)[1]
    body = body.split("# ----------------------------------------------------------------------------- the table")[0]
    for banned in ("softplus", "logsigmoid", "binary_cross_entropy", "spmlkit", "get_loss", "LOSSES"):
        assert banned not in body, banned


# ------------------------------------------------------- refusals just outside the limits
BAD = [  # (loss, hyper-parameters, the one-line refusal); the limits themselves are cases in REFERENCES
    ("wan", {"gamma": -0.01}, "WAN gamma must be in [0, 1], got -0.01"),
    ("wan", {"gamma": 1.01}, "WAN gamma must be in [0, 1], got 1.01"),
    ("dw", {"weight": -0.01}, "dw: weight must be in [0, 1], got -0.01"),
    ("dw", {"weight": 1.01}, "dw: weight must be in [0, 1], got 1.01"),
    ("an-ls", {"epsilon": -0.01}, "epsilon must be in [0, 1] (paper notation: targets 1-epsilon/2 and epsilon/2), "
                                  "got -0.01"),
    ("an-ls", {"epsilon": 1.01}, "epsilon must be in [0, 1] (paper notation: targets 1-epsilon/2 and epsilon/2), "
                                 "got 1.01"),
    ("an-ls-asym", {"epsilon_p": 1.01}, "epsilon_p must be in [0, 1] (paper notation: targets 1-epsilon_p/2 and "
                                        "epsilon_p/2), got 1.01"),
    ("an-ls-asym", {"epsilon_n": -0.01}, "epsilon_n must be in [0, 1] (paper notation: targets 1-epsilon_n/2 and "
                                         "epsilon_n/2), got -0.01"),
    ("bce-ls", {"epsilon": 1.01}, "epsilon must be in [0, 1] (paper notation: targets 1-epsilon/2 and epsilon/2), "
                                  "got 1.01"),
    ("ls", {"epsilon": -0.01}, "ls: epsilon must be in [0, 1], got -0.01"),
    ("ls", {"epsilon": 1.01}, "ls: epsilon must be in [0, 1], got 1.01"),
    ("n-ls", {"epsilon": -0.01}, "n-ls: epsilon must be in [0, 1], got -0.01"),
    ("n-ls", {"epsilon": 1.01}, "n-ls: epsilon must be in [0, 1], got 1.01"),
    ("epr", {"k": 0.0}, "k (expected positives per example) must be in (0, L=5], got 0.0"),
    ("epr", {"k": 5.01}, "k (expected positives per example) must be in (0, L=5], got 5.01"),
    ("epr", {}, "this loss needs k, the expected number of positives per example (Cole et al. §5.3): pass k=..., "
                "or train on a bundle with full training labels so it is computed (Eq. A1)"),
    ("role", {"k": 5.01}, "k (expected positives per example) must be in (0, L=5], got 5.01"),
    ("focal", {"gamma": -0.01}, "focal: gamma must be >= 0, got -0.01"),
    ("focal", {"alpha": -0.01}, "focal: alpha must be in [0, 1] or None, got -0.01"),
    ("focal", {"alpha": 1.01}, "focal: alpha must be in [0, 1] or None, got 1.01"),
    ("asl", {"gamma_pos": -0.01}, "asl: gamma_pos and gamma_neg must be >= 0, got -0.01, 4.0"),
    ("asl", {"gamma_neg": -0.01}, "asl: gamma_pos and gamma_neg must be >= 0, got 0.0, -0.01"),
    ("asl", {"margin": -0.01}, "asl: margin must be in [0, 1), got -0.01"),
    ("asl", {"margin": 1.0}, "asl: margin must be in [0, 1), got 1.0"),
    ("focal-margin", {"gamma": -0.01}, "gamma must be >= 0, got -0.01"),
    ("focal-margin", {"margin": -0.01}, "margin must be >= 0, got -0.01"),
    ("hill", {"lam": 0.99}, "hill: lam must be >= 1 (the weight λ − p must stay non-negative on [0, 1]), got 0.99"),
    ("hill", {"gamma": -0.01}, "gamma must be >= 0, got -0.01"),
    ("opml", {"alpha": 0.0}, "OPML alpha must be in the open interval (0, 1) (the constant is alpha/(1-alpha)), "
                             "got 0.0"),
    ("opml", {"beta": 1.0}, "OPML beta must be in the open interval (0, 1) (the constant is beta/(1-beta)), got 1.0"),
    ("opml", {"alpha": "x"}, "OPML alpha must be a number in (0, 1), got 'x'"),
    ("opml-soft", {"alpha": 1.0}, "OPML alpha must be in the open interval (0, 1) (the constant is "
                                  "alpha/(1-alpha)), got 1.0"),
    ("opml-soft", {"beta": 0.0}, "OPML beta must be in the open interval (0, 1) (the constant is beta/(1-beta)), "
                                 "got 0.0"),
    ("plc", {"threshold": 0.49}, "PLC threshold δ must be in [0.5, 1] (positives and negatives must not overlap), "
                                 "got 0.49"),
    ("plc", {"threshold": 1.01}, "PLC threshold δ must be in [0.5, 1] (positives and negatives must not overlap), "
                                 "got 1.01"),
    ("gr", {"q2": -0.01}, "the exponent q must be >= 0, got -0.01"),
    ("gr", {"q3": -0.01}, "the exponent q must be >= 0, got -0.01"),
    ("gpr", {"lam1": 0.4, "lam2": 0.5, "k": 2.0}, "gpr: need 0 <= lam2 <= lam1 <= 1, got lam1=0.4, lam2=0.5"),
    ("gpr", {"lam1": 1.01, "k": 2.0}, "gpr: need 0 <= lam2 <= lam1 <= 1, got lam1=1.01, lam2=0.5"),
    ("gpr", {"lam2": -0.01, "k": 2.0}, "gpr: need 0 <= lam2 <= lam1 <= 1, got lam1=0.7, lam2=-0.01"),
    ("gpr", {"rho": -0.01, "k": 2.0}, "gpr: rho must be in [0, 1], got -0.01"),
    ("gpr", {"rho": 1.01, "k": 2.0}, "gpr: rho must be in [0, 1], got 1.01"),
    ("gpr", {}, "gpr: reg > 0 needs k, the expected number of positives per example"),
    ("vlpl", {"epsilon": -0.01}, "vlpl: epsilon must be in [0, 1], got -0.01"),
    ("vlpl", {"epsilon": 1.01}, "vlpl: epsilon must be in [0, 1], got 1.01"),
]


def stacked(spec, params):
    """Two grid members (G, B, L) of the batch and the loss's inputs, for ``spec``."""
    x = {k: (INPUTS[k] if INPUTS[k].dim() == 1 else torch.stack([INPUTS[k], INPUTS[k]])) for k in spec.inputs}
    return torch.stack([S, S]), torch.stack([Z, Z]), x


@pytest.mark.parametrize("name, params, message", BAD, ids=[f"{n}-{p}" for n, p, _ in BAD])
def test_hyperparameters_outside_their_limits_are_refused(name, params, message):
    """Exactly the one-line message, also for stacked grid members (G, B, L): the limit is
    on the label axis, L = 5 here, not on B = 6."""
    from spmlkit.errors import ConfigError

    spec = LOSSES[name]
    s2, z2, x2 = stacked(spec, params)
    with pytest.raises(ConfigError) as e:
        spec.fn(s2, z2, **params, **x2)
    assert str(e.value) == message


def test_wan_default_gamma_needs_two_labels():
    from spmlkit.errors import ConfigError

    two = LOSSES["wan"].fn(S[:, :2], Z[:, :2])  # γ = 1/(L − 1) = 1: AN
    torch.testing.assert_close(two, LOSSES["an"].fn(S[:, :2], Z[:, :2]))
    with pytest.raises(ConfigError, match=r"needs at least 2 labels, got L=1"):
        LOSSES["wan"].fn(S[:, :1], Z[:, :1])


@pytest.mark.parametrize("name", [n for n in NAMES if {"background_logits", "estimator_logits"} & set(LOSSES[n].inputs)])
def test_paired_logits_of_another_shape_are_refused(name):
    spec = LOSSES[name]
    inputs = {k: (INPUTS[k][:, :3] if k in LOGIT_INPUTS else INPUTS[k]) for k in spec.inputs}
    params = {"k": 2.0} if "k" in spec.hyperparameters else {}
    with pytest.raises(Exception, match=r"\(6, 3\).*\(6, 5\)|shaped like the logits \(6, 5\), got \(6, 3\)"):
        spec.fn(S, Z, **params, **inputs)


@pytest.mark.parametrize("name", [n for n in NAMES if n in REFERENCES])
def test_stacked_members_each_equal_their_reference(name):
    """Grid members stacked on a leading axis (G, B, L), each with its own logits and
    observations: member g's loss is its reference on its own slice (no axis mixed up:
    B ≠ L here)."""
    spec = LOSSES[name]
    params = {"k": 2.0} if REFERENCES[name]["defaults"].get("k", 0) is None else {}
    s2 = torch.stack([S, 0.7 * S.flip(0) - 0.2])
    z2 = torch.stack([Z, Z.roll(2, dims=0)])
    x2, xs = {}, [{}, {}]
    for k in spec.inputs:
        v = INPUTS[k]
        if v.dim() == 1:  # per label: shared by the members
            x2[k], xs[0][k], xs[1][k] = v, v, v
        else:
            other = -v.flip(1) if k in LOGIT_INPUTS else v.flip(0)
            x2[k], xs[0][k], xs[1][k] = torch.stack([v, other]), v, other
    out = spec.fn(s2, z2, **params, **x2)
    for g in range(2):
        want = REFERENCES[name]["fn"](s2[g], z2[g], {**REFERENCES[name]["defaults"], **params}, xs[g])
        torch.testing.assert_close(out[g], want, rtol=1e-9, atol=1e-12, msg=lambda m: f"{name} member {g}\n{m}")


@pytest.mark.parametrize("name", [n for n in NAMES if n in REFERENCES])
@pytest.mark.parametrize("logits_dtype, inputs_dtype", [(torch.float32, torch.float64), (torch.bfloat16, torch.float32)])
def test_the_loss_has_the_logits_dtype_whatever_its_inputs(name, logits_dtype, inputs_dtype):
    """Under autocast the logits are bfloat16 while a method's targets, weights and
    frequencies stay float32: the loss keeps the logits' dtype (and its value)."""
    spec = LOSSES[name]
    params = {"k": 2.0} if "k" in spec.hyperparameters else {}
    x = {k: (v.to(logits_dtype) if k in LOGIT_INPUTS else v.to(inputs_dtype) if v.is_floating_point() else v)
         for k, v in INPUTS.items() if k in spec.inputs}
    out = spec.fn(S.to(logits_dtype), Z, **params, **x)
    assert out.dtype == logits_dtype
    ref = spec.fn(S, Z, **params, **{k: v.to(D) if v.is_floating_point() else v for k, v in x.items()})
    tol = 1e-5 if logits_dtype == torch.float32 else 0.05
    torch.testing.assert_close(out.to(D), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", [n for n in NAMES if n in REFERENCES])
def test_no_tensor_is_created_off_the_inputs_device(name):
    """Under the meta-device trap every tensor made without ``device=`` lands on ``meta`` and
    fails next to the CPU inputs: the loss makes none."""
    from spmlkit.losses.zlpr import _side_constants
    from tests.helpers.device_trap import device_trap

    _side_constants.cache_clear()  # its cached constants would hide a tensor made on the default device
    spec = LOSSES[name]
    params = {"k": 2.0} if "k" in spec.hyperparameters else {}
    x = {k: INPUTS[k] for k in spec.inputs}
    s = S.clone().requires_grad_(True)
    with device_trap():
        out = spec.fn(s, Z, **params, **x)
        reduce_mean(out).backward()
        assert out.device.type == "cpu" and torch.isfinite(s.grad).all()

import math

import pytest
import torch

from spmlkit.losses.lac import label_aware_contrastive as lac


def _unit(deg):
    r = math.radians(deg)
    return [math.cos(r), math.sin(r)]


def test_paper_form_hand_computed():
    # entries: A (label 0), B (label 0), C (label 1); one view each (V = 1), τ = 1
    z = torch.tensor([[_unit(0)], [_unit(60)], [_unit(90)]])
    labels = torch.tensor([0, 0, 1])
    c60, c90, c30 = 0.5, 0.0, math.cos(math.radians(30))
    # anchor A: positive B (0.5), negatives {C}: term = 0.5 - log(e^0) = 0.5
    # anchor B: positive A (0.5), negatives {C}: term = 0.5 - log(e^cos30)
    # anchor C: no positive -> 0
    expected = -((c60 - c90) + (c60 - c30)) / 3
    assert lac(z, labels, temperature=1.0).item() == pytest.approx(expected, abs=1e-6)
    # the normaliser B of Eq. 7 counts every embedding slot, valid or not
    assert lac(z, labels, temperature=1.0, n_slots=6).item() == pytest.approx(expected * 3 / 6, abs=1e-6)


def test_temperature_and_two_views():
    # one entry with two views at 0 and 90 degrees (label 0) and one of label 1 at 180 degrees; τ = 0.5
    z = torch.tensor([[_unit(0), _unit(90)], [_unit(180), _unit(180)]])
    labels = torch.tensor([0, 1])
    t = 0.5
    # anchor v0 (0°): positive = its other view (cos 90 = 0), negatives = two 180° views (cos = -1 each)
    a0 = 0 / t - math.log(2 * math.exp(-1 / t))
    # anchor v1 (90°): positive v0 (0), negatives two 180° (cos = 0): 0 - log 2
    a1 = 0 / t - math.log(2)
    # anchors of label 1 (180°): positive = the other 180° view (1/τ), negatives 0° (-1/τ) and 90° (0)
    a2 = 1 / t - math.log(math.exp(-1 / t) + 1)
    expected = -(a0 + a1 + 2 * a2) / 4
    assert lac(z, labels, temperature=t).item() == pytest.approx(expected, abs=1e-5)


def test_queue_entries_are_contrasted_but_not_anchors():
    z = torch.tensor([[_unit(0)]], requires_grad=True)  # one current entry, label 0
    qz = torch.tensor([[_unit(0)], [_unit(180)]])
    ql = torch.tensor([0, 1])
    loss = lac(z, torch.tensor([0]), queue_z=qz, queue_labels=ql, temperature=1.0)
    # the only anchor: positive = queue 0° (sim 1), negative = queue 180° (sim -1): -(1 - (-1)) / 1
    assert loss.item() == pytest.approx(-2.0, abs=1e-6)
    loss.backward()
    assert z.grad is not None


def test_supcon_form_matches_the_authors_definition():
    z = torch.tensor([[_unit(0)], [_unit(60)], [_unit(90)]])
    labels = torch.tensor([0, 0, 1])
    c60, c30 = 0.5, math.cos(math.radians(30))
    # denominator over every other embedding, mean over positives, mean over anchors with a positive
    a = c60 - math.log(math.exp(c60) + math.exp(0.0))  # anchor A: others B (0.5), C (0)
    b = c60 - math.log(math.exp(c60) + math.exp(c30))  # anchor B: others A (0.5), C (cos 30)
    assert lac(z, labels, temperature=1.0, form="supcon").item() == pytest.approx(-(a + b) / 2, abs=1e-6)


def test_no_valid_entries_and_no_negatives_give_zero():
    assert lac(torch.zeros(0, 2, 4), torch.zeros(0, dtype=torch.long)).item() == 0.0
    z = torch.nn.functional.normalize(torch.randn(3, 2, 4), dim=-1)
    assert lac(z, torch.zeros(3, dtype=torch.long)).item() == 0.0  # one label only: nothing to push away from


def test_pulls_same_label_together():
    torch.manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(6, 2, 8), dim=-1).requires_grad_()
    labels = torch.tensor([0, 0, 0, 1, 1, 1])
    opt = torch.optim.SGD([z], lr=0.1)
    before = lac(z, labels).item()
    for _ in range(30):
        opt.zero_grad()
        lac(torch.nn.functional.normalize(z, dim=-1), labels).backward()
        opt.step()
    zn = torch.nn.functional.normalize(z.detach(), dim=-1).reshape(12, 8)
    lab = labels.repeat_interleave(2)
    sim = zn @ zn.T
    same = (lab[:, None] == lab[None]) & ~torch.eye(12, dtype=torch.bool)
    assert lac(torch.nn.functional.normalize(z, dim=-1), labels).item() < before
    assert sim[same].mean() > sim[lab[:, None] != lab[None]].mean() + 0.5

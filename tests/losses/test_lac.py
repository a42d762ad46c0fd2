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


def _reference(z, labels, queue_z=None, queue_labels=None, *, temperature, form, n_slots=None):
    """Xie Eq. 7 ("paper") and the SupCon form, anchor by anchor with Python loops."""
    n, V, _ = z.shape
    anchors = [(z[i, v], int(labels[i]), (i, v)) for i in range(n) for v in range(V)]
    contrast = list(anchors)
    if queue_z is not None:
        contrast += [(queue_z[k, v], int(queue_labels[k]), ("q", k, v)) for k in range(len(queue_z))
                     for v in range(queue_z.shape[1])]
    total, counted = 0.0, 0
    for a, la, ka in anchors:
        sims = [(float(a @ c) / temperature, lc, kc) for c, lc, kc in contrast if kc != ka]
        pos = [s for s, lc, _ in sims if lc == la]
        if form == "paper":
            neg = [s for s, lc, _ in sims if lc != la]
            if not neg or not pos:
                continue
            log_den = math.log(sum(math.exp(s) for s in neg))
            total += sum(s - log_den for s in pos)
        else:
            if not pos:
                continue
            log_den = math.log(sum(math.exp(s) for s, _, _ in sims))
            total += sum(s - log_den for s in pos) / len(pos)
            counted += 1
    if form == "paper":
        return -total / (n_slots if n_slots is not None else n * V)
    return -total / counted if counted else 0.0


@pytest.mark.parametrize("form", ["paper", "supcon"])
@pytest.mark.parametrize("queue", [False, True])
def test_both_forms_equal_a_loop_over_anchors(form, queue):
    """Unequal label counts (so anchors differ in their number of positives and in their
    denominators), two views, with and without a queue."""
    g = torch.Generator().manual_seed(4)
    z = torch.nn.functional.normalize(torch.randn(5, 2, 3, generator=g, dtype=torch.float64), dim=-1)
    labels = torch.tensor([0, 0, 0, 1, 2])
    kw = {}
    if queue:
        kw = {"queue_z": torch.nn.functional.normalize(torch.randn(3, 2, 3, generator=g, dtype=torch.float64), dim=-1),
              "queue_labels": torch.tensor([1, 2, 2])}
    got = lac(z, labels, temperature=0.7, form=form, **kw).item()
    assert got == pytest.approx(_reference(z, labels, temperature=0.7, form=form, **kw), rel=1e-10)
    assert lac(z, labels, form=form, **kw).item() == pytest.approx(_reference(z, labels, temperature=0.5, form=form,
                                                                              **kw), rel=1e-10)  # τ = 0.5 default


def test_queue_of_another_dtype_keeps_the_embeddings_dtype():
    z = torch.nn.functional.normalize(torch.randn(3, 1, 4), dim=-1)
    qz = torch.nn.functional.normalize(torch.randn(2, 1, 4, dtype=torch.float64), dim=-1)
    out = lac(z, torch.tensor([0, 1, 1]), queue_z=qz, queue_labels=torch.tensor([0, 1]), form="supcon")
    assert out.dtype == torch.float32


def test_empty_batch_and_no_positive_give_zero_with_a_zero_gradient():
    z = torch.zeros(0, 2, 4, requires_grad=True)
    out = lac(z, torch.zeros(0, dtype=torch.long), form="supcon")
    out.backward()
    assert out.item() == 0.0 and z.grad.shape == (0, 2, 4)
    z = torch.nn.functional.normalize(torch.randn(3, 1, 4), dim=-1).requires_grad_()
    out = lac(z, torch.tensor([0, 1, 2]), form="supcon")  # one view, distinct labels: no anchor has a positive
    out.backward()
    assert out.item() == 0.0 and torch.equal(z.grad, torch.zeros_like(z))


def test_bad_form_and_temperature_are_one_line():
    from spmlkit.errors import ConfigError

    z = torch.zeros(1, 1, 2)
    with pytest.raises(ConfigError) as e:
        lac(z, torch.tensor([0]), form="simclr")
    assert str(e.value) == "LAC form must be one of paper, supcon, got 'simclr'"
    for t in (0.0, -1.0):
        with pytest.raises(ConfigError) as e:
            lac(z, torch.tensor([0]), temperature=t)
        assert str(e.value) == f"LAC temperature τ must be > 0, got {t}"

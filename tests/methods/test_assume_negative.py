"""Cole et al. (2021) Table 1 rows that are plain losses on a label regime
(spmlkit.methods.assume_negative): bce, iun, iu and an."""
import pytest
import torch

from spmlkit.losses import get_loss
from spmlkit.methods import get_method_spec
from tests.helpers.factories import batch_of, setup_method

ROWS = {"bce": ("full", "Cole et al. 2021, Eq. 5"), "iun": ("single_positive_all_negatives", "Cole et al. 2021, Eq. 7"),
        "iu": ("single_positive_one_negative", "Cole et al. 2021, Eq. 6"), "an": ("single_positive", "Cole et al. 2021, Eq. 8")}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_registered_with_its_regime_and_equation(name):
    spec = get_method_spec(name)
    assert (spec.regime, spec.reference, spec.family, spec.hyperparameters) == (*ROWS[name], "cole2021", {})


@pytest.mark.parametrize("name", sorted(ROWS))
def test_loss_is_the_plain_loss_of_the_same_name_averaged_over_the_batch(name):
    Z = torch.tensor([[1, 0, -1], [0, 1, 0]], dtype=torch.int8)
    logits = torch.tensor([[[2.0, -1.0, 0.5], [0.0, 1.5, -2.0]]])
    m = setup_method(name, Z)
    assert not m.components and m.supports_members
    want = get_loss(name)(logits, Z[None]).mean(dim=(1, 2))
    assert torch.allclose(m.compute_loss(logits, batch_of(Z)), want)


def test_an_treats_every_unobserved_label_as_negative():
    """Cole Eq. 8 by hand: -log σ(2) for the positive, -log(1 - σ(s)) elsewhere."""
    Z = torch.tensor([[1, 0]], dtype=torch.int8)
    logits = torch.tensor([[[2.0, -1.0]]])
    want = (torch.nn.functional.softplus(torch.tensor(-2.0)) + torch.nn.functional.softplus(torch.tensor(-1.0))) / 2
    assert torch.allclose(setup_method("an", Z).compute_loss(logits, batch_of(Z)), want.view(1))

"""The Cole et al. (2021) methods: registration, regimes, data-dependent defaults, training."""
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.methods import METHODS, build_method, get_method_spec
from spmlkit.training import train_linear
from tests.helpers.factories import train_context

COLE = {"an-ls": "single_positive", "an-ls-asym": "single_positive", "wan": "single_positive",
        "epr": "single_positive", "pr": "single_positive", "role": "single_positive", "bce-ls": "full"}


def test_registered_with_regimes_and_defaults():
    get_method_spec("an")
    for name, regime in COLE.items():
        assert METHODS[name].regime == regime and METHODS[name].family == "cole2021"
    assert METHODS["an-ls"].hyperparameters == {"epsilon": 0.2}
    assert METHODS["an-ls-asym"].hyperparameters == {"epsilon_p": 0.0, "epsilon_n": 0.2}
    assert METHODS["wan"].hyperparameters == {"gamma": None}
    assert METHODS["epr"].hyperparameters == {"k": None, "lam": 1.0}
    r = METHODS["role"].hyperparameters
    assert (r["k"], r["lam"], r["lr_mult"], r["storage"], r["rank"], r["adam"]) == (None, 1.0, 10.0, "float32", 64,
                                                                                    "dense")


def test_data_dependent_parameters_resolved_at_setup():
    Z = torch.zeros(10, 5, dtype=torch.int8)
    Z[:, 0] = 1
    ctx = train_context(Z, expected_positives=1.4)
    wan = build_method("wan")
    wan.setup(ctx)
    assert wan.loss_params["gamma"] == 0.25 and wan.params["gamma"] == 0.25
    wan2 = build_method("wan", gamma=0.5)
    wan2.setup(ctx)
    assert wan2.loss_params["gamma"] == 0.5
    epr = build_method("epr")
    epr.setup(ctx)
    assert epr.loss_params["k"] == 1.4
    epr.setup(train_context(Z, expected_positives=2.0))  # re-setup on other data
    assert epr.loss_params["k"] == 2.0


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COLE))
def test_every_method_learns_on_the_toy_problem(toy_bundle, name):
    (r,) = train_linear(toy_bundle, TrainConfig(method=name, epochs=5, lr=1e-2))
    assert r.test_map > 65  # chance ≈ 25


def test_k_from_config_overrides_the_labels(toy_bundle):
    (r,) = train_linear(toy_bundle, TrainConfig(method="epr", epochs=1, expected_positives=1.25))
    assert r.params["k"] == 1.25

"""Background rows in the linear setting (spmlkit.training.background, issue 24): epochs
run over the labelled rows, and each step every member draws background rows from a
stream of its own."""
import numpy as np
import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.training.background import BackgroundSampler

Z = np.array([[1, 0], [0, 0], [0, 1], [0, 0], [1, -1], [0, 0]], dtype=np.int8)  # rows 1, 3, 5: background


def test_labelled_and_background_rows():
    s = BackgroundSampler(Z, seeds=[0, 1])
    assert s.labelled.tolist() == [0, 2, 4] and s.rows.tolist() == [1, 3, 5] and s.n_labelled == 3
    order = s.epoch_order([torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)])
    assert order.shape == (2, 3) and all(sorted(r) == [0, 2, 4] for r in order.tolist())
    draws = s.draw(50)
    assert draws.shape == (2, 50) and set(draws.flatten().tolist()) == {1, 3, 5}  # with replacement
    assert not torch.equal(draws[0], draws[1])


def test_each_member_draws_from_its_own_seeded_stream():
    pair, alone = BackgroundSampler(Z, seeds=[3, 7]), BackgroundSampler(Z, seeds=[7])
    assert torch.equal(pair.draw(20)[1], alone.draw(20)[0])
    state = pair.state_dict()
    nxt = pair.draw(5)
    pair.load_state_dict(state)
    assert torch.equal(pair.draw(5), nxt)  # a resumed run draws what the uninterrupted one drew
    pair.select_members([1])
    assert len(pair.generators) == 1


def test_data_without_background_or_without_labels_is_refused():
    with pytest.raises(ConfigError, match="method 'an-ssdl' needs background rows"):
        BackgroundSampler(Z[[0, 2, 4]], seeds=[0], method="an-ssdl")
    with pytest.raises(ConfigError, match="no example with an observed label"):
        BackgroundSampler(np.zeros((3, 2), np.int8), seeds=[0])

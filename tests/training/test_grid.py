import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.training.grid import member_groups, train_members


def test_member_groups():
    assert member_groups(5, None) == [[0, 1, 2, 3, 4]]
    assert member_groups(5, 2) == [[0, 1], [2, 3], [4]]
    assert member_groups(3, None, supports_members=False) == [[0], [1], [2]]


@pytest.mark.slow
def test_grouping_and_worker_processes_do_not_change_results(toy_bundle):
    cfg = TrainConfig(method="an", epochs=3, batch_size=8)
    lrs, seeds = [1e-2, 1e-3, 1e-2, 1e-3], [0, 0, 1, 1]
    one_stack = train_members(toy_bundle, cfg, lrs, seeds, keep_state=True)
    done = []
    parallel = train_members(toy_bundle, cfg, lrs, seeds, stack=1, jobs=2, keep_state=True, on_done=done.append)
    assert len(done) == 4 and [(r.lr, r.seed) for r in parallel] == list(zip(lrs, seeds))
    for a, b in zip(one_stack, parallel):
        assert a.val_history == pytest.approx(b.val_history, abs=1e-9)
        assert a.test_map == pytest.approx(b.test_map, abs=1e-9)
        for k in a.state["head"]:
            torch.testing.assert_close(a.state["head"][k], b.state["head"][k], rtol=0, atol=1e-6)

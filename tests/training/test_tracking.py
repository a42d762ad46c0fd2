"""Best-epoch selection with patience, per member (spmlkit.training.tracking): the test
score is taken at the best validation epoch (Cole et al. §6.1)."""
import math

from spmlkit.training.tracking import BestTracker


def test_each_member_keeps_its_best_epoch_and_snapshot():
    t = BestTracker(2)
    snaps = []

    def snapshot(g):
        snaps.append(g)
        return {"member": g, "n": len(snaps)}

    assert t.update(1, [0.5, 0.2], snapshot) == [True, True]
    assert t.update(2, [0.4, 0.3], snapshot) == [False, True]
    assert t.update(3, [0.5, math.nan], snapshot) == [False, False]  # ties and NaN never improve
    assert [(m.best_epoch, m.best_score) for m in t.members] == [(1, 0.5), (2, 0.3)]
    assert snaps == [0, 1, 1]  # called for improved members only
    assert t.members[1].snapshot == {"member": 1, "n": 3}
    assert t.members[0].history == [0.5, 0.4, 0.5] and not t.all_stopped  # no patience: never stops


def test_patience_stops_a_member_after_that_many_epochs_without_improvement():
    t = BestTracker(2, patience=1)
    t.update(1, [1.0, 1.0], lambda g: None)
    t.update(2, [0.9, 2.0], lambda g: None)
    assert [m.stopped for m in t.members] == [False, False]
    t.update(3, [0.8, 3.0], lambda g: None)
    assert [m.stopped for m in t.members] == [True, False]
    assert t.update(4, [5.0, 1.0], lambda g: None) == [False, False]  # a stopped member records nothing more
    assert t.members[0].history == [1.0, 0.9, 0.8] and t.members[0].best_epoch == 1
    t.update(5, [5.0, 1.0], lambda g: None)
    assert t.all_stopped
    zero = BestTracker(1, patience=0)  # Zhou et al.'s code: stop at the first epoch that does not improve
    zero.update(1, [1.0], lambda g: None)
    zero.update(2, [1.0], lambda g: None)
    assert zero.all_stopped


def test_state_round_trip():
    t = BestTracker(2, patience=3)
    t.update(1, [0.1, 0.2], lambda g: {"w": g})
    t.update(2, [0.3, 0.1], lambda g: {"w": 10 + g})
    again = BestTracker(1)
    again.load_state_dict(t.state_dict())
    assert again.patience == 3 and len(again.members) == 2
    assert [vars(m) for m in again.members] == [vars(m) for m in t.members]
    assert again.update(3, [0.2, 0.5], lambda g: g) == t.update(3, [0.2, 0.5], lambda g: g) == [False, True]

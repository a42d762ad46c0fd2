"""A run's outcome (spmlkit.training.result.RunResult): what every trainer returns, written to
and read back from records without its state."""
import json

from spmlkit.training.result import RunResult


def test_a_record_round_trips_without_the_state():
    r = RunResult(method="an", params={"x": 1}, lr=0.01, batch_size=8, seed=3, best_epoch=4, val_score=51.5,
                  selection="map", test_map=48.25, test_ap=[0.5, None], train_map=None, epochs_run=6,
                  val_history=[40.0, 51.5], seconds=1.5, state={"head": "big"})
    rec = r.to_record()
    assert "state" not in rec and json.loads(json.dumps(rec)) == rec
    back = RunResult.from_record({**rec, "dataset": "yeast"})  # a bench record's extra fields are ignored
    assert back.state is None and back.to_record() == rec

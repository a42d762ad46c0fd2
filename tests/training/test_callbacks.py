"""The loop's callbacks (spmlkit.training.callbacks): hooks in order, state resumed under a
stable state_key, the progress bar's positions, tagged epochs, one line per epoch."""
import io
import json

import numpy as np
import pytest

from spmlkit.methods import build_method
from spmlkit.metrics import mean_average_precision_members
from spmlkit.training.callbacks import Callback, PrintEpochs, ProgressBar, Tagged, stateful, tagged
from spmlkit.training.loop import fit
from spmlkit.training.run import ProgressPlan
from tests.helpers.factories import ToyLearner, train_context


def _setup(G=2, seed=0):
    rng = np.random.default_rng(seed)
    X, X_val = rng.normal(size=(24, 5)), rng.normal(size=(12, 5))
    W = rng.normal(size=(5, 3))
    Y_val = X_val @ W > 0
    Y_val[~Y_val.any(1), 0] = True
    Z = np.zeros((24, 3), np.int8)
    Z[np.arange(24), (X @ W).argmax(1)] = 1
    learner = ToyLearner(X, Z, G=G, splits={"val": X_val})
    method = build_method("an")
    method.setup(train_context(Z, G=G))
    return learner, method, lambda logits: [float(v) for v in mean_average_precision_members(Y_val, logits)]


class _Log(Callback):
    def __init__(self):
        self.heard = []

    def setup(self, fit):
        self.heard.append(("setup", fit.start))

    def on_fit_start(self, fit):
        self.heard.append(("start", fit.start))

    def on_train_step_end(self, fit, epoch, step):
        self.heard.append(("step", epoch, step))

    def on_epoch_end(self, fit, info):
        self.heard.append(("epoch", info["epoch"], [r["member"] for r in info["rows"]]))

    def on_fit_end(self, fit):
        self.heard.append(("end",))


class _Count(Callback):
    """A callback with state: the epochs it has seen, across a resume."""

    state_key = "count"

    def __init__(self):
        self.seen = 0

    def on_epoch_end(self, fit, info):
        self.seen += 1

    def state_dict(self):
        return {"seen": self.seen}

    def load_state_dict(self, state):
        self.seen = state["seen"]


def test_the_hooks_are_called_in_order(tmp_path):
    learner, method, evaluate = _setup()
    log = _Log()
    fit(learner, method, epochs=2, evaluate=evaluate, run_dir=tmp_path, callbacks=[log])
    steps = [("step", e, s) for e in (1, 2) for s in range(1, 7)]  # 24 rows in batches of 4
    assert log.heard == [("setup", 1), ("start", 1), *steps[:6], ("epoch", 1, [0, 1]), *steps[6:],
                         ("epoch", 2, [0, 1]), ("end",)]
    # the caller's callback finds the epoch's rows in metrics.jsonl already (the metrics file runs first)
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 4


def test_a_callbacks_state_is_checkpointed_under_its_state_key_and_resumed(tmp_path):
    from spmlkit.training.checkpoint import load_run_checkpoint

    learner, method, evaluate = _setup()
    fit(learner, method, epochs=2, evaluate=evaluate, run_dir=tmp_path, callbacks=[_Count()])
    assert load_run_checkpoint(tmp_path / "last.pt")["callbacks"] == {"count": {"seen": 2}}
    again, m2, _ = _setup()
    count, log = _Count(), _Log()
    fit(again, m2, epochs=4, evaluate=evaluate, run_dir=tmp_path, callbacks=[count, log])
    assert count.seen == 4 and log.heard[:2] == [("setup", 1), ("start", 3)]  # resumed after epoch 2
    plain, m3, _ = _setup()  # a checkpoint without callback state: an ordinary run's file is unchanged
    fit(plain, m3, epochs=1, evaluate=evaluate, run_dir=tmp_path / "plain")
    assert "callbacks" not in load_run_checkpoint(tmp_path / "plain" / "last.pt")


def test_two_callbacks_with_state_need_two_keys():
    assert list(stateful([_Count(), _Log(), Tagged(_Log())])) == ["count"]
    with pytest.raises(ValueError, match="share the state_key 'count'"):
        stateful([_Count(), Tagged(_Count())])


def test_tagged_adds_to_the_epoch_info_and_copies_the_rows():
    log = []

    class Keep(Callback):
        def on_epoch_end(self, fit, info):
            log.append(info)

    (t,) = tagged([Keep()], info={"member": "wan (2/4)", "member_index": 1}, row={"member": 5})
    rows = [{"member": 0, "train_loss": 1.0}]
    t.on_epoch_end(None, {"epoch": 3, "rows": rows})
    assert log[0]["member"] == "wan (2/4)" and log[0]["member_index"] == 1 and log[0]["rows"][0]["member"] == 5
    assert rows[0]["member"] == 0 and t.state_key == "Keep"


class _Bar:
    def __init__(self):
        self.n, self.postfix, self.closed, self.total = 0, {}, 0, None

    def update(self, k):
        self.n += k

    def set_postfix(self, **kw):
        self.postfix = kw

    def close(self):
        self.closed += 1


def _info(epoch, **extra):
    return {"epoch": epoch, "rows": [{"train_loss": 0.5, "val_score": 40.0}], **extra}


def test_the_progress_bar_is_set_to_the_position_never_counted():
    bar = _Bar()
    cb = ProgressBar(ProgressPlan(per_member=3, steps=1, total=6, unit="epoch"), "auto on toy", bar=bar)
    cb.on_epoch_end(None, _info(3))  # a resumed run starts at its epoch
    assert bar.n == 3 and "member" not in bar.postfix
    cb.on_epoch_end(None, _info(1, member="wan (2/2)", member_index=1))
    assert bar.n == 4 and bar.postfix["member"] == "wan (2/2)" and bar.postfix["epoch"] == "1/3"
    cb.on_train_step_end(None, 2, 1)  # epochs, not steps: a step does not move it
    assert bar.n == 4
    # a member's longer try (6 epochs where the plan has 3): its own count shown, the bar kept to the share
    cb.on_epoch_end(None, _info(5, member="wan-x2 (2/2)", member_index=1, member_epochs=6))
    assert bar.n == 6 and bar.postfix["epoch"] == "5/6"
    # a recipe that trains 2 of its 3 declared members (the others over its budgets): the bar ends at the 2nd
    dropped = ProgressBar(ProgressPlan(per_member=3, steps=1, total=9, unit="epoch"), "auto", bar=_Bar())
    dropped.on_epoch_end(None, _info(3, member="wan (2/2)", member_index=1, member_count=2))
    assert (dropped.bar.total, dropped.bar.n) == (6, 6)
    in_steps = ProgressBar(ProgressPlan(per_member=2, steps=5, total=20, unit="step"), "auto", bar=_Bar())
    in_steps.on_epoch_end(None, _info(1, member="wan (1/1)", member_index=0, member_count=1))
    assert in_steps.bar.total == 10  # 1 member x 2 epochs x 5 steps
    steps = ProgressBar(ProgressPlan(per_member=2, steps=5, total=10, unit="step"), "x", bar=_Bar())
    steps.on_train_step_end(None, 2, 3)
    assert steps.bar.n == 8
    steps.on_run_skipped("folder")
    steps.on_run_end("folder")
    assert steps.bar.closed == 2


def test_print_epochs_writes_one_line_per_epoch_on_the_main_rank():
    out = io.StringIO()
    cb = PrintEpochs("SPMLClassifier an", 25, "observed_map", file=out)
    cb.on_epoch_end(None, {**_info(3), "seconds": 0.25})
    cb.on_epoch_end(None, {**_info(4), "seconds": 0.25, "is_main": False})
    cb.on_epoch_end(None, {**_info(1, member="wan (2/4)"), "seconds": 0.5,
                           "rows": [{"train_loss": 0.5, "val_score": float("nan")}]})
    assert out.getvalue().splitlines() == [
        "SPMLClassifier an: epoch 3/25, training loss 0.5000, validation observed_map 40.00 (0.25 s)",
        "SPMLClassifier an member wan (2/4): epoch 1/25, training loss 0.5000, validation observed_map — (0.50 s)"]


def test_the_old_metrics_rows_are_kept_on_resume(tmp_path):
    learner, method, evaluate = _setup()
    fit(learner, method, epochs=2, evaluate=evaluate, run_dir=tmp_path)
    with open(tmp_path / "metrics.jsonl", "a") as f:  # a killed epoch 3 wrote its rows before the checkpoint
        f.write(json.dumps({"epoch": 3, "member": 0}) + "\n")
    again, m2, _ = _setup()
    fit(again, m2, epochs=3, evaluate=evaluate, run_dir=tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["epoch"], r["member"]) for r in rows] == [(e, g) for e in (1, 2, 3) for g in (0, 1)]


def test_per_step_hooks_are_called_only_for_callbacks_that_have_them():
    from spmlkit.training.callbacks import overrides

    assert overrides(_Log(), "on_train_step_end") and not overrides(_Count(), "on_train_step_end")
    assert not overrides(Tagged(_Count()), "on_train_step_end") and overrides(Tagged(_Log()), "on_train_step_end")


# ----------------------------------------------- mutation survivors (issue 44): every hook pinned
class _Every(Callback):
    state_key = "every"

    def __init__(self):
        self.heard, self.loaded = [], None

    def on_run_skipped(self, run_dir):
        self.heard.append(("skipped", run_dir))

    def setup(self, fit):
        self.heard.append(("setup", fit))

    def on_fit_start(self, fit):
        self.heard.append(("start", fit))

    def on_train_step_end(self, fit, epoch, step):
        self.heard.append(("step", fit, epoch, step))

    def on_epoch_end(self, fit, info):
        self.heard.append(("epoch", fit, info))

    def on_fit_end(self, fit):
        self.heard.append(("end", fit))

    def on_run_end(self, run_dir):
        self.heard.append(("run end", run_dir))

    def state_dict(self):
        return {"n": len(self.heard)}

    def load_state_dict(self, state):
        self.loaded = state


def test_tagged_passes_every_hook_and_the_state_to_its_inner_callback():
    from spmlkit.training.callbacks import has_state

    inner = _Every()
    t = Tagged(inner)
    rows = [{"member": 0}]
    t.on_run_skipped("d1")
    t.setup("fit")
    t.on_fit_start("fit")
    t.on_train_step_end("fit", 2, 7)
    t.on_epoch_end("fit", {"epoch": 1, "rows": rows})
    t.on_fit_end("fit")
    t.on_run_end("d2")
    assert inner.heard == [("skipped", "d1"), ("setup", "fit"), ("start", "fit"), ("step", "fit", 2, 7),
                           ("epoch", "fit", {"epoch": 1, "rows": rows}), ("end", "fit"), ("run end", "d2")]
    assert inner.heard[4][2]["rows"] is rows  # no row tags: the loop's rows themselves
    assert t.state_dict() == {"n": 7} and t.state_key == "every"
    t.load_state_dict({"n": 3})
    assert inner.loaded == {"n": 3} and has_state(t) and not has_state(Tagged(_Log()))
    assert stateful([t])["every"] is t


def test_the_base_callback_does_nothing_and_keys_its_state_by_class_name():
    from spmlkit.training.callbacks import EpochFunction, overrides

    base = Callback()
    assert base.state_key == "Callback" and _Log.state_key == "_Log" and _Count.state_key == "count"
    for hook, args in (("on_run_skipped", ("d",)), ("setup", (None,)), ("on_fit_start", (None,)),
                       ("on_train_step_end", (None, 1, 1)), ("on_epoch_end", (None, {})), ("on_fit_end", (None,)),
                       ("on_run_end", ("d",)), ("load_state_dict", ({},))):
        assert getattr(base, hook)(*args) is None and not overrides(base, hook)
    assert base.state_dict() == {}
    base.on_epoch_end = lambda fit, info: None  # a hook set on the instance counts
    assert overrides(base, "on_epoch_end") and not overrides(base, "on_fit_end")
    seen = []
    EpochFunction(seen.append).on_epoch_end(None, {"epoch": 4})
    assert seen == [{"epoch": 4}]


def test_progress_without_a_bar_and_print_epochs_to_stderr(capsys):
    cb = ProgressBar(ProgressPlan(per_member=3, steps=2, total=6, unit="step"), "x", bar=_Bar())
    cb.bar = None  # (a rank other than the main one has no bar)
    cb.on_epoch_end(None, _info(1))
    cb.on_train_step_end(None, 1, 1)
    cb.close()
    bar = _Bar()
    steps = ProgressBar(ProgressPlan(per_member=3, steps=2, total=6, unit="step"), "x", bar=bar)
    steps.on_epoch_end(None, _info(2, member_index=0))
    assert bar.n == 4 and bar.postfix == {"epoch": "2/3", "loss": "0.5000", "val": "40.00"}
    PrintEpochs("m", 2, "sel").on_epoch_end(None, {**_info(1, member=""), "seconds": 1.0,
                                                   "rows": [{"train_loss": 1.0, "val_score": None}]})
    assert capsys.readouterr().err == "m: epoch 1/2, training loss 1.0000, validation sel — (1.00 s)\n"


class _Members:
    def __init__(self, stopped, snapshots=None):
        self.stopped, self.snapshot = stopped, snapshots


def test_early_stop_compaction_drops_only_stopped_members_and_keeps_their_snapshot():
    from types import SimpleNamespace

    from spmlkit.training.callbacks import EarlyStopCompaction

    def fit_with(stopped, can=True, snap=None):
        members = {g: _Members(g in stopped, snap) for g in range(3)}
        f = SimpleNamespace(can_compact=can, tracker=SimpleNamespace(members=members), active=[0, 1, 2],
                            selected=[], member_snapshot=lambda g: f"snap{g}")
        f.select = f.selected.append
        return f

    f = fit_with({1})
    EarlyStopCompaction().on_epoch_end(f, {})
    assert f.selected == [[0, 2]] and f.tracker.members[1].snapshot == "snap1" and f.tracker.members[0].snapshot is None
    f = fit_with({1}, snap="kept")
    EarlyStopCompaction().on_epoch_end(f, {})
    assert f.tracker.members[1].snapshot == "kept"
    for f in (fit_with({0, 1, 2}), fit_with(set()), fit_with({1}, can=False)):
        EarlyStopCompaction().on_epoch_end(f, {})
        assert f.selected == [] and all(m.snapshot is None for m in f.tracker.members.values())


def test_checkpoints_every_k_epochs_and_after_the_last_and_a_misfit_is_one_line(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import spmlkit.training.callbacks as cbm
    from spmlkit.errors import CorruptFileError
    from spmlkit.training.callbacks import Checkpoint

    saved = []
    monkeypatch.setattr(cbm, "save_checkpoint", lambda state, path: saved.append((state, path)))
    f = SimpleNamespace(ctx=SimpleNamespace(is_main=True), epochs=5, state_dict=lambda e: {"epoch": e})
    cp = Checkpoint(tmp_path / "run", every=2)
    for e in range(1, 6):
        cp.on_epoch_end(f, {"epoch": e})
    assert saved == [({"epoch": e}, tmp_path / "run" / "last.pt") for e in (2, 4, 5)]
    f.ctx.is_main = False
    cp.on_epoch_end(f, {"epoch": 4})
    assert len(saved) == 3 and Checkpoint(tmp_path).every == 1 and Checkpoint(tmp_path).resume is True

    def misfit(state):
        raise KeyError("learner")

    monkeypatch.setattr(cbm, "load_run_checkpoint", lambda path, epochs: {"epochs": epochs})
    run = tmp_path / "r2"
    run.mkdir()
    (run / "last.pt").write_bytes(b"x")
    g = SimpleNamespace(ctx=SimpleNamespace(is_main=False), epochs=3, load_state_dict=misfit)
    with pytest.raises(CorruptFileError) as e:
        Checkpoint(run).setup(g)
    assert str(e.value) == f"{run / 'last.pt'}: does not fit this run (KeyError: 'learner'); {cbm.RESTART_ADVICE}"
    loaded = []
    g.load_state_dict = loaded.append
    Checkpoint(run).setup(g)
    assert loaded == [{"epochs": 3}]
    Checkpoint(run, resume=False).setup(g)
    assert len(loaded) == 1


def test_state_keys_of_callbacks_defined_at_run_time():
    class Mine(Callback):
        state_key = "mine"

    class Plain(Callback):
        pass

    assert Mine.state_key == "mine" and Plain.state_key == "Plain"


def test_a_progress_bar_is_made_on_the_main_rank_from_the_plan(monkeypatch):
    monkeypatch.delenv("SPML_NO_PROGRESS", raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal: a line every few seconds
    cb = ProgressBar(ProgressPlan(per_member=3, steps=2, total=6, unit="step"), "auto on toy")
    assert (cb.bar.total, cb.bar.desc, cb.bar.unit) == (6, "auto on toy", "step")
    cb.close()
    bar = _Bar()
    ProgressBar(ProgressPlan(per_member=3, steps=1, total=3, unit="epoch"), "x", bar=bar).on_epoch_end(None, _info(2))
    assert bar.postfix == {"loss": "0.5000", "val": "40.00"}  # counted in epochs: the position says the epoch


def test_a_misfit_message_keeps_thirty_words_on_one_line(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import spmlkit.training.callbacks as cbm
    from spmlkit.errors import CorruptFileError
    from spmlkit.ownership import folder_kind
    from spmlkit.training.callbacks import Checkpoint

    words = [f"w{i}" for i in range(40)]
    monkeypatch.setattr(cbm, "load_run_checkpoint", lambda path, epochs: {})
    for exc, shown in ((RuntimeError("size  mismatch\n for " + " ".join(words)),
                        "RuntimeError: size mismatch for " + " ".join(words[:27])),
                       (ValueError(), "ValueError: ValueError")):
        run = tmp_path / f"r{len(shown)}"

        def misfit(state, exc=exc):
            raise exc

        g = SimpleNamespace(ctx=SimpleNamespace(is_main=True), epochs=3, load_state_dict=misfit)
        Checkpoint(run, resume=False).setup(g)  # the run's folder, made and marked as a run's
        assert folder_kind(run) == "run"
        (run / "last.pt").write_bytes(b"x")
        with pytest.raises(CorruptFileError) as e:
            Checkpoint(run).setup(g)
        assert str(e.value) == f"{run / 'last.pt'}: does not fit this run ({shown}); {cbm.RESTART_ADVICE}"


def test_a_new_run_starts_the_metrics_file_and_a_resumed_one_keeps_earlier_epochs(tmp_path):
    from types import SimpleNamespace

    from spmlkit import ownership
    from spmlkit.training.callbacks import MetricsFile

    mf = MetricsFile(ownership.folder(tmp_path / "run", "run"))
    f = SimpleNamespace(ctx=SimpleNamespace(is_main=True), start=1)
    for e in (1, 2, 3):
        mf.on_epoch_end(f, {"rows": [{"epoch": e, "member": 0}]})
    mf.on_epoch_end(f, {"rows": [{"member": 9}]})  # a row without an epoch
    f.start = 2  # resumed from epoch 1: epochs 2 and 3 are trained again
    mf.on_fit_start(f)
    assert [json.loads(x) for x in mf.path.read_text().splitlines()] == [{"epoch": 1, "member": 0}, {"member": 9}]
    f.start = 1  # a new run
    mf.on_fit_start(f)
    assert not mf.path.exists()

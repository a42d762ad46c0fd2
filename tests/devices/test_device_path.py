"""Issue 13: the device path, proved without a GPU.

* every command's ``--device`` option and its one-line errors (device resolution itself
  is tested in tests/test_device.py);
* a *trap*: ``torch.set_default_device("meta")`` while a run is explicitly placed on the
  CPU, so any tensor created without an explicit device lands on ``meta`` and the run
  fails loudly — one short linear training of every registered method, and a short
  fine-tune of the stateful ones;
* the no-host-synchronisation property of the linear epoch on the host-rows (prefetching)
  path that a GPU takes when the features do not fit on it;
* checkpoints hold CPU tensors only.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.methods.recipe import is_recipe
from tests.helpers.device_trap import device_trap
from tests.helpers.training_checks import host_reads_during
from tests.helpers.factories import train_context


def _no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def _one_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


@pytest.mark.parametrize("argv, needle", [
    (["--device", "cuda"], "--device cuda: CUDA is not available"),
    (["--device", "cuda:3"], "--device cuda:3: CUDA is not available"),
    (["--setting", "finetune", "--precision", "16-mixed", "--device", "cpu"], "--precision 16-mixed needs a CUDA"),
    (["--setting", "finetune", "--sync-bn"], "--sync-bn needs CUDA"),
])
def test_cli_train_refuses_before_writing_anything(tmp_path, capsys, monkeypatch, toy_bundle, argv, needle):
    from spmlkit.cli import main

    _no_cuda(monkeypatch)
    out = tmp_path / "run"
    code = main(["train", str(toy_bundle.path), "-o", str(out), *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and needle in err and len(err.splitlines()) == 1, err
    assert not out.exists()


@pytest.mark.parametrize("cmd", ["bench", "features", "evaluate", "predict", "demo"])
def test_every_command_has_the_device_option_and_refuses_cuda(tmp_path, capsys, monkeypatch, toy_bundle, cmd):
    from spmlkit.cli import main

    _no_cuda(monkeypatch)
    out = tmp_path / "out"
    # inputs that pass the checks made before torch (a model.json is all they read), so the
    # device is what is refused
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.json").write_text('{"format": 1, "label_names": ["a", "b"], "head": "linear", "hidden": 8, '
                                      '"n_features": 2}', encoding="utf-8")
    (tmp_path / "x.csv").write_text("f1,f2\n1,2\n", encoding="utf-8")
    args = {"bench": ["bench", "--datasets", "yeast", "-o", str(out)],
            "features": ["features", str(toy_bundle.path)],
            "evaluate": ["evaluate", str(model), str(toy_bundle.path)],
            "predict": ["predict", str(model), str(tmp_path / "x.csv"), "-o", str(out)],
            "demo": ["demo", "--quick", "-o", str(out)]}[cmd]
    code = main([*args, "--device", "cuda"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--device cuda: CUDA is not available" in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_estimator_takes_a_device(monkeypatch):
    from spmlkit import SPMLClassifier

    _no_cuda(monkeypatch)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=40)
    clf = SPMLClassifier("an", epochs=1, device="cpu").fit(X, y)
    assert clf.predict_proba(X).shape == (40, 3)
    assert SPMLClassifier().get_params()["device"] == "auto"
    with pytest.raises(ConfigError, match="CUDA is not available"):
        SPMLClassifier("an", epochs=1, device="cuda").fit(X, y)


# ----------------------------------------------------------------- the trap
def test_the_trap_catches_a_tensor_without_a_device():
    with device_trap():
        assert torch.zeros(2).device.type == "meta"
        with pytest.raises((RuntimeError, NotImplementedError)):
            (torch.ones(2, device="cpu") + torch.zeros(2)).numpy()


def _tensor_devices(obj) -> set:
    """Device types of every tensor in a (nested) checkpoint."""
    if isinstance(obj, torch.Tensor):
        return {obj.device.type}
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        return set().union(*(_tensor_devices(v) for v in obj)) if obj else set()
    return set()


def _linear_methods():
    from spmlkit.methods.base import METHODS, describe_methods

    describe_methods()  # imports every method module
    return sorted(n for n, s in METHODS.items() if s.setting != "finetune" and not n.startswith("test-"))


def test_every_linear_method_runs_under_the_device_trap(toy_bundle, presence_bundle, tmp_path):
    """One short linear run of EVERY registered method (as a stacked grid when the method
    allows it, with a checkpoint written and read back), explicitly on the CPU while the
    default device is ``meta``: a tensor created without ``device=`` fails the run."""
    from spmlkit.methods import build_method
    from spmlkit.training.run import train

    names = _linear_methods()
    assert len(names) >= 30
    failures = {}
    for name in names:
        stacked = build_method(name).supports_members
        lrs, seeds = ([1e-2, 1e-3], [0, 1]) if stacked else ([1e-2], [0])
        cfg = TrainConfig(method=name, epochs=2, batch_size=16, device="cpu")
        # a method that consumes background rows (issue 24) trains on presence-only data
        bundle = presence_bundle if build_method(name).uses_background else toy_bundle
        try:
            with device_trap():
                train(bundle, cfg.replace(epochs=1), lrs=lrs, seeds=seeds, run_dir=tmp_path / name)
                res = train(bundle, cfg, lrs=lrs, seeds=seeds, run_dir=tmp_path / name, keep_state=True)
            assert all(np.isfinite(r.test_map) for r in res)
            assert all(t.device.type == "cpu" for t in res[0].state["head"].values())
            # state written in place on a meta tensor raises nothing: the checkpoint shows it
            # (a recipe such as auto checkpoints each member method in members/NAME/)
            checkpoints = [tmp_path / name / "last.pt"] if not is_recipe(build_method(name)) else \
                sorted((tmp_path / name / "members").glob("*/last.pt"))
            assert checkpoints and all(_tensor_devices(torch.load(p, weights_only=True)) <= {"cpu"}
                                       for p in checkpoints)
        except Exception as exc:  # noqa: BLE001 - collected to report every method at once
            failures[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
    assert not failures, failures


@pytest.mark.parametrize("head", ["maxent-features", "maxent"])
def test_the_heads_fitted_on_the_training_rows_run_under_the_device_trap(presence_bundle, tmp_path, head):
    """A head whose inputs (and, for ``maxent``, weights) are fitted on the training rows
    before the first epoch, explicitly on the CPU while the default device is ``meta``."""
    from spmlkit.training.run import train

    cfg = TrainConfig(method="full-weighted", head=head, epochs=2, batch_size=16, device="cpu")
    with device_trap():
        res = train(presence_bundle, cfg, lrs=[1e-2, 1e-3], seeds=[0, 1], run_dir=tmp_path / head, keep_state=True)
    assert all(np.isfinite(r.test_map) for r in res)
    assert all(t.device.type == "cpu" for t in res[0].state["head"].values())


def test_checkpoints_hold_cpu_tensors_and_plain_values_only(toy_bundle, tmp_path):
    """What a run writes loads with ``weights_only=True`` on a CPU-only machine."""
    from spmlkit.training.linear import train_linear

    for method in ("role", "em-apl", "opml-sp", "ll-cp"):
        run = tmp_path / method
        train_linear(toy_bundle, TrainConfig(method=method, epochs=2, batch_size=16, device="cpu"), run_dir=run)
        state = torch.load(run / "last.pt", map_location="cpu", weights_only=True)

        def walk(x):
            if isinstance(x, torch.Tensor):
                assert x.device.type == "cpu"
            elif isinstance(x, dict):
                [walk(v) for v in x.values()]
            elif isinstance(x, (list, tuple)):
                [walk(v) for v in x]
            else:
                assert x is None or isinstance(x, (int, float, str, bool)), type(x)

        walk(state)


def test_no_host_synchronisation_on_the_prefetching_path(toy_bundle, monkeypatch):
    """The path a GPU takes when the features stay in host memory (rows gathered and
    copied one step ahead): no host synchronisation inside an epoch, and the same
    batches as the direct path."""
    from spmlkit.methods import build_method
    from spmlkit.training.linear import FeatureStore, LinearLearner
    from spmlkit.training.loop import train_epoch

    Z = toy_bundle.observations("train")

    def learner(prefetch):
        stores = {s: FeatureStore(toy_bundle.features(s)) for s in ("train", "val", "test")}
        stores["train"].on_device = not prefetch
        return LinearLearner(stores, Z, lrs=[1e-2, 1e-3], seeds=[0, 1], batch_size=8, n_labels=Z.shape[1])

    direct, ahead = learner(False), learner(True)
    for a, b in zip(direct.batches(1), ahead.batches(1)):
        assert torch.equal(a.inputs, b.inputs) and torch.equal(a.index, b.index)
    method = build_method("an")
    method.setup(train_context(ahead.observed, G=2))
    (loss_sum, n_steps), calls = host_reads_during(monkeypatch, lambda: train_epoch(ahead, method, 1))
    assert n_steps == 12 and loss_sum.shape == (2,)
    assert calls == [], f"host synchronisation in the training loop: {calls[:5]}"


def test_device_map_equals_numpy_map():
    from spmlkit.metrics import average_precision, average_precision_torch, mean_average_precision_members

    rng = np.random.default_rng(0)
    Y = rng.random((200, 7)) < 0.3
    Y[:, 6] = False
    S = np.round(rng.normal(size=(200, 7)), 1)  # ties
    ref = average_precision(Y, S)
    got = average_precision_torch(torch.from_numpy(Y), torch.from_numpy(S)).numpy()
    assert np.allclose(ref[:6], got[:6], atol=1e-12, rtol=0) and np.isnan(got[6])
    from spmlkit.metrics import mean_average_precision

    m = mean_average_precision_members(Y, torch.from_numpy(S).float().unsqueeze(0))
    assert abs(m[0] - mean_average_precision(Y, S.astype(np.float32)).map) < 1e-9


# ------------------------------------------------------------ fine-tuning
FINETUNE_TINY = dict(setting="finetune", backbone="tiny-random", image_size=32, batch_size=8, device="cpu")


@pytest.fixture
def image_bundle(tmp_path):
    from tests.helpers.image_fixtures import tiny_digits_bundle

    return tiny_digits_bundle(tmp_path)


@pytest.mark.parametrize("method, extra", [("role", {"linear_init": True, "epochs": 1}), ("em-apl", {}),
                                           ("ll-cp", {}), ("opml-sp", {}), ("lac", {"ema_decay": 0.9})])
def test_stateful_finetuning_runs_under_the_device_trap(image_bundle, tmp_path, method, extra):
    """A short fine-tune (2 epochs; then the finished checkpoint is loaded again) of every method
    with state across batches, on the CPU while the default device is ``meta``."""
    from spmlkit.training.finetune import train_finetune

    cfg = TrainConfig(method=method, finetune_epochs=2, **FINETUNE_TINY, **extra)
    run = tmp_path / method
    with device_trap():
        train_finetune(image_bundle, cfg, run_dir=run, log=lambda m: None)
        (res,) = train_finetune(image_bundle, cfg, run_dir=run, keep_state=True, log=lambda m: None)  # resumes
    assert res.epochs_run == 2 and np.isfinite(res.test_map)
    assert all(t.device.type == "cpu" for t in res.state["model"].values())
    assert _tensor_devices(torch.load(run / "last.pt", weights_only=True)) == {"cpu"}


def test_bf16_finetuning_step_on_the_cpu_has_a_finite_loss(image_bundle):
    """The precision plumbing (autocast in the model, float32 outputs and loss) without a GPU."""
    from spmlkit.training.finetune import prepare_finetune
    from spmlkit.training.loop import train_epoch

    cfg = TrainConfig(method="an", precision="bf16", **FINETUNE_TINY)
    learner, method, _, _ = prepare_finetune(image_bundle, cfg, lr=1e-2, seed=0)
    assert learner.scaler is None and learner.model.precision == "bf16"
    batch = next(iter(learner.batches(1)))
    logits = method.forward(learner.model, batch)
    assert logits.dtype == torch.float32
    loss_sum, n = train_epoch(learner, method, 1)
    assert n >= 1 and torch.isfinite(loss_sum).all()


def test_role_momentum_tails_without_host_reads_equal_the_cpu_path():
    """ROLE's dense Adam brings recently updated rows up to date; on an accelerator it
    does so for every row with a mask instead of reading which rows on the host.  Both
    give the same values (compared here on the CPU)."""
    from spmlkit.methods.label_store import RowAdam

    opt = RowAdam("dense")
    opt.t = 300
    gen = torch.Generator(device="cpu").manual_seed(0)
    n, L = 50, 6
    phi = torch.randn(n, L, generator=gen, device="cpu")
    m = torch.randn(n, L, generator=gen, device="cpu") * 1e-3
    v = torch.rand(n, L, generator=gen, device="cpu") * 1e-6
    steps = torch.randint(0, 301, (n,), generator=gen, device="cpu", dtype=torch.int32)
    for lr in (1e-2, torch.rand(n, 1, generator=gen, device="cpu") * 1e-2):
        a, b = phi.clone(), phi.clone()
        opt.current(a, m, v, steps, lr)
        opt._current_masked(b, m, v, steps, lr, steps > max(0, opt.t - opt.smax))
        assert torch.allclose(a, b, atol=1e-6, rtol=0) and not torch.equal(a, phi)  # float rounding only


def test_persistent_loader_workers_give_the_same_batches(image_bundle):
    """With worker processes the training loader is built once (persistent workers) and
    told each epoch's batches as (epoch, index): the same augmented images as without."""
    from spmlkit.training.finetune import prepare_finetune

    def epochs(workers):
        cfg = TrainConfig(method="lac", num_workers=workers, **FINETUNE_TINY)
        learner, _, _, _ = prepare_finetune(image_bundle, cfg, lr=1e-3, seed=0)
        out = [[(b.inputs.clone(), b.extras["strong"].clone(), b.index.clone()) for b in learner.batches(e)]
               for e in (1, 2)]
        return out, learner

    ref, _ = epochs(0)
    got, learner = epochs(2)
    assert learner._loader is not None and learner._loader.persistent_workers
    for e_ref, e_got in zip(ref, got):
        assert len(e_ref) == len(e_got)
        for a, b in zip(e_ref, e_got):
            assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(ref[0][0][1], ref[1][0][1])  # the strong view changes with the epoch


def test_runs_record_their_device_and_the_device_is_not_their_identity(toy_bundle, tmp_path):
    from spmlkit.io import read_json
    from spmlkit.practitioner.run_folder import finished_run, run_training

    out = tmp_path / "run"
    cfg = TrainConfig(method="an", epochs=2, device="cpu")
    run_training(toy_bundle, cfg, out)
    for name in ("config.json", "result.json"):
        info = read_json(out / name)["device"]
        assert info["device"] == "cpu" and info["torch"] == torch.__version__
    assert "| trained on | cpu (" in (out / "report.md").read_text(encoding="utf-8")
    # the same run, asked for on another device (e.g. trained on a GPU, looked at on a CPU)
    assert finished_run(toy_bundle, cfg.replace(device="auto"), out) is not None
    assert finished_run(toy_bundle, cfg.replace(lr=0.5), out) is None


def test_cli_refuses_a_gpu_index_the_machine_does_not_have(tmp_path, capsys, monkeypatch, toy_bundle):
    from spmlkit.cli import main

    _one_gpu(monkeypatch)
    out = tmp_path / "run"
    code = main(["train", str(toy_bundle.path), "-o", str(out), "--device", "cuda:3"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == ("spml: error: --device cuda:3: this machine has 1 CUDA device "
                                 "(available: cpu, cuda:0)"), err
    assert not out.exists()


def test_the_trap_fails_a_run_whose_component_forgets_the_device(toy_bundle, tmp_path):
    """The negative control: a component that makes its state with ``torch.zeros(...)``
    and no ``device=`` (fine on a CPU-only machine, wrong on a GPU) fails under the trap."""
    from spmlkit.methods.base import METHODS, Component, Method, register_method
    from spmlkit.training.linear import train_linear

    class Leaky(Component):
        def setup(self, ctx):
            super().setup(ctx)
            self.counts = torch.zeros(ctx.n_members, ctx.n_labels)  # no device=: lands on the default device

        def after_optimizer_step(self, batch):
            self.counts += (batch.observed == 1).sum(1)

        def state_dict(self):
            return {"counts": self.counts.clone()}

        def load_state_dict(self, state):
            self.counts.copy_(state["counts"])

    name = "test-device-leak"
    if name not in METHODS:
        register_method(name, reference="test only")(lambda: Method(name, "an", components=[Leaky()]))
    cfg = TrainConfig(method=name, epochs=1, batch_size=16, device="cpu")
    train_linear(toy_bundle, cfg, run_dir=tmp_path / "free")  # without the trap it runs
    assert _tensor_devices(torch.load(tmp_path / "free" / "last.pt", weights_only=True)) == {"cpu"}
    caught = False
    try:
        with device_trap():
            train_linear(toy_bundle, cfg, run_dir=tmp_path / "trapped")
    except (RuntimeError, NotImplementedError):
        caught = True
    # an in-place update of a meta tensor with real data raises nothing; its state does show
    caught = caught or "meta" in _tensor_devices(torch.load(tmp_path / "trapped" / "last.pt", weights_only=True))
    assert caught


def test_evaluate_and_predict_take_the_device(tmp_path, capsys, toy_bundle):
    from spmlkit.cli import main

    run = tmp_path / "run"
    assert main(["train", str(toy_bundle.path), "--epochs", "1", "--device", "cpu", "-o", str(run)]) == 0
    assert main(["evaluate", str(run), str(toy_bundle.path), "--device", "cpu", "--json"]) == 0
    out = tmp_path / "p.csv"
    assert main(["predict", str(run), str(toy_bundle.path), "--device", "auto", "-o", str(out)]) == 0
    assert out.exists()
    capsys.readouterr()


def test_bench_header_names_the_device():
    from spmlkit.experiments.machine import machine_info

    assert "; device cpu (" in machine_info(device="cpu")


def test_features_in_bf16_on_the_cpu_are_close_to_float32(tmp_path):
    from spmlkit.features.extract import extract_image_features

    from tests.helpers.image_fixtures import tiny_digits_bundle

    paths = tiny_digits_bundle(tmp_path).paths("test")[:6]
    kw = dict(backbone="tiny-random", image_size=32, batch_size=4, device="cpu")
    f32 = extract_image_features(paths, precision="32", **kw)
    bf16 = extract_image_features(paths, precision="bf16", **kw)
    assert f32.dtype == bf16.dtype == np.float32 and np.isfinite(bf16).all()
    assert np.allclose(f32, bf16, rtol=0.05, atol=0.05) and not np.array_equal(f32, bf16)
    with pytest.raises(ConfigError, match="16-mixed needs a CUDA device"):
        extract_image_features(paths, precision="16-mixed", **kw)


def test_a_gradient_scaler_changes_nothing_but_the_scale(image_bundle):
    """The float16 path's plumbing, checked on the CPU with float32 arithmetic: a power-of-2
    gradient scaler (what ``16-mixed`` adds) scales the loss before backward and unscales
    before the step; ROLE's estimator divides its row gradients by the same factor.  The
    weights and the estimator end exactly where they end without a scaler."""
    from spmlkit.training.finetune import prepare_finetune
    from spmlkit.training.loop import train_epoch

    def run(scaled):
        cfg = TrainConfig(method="role", **FINETUNE_TINY)
        learner, method, _, _ = prepare_finetune(image_bundle, cfg, lr=1e-3, seed=0)
        if scaled:
            learner.scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=1)
        train_epoch(learner, method, 1)
        est = method.components[0]
        return [p.detach().clone() for p in learner.model.parameters()], est.table(0)

    (w0, t0), (w1, t1) = run(False), run(True)
    assert all(torch.equal(a, b) for a, b in zip(w0, w1))
    assert np.array_equal(t0, t1)

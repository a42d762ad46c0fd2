"""What a bench is asked to do (spmlkit.experiments.bench.spec): rows, hyper-parameters and
settings checked before anything is prepared."""
import pytest

from spmlkit.errors import ConfigError, SpmlError, UnknownNameError
from spmlkit.experiments import bench as B

SMALL = dict(lrs=(1e-2, 1e-3), batch_sizes=(8, 16), seeds=(0, 1), epochs=2)
SMALL_DRAWS = dict(methods=["an"], lrs=(1e-2,), batch_sizes=(16,), seeds=(0, 1), epochs=1)


def spec(bundle, **kw):
    args = {**SMALL, **kw}
    return B.BenchSpec(datasets=[str(bundle.path)], **args)


def test_spec_validation_and_params(toy_bundle):
    with pytest.raises(UnknownNameError):
        B.validate_spec(spec(toy_bundle, methods=["no-such-method"]))
    with pytest.raises(ConfigError, match="not among"):
        B.validate_spec(spec(toy_bundle, methods=["an"], params={"bce": {}}))
    with pytest.raises(ConfigError, match="has no hyper-parameter"):
        B.validate_spec(spec(toy_bundle, methods=["an"], params={"an": {"eps": 0.1}}))
    with pytest.raises(ConfigError, match=r"^--param role: method 'role': storage must be one of 'float32'"):
        B.validate_spec(spec(toy_bundle, methods=["role"], params={"role": {"storage": "f64"}}))
    with pytest.raises(ConfigError):
        B.validate_spec(spec(toy_bundle, train_fractions=(0.0,)))
    with pytest.raises(ConfigError):
        B.validate_spec(spec(toy_bundle, lrs=(1e-2, 1e-2)))
    with pytest.raises(ConfigError):
        B.parse_method_params(["nonsense"], ["an"])
    with pytest.raises(ConfigError, match="no benchmarked method"):
        B.parse_method_params(["eps=0.1"], ["an"])
    assert B.parse_method_params(["an-ls:eps=0.2", "an-ls:x=true"], None) == {"an-ls": {"eps": 0.2, "x": True}}
    # default lists come from the registry
    from spmlkit.methods import METHODS

    d = B.default_methods("linear")
    assert set(d) == {n for n, s in METHODS.items() if s.setting != "finetune" and s.in_default_bench}
    assert "hill" in METHODS and "hill" not in d  # methods added later are named explicitly (tables stay as committed)
    assert d.index("bce") < d.index("iun") < d.index("iu") < d.index("an")
    assert B.validate_spec(spec(toy_bundle, hide_fractions=(0.5,))).methods == \
        [m for m in ("iu", "an", "em") if m in METHODS]


def test_vary_draw_needs_dataset_names(toy_bundle, tmp_path):
    with pytest.raises(ConfigError, match="--vary-draw"):
        B.validate_spec(B.BenchSpec(datasets=[str(toy_bundle.path)], vary_draw=True, **SMALL_DRAWS))


def test_vary_draw_refuses_pseudo_scores_aligned_with_one_draw(tmp_path):
    with pytest.raises(ConfigError, match="cannot be combined"):
        B.validate_spec(B.BenchSpec(datasets=["yeast"], vary_draw=True, **{**SMALL_DRAWS, "methods": ["vlpl"]},
                                    params={"vlpl": {"pseudo_scores": str(tmp_path / "s.npy")}}))


def test_bench_spec_params_and_device_options():
    from spmlkit.experiments.bench import BenchSpec, check_device_options, with_method_params

    spec = with_method_params(BenchSpec(datasets=["yeast"], methods=["an", "epr"]), ["epr:k=2", "k=3"])
    assert spec.params == {"epr": {"k": 3}}  # NAME=VALUE: every benchmarked method that has it
    default = with_method_params(BenchSpec(datasets=["yeast"]), ["storage=float16"])
    assert default.methods is None and set(default.params) == {"role"}  # the default rows with that parameter
    with pytest.raises(ConfigError, match="no benchmarked method has a hyper-parameter 'nope'"):
        with_method_params(BenchSpec(datasets=["yeast"], methods=["an"]), ["nope=1"])
    check_device_options({"device": "cpu", "head": "mlp"})  # other fields are not its business
    with pytest.raises(SpmlError, match="CUDA is not available"):
        check_device_options({"device": "cuda"})

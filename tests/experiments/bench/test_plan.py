"""Planning a bench (spmlkit.experiments.bench.plan): groups in a fixed order, each hashed
over everything that determines its result."""

from spmlkit.experiments import bench as B

SMALL = dict(lrs=(1e-2, 1e-3), batch_sizes=(8, 16), seeds=(0, 1), epochs=2)
SMALL_DRAWS = dict(methods=["an"], lrs=(1e-2,), batch_sizes=(16,), seeds=(0, 1), epochs=1)


def spec(bundle, **kw):
    args = {**SMALL, **kw}
    return B.BenchSpec(datasets=[str(bundle.path)], **args)


def test_group_hash_covers_config_and_bundle(toy_bundle, tmp_path):
    ds = [B.BenchDataset("toy", toy_bundle, B.bundle_fingerprint(toy_bundle))]
    base = B.plan_groups(B.validate_spec(spec(toy_bundle, methods=["an"])), ds)
    same = B.plan_groups(B.validate_spec(spec(toy_bundle, methods=["an"])), ds)
    assert [g.hash for g in base] == [g.hash for g in same]
    # progress unit: optimizer steps = epochs x ceil(n_train / batch)
    n = toy_bundle.size("train")
    assert [g.steps for g in base] == [2 * -(-n // 8), 2 * -(-n // 16)]
    for change in (dict(epochs=3), dict(patience=1), dict(seeds=(0, 2)), dict(config={"head": "mlp"}),
                   dict(regime="full")):
        other = B.plan_groups(B.validate_spec(spec(toy_bundle, methods=["an"], **change)), ds)
        assert not {g.hash for g in other} & {g.hash for g in base}, change
    ds2 = [B.BenchDataset("toy", toy_bundle, "another-fingerprint")]
    assert not {g.hash for g in B.plan_groups(B.validate_spec(spec(toy_bundle, methods=["an"])), ds2)} & \
        {g.hash for g in base}


def test_default_keeps_one_draw_and_group_keys(tmp_path):
    spec = B.validate_spec(B.BenchSpec(datasets=["yeast"], **SMALL_DRAWS))
    datasets = B.resolve_datasets(spec, tmp_path)
    groups = B.plan_groups(spec, datasets)
    assert len(groups) == 1 and groups[0].draw is None and "draw" not in groups[0].key
    assert [m[1] for m in groups[0].members] == [0, 1]
    assert [p.name for p in (tmp_path / "bundles").iterdir()] == ["yeast-s0"]


def test_a_recipe_group_counts_every_member_loop_and_its_bar_never_passes_it(toy_bundle):
    """The progress unit of an ``auto`` group is its members' loops (each member trains in a
    loop of its own): ``members x epochs x steps per epoch``; the bar moves by at most that
    much, however long the members' longer tries run."""
    from spmlkit.experiments.bench.runner import GroupEpochs

    ds = [B.BenchDataset("toy", toy_bundle, B.bundle_fingerprint(toy_bundle))]
    params = {"auto": {"members": "an,l1r,wan"}}
    (g,) = B.plan_groups(B.validate_spec(spec(toy_bundle, methods=["auto"], batch_sizes=(8,), params=params)), ds)
    n = toy_bundle.size("train")
    assert g.loops == 3 and g.steps == 3 * 2 * -(-n // 8)
    (a,) = B.plan_groups(B.validate_spec(spec(toy_bundle, methods=["an"], batch_sizes=(8,))), ds)
    assert a.loops == 1 and a.steps == 2 * -(-n // 8)

    class Bar:
        total = 0

        def update(self, k):
            self.total += k

    bar = Bar()
    ge = GroupEpochs(g, bar, None, None)
    for _ in range(3 * 2 + 4):  # every member's epochs and a longer try of 4 more
        ge.on_epoch_end(None, {})
    assert bar.total == ge.counted == g.steps

"""Every data source the trainers accept provides the BundleLike protocol."""
import numpy as np

from spmlkit.data.bundle_like import BundleLike


def test_bundle_array_bundle_and_train_subset_are_bundle_like(toy_bundle):
    from spmlkit.data.memory import ArrayBundle
    from spmlkit.experiments.bench import TrainSubset

    arrays = ArrayBundle(np.asarray(toy_bundle.features("train")), np.asarray(toy_bundle.observations("train")))
    subset = TrainSubset(toy_bundle, np.arange(10))
    for data in (toy_bundle, arrays, subset):
        assert isinstance(data, BundleLike), type(data).__name__
        Z = data.selection_observations("train") if data is arrays else data.selection_observations("val")
        assert Z.dtype == np.int8 and Z.shape[1] == data.n_labels
    assert not isinstance(object(), BundleLike)

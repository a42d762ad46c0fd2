"""Training: the entry point (:func:`train`, :mod:`.run`), the run assembly (:mod:`.prepare`), the shared
loop, the linear (cached-feature) setting, optimisers, checkpoints."""
from .checkpoint import load_checkpoint, save_checkpoint
from .linear import FeatureStore, LinearLearner, train_linear
from .loop import fit
from .optim import StackedAdam
from .result import RunResult
from .run import train
from .tracking import BestTracker

__all__ = ["load_checkpoint", "save_checkpoint", "FeatureStore", "LinearLearner", "RunResult", "train_linear", "fit",
           "StackedAdam", "BestTracker", "train"]

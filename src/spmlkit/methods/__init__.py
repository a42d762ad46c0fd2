"""Methods = loss + regime + training-time components with hooks (see :mod:`.base`).

The modules imported below register the in-tree methods (``tests/contracts/test_inits.py``
fails when a registered method's module is missing from the list)."""
from . import (apl, assume_negative, boostlu, down_weighted, entropy, expected_positives, focal, generalized_robust,
               label_smoothing, label_store, lac, large_loss, opml, presence_only, pseudo_scores, ranking, recipe,
               robust_mlml, role, weak_negatives, weight_norm, zhou_label_smoothing)
from .base import (METHODS, Batch, Component, FinetuneNeeds, Method, MethodSpec, TrainContext, build_method,
                   describe_methods, get_method_spec, register_method, resolve_k)
from .order import ORDER

__all__ = ["METHODS", "ORDER", "Batch", "Component", "FinetuneNeeds", "Method", "MethodSpec", "TrainContext",
           "build_method", "describe_methods", "get_method_spec", "register_method", "resolve_k"]

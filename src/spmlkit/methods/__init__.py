"""Methods = loss + regime + training-time components with hooks (see :mod:`.base`)."""
from .base import (METHODS, Batch, Component, FinetuneNeeds, Method, MethodSpec, TrainContext, build_method,
                   describe_methods, get_method_spec, register_method, resolve_k)
METHODS.discover()

__all__ = ["METHODS", "Batch", "Component", "FinetuneNeeds", "Method", "MethodSpec", "TrainContext", "build_method",
           "describe_methods", "get_method_spec", "register_method", "resolve_k"]

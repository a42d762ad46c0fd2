"""Methods = loss + regime + training-time components with hooks (see :mod:`.base`)."""
from .base import (METHODS, Batch, Component, Method, MethodSpec, TrainContext, build_method, describe_methods, expected_positives,
                   get_method_spec, parse_param_value, parse_params, register_method)
METHODS.discover()

__all__ = ["METHODS", "Batch", "Component", "Method", "MethodSpec", "TrainContext", "build_method", "describe_methods",
           "expected_positives", "get_method_spec", "parse_param_value", "parse_params", "register_method"]

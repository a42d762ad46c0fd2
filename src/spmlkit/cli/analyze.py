"""``spml analyze NAME``: one registered analysis (spmlkit.experiments.analyses)."""
from __future__ import annotations

from ..config import check_device_syntax
from ..errors import ConfigError
from ..experiments.analyses import add_analyze_parser, prepare_out, run_analysis
from .common import _check_method, _check_source

#: the analyses' options that count something or scale a step: a value <= 0 is refused
#: before torch (the options' argparse types are plain int/float)
_POSITIVE = ("epochs", "lr", "batch_size", "seeds", "threads", "bins", "images", "top", "image_size", "steps_1d",
             "steps_2d", "radius", "k")
#: the options that name methods (one name, or a list)
_METHOD_OPTIONS = ("method", "methods")


def check_arguments(args) -> None:
    """Before torch (seconds to import, a minute on a loaded machine): the source, the
    output folder (checked, not created), the device's syntax, the seed, the counts and steps, and the methods' names (from the
    catalogue), so that a mistake is one line at once.  What needs the data (k against the
    number of labels, full labels) is the analysis' own check, after."""
    options = vars(args)
    _check_source(args.source, options.get("data_root"))
    prepare_out(args.out, args.source, create=False)
    if options.get("device") is not None:
        check_device_syntax(args.device, "--device")
    if options.get("seed") is not None and args.seed < 0:
        raise ConfigError(f"--seed must be >= 0, got {args.seed}")
    for dest in _POSITIVE:
        value = options.get(dest)
        if value is not None and not value > 0:
            raise ConfigError(f"--{dest.replace('_', '-')} must be > 0, got {value}")
    for dest in _METHOD_OPTIONS:
        value = options.get(dest)
        for name in [value] if isinstance(value, str) else (value or ()):
            _check_method(name)


def run(args) -> int:
    check_arguments(args)
    summary = run_analysis(args.analysis, vars(args))
    for path in summary.get("written", []):
        print(path)
    return 0


def add_parser(sub) -> None:
    """``spml analyze``: one sub-command per registered analysis (their own --help)."""
    add_analyze_parser(sub, func=run)

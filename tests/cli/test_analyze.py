"""``spml analyze`` (spmlkit.cli.analyze and the analysis registry of
spmlkit.experiments.analyses): one sub-command per analysis, bad input in one line."""
from __future__ import annotations


import pytest

from spmlkit.experiments.analyses import all_analyses


def test_registry_and_help():
    from spmlkit.cli import analyze as analyze_command
    from spmlkit.cli import build_parser

    names = set(all_analyses())
    assert names == {"cole-k-sensitivity", "cole-role-estimator", "zhou-positive-loss", "zhou-landscape",
                     "xie-sensitivity", "xie-attention", "li-confidence-histogram", "li-gradcam"}
    import argparse

    parser = build_parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    nested = next(a for a in top.choices["analyze"]._actions if isinstance(a, argparse._SubParsersAction))
    assert set(nested.choices) == names
    missing = [(n, a.dest) for n, sp in nested.choices.items() for a in sp._actions if not a.help]
    assert not missing, missing  # every option of every analysis is documented in --help
    for n in names:  # every analysis parses with its documented options
        args = parser.parse_args(["analyze", n, "src", "-o", "out"])
        assert args.analysis == n and args.func is analyze_command.run


def test_source_name_is_prepared_once_into_out(tmp_path):
    from spmlkit.errors import ConfigError
    from spmlkit.experiments.analyses import resolve_bundle

    b = resolve_bundle("yeast", tmp_path)
    assert b.path == tmp_path / "bundle" and b.regime == "single_positive" and b.meta["seed"] == 0
    mtime = (b.path / "meta.json").stat().st_mtime_ns
    assert resolve_bundle("yeast", tmp_path).path == b.path  # reused, not prepared again
    assert (b.path / "meta.json").stat().st_mtime_ns == mtime
    with pytest.raises(ConfigError, match="holds a bundle of 'yeast'"):
        resolve_bundle("digits", tmp_path)


# ----------------------------------------------------------------------------- CLI
def test_cli_analyze_runs_and_reports_bad_input(toy_bundle, tmp_path, capsys):
    from spmlkit.cli import main

    out = tmp_path / "h"
    assert main(["analyze", "li-confidence-histogram", str(toy_bundle.path), "-o", str(out), "--epochs", "1",
                 "--bins", "4", "--threads", "1"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(out / n) for n in ("confidence-histogram.csv", "confidence-histogram.json",
                                              "confidence-histogram.png")]
    assert main(["analyze", "li-confidence-histogram", str(toy_bundle.path), "-o", str(out), "--bins", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spml: error:") and "--bins" in err and "\n" not in err
    assert main(["analyze", "cole-k-sensitivity", str(toy_bundle.path), "-o", str(out), "--methods", "an"]) == 2
    assert "takes no k" in capsys.readouterr().err
    assert main(["analyze", "li-gradcam", str(toy_bundle.path), "-o", str(out)]) == 2
    assert "image bundle" in capsys.readouterr().err

"""Running ``spml`` in the test process."""
from __future__ import annotations


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """``spml ARGV`` through :func:`spmlkit.cli.main`: ``(exit status, stdout, stderr)``.
    ``--help`` and option errors end in argparse's ``SystemExit``; its status is returned
    like any other."""
    from spmlkit.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    """The single line of ``err`` (asserting there is exactly one), without ``spml: error: ``."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("spml: error: "), err
    return lines[0][len("spml: error: "):]


def strict_one_line_error(capsys, *argv) -> str:
    """Runs the CLI with every warning turned into an error: bad input must end in exit
    status 2 and exactly one line on stderr (no traceback, no RuntimeWarning first)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = run_cli(capsys, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    return err.strip()

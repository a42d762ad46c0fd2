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

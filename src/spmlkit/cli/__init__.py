"""The ``spml`` command: parses options, builds a config, calls the library.

Run ``spml <command> --help`` for every option.  Errors caused by input end in one
line on stderr (``spml: error: ...``) and exit status 2.

One module per command (``datasets.py``, ``train.py``, ``bench.py``, ...), each with its
``add_parser(sub)`` (the command's options) and its ``run(args)``; the option types and the
options several commands share (``--device``, ``--log-to``, the image options) are in
``common.py``.  Importing this package imports no torch: every command imports the library
inside its ``run``.
"""
from .entry import COMMANDS, build_parser, main
from .methods import SAME_AT_DEFAULTS

__all__ = ["COMMANDS", "build_parser", "main", "SAME_AT_DEFAULTS"]

"""``python -m spmlkit.cli`` (and ``torchrun ... -m spmlkit.cli``): the ``spml`` command."""
import sys

from .entry import main

sys.exit(main())

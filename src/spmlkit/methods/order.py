"""The registered methods' order, pinned: the order :data:`~.base.METHODS` lists them in.

A :class:`~spmlkit.registry.Registry` is a ``dict``, so without a pin its order would be
the order in which its modules happen to be imported, and moving or renaming a module
would reorder everything that walks the registry: ``spml bench``'s default method list
(:func:`spmlkit.experiments.bench.default_methods`, whose committed tables were written in
this order), the benchmarks that append the remaining methods after it, and the tables of
the methods not in the default list.  :data:`METHODS` keeps its entries in the order of
:data:`ORDER` whatever the import order; a method registered from outside the package (a
plug-in, a test) and not named here follows the pinned ones, in the order registered.

An in-tree method is added at the end of :data:`ORDER` (or where its rows belong);
``tests/contracts/test_method_order.py`` fails when a registered method of the package is
missing here, when a name here is not registered, or when the listing differs from the pin.

``spml methods`` and ``catalogue.json`` list the methods by paper (their ``family``)
and name, which no module move changes either.
"""
from __future__ import annotations

#: every in-tree method, in registration order (the order they were listed in before the
#: methods' modules were named by mechanism)
ORDER: tuple[str, ...] = (
    "bce", "iun", "iu", "an",
    "ll-r", "ll-ct", "ll-cp", "ll-r-boostlu", "ll-ct-boostlu", "ll-cp-boostlu",
    "gr",
    "bce-ls", "an-ls", "an-ls-asym", "wan", "epr", "pr",
    "lac",
    "zlpr", "opml", "opml-hr", "opml-soft", "opml-lc", "opml-sp",
    "an-ssdl", "an-ssdl-me", "an-slds", "an-slds-me", "an-full", "an-full-me", "full-weighted",
    "vlpl", "gpr",
    "auto",
    "role",
    "focal-margin", "hill", "splc",
    "em", "em-apl", "dw", "l1r", "l2r", "ls", "n-ls", "entmin", "focal", "asl",
)

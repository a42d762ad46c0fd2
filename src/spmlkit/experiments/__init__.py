"""Experiments: the grid x seeds protocol, tables, figures and the demo."""

__all__: list[str] = []  # a namespace: import the modules (spmlkit.experiments.tables, ...)

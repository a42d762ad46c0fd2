"""The practitioner layer: what a user of their own single-positive data touches —
run folders (:mod:`.run_folder`), saved models (:mod:`.saved`), label sets (:mod:`.labelsets`),
evaluation without full labels (:mod:`.evaluation`), k estimates (:mod:`.estimate_k`),
prediction input/output (:mod:`.inference`), reports (:mod:`.report`) and the
scikit-learn estimator (:mod:`.estimator`).  It builds on the core packages; nothing in
the core imports it (tests/contracts/test_layers.py)."""

__all__: list[str] = []  # a namespace: import the modules (spmlkit.practitioner.run_folder, ...)

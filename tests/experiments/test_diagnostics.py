"""Zhou et al.'s diagnostic figures (spmlkit.experiments.diagnostics)."""

import numpy as np



def test_figures_are_png(tmp_path):
    from spmlkit import ownership
    from spmlkit.experiments.diagnostics import plot_ap_change, plot_wasserstein_scatter

    tmp_path = ownership.claim(tmp_path / "diag", "diagnostics")  # (spmlkit writes only into folders it made)

    p = plot_wasserstein_scatter([0.1, 0.2, np.nan], [0.3, 0.1, 0.2], tmp_path / "w.png")
    q = plot_ap_change([1.0, -2.0, np.nan], ["a", "b", "c"], tmp_path / "ap.png")
    for f in (p, q):
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*tmp"))  # atomic: no temporary file left

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


def test_apl_state_is_found_under_its_state_key_and_under_the_positional_key_of_older_checkpoints():
    from spmlkit.experiments.diagnostics import APL_STATE_KEY, find_apl_state

    state = {"kind": [[0]], "assigned_epoch": [[0]]}
    assert APL_STATE_KEY == "AsymmetricPseudoLabeler"
    assert find_apl_state({"AsymmetricPseudoLabeler": state}) is state
    assert find_apl_state({"0:AsymmetricPseudoLabeler": state}) is state  # written before state keys
    assert find_apl_state({"LabelEstimator": {"store": {}}}) is None and find_apl_state(None) is None

"""The papers' remaining analyses, one command each: ``spml analyze NAME ...``.

Every analysis is a function registered by name in :data:`ANALYSES`; it trains what it
needs through the library's training API (:func:`spmlkit.training.train_linear`,
:func:`spmlkit.training.loop.fit` with an ``on_epoch`` callback,
:func:`spmlkit.training.finetune.train_finetune`), writes the numbers behind its figure
(CSV and/or JSON, sometimes ``.npz``) and one PNG into its output folder, and returns a
summary dict (``summary["written"]`` lists the files).

=============================  ===============================================================
name                           paper figure
=============================  ===============================================================
``cole-k-sensitivity``         Cole et al. 2021, Fig. A1 (mAP of EPR/ROLE against the assumed k)
``cole-role-estimator``        Cole et al. 2021, §5.4 / Fig. 2 (ROLE's label matrix vs the truth)
``zhou-positive-loss``         Zhou et al. 2022, Fig. 2b (loss of the annotated positives, AN vs EM)
``zhou-landscape``             Zhou et al. 2022, Fig. 5a,b (loss landscapes, Li et al. 2018)
``xie-sensitivity``            Xie et al. 2022, Figs. 3-5 (LAC's δ, τ and queue size K)
``xie-attention``              Xie et al. 2022, Fig. 6 (label-wise attention maps)
``li-confidence-histogram``    Li et al. (OPML), Fig. 3 (confidences of test positives/negatives)
``li-gradcam``                 Li et al. (OPML), Fig. 7 (Grad-CAM, Selvaraju et al. 2017)
=============================  ===============================================================

The CLI builds one sub-command per entry from its declared arguments (:class:`Arg`), so
adding an analysis is one decorated function; nothing dispatches by ``if``.
matplotlib is imported lazily, with the Agg backend.
"""
from . import cole, li, xie, zhou
from .base import (Arg, Analysis, ANALYSES, COMMON_ARGS, register_analysis, get_analysis, all_analyses,
                   run_analysis, add_analyze_parser, progress_log, quiet, resolve_bundle, require_full_labels,
                   check_positive, pyplot, save_figure, write_table_figure, write_csv, prepare_out, seed_list,
                   LinearSetup, linear_setup)

__all__ = ["Arg", "Analysis", "ANALYSES", "COMMON_ARGS", "register_analysis", "get_analysis", "all_analyses",
           "run_analysis", "add_analyze_parser", "progress_log", "quiet", "resolve_bundle", "require_full_labels",
           "check_positive", "pyplot", "save_figure", "write_table_figure", "write_csv", "prepare_out", "seed_list",
           "LinearSetup", "linear_setup"]

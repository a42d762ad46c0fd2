"""Every fast path and its plain twin: the registry ``tests/contracts/test_twins.py`` holds
the source to.

A **fast path** computes in pieces what a plain computation does whole: streamed (row
chunks of scores or logits), chunked (a file or array read a block at a time), sparse
(CSR labels instead of the dense ``N × L`` matrix), block-wise (regimes drawn a block
of rows at a time) or on a device (dense blocks scattered from a padded table).  Each
ships with its **twin**: a plain dense reference computing the same result, and a test
comparing the two on drawn inputs that reach the edges (empty and full rows, ties
within and across labels, labels without positives, one label, one row, chunk sizes
1..N, every label-set rule and regime).

The rule the contract test applies to find fast paths in ``src/spmlkit``: every public
function, method or class (no name along its path starts with ``_``) whose **name**
contains ``stream``, ``chunk``, ``block`` or ``sparse``, or whose **docstring** says
``stream``/``streamed``/``streams``/``streaming``, ``chunk by chunk``, ``block by
block``, ``in blocks``/``in row blocks``/``in chunks``.  Each one found must be listed
here: in :data:`TWINS` (as ``fast``) or in :data:`NOT_FAST_PATHS` with the reason it is
not one.  A fast path the rule does not find (its name and docstring say nothing of it)
is listed in :data:`TWINS` all the same.

Names are ``module:qualified.name`` under ``spmlkit``; tests are
``path::function`` (the contract test checks both exist).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Twin:
    fast: str  # the fast path, "module:qualname" under spmlkit
    reference: str  # its plain dense twin
    tests: tuple[str, ...]  # "path::test_function": the tests comparing them


M = "tests/twins/test_metrics_twins.py::"
LB = "tests/twins/test_labels_twins.py::"
RD = "tests/twins/test_readers_twins.py::"
PR = "tests/twins/test_practitioner_twins.py::"
LS = "tests/practitioner/test_logit_sets.py::"
TR = "tests/twins/test_training_twins.py::"
SC = "tests/training/test_scores.py::"
PREDICT = (PR + "test_streamed_label_sets_equal_the_dense_prediction",
           PR + "test_streamed_top_k_and_probabilities_equal_the_dense_prediction",
           PR + "test_a_batch_rule_takes_the_whole_collection_however_it_is_chunked")
STREAMED_RUN = (SC + "test_a_streamed_run_equals_the_whole_run",
                SC + "test_a_streamed_practitioner_run_saves_the_same_rule_and_quality")

TWINS: list[Twin] = [
    Twin("rank_counts:stream_rank_counts", "metrics.masked_average_precision and metrics.roc_auc of the whole matrix",
         (M + "test_ap_and_auc_from_rank_counts_equal_the_dense_metrics",
          M + "test_a_tie_run_ends_at_every_label_boundary",
          "tests/test_metrics.py::test_streamed_rank_counts_equal_direct_comparison_and_dense_metrics")),
    Twin("rank_counts:average_precision_from_counts", "metrics.masked_average_precision of the whole matrix",
         (M + "test_ap_and_auc_from_rank_counts_equal_the_dense_metrics",
          M + "test_a_tie_run_ends_at_every_label_boundary")),
    Twin("rank_counts:roc_auc_from_counts", "metrics.roc_auc of the whole matrix",
         (M + "test_ap_and_auc_from_rank_counts_equal_the_dense_metrics",)),
    Twin("rank_counts:streamed_observed_scores", "metrics.evaluate_scores(scores, Z=Z)",
         (M + "test_streamed_observed_scores_equal_evaluate_scores",)),
    Twin("sparse_labels:SparseLabels", "the dense numpy matrix (counts, rows, blocks)",
         ("tests/test_sparse_labels.py::test_counts_rows_and_blocks_equal_numpy",)),
    Twin("sparse_labels:DeviceLabels.block", "SparseLabels.dense()[index]",
         (LB + "test_device_blocks_equal_the_dense_rows",
          LB + "test_a_row_without_an_observed_positive_stays_empty_on_the_device")),
    Twin("labels:observe", "observe(..., rows_per_block=N): the regime drawn on the whole matrix",
         (LB + "test_regimes_drawn_block_by_block_equal_the_whole_matrix",
          LB + "test_every_regime_on_one_row_and_on_one_label")),
    Twin("data.formats.tabular:read_table", "the dense label matrix the table was written from",
         (RD + "test_wide_and_set_columns_read_block_by_block_equal_the_dense_labels",
          RD + "test_a_long_table_reads_as_the_dense_labels")),
    Twin("data.formats.npz:load_npz", "the dense labels of the same archive",
         (RD + "test_npz_csr_labels_equal_the_dense_labels_of_the_same_archive",)),
    Twin("reading:gunzip", "gzip.decompress of the whole stream",
         (RD + "test_gunzip_in_pieces_equals_gzip_decompress_and_refuses_past_its_limit",)),
    Twin("practitioner.inference:predict_to_file",
         "SavedModel.predict_proba / label_sets_from_proba of the whole input", PREDICT),
    Twin("practitioner.inference:write_probability_chunks", "predict_proba of the whole input, written whole",
         PREDICT),
    Twin("practitioner.inference:write_label_set_chunks", "label_sets_from_proba of the whole input", PREDICT),
    Twin("practitioner.inference:write_top_k_chunks", "a stable descending sort of the whole input's scores",
         PREDICT),
    Twin("practitioner.saved:SavedModel.iter_decision_function", "decision_function of the whole input", PREDICT),
    Twin("practitioner.evaluation:evaluate_model", "evaluate_model on scores held whole (the dense branch)",
         (PR + "test_streamed_evaluation_on_observations_equals_the_dense_one",
          PR + "test_streamed_evaluation_on_full_labels_equals_the_dense_one",
          PR + "test_streamed_label_sets_threshold_probabilities_not_logits",
          PR + "test_streamed_evaluation_applies_a_batch_rule_to_the_whole_split")),
    Twin("practitioner.labelsets:estimate_k_observed_streamed", "labelsets.estimate_k_observed",
         (PR + "test_k_estimated_from_logit_blocks_equals_the_dense_estimate",
          LS + "test_the_streamed_k_estimate_on_logits_equals_the_plain_one")),
    Twin("practitioner.report:label_set_quality_streamed", "report.label_set_quality",
         (PR + "test_label_set_quality_tallied_block_by_block_equals_the_dense_quality",
          LS + "test_label_set_quality_on_logits_equals_it_on_probabilities")),
    Twin("practitioner.labelsets:label_sets_from_logits", "labelsets.label_sets on expit(float64(logits))",
         (LS + "test_every_rule_on_logits_equals_the_rule_on_float64_probabilities",)),
    Twin("practitioner.labelsets:top_labels_from_logits", "inference.top_k_indices on float32(expit(float64(logits)))",
         (LS + "test_every_rule_on_logits_equals_the_rule_on_float64_probabilities",
          LS + "test_top_k_written_from_logits_equals_top_k_written_from_probabilities")),
    Twin("training.validation:validation_rows", "a validation split of the subsample's rows alone",
         ("tests/training/test_validation.py::test_a_subsample_selects_as_a_validation_split_of_those_rows_alone",)),
    Twin("methods.apl:lowest_by_threshold", "methods.apl.lowest_by_sort: one stable sort of every column",
         (TR + "test_apl_lowest_by_threshold_equals_the_stable_sort",)),
    Twin("training.linear:feature_statistics", "numpy mean and std of the whole matrix",
         (TR + "test_feature_statistics_in_chunks_equal_numpy_on_the_whole_matrix",)),
    Twin("training.linear:FeatureStore.chunks", "the in-memory tensor",
         (TR + "test_feature_store_chunks_from_disk_equal_the_in_memory_tensor",
          "tests/training/test_linear.py::test_feature_store_reads_only_bounded_chunks")),
    Twin("training.linear:streamed_split_scores", "the run with its scores held whole", STREAMED_RUN),
    Twin("training.linear:LinearLearner.scores", "the run with its scores held whole", STREAMED_RUN),
    Twin("training.linear:LinearLearner.score_view", "the run with its scores held whole", STREAMED_RUN),
    Twin("training.prepare:streamed_map", "metrics.mean_average_precision of the whole matrix", STREAMED_RUN),
    Twin("training.scores:ScoreView.chunks", "ScoreView.dense / the tensor whole",
         STREAMED_RUN + (SC + "test_score_view_member_and_dense",)),
    Twin("training.scores:numpy_chunks", "the tensor whole", STREAMED_RUN),
    Twin("models.maxent_head:fit_gibbs", "models.maxent_head.fit_gibbs_labels: every label at once",
         ("tests/twins/test_models_twins.py::test_lambda_fitted_in_blocks_of_labels_equals_every_label_at_once",)),
    Twin("models.maxent_head:cloglog_offsets", "the (B, L) scores' entropy and log-sum-exp computed whole",
         ("tests/twins/test_models_twins.py::test_cloglog_offsets_in_blocks_equal_the_whole_computation",)),
    Twin("training.loop:fitted_epochs", "training.loop.fit over every epoch (the head's fitted flag off)",
         (TR + "test_a_fitted_head_trained_one_epoch_equals_it_trained_every_epoch",)),
]

#: found by the rule but not a fast path: why
NOT_FAST_PATHS: dict[str, str] = {
    "sparse_labels:block_rows": "sizes a block (rows per block); computes no result of its own",
    "sparse_labels:as_sparse": "a conversion (SparseLabels.from_dense, twin-tested with SparseLabels)",
    "practitioner.inference:chunk_rows": "sizes a chunk; computes no result of its own",
    "practitioner.saved:SavedModel.stream_rows": "sizes a chunk; computes no result of its own",
    "training.scores:needs_streaming": "decides whether to stream; computes no result of its own",
    "training.prepare:is_streamed": "a type test (ScoreView or tensor)",
    "data.formats.occurrences:spatial_blocks": "spatial cross-validation blocks of a map, not row blocks",
    "experiments.tables:strip_run_block": "a block of text in a results table",
    "experiments.tables:header_block": "a block of text in a results table",
    "methods.base:MemberStreams": "random-number streams, one per member: not streamed data",
    "methods.label_store:member_rng": "random-number streams, one per member: not streamed data",
    "training.background:BackgroundSampler.draw": "random-number streams, one per member: not streamed data",
    "data.bundle:Bundle.selection_observations": "a seed stream of its own: not streamed data",
    "reading:read_limit_bytes": "the read budget (a number); computes no result of its own",
    "data.spatial_splits:block_cells": "spatial cross-validation blocks of a map, not row blocks",
    "data.spatial_splits:block_folds": "spatial cross-validation blocks of a map, not row blocks",
    "models.maxent_head:label_blocks": "sizes the blocks of labels; computes no result of its own",
}

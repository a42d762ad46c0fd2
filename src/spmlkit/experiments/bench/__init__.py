"""``spml bench``: reproduce a paper's table with one command (Cole et al. 2021 §6.1).

For every dataset and method the bench trains the grid learning rate × batch size ×
seed (default lr ∈ {1e-2, 1e-3, 1e-4, 1e-5}, batch ∈ {8, 16}, seeds 0, 1, 2, 25 epochs
in the linear setting, 10 when fine-tuning — Cole et al. §6.1 "Hyperparameters"),
keeps each run's test mAP at its best-validation epoch, selects per method the
configuration with the best mean validation mAP over seeds
(:func:`~spmlkit.experiments.protocol.select_best`) and writes, in ``RESULTS_DIR``:

``table.md``      Cole Table 1: methods grouped by label regime × datasets, mean ± std
``recovery.md``   Cole Table 2: training-set mAP against the full training labels
``fractions.md``  with ``--train-fractions``: test mAP per fraction of training data
``partial.md``    with ``--hide-fractions``: the partial-label sweep (Zhou Fig. 5c)
``runs.csv`` / ``runs.json.gz``  every run (``partial-runs.*`` for the sweep; the JSON
                  record gzip-compressed, ``zcat runs.json.gz`` reads it)
``groups/<hash>.json``  one file per finished training group (the resume state)
``*.png``         figures (:mod:`spmlkit.experiments.figures`)

One module per job, imported one way (spec → data → plan → runner → workers →
executors):

:mod:`.spec`       what the bench is asked to do (:class:`BenchSpec`), its rows, checked
:mod:`.data`       its datasets as bundles, fingerprints, training subsets
:mod:`.plan`       the training groups, each named by a hash of what determines it
:mod:`.runner`     the results folder, one group's training, the bench that writes tables
:mod:`.workers`    the life of a worker process (local pool, Ray task)
:mod:`.executors`  who trains the groups: sequential, local pool, Ray, table only, shards
"""
from .data import BenchDataset, TrainSubset, bundle_fingerprint, resolve_datasets, subsample_rows
from .executors import (Executor, LocalPool, RayExecutor, Sequential, Shard, TableOnly, check_engine_options,
                        make_executor, parse_shard, run_bench)
from .plan import BENCH_FORMAT, Group, plan_groups
from .runner import HIST_BINS, BenchRunner, histogram_of
from .spec import (BenchSpec, check_device_options, default_methods, parse_method_params, row_params, split_row,
                   validate_spec, with_method_params)

__all__ = ["BenchDataset", "TrainSubset", "bundle_fingerprint", "resolve_datasets", "subsample_rows", "Executor",
           "LocalPool", "RayExecutor", "Sequential", "Shard", "TableOnly", "check_engine_options", "make_executor",
           "parse_shard", "run_bench", "BENCH_FORMAT", "Group", "plan_groups", "HIST_BINS", "BenchRunner",
           "histogram_of", "BenchSpec", "check_device_options", "default_methods", "parse_method_params",
           "row_params", "split_row", "validate_spec", "with_method_params"]

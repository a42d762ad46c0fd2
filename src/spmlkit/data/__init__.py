"""Data: formats, built-in datasets, splits and prepared bundles."""
from .bundle import Bundle, prepare_bundle, split_indices
from .dataset import MultiLabelDataset, Split
from .formats.base import FILE_FORMATS, FILE_FORMATS as FORMATS, detect_format, register_format
from .formats.label_rule import is_single_positive, single_positive_as_observed
from .observed import load_any
from .registry import DATASETS, load_dataset, load_mulan_folder, load_source, register_dataset

__all__ = ["Bundle", "prepare_bundle", "split_indices", "MultiLabelDataset", "Split", "FILE_FORMATS", "FORMATS",
           "detect_format", "register_format", "is_single_positive", "load_any", "single_positive_as_observed",
           "DATASETS", "load_dataset", "load_mulan_folder", "load_source", "register_dataset"]

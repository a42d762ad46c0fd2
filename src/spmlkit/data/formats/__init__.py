"""Readers for multi-label file formats; each returns a :class:`~spmlkit.data.MultiLabelDataset`.

:mod:`.builtin` and :mod:`.presence_only` register the in-tree formats (imported here, so
the registry is complete on import; ``tests/contracts/test_inits.py`` checks it)."""
from . import builtin, presence_only
from .arff import read_arff, read_label_xml
from .coco import load_coco, load_coco_folder, read_coco_instances
from .cub import load_cub
from .nuswide import load_nuswide
from .tabular import load_npz, load_table_dataset, read_table
from .voc import load_voc

__all__ = ["read_arff", "read_label_xml", "load_coco", "load_coco_folder", "read_coco_instances", "load_cub",
           "load_nuswide", "load_npz", "load_table_dataset", "read_table", "load_voc"]

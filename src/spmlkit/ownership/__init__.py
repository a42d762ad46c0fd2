"""One ownership rule for every file or folder spmlkit creates, replaces or deletes.

The rule (docs/files.md):

* **A folder is spmlkit's only if spmlkit made it.**  Making a folder (an output folder
  given with ``-o``, a bundle, a model folder, a scratch folder) writes a marker
  (:data:`MARKER`, ``{"written_by": "spmlkit", "kind": ...}``) and an append-only
  manifest (:data:`MANIFEST`) into it.  The manifest lists every file and folder spmlkit
  wrote there, with the device and inode each had: a file replaced by someone else under
  the same name is not spmlkit's any more.  An existing folder is accepted only when it is
  empty, holds spmlkit's marker of the same kind, or is a folder of that kind written by
  an older spmlkit (recognised by its own metadata; its entries that follow that kind's
  layout are listed, anything else stays foreign).
* **Nothing inside an owned folder is followed.**  A symbolic link, or a file or folder
  that is not listed (someone else's), met where spmlkit writes is refused in one line and
  left untouched; a file that has other names (a hard link) is replaced by name (atomic
  writes) and never modified in place.
* **Only what the manifest lists is ever removed**; ``--overwrite`` (:func:`check_clearable`)
  refuses when anything else is there.
* **An output is never an input**: an output path that is, contains or lies inside a
  file or folder the command reads is refused (:func:`refuse_inputs`), compared by device
  and inode, not by name.

Every writer in spmlkit calls this module: :func:`claim` (a command's output folder),
:func:`folder` (a folder inside one, or a library call's own folder), :func:`build` (a
folder written beside its target and renamed into place: ``spml prepare``), and the
path-based writers :func:`write_bytes`, :func:`write_text`, :func:`write_json`,
:func:`save_npy`, :func:`append_jsonl`, :func:`atomic_path`, :func:`open_memmap`,
:func:`copy_file`, :func:`rename`, :func:`mkdir`, :func:`remove`, which check the path
against the folder that owns it (registered in this process by one of the three calls
above) before anything is written, and record what they write.  The only other code that
touches the file system is :mod:`spmlkit.io` (the atomic-write helpers these call, and
the lock files of :class:`spmlkit.io.FolderLock`) and :func:`output_file` here (a single
file such as ``spml predict -o FILE.csv``, which has no folder of its own).

The package's modules, one idea each: :mod:`.rule` (the rule's names, kinds and the checks
that need no manifest), :mod:`.manifest` (the marker and manifest format), :mod:`.adopt`
(older spmlkit's layouts), :mod:`.walks` (from an owned folder down to a path),
:mod:`.folders` (claiming folders), :mod:`.writers`, :mod:`.removal`, :mod:`.builds`
(folders renamed into place) and :mod:`.files` (single output files).
"""
from __future__ import annotations

from ..io import check_input_paths
from .rule import (
    MARKER, MANIFEST, LOCK, BUILD_OWNER, OwnershipError, UnownedPathError, Kind, register_kind,
    refuse_inputs, check_output_folder
)
from .manifest import _ROOTS, folder_kind
from .folders import claim, folder, created, mkdir, temporary_folder, new_folder
from .walks import ensure_parent
from .writers import (
    target, atomic_path, write_bytes, write_text, write_json, write_json_gz, save_npy, append_jsonl,
    open_memmap, copy_file, new_file, touch, record_new, rename
)
from .removal import remove, prune, discard, foreign, check_clearable, remove_stale_temporaries
from .builds import build
from .files import output_file, is_checked_file, write_output_file, replace_file

__all__ = [
    "check_input_paths", "MARKER", "MANIFEST", "LOCK", "BUILD_OWNER", "OwnershipError", "UnownedPathError",
    "Kind", "register_kind", "refuse_inputs", "check_output_folder", "_ROOTS", "folder_kind", "claim",
    "folder", "created", "mkdir", "temporary_folder", "new_folder", "ensure_parent", "target", "atomic_path",
    "write_bytes", "write_text", "write_json", "write_json_gz", "save_npy", "append_jsonl", "open_memmap",
    "copy_file", "new_file", "touch", "record_new", "rename", "remove", "prune", "discard", "foreign",
    "check_clearable", "remove_stale_temporaries", "build", "output_file", "is_checked_file",
    "write_output_file", "replace_file",
]

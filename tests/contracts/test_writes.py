"""Every write, rename and delete in src/ goes through spmlkit.ownership (issue 33): a
scan of the source for the calls that create, replace or remove files and folders finds
them only in the ``ownership`` package and the atomic-write helpers it uses (``io.py``), and at the
few places listed below, each with its reason (a buffer in memory, the temporary file the
ownership module hands out, /dev/null)."""
from __future__ import annotations

import re

from tests.helpers import SRC

WRITES = re.compile(r"\.mkdir\(|os\.makedirs|os\.mkdir|rmtree|\.unlink\(|os\.unlink|os\.remove|os\.rmdir|\.rmdir\("
                    r"|os\.replace|os\.rename|\.rename\(|shutil\.(copy|move)|copyfile|\.touch\(|\.write_text\("
                    r"|\.write_bytes\(|open\([^)]*['\"](w|a|x|r\+)|np\.save|torch\.save|\.savefig\(|open_memmap\("
                    r"|mkdtemp|mkstemp|TemporaryDirectory|TemporaryFile|os\.open\(|os\.link|os\.symlink"
                    r"|os\.truncate|os\.ftruncate|os\.pwrite|os\.write\(")
#: the writers themselves
HELPERS = {"io.py"} | {f"ownership/{p.name}" for p in (SRC / "spmlkit" / "ownership").glob("*.py")}
#: (file, text on the line): why it is not a write of a file of spmlkit's choosing
ALLOWED = [
    ("training/checkpoint.py", "torch.save(encode_state(obj), buf)"),  # into a buffer in memory
    ("experiments/figures.py", "fig.savefig(buf"),  # into a buffer in memory
    ("practitioner/report.py", "fig.savefig(tmp"),  # the temporary file ownership.atomic_path hands out
    ("experiments/diagnostics.py", "fig.savefig(tmp"),
    ("experiments/analyses/base.py", "fig.savefig(tmp"),
    ("experiments/analyses/zhou.py", "open(tmp, \"wb\")"),
    ("experiments/analyses/zhou.py", "np.savez(fh"),
    ("experiments/analyses/li.py", "open(tmp, \"wb\")"),
    ("experiments/analyses/li.py", "np.savez(fh"),
    ("practitioner/inference.py", "open(tmp, \"w"),  # ownership.write_output_file's temporary file
    ("practitioner/explain.py", "open(tmp, \"w\""),  # ownership.atomic_path's temporary file
    ("practitioner/explain.py", "fig.savefig(tmp"),
    ("practitioner/maps.py", "fig.savefig(tmp"),  # ownership.replace_file's temporary file
    ("practitioner/maps.py", "rio.open(t, \"w\""),
    ("practitioner/sdm_maps.py", "rio.open(tmp, \"w\""),  # ownership.replace_file's temporary file
    ("data/formats/occurrences.py", "open(tmp, \"w\""),  # ownership.write_output_file's temporary file
    ("data/formats/npz.py", "``np.savez(f, X=X"),  # (docstring)
    ("catalogue.py", "tmp.write_text(text"),  # ownership.write_output_file's temporary file
    ("cli/entry.py", "os.open(os.devnull"),  # stdout of a closed pipe goes to /dev/null
    ("experiments/bench/executors.py", "tempfile.TemporaryFile()"),  # a nameless sink for a C++ client's stderr
    ("experiments/bench/executors.py", ">>> tmp = tempfile.TemporaryDirectory()"),  # run_bench's docstring example
    ("data/formats/npz.py", "np.savez with keys"),  # (text of a message)
    ("data/formats/npz.py", "written by np.savez"),
    ("features/extract.py", "``np.lib.format.open_memmap``"),  # (docstring)
    ("reading.py", "fd = os.open(path, os.O_RDONLY"),  # the reader rule's read-only, non-blocking open
    ("reading.py", '"np.savez") from None'),  # (text of a message)
]


def test_every_write_goes_through_the_ownership_module():
    found = []
    for path in sorted(SRC.glob("spmlkit/**/*.py")):
        rel = str(path.relative_to(SRC / "spmlkit"))
        if rel in HELPERS:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not WRITES.search(line):
                continue
            if not WRITES.search(re.sub(r"ownership\.\w+\(", "", line.split("  #")[0])):
                continue  # a call into the module
            if any(rel == f and text in line for f, text in ALLOWED):
                continue
            found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "writes that bypass spmlkit.ownership:\n" + "\n".join(found)


#: spmlkit.io's writers, called from anywhere but the ownership module: a write that skips the check
IO_WRITERS = re.compile(r"(from \.+io import .*\b|\bio\.|spml_io\.)(atomic_path|write_bytes|write_text|write_json\w*"
                        r"|save_npy|append_jsonl|torch_save_atomic|mkdtemp_like_umask)\b")


def test_no_module_calls_the_low_level_writers_directly():
    found = [f"{p.relative_to(SRC / 'spmlkit')}:{n}: {line.strip()}"
             for p in sorted(SRC.glob("spmlkit/**/*.py")) if str(p.relative_to(SRC / 'spmlkit')) not in HELPERS
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if IO_WRITERS.search(line)]
    assert not found, "spmlkit.io writers used directly (use spmlkit.ownership's):\n" + "\n".join(found)


def test_the_scan_sees_a_write():
    assert WRITES.search("shutil.rmtree(out / 'work')") and WRITES.search("p.write_text('x')")
    assert WRITES.search('with open(p, "w") as fh:') and not WRITES.search('with open(p, "rb") as fh:')
    assert IO_WRITERS.search("from ..io import read_json, write_json") and not IO_WRITERS.search("from ..io import "
                                                                                                 "read_json")

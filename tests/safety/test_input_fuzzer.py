"""An input fuzzer for the reader rule (spmlkit.reading) and the main readers: files cut
at a drawn byte, bytes overwritten, ``.npy`` headers that lie about their shape, zip and
gzip bombs, deeply nested JSON, FIFOs and devices where a file is expected.

Every read must end in one of two ways: a value, or a one-line
:class:`~spmlkit.errors.SpmlError` (DataFormatError, ConfigError, CorruptFileError) —
never another exception (a traceback in the CLI), never a hang (an alarm fails the case
after :data:`HANG_S` seconds), never a large allocation (numpy's and Python's
allocations are traced: :data:`MAX_PEAK_MB`).  Hypothesis draws the cases, seeded
(``derandomize``); ``SPML_FUZZ_EXAMPLES=N`` draws N per reader family.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import signal
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spmlkit import io as sio
from spmlkit import reading
from spmlkit.data import load_any
from spmlkit.data.formats import read_table
from spmlkit.data.formats.occurrences import clean_records
from spmlkit.errors import SpmlError

N_EXAMPLES = int(os.environ.get("SPML_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=N_EXAMPLES, deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=list(HealthCheck))
HANG_S = 20
MAX_PEAK_MB = 64
#: the read budget while fuzzing: a bomb must be refused at it, not fill memory
LIMIT_MB = 16


# ----------------------------------------------------------------------------- valid seeds
def npy_bytes(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def lying_npy(shape, dtype="<f8", data: bytes = b"\0" * 32) -> bytes:
    header = repr({"descr": dtype, "fortran_order": False, "shape": tuple(shape)}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


RNG = np.random.default_rng(0)
SEEDS = {
    "npy": npy_bytes(RNG.normal(size=(6, 3)).astype(np.float32)),
    "npz": npz_bytes(X=RNG.normal(size=(12, 3)).astype(np.float32), Y=RNG.random((12, 4)) < 0.5),
    "json": json.dumps({"members": 3, "label_names": ["a", "b"], "input": {"feature_names": ["f0"]}}).encode(),
    "csv": ("f0,f1,cat,dog\n" + "\n".join(f"{i},{i * 0.5},{i % 2},{(i + 1) % 2}" for i in range(12)) + "\n").encode(),
    "records": ("species,lon,lat\n" + "\n".join(f"Pinus sylvestris,{10 + i * 0.1:.2f},{45 + i * 0.1:.2f}"
                                                for i in range(8)) + "\n").encode(),
}
SUFFIX = {"npy": ".npy", "npz": ".npz", "json": ".json", "csv": ".csv", "records": ".csv"}


def bombs(kind: str) -> list[bytes]:
    """Hostile files of ``kind`` that are small on disk."""
    big = (LIMIT_MB + 8) << 20
    if kind == "npy":
        return [lying_npy((10 ** 9, 10 ** 3)), lying_npy((2 ** 62, 4)), lying_npy((-1, 3)), b"\x93NUMPY\x01\x00\xff\xff"]
    if kind == "npz":
        lie = io.BytesIO()
        with zipfile.ZipFile(lie, "w") as z:
            z.writestr("X.npy", npy_bytes(np.zeros((2, 1), np.float32)))
            z.writestr("Y.npy", lying_npy((2, 10 ** 9), dtype="|b1", data=b"\0" * 8))
        bomb = io.BytesIO()
        with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr("X.npy", npy_bytes(np.zeros((big // 4,), np.float32)))
            z.writestr("Y.npy", npy_bytes(np.zeros((2, 1), bool)))
        many = io.BytesIO()
        with zipfile.ZipFile(many, "w") as z:
            for i in range(reading.NPZ_MAX_MEMBERS + 1):
                z.writestr(f"a{i}.npy", b"")
        claim = npz_bytes(X=np.zeros((2, 3), np.float32), Y_indptr=np.array([0, 1, 2]), Y_indices=np.array([0, 5]),
                          Y_shape=np.array([2, 10 ** 9]))  # a 1 KB archive claiming a billion labels
        return [lie.getvalue(), bomb.getvalue(), many.getvalue(), claim]
    if kind == "json":
        return [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
                gzip.compress(b"[" + b" " * big + b"]")]
    if kind in ("csv", "records"):
        return [b"\xff\xfe\x00" * 50, "f0,cat\n1,\u00e9\n".encode("latin-1"), b"f0,cat\n" + b"1,1_0\n" * 3,
                b'"' * 1000 + b"\n", b"\x00" * 4096]
    return []


# ----------------------------------------------------------------------------- readers
def _read_npy(p):
    return sio.load_numpy(p)


def _read_npy_mapped(p):
    return sio.load_numpy(p, mmap=True)


def _read_npz(p):
    with contextlib.closing(sio.load_numpy(p)) as z:
        return {k: sio.npz_array(z, k, p) for k in z.files}


def _load_npz_dataset(p):
    return load_any(str(p), format="npz")


def _read_json(p):
    return sio.read_json(p)


def _read_table(p):
    return read_table(p, label_columns=["cat", "dog"])


def _clean(p):
    return clean_records(p)


READERS = {
    "npy": [_read_npy, _read_npy_mapped],
    "npz": [_read_npz, _load_npz_dataset],
    "json": [_read_json],
    "csv": [_read_table, lambda p: load_any(str(p), format="csv", label_columns=["cat", "dog"], observed=False)],
    "records": [_clean],
}


class Hang(Exception):
    pass


@contextlib.contextmanager
def guarded():
    """Fail (not hang) after HANG_S seconds; measure the peak traced allocation."""
    def alarm(*_):
        raise Hang()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG_S)
    tracemalloc.start()
    try:
        yield
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        assert peak < MAX_PEAK_MB << 20, f"peak allocation {peak / 2 ** 20:.0f} MB"


def check_read(reader, path: Path) -> str:
    """'ok' or 'refused'; anything else fails the case."""
    try:
        with guarded():
            reader(path)
        return "ok"
    except SpmlError as exc:
        assert "\n" not in str(exc), f"a multi-line refusal: {exc}"
        return "refused"
    except Hang:
        pytest.fail(f"{reader.__name__} hung on {path.name}")


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(sorted(SEEDS)))
    data = SEEDS[kind]
    how = draw(st.sampled_from(["truncate", "overwrite", "bomb", "fifo", "seed", "empty"]))
    if how == "truncate":
        data = data[:draw(st.integers(0, len(data)))]
    elif how == "overwrite":
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        junk = draw(st.binary(min_size=1, max_size=16))
        data = data[:at] + junk + data[at + len(junk):]
    elif how == "bomb":
        data = draw(st.sampled_from(bombs(kind)))
    elif how == "empty":
        data = b""
    reader = draw(st.sampled_from(READERS[kind]))
    return kind, how, data, reader


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-inputs")


@FUZZ
@given(case=cases())
def test_every_read_is_a_value_or_one_line(scratch, case):
    kind, how, data, reader = case
    d = Path(scratch) / f"case{len(os.listdir(scratch))}"
    d.mkdir()
    p = d / ("data" + SUFFIX[kind] + (".gz" if kind == "json" and data[:2] == b"\x1f\x8b" else ""))
    old = os.environ.get("SPML_READ_LIMIT_MB")
    os.environ["SPML_READ_LIMIT_MB"] = str(LIMIT_MB)
    try:
        if how == "fifo":
            os.mkfifo(p)
        else:
            p.write_bytes(data)
        result = check_read(reader, p)
    finally:
        if old is None:
            os.environ.pop("SPML_READ_LIMIT_MB", None)
        else:
            os.environ["SPML_READ_LIMIT_MB"] = old
    if how in ("fifo", "empty") or (how == "bomb" and kind in ("npy", "json")) or (
            how == "bomb" and reader is _load_npz_dataset):
        assert result == "refused", (kind, how)
    if how == "seed":
        assert result == "ok", (kind, reader)


@pytest.mark.parametrize("kind", sorted(SEEDS))
def test_every_seed_reads(tmp_path, kind):
    """The fuzzer's seeds are valid files (so a refusal of a mutated one means something)."""
    p = tmp_path / ("data" + SUFFIX[kind])
    p.write_bytes(SEEDS[kind])
    for reader in READERS[kind]:
        assert check_read(reader, p) == "ok", reader


def test_a_device_is_refused_by_every_reader(tmp_path):
    for kind, readers in READERS.items():
        for reader in readers:
            assert check_read(reader, Path("/dev/zero")) == "refused", (kind, reader)


def test_deeply_nested_model_json_is_one_line_in_the_cli(tmp_path, capsys):
    from spmlkit.cli import main

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "in.csv").write_text("f0\n1\n")
    code = main(["predict", str(tmp_path / "m"), str(tmp_path / "in.csv"), "-o", str(tmp_path / "p.csv")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.splitlines() == [err] and "JSON nested too deeply" in err
    assert not (tmp_path / "p.csv").exists()


def test_a_fifo_input_is_refused_by_the_cli_without_blocking(tmp_path, capsys):
    from spmlkit.cli import main

    os.mkfifo(tmp_path / "data.csv")
    with guarded():
        code = main(["prepare", str(tmp_path / "data.csv"), "--label-columns", "cat", "-o", str(tmp_path / "b")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.splitlines() == [err] and not (tmp_path / "b").exists()

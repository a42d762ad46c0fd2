"""The reader rule (spmlkit.reading): regular files only, declared sizes checked before
anything is allocated, capped decompression, JSON depth, one parser for environment
sizes, numbers as data files spell them, text encodings."""
from __future__ import annotations

import gzip
import json
import os
import struct
import threading
import zipfile

import numpy as np
import pytest

from spmlkit import io as sio
from spmlkit import reading
from spmlkit.errors import ConfigError, DataFormatError


def one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("reader", [sio.load_numpy, sio.read_json, reading.read_bytes, reading.read_text])
def test_a_fifo_is_refused_without_blocking(tmp_path, reader):
    fifo = tmp_path / "data.npy"
    os.mkfifo(fifo)
    done = []

    def call():
        with pytest.raises(DataFormatError) as e:
            reader(fifo)
        done.append(one_line(e))

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():  # unblock the reader (a writer opens the pipe), then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("the reader blocked on a FIFO")
    assert done and "a pipe (FIFO), not a regular file" in done[0]


def test_a_device_is_refused(tmp_path):
    with pytest.raises(DataFormatError, match="a device, not a regular file"):
        reading.read_bytes("/dev/zero")


def npy_with_header(shape, dtype="<f8", data: bytes = b"") -> bytes:
    header = repr({"descr": dtype, "fortran_order": False, "shape": tuple(shape)}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def test_a_lying_npy_header_is_refused_before_allocation(tmp_path):
    p = tmp_path / "lie.npy"
    p.write_bytes(npy_with_header((10 ** 9, 1000), data=b"\0" * 64))
    for mmap in (False, True):
        with pytest.raises(DataFormatError) as e:
            sio.load_numpy(p, mmap=mmap)
        assert "declares shape (1000000000, 1000)" in one_line(e) and "truncated or damaged" in one_line(e)


def test_a_truthful_npy_loads(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(6.0).reshape(2, 3))
    assert sio.load_numpy(tmp_path / "a.npy").tolist() == [[0, 1, 2], [3, 4, 5]]
    np.save(tmp_path / "e.npy", np.zeros((0, 3)))
    assert sio.load_numpy(tmp_path / "e.npy").shape == (0, 3)


def test_an_npz_member_claiming_a_billion_labels_is_refused(tmp_path):
    p = tmp_path / "lie.npz"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("X.npy", npy_with_header((2, 1), data=b"\0" * 16))
        z.writestr("Y.npy", npy_with_header((2, 10 ** 9), dtype="|b1", data=b"\0" * 8))
    assert p.stat().st_size < 2048
    with pytest.raises(DataFormatError) as e:
        sio.load_numpy(p)
    assert "member 'Y.npy'" in one_line(e) and "lying header" in one_line(e)


def test_an_npz_with_too_many_members_is_refused(tmp_path):
    p = tmp_path / "many.npz"
    with zipfile.ZipFile(p, "w") as z:
        for i in range(reading.NPZ_MAX_MEMBERS + 1):
            z.writestr(f"a{i}.npy", b"")
    with pytest.raises(DataFormatError, match="lists 4,097 members"):
        sio.load_numpy(p)


def test_a_zip_bomb_over_the_budget_is_refused(tmp_path, monkeypatch):
    p = tmp_path / "bomb.npz"
    np.savez_compressed(p, Y=np.zeros((4096, 1024), dtype=np.uint8))  # 4 MB of zeros, a few KB compressed
    assert p.stat().st_size < 50_000
    monkeypatch.setenv("SPML_READ_LIMIT_MB", "1")
    with pytest.raises(DataFormatError) as e:
        sio.load_numpy(p)
    assert "more than the read budget" in one_line(e)
    monkeypatch.delenv("SPML_READ_LIMIT_MB")
    assert sio.load_numpy(p)["Y"].shape == (4096, 1024)


def test_a_gzip_bomb_is_refused_with_a_cap(tmp_path, monkeypatch):
    p = tmp_path / "runs.json.gz"
    p.write_bytes(gzip.compress(b"[" + b" " * (8 << 20) + b"]"))
    monkeypatch.setenv("SPML_READ_LIMIT_MB", "2")
    with pytest.raises(DataFormatError) as e:
        sio.read_json(p)
    assert "decompresses to more than 2 MB" in one_line(e)
    monkeypatch.delenv("SPML_READ_LIMIT_MB")
    assert sio.read_json(p) == []


def test_deeply_nested_json_is_one_line(tmp_path):
    p = tmp_path / "model.json"
    p.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(DataFormatError) as e:
        sio.read_json(p)
    assert "nested too deeply" in one_line(e)
    p.write_text(json.dumps({"a": [[1]]}))
    assert sio.read_json(p) == {"a": [[1]]}


@pytest.mark.parametrize("raw", ["abc", "nan", "inf", "1e400", "-5", "0", "1_0", "0x10"])
def test_environment_sizes_refuse_with_one_message(monkeypatch, raw):
    monkeypatch.setenv("SPML_DENSE_LIMIT_MB", raw)
    with pytest.raises(ConfigError) as e:
        reading.env_megabytes("SPML_DENSE_LIMIT_MB", 7)
    assert one_line(e).startswith(f"environment variable SPML_DENSE_LIMIT_MB={raw!r} is not a usable size")


def test_environment_sizes_parse(monkeypatch):
    monkeypatch.setenv("SPML_X_MB", " 2.5 ")
    assert reading.env_megabytes("SPML_X_MB", 7) == int(2.5 * 2 ** 20)
    monkeypatch.setenv("SPML_X_MB", "")
    assert reading.env_megabytes("SPML_X_MB", 7) == 7
    monkeypatch.delenv("SPML_X_MB")
    assert reading.env_megabytes("SPML_X_MB") is None


@pytest.mark.parametrize("bad", ["1_0", "٣", "1e", "", " ", "0x1", "1,5", "--1"])
def test_parse_number_refuses_what_no_data_file_means(bad):
    with pytest.raises(ValueError):
        reading.parse_number(bad)


@pytest.mark.parametrize("good,value", [("1", 1.0), (" -2.5 ", -2.5), ("3e-4", 3e-4), (".5", 0.5), ("5.", 5.0),
                                        ("+7", 7.0), ("1E3", 1000.0)])
def test_parse_number_reads_usual_spellings(good, value):
    assert reading.parse_number(good) == value


def test_text_is_utf8_else_latin1():
    assert reading.decode_text("\ufeffPinus sylvestris é".encode("utf-8")) == ("Pinus sylvestris é", "UTF-8")
    assert reading.decode_text("Quercus ilex é".encode("latin-1")) == ("Quercus ilex é", "Latin-1")


def test_the_budget_applies_to_arrays_read_whole_not_mapped(tmp_path, monkeypatch):
    np.save(tmp_path / "a.npy", np.zeros((512, 1024)))  # 4 MB
    monkeypatch.setenv("SPML_READ_LIMIT_MB", "1")
    with pytest.raises(DataFormatError, match="more than the read budget"):
        sio.load_numpy(tmp_path / "a.npy")
    assert sio.load_numpy(tmp_path / "a.npy", mmap=True).shape == (512, 1024)


def test_a_header_numpy_cannot_tokenize_is_one_line(tmp_path):
    """Found by the input fuzzer: a NUL inside the header dict made numpy's parser raise
    tokenize.TokenError, which escaped as a traceback."""
    good = npy_with_header((6, 3), dtype="<f4", data=b"\0" * 72)
    bad = good.replace(b"(6, 3)", b"(6,\0\0\0")
    (tmp_path / "t.npy").write_bytes(bad)
    with pytest.raises(DataFormatError, match="damaged header"):
        sio.load_numpy(tmp_path / "t.npy")

"""Reading what to predict from and writing the predictions (spmlkit.practitioner.inference):
image lists from folders, text files and CSVs; feature files matched to the model by
column name; probabilities and label sets as CSV.  Prediction end to end through
``spml predict`` is tested in tests/cli/test_predict.py."""
import csv

import numpy as np
import pytest

from spmlkit.errors import DataFormatError
from spmlkit.practitioner.inference import (list_images, read_features, read_prediction_input, write_label_sets,
                                            write_probabilities)


def _images(folder, names):
    from PIL import Image

    for n in names:
        (folder / n).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (4, 4)).save(folder / n)


def test_images_from_a_folder_a_text_list_or_a_csv(tmp_path):
    _images(tmp_path / "imgs", ["b.png", "a.jpg", "sub/c.png"])
    (tmp_path / "imgs" / "notes.txt").write_text("not an image")
    paths, ids = list_images(tmp_path / "imgs")
    assert ids == ["a.jpg", "b.png", "sub/c.png"] and paths[0] == str((tmp_path / "imgs" / "a.jpg").resolve())
    (tmp_path / "list.txt").write_text("imgs/b.png\n\nimgs/a.jpg\n")
    assert list_images(tmp_path / "list.txt") == ([str(tmp_path / "imgs/b.png"), str(tmp_path / "imgs/a.jpg")],
                                                  ["imgs/b.png", "imgs/a.jpg"])
    (tmp_path / "t.csv").write_text("name,file\nfirst,imgs/b.png\nsecond,imgs/sub/c.png\n")
    paths, ids = list_images(tmp_path / "t.csv", path_column="file", id_column="name")
    assert ids == ["first", "second"] and paths[1] == str(tmp_path / "imgs" / "sub" / "c.png")


def test_image_list_errors_name_the_file_and_line(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataFormatError, match="no image files"):
        list_images(tmp_path / "empty")
    (tmp_path / "t.csv").write_text("path\nmissing.png\n")
    with pytest.raises(DataFormatError, match=r"t.csv, line 2: image file 'missing.png' not found"):
        list_images(tmp_path / "t.csv")
    with pytest.raises(DataFormatError, match=r"t.csv, line 1: no image path column 'file'"):
        list_images(tmp_path / "t.csv", path_column="file")
    with pytest.raises(DataFormatError, match="file or folder not found"):
        list_images(tmp_path / "nothing.txt")


def test_feature_files(tmp_path):
    X = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.save(tmp_path / "x.npy", X)
    np.savez(tmp_path / "x.npz", features=X)
    for f in ("x.npy", "x.npz"):
        got, ids = read_features(tmp_path / f)
        assert np.array_equal(got, X) and ids is None
    np.savez(tmp_path / "y.npz", Y=X)
    with pytest.raises(DataFormatError, match=r"no 'X' array; found \['Y'\]"):
        read_features(tmp_path / "y.npz")
    (tmp_path / "x.csv").write_text("id,b,a\nr1,1,10\nr2,2,20\n")
    got, ids = read_features(tmp_path / "x.csv", columns=["a", "b"])  # the model's order, matched by name
    assert got.tolist() == [[10, 1], [20, 2]] and ids == ["r1", "r2"]


def test_a_model_without_feature_names_takes_columns_by_position_with_a_note(tmp_path):
    class Model:
        input = {}
        info = {}
        image = None

    (tmp_path / "x.csv").write_text("b,a\n1,10\n2,20\n")
    notes = []
    X, ids = read_prediction_input(Model(), tmp_path / "x.csv", log=notes.append)
    assert X.tolist() == [[1, 10], [2, 20]] and ids == ["0", "1"]
    assert len(notes) == 1 and notes[0].startswith("note: the model records no feature names")


def test_errors_name_the_input_file_and_read_as_english(tmp_path):
    """Issue 37: a .npy of the wrong width is named (it was '<input>'); 'a column named
    'siteid'' (it was "an 'siteid' column")."""
    class Model:
        input = {}
        info = {}
        image = None
        n_features = 5

    np.save(tmp_path / "x.npy", np.zeros((3, 7), np.float32))
    with pytest.raises(DataFormatError) as exc:
        read_prediction_input(Model(), tmp_path / "x.npy")
    assert str(exc.value).startswith(f"{tmp_path / 'x.npy'}: features have shape (3, 7); this model expects (N, 5)")
    (tmp_path / "x.csv").write_text("siteid,b,c\nr1,1,10\n")
    with pytest.raises(DataFormatError, match="a column named 'siteid' is allowed"):
        read_features(tmp_path / "x.csv", columns=["a", "b"], id_column="siteid")


def test_outputs(tmp_path):
    write_probabilities(tmp_path / "p.csv", ["x", "y"], ["cat", "dog"], np.array([[0.5, 1 / 3], [1.0, 0.0]]))
    assert list(csv.reader(open(tmp_path / "p.csv"))) == [["id", "cat", "dog"], ["x", "0.5", "0.333333"],
                                                           ["y", "1", "0"]]
    write_label_sets(tmp_path / "s.csv", ["x", "y"], ["cat", "dog"], np.array([[1, 1], [0, 0]], dtype=bool))
    assert list(csv.reader(open(tmp_path / "s.csv"))) == [["id", "labels"], ["x", "cat;dog"], ["y", ""]]


def test_predicted_label_sets(trained):
    from spmlkit.practitioner.inference import predicted_label_sets

    m = trained.model_full
    P = m.predict_proba(trained.full.features("test"))
    S, used, warning = predicted_label_sets(m, P)
    assert np.array_equal(S, m.label_sets_from_proba(P)) and used == m.label_sets
    S, used, _ = predicted_label_sets(m, P, rule="top_k", k=2)
    assert (S.sum(1) == 2).all() and used["rule"] == "top_k" and used["k"] == 2
    S, used, warning = predicted_label_sets(m, P, rule="threshold", threshold=1.0)
    assert not S.any() and used["threshold"] == 1.0 and "empty" in warning  # every set empty: said


# ------------------------------------------------------------ streaming (issue 32, item 4)
def _old_probability_csv(ids, names, P) -> str:
    """The writer before streaming: one format call per value (the reference output)."""
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", *names])
    for i, row in zip(ids, P):
        w.writerow([i, *(f"{v:.6g}" for v in row)])
    return buf.getvalue()


def test_streamed_outputs_are_identical_whatever_the_chunk(trained, tmp_path):
    from spmlkit.practitioner.inference import PredictionInput, predict_to_file

    m = trained.model_full
    X = np.asarray(trained.full.features("test"))
    ids = [f"r,{i}" if i == 3 else f"r{i}" for i in range(len(X))]  # an id that needs quoting
    inp = PredictionInput(X, ids)
    P = m.predict_proba(X)
    for kind in ("proba", "labels", "top_k"):
        whole = predict_to_file(m, inp, tmp_path / f"{kind}-whole.csv", kind=kind, top_k=2)
        small = predict_to_file(m, inp, tmp_path / f"{kind}-small.csv", kind=kind, top_k=2, rows=3)
        assert (tmp_path / f"{kind}-whole.csv").read_bytes() == (tmp_path / f"{kind}-small.csv").read_bytes()
        assert whole["message"].replace("whole", "small") == small["message"]
    assert (tmp_path / "proba-whole.csv").read_text() == _old_probability_csv(ids, m.label_names, P)
    rows = list(csv.reader(open(tmp_path / "labels-small.csv")))
    S = m.label_sets_from_proba(P)
    assert rows[0] == ["id", "labels"] and rows[4][0] == "r,3"
    assert [r[1] for r in rows[1:]] == [";".join(n for n, s in zip(m.label_names, row) if s) for row in S]
    top = list(csv.reader(open(tmp_path / "top_k-small.csv")))
    order = np.argsort(-P, axis=1, kind="stable")[:, :2]
    assert top[0] == ["id", "labels", "probabilities"]
    assert [r[1] for r in top[1:]] == [";".join(m.label_names[j] for j in o) for o in order]


def test_npy_output_and_the_csv_limit(trained, tmp_path, monkeypatch):
    from spmlkit.errors import ConfigError
    from spmlkit.practitioner import inference
    from spmlkit.practitioner.inference import PredictionInput, predict_to_file

    m = trained.model_full
    X = np.asarray(trained.full.features("test"))
    inp = PredictionInput(X, [str(i) for i in range(len(X))])
    predict_to_file(m, inp, tmp_path / "p.npy", rows=4)
    got = np.load(tmp_path / "p.npy", allow_pickle=False)
    assert got.dtype == np.float32 and np.array_equal(got, m.predict_proba(X).astype(np.float32))
    monkeypatch.setattr(inference, "CSV_MAX_VALUES", X.shape[0] * len(m.label_names) - 1)
    with pytest.raises(ConfigError, match=r"too many for a CSV .* with -o .*p.npy"):
        predict_to_file(m, inp, tmp_path / "p.csv")
    assert not (tmp_path / "p.csv").exists()
    with pytest.raises(ConfigError, match="label sets and top-k labels are written as CSV"):
        predict_to_file(m, inp, tmp_path / "s.npy", kind="labels")


def test_top_k_by_partial_selection_breaks_ties_like_a_stable_sort():
    from spmlkit.practitioner.inference import top_k_indices

    rng = np.random.default_rng(0)
    P = rng.integers(0, 4, size=(300, 12)).astype(np.float32)  # many ties
    for k in (1, 3, 12, 20):
        want = np.argsort(-P, axis=1, kind="stable")[:, :min(k, 12)]
        assert np.array_equal(top_k_indices(P, k), want)
    assert top_k_indices(P, 0).shape == (300, 0)


def test_chunks_are_bounded_by_labels():
    from spmlkit.practitioner.inference import CHUNK_VALUES, chunk_rows

    assert chunk_rows(3) == 8192 and chunk_rows(50_000) * 50_000 <= CHUNK_VALUES and chunk_rows(10**9) == 1


def test_a_gz_output_is_gzip_compressed_and_holds_the_plain_outputs_text(tmp_path):
    """``-o p.csv.gz`` writes gzip (it wrote plain text under a .gz name), the same text as
    ``-o p.csv``, and the same bytes twice (no time stamp or name in the header)."""
    import gzip

    import numpy as np

    from spmlkit.practitioner.inference import write_label_sets, write_probabilities, write_top_k_chunks

    ids, names = ["r0", "r1", "r2"], ["cat", "dog", "fox"]
    P = np.array([[0.9, 0.2, 0.6], [0.1, 0.8, 0.3], [0.5, 0.5, 0.05]], dtype=np.float32)
    S = P > 0.4
    for write, arg in ((write_probabilities, P), (write_label_sets, S)):
        plain, packed, again = tmp_path / f"{write.__name__}.csv", tmp_path / f"{write.__name__}.csv.gz", \
            tmp_path / f"again-{write.__name__}.csv.gz"
        write(plain, ids, names, arg)
        write(packed, ids, names, arg)
        write(again, ids, names, arg)
        assert packed.read_bytes()[:2] == b"\x1f\x8b"
        assert gzip.decompress(packed.read_bytes()).decode("utf-8") == plain.read_text(encoding="utf-8")
        assert packed.read_bytes() == again.read_bytes()
    top_plain, top_gz = tmp_path / "top.csv", tmp_path / "top.csv.gz"
    write_top_k_chunks(top_plain, ids, names, [(0, P)], 2)
    write_top_k_chunks(top_gz, ids, names, [(0, P)], 2)
    assert gzip.decompress(top_gz.read_bytes()).decode("utf-8") == top_plain.read_text(encoding="utf-8")


def test_a_pipe_given_as_the_input_table_is_refused_not_waited_on(tmp_path):
    """The input's header is read under the reader rule: a FIFO is one line, never a hang."""
    import os

    import pytest

    from spmlkit.errors import DataFormatError
    from spmlkit.practitioner.inference import _csv_header

    fifo = tmp_path / "input.csv"
    os.mkfifo(fifo)
    with pytest.raises(DataFormatError, match="not a regular file"):
        _csv_header(fifo)


# ------------------------------------- mutation survivors (issue 44): the image lists and writers pinned
def test_image_list_messages_are_whole_lines_naming_the_file_and_line(tmp_path):
    from spmlkit.features.transforms import IMAGE_SUFFIXES

    def message(source, **kw):
        with pytest.raises(DataFormatError) as e:
            list_images(source, **kw)
        return str(e.value)

    (tmp_path / "empty").mkdir()
    assert message(tmp_path / "empty") == (f"{tmp_path / 'empty'}: no image files ({', '.join(IMAGE_SUFFIXES)}) in "
                                           "this folder")
    assert message(tmp_path / "nothing.txt") == f"{tmp_path / 'nothing.txt'}: file or folder not found"
    (tmp_path / "e.csv").write_text("")
    assert message(tmp_path / "e.csv") == f"{tmp_path / 'e.csv'}: empty file; expected a header row"
    (tmp_path / "w.csv").write_text(",".join(f"c{i}" for i in range(10)) + "\n")
    assert message(tmp_path / "w.csv") == (f"{tmp_path / 'w.csv'}, line 1: no image path column 'path' in the header "
                                           f"{[f'c{i}' for i in range(8)]}; name it with --path-column")
    (tmp_path / "t.csv").write_text("name,path\nfirst,a.png\n")
    assert message(tmp_path / "t.csv", id_column="id") == (f"{tmp_path / 't.csv'}, line 1: id column 'id' is not "
                                                           "in the header")
    (tmp_path / "s.csv").write_text("name,path\nfirst,a.png\n\nsecond\n")  # a row without its path column
    assert message(tmp_path / "s.csv", check_files=False) == (f"{tmp_path / 's.csv'}, line 4: empty image path in "
                                                              "column 'path'")
    (tmp_path / "b.csv").write_text("name,path\nfirst, \n")
    assert message(tmp_path / "b.csv", check_files=False) == (f"{tmp_path / 'b.csv'}, line 2: empty image path in "
                                                              "column 'path'")
    (tmp_path / "h.csv").write_text("name,path\n\n")
    assert message(tmp_path / "h.csv") == f"{tmp_path / 'h.csv'}: no image paths listed"
    (tmp_path / "l.txt").write_text("\n\nmissing.png\n")
    assert message(tmp_path / "l.txt") == (f"{tmp_path / 'l.txt'}, line 3: image file 'missing.png' not found "
                                           f"(looked for {tmp_path / 'missing.png'})")


def test_image_lists_read_tabs_a_bom_absolute_paths_and_bad_bytes(tmp_path):
    _images(tmp_path / "imgs", ["a.png", "b.png"])
    absolute = str(tmp_path / "imgs" / "b.png")
    for name in ("l.tsv", "l.tab", "l.TSV"):
        (tmp_path / name).write_text(f"id\tpath\nx,1\timgs/a.png\ny\t{absolute}\n")
        assert list_images(tmp_path / name, id_column="id") == ([str(tmp_path / "imgs/a.png"), absolute],
                                                                ["x,1", "y"])
    (tmp_path / "l.csv").write_text("id\tpath\nx\timgs/a.png\n")  # a CSV: commas only
    with pytest.raises(DataFormatError, match="line 1: no image path column 'path'"):
        list_images(tmp_path / "l.csv")
    (tmp_path / "l.csv").write_text("id,path\nx,imgs/a.png\n")
    assert list_images(tmp_path / "l.csv") == ([str(tmp_path / "imgs/a.png")], ["imgs/a.png"])
    (tmp_path / "bom.txt").write_bytes("\ufeffimgs/a.png\n".encode("utf-8"))
    assert list_images(tmp_path / "bom.txt") == ([str(tmp_path / "imgs/a.png")], ["imgs/a.png"])
    (tmp_path / "bad.txt").write_bytes(b"imgs/caf\xe9.png\n")  # not UTF-8: replaced, then not found
    with pytest.raises(DataFormatError, match="bad.txt, line 1: image file 'imgs/caf\ufffd.png' not found"):
        list_images(tmp_path / "bad.txt")


def test_the_header_of_a_table_is_read_with_its_delimiter(tmp_path):
    from spmlkit.practitioner.inference import _csv_header

    for name in ("t.tsv", "t.tab", "t.TSV"):
        (tmp_path / name).write_text("id\tb,c\n1\t2\n")
        assert _csv_header(tmp_path / name) == ["id", "b,c"]
    (tmp_path / "t.csv").write_text("id, b\tc\n1,2\n")
    assert _csv_header(tmp_path / "t.csv") == ["id", "b\tc"]
    (tmp_path / "x.csv").write_bytes(b"id,caf\xe9\n1,2\n")  # not UTF-8: replaced, not a traceback
    assert _csv_header(tmp_path / "x.csv") == ["id", "caf\ufffd"]


class _RuleModel:
    """A model whose label-set rule is ``expected_k`` with an estimate of 1 label."""

    label_sets = {"rule": "expected_k", "k_estimate": 1.0}

    def __init__(self):
        self.asked = []

    def label_sets_from_proba(self, P, **kw):
        self.asked.append(kw)
        return np.ones_like(P, dtype=bool)


def test_predicted_label_sets_pass_every_override_and_warn_against_the_right_k():
    from spmlkit.practitioner.inference import predicted_label_sets

    m = _RuleModel()
    P = np.full((4, 3), 0.5)
    S, used, warning = predicted_label_sets(m, P, rule="expected_k", k=3.0, min_labels=2)
    assert m.asked == [{"rule": "expected_k", "threshold": None, "k": 3.0, "min_labels": 2}]
    assert used == {"rule": "expected_k", "k_estimate": 1.0, "k": 3.0, "min_labels": 2}
    assert S.all() and warning is None  # 3 labels a row, as the given k says
    _, used, warning = predicted_label_sets(m, P)
    assert used == m.label_sets and warning.startswith("label sets look implausible: 3.00 labels per example on "
                                                       "average against an expected k = 1.00")


def test_the_matrix_writers_keep_places_separators_and_formats(tmp_path):
    from spmlkit.practitioner.inference import write_top_k_chunks

    xy = np.array([[1.5, -2.0], [3.0, 4.25]])
    write_probabilities(tmp_path / "p.csv", ["a", "b"], ["cat", "dog"], np.array([[0.5, 1e-7], [1.0, 0.0]]), xy=xy)
    assert (tmp_path / "p.csv").read_text() == "id,x,y,cat,dog\na,1.5,-2,0.5,1e-07\nb,3,4.25,1,0\n"
    write_label_sets(tmp_path / "s.csv", ["a", "b"], ["cat", "dog"], np.array([[2, 1], [0, 0]]), separator="|",
                     xy=xy)
    assert (tmp_path / "s.csv").read_text() == "id,x,y,labels\na,1.5,-2,cat|dog\nb,3,4.25,\n"

    class Progress:
        n = 0

        def update(self, k):
            self.n += k

    bar = Progress()
    P = np.array([[1e-7, 0.5, 0.25], [0.9, 0.1, 2e-8]], np.float32)
    write_top_k_chunks(tmp_path / "k.csv", ["a", "b"], ["cat", "dog", "eel"], [(0, P[:1]), (1, P[1:])], 3,
                       separator="|", progress=bar)
    assert bar.n == 2
    text = (tmp_path / "k.csv").read_text().splitlines()
    assert text[0] == "id,labels,probabilities" and text[1] == "a,dog|eel|cat,0.5|0.25|1e-07"
    assert text[2] == "b,cat|dog|eel,0.9|0.1|2e-08"
    L = np.log(P / (1 - P))
    write_top_k_chunks(tmp_path / "kl.csv", ["a", "b"], ["cat", "dog", "eel"], [(0, L)], 2, logits=True)
    assert (tmp_path / "kl.csv").read_text().splitlines()[1:] == ["a,dog;eel,0.5;0.25", "b,cat;dog,0.9;0.1"]


def test_image_features_say_what_is_missing(monkeypatch):
    from spmlkit import features
    from spmlkit.errors import ConfigError, SpmlError
    from spmlkit.practitioner.inference import feature_extractor, image_features

    with pytest.raises(ConfigError) as e:
        image_features(object(), ["a.png"])  # a model recording no input at all
    assert str(e.value) == ("this model was trained on feature vectors, not images: give features (.npy / .npz / CSV), "
                            "or pass --backbone to extract image features anyway")

    class Model:
        input = {"kind": "images", "feature_set": "mine-32"}

    with pytest.raises(ConfigError) as e:
        image_features(Model(), ["a.png"])
    assert str(e.value) == ("the model does not record which backbone made its features (feature set 'mine-32'); "
                            "pass --backbone (and --image-size)")
    monkeypatch.delattr(features, "extract_image_features")
    with pytest.raises(SpmlError) as e:
        feature_extractor()
    assert str(e.value).startswith("predicting from image files needs spmlkit.features.extract_image_features (the "
                                   "images extension that provides 'spml features'); it is not available here (")
    assert str(e.value).endswith("). Extract features yourself and pass them as .npy/.npz/CSV instead")


def test_image_features_pass_the_recorded_weights_and_device_and_check_the_shape(tmp_path):
    from spmlkit.errors import ConfigError, SpmlError
    from spmlkit.practitioner.inference import image_features

    asked = []

    def extractor(paths, **kw):
        asked.append(kw)
        return np.arange(2 * len(paths), dtype=np.float64).reshape(len(paths), 2)

    class Model:
        input = {"kind": "images", "backbone": "tiny-random", "image_size": 32, "backbone_weights": "bb.pt",
                 "extractor_options": {"pool": "avg"}}
        device = "cuda:1"

    with pytest.raises(ConfigError) as e:
        image_features(Model(), ["a.png"], extractor=extractor)  # no folder to find the weights in
    assert str(e.value) == ("the model's fine-tuned backbone weights are stored next to it; load it from its "
                            "folder")
    m = Model()
    m.path = tmp_path
    X = image_features(m, ["a.png", "b.png"], batch_size=3, extractor=extractor)
    assert X.dtype == np.float32 and X.tolist() == [[0, 1], [2, 3]]
    assert asked[-1] == {"backbone": "tiny-random", "image_size": 32, "pool": "avg", "batch_size": 3,
                         "weights": str(tmp_path / "bb.pt"), "device": "cuda:1"}

    class OnCpu:
        input = {"kind": "images", "backbone": "tiny-random"}

    image_features(OnCpu(), ["a.png"], extractor=extractor)
    assert asked[-1] == {"backbone": "tiny-random", "image_size": None}  # no device option on the CPU
    with pytest.raises(SpmlError) as e:
        image_features(OnCpu(), ["a.png"], extractor=lambda paths, **kw: np.zeros((3, 2)))
    assert str(e.value) == "the feature extractor returned shape (3, 2) for 1 image(s)"


def test_feature_files_name_themselves_in_every_refusal(tmp_path):
    def message(path, **kw):
        with pytest.raises(DataFormatError) as e:
            read_features(path, **kw)
        return str(e.value)

    assert message(tmp_path / "none.npy") == f"{tmp_path / 'none.npy'}: file not found"
    np.save(tmp_path / "flat.npy", np.zeros(3, np.float32))
    assert message(tmp_path / "flat.npy").startswith(f"{tmp_path / 'flat.npy'}: features must be a 2-D")
    np.savez(tmp_path / "flat.npz", X=np.zeros(3, np.float32))
    assert message(tmp_path / "flat.npz").startswith(f"{tmp_path / 'flat.npz'}: features must be a 2-D")
    np.savez(tmp_path / "y.npz", Y=np.zeros((2, 2)))
    assert message(tmp_path / "y.npz") == f"{tmp_path / 'y.npz'}: no 'X' array; found ['Y']"
    np.savez(tmp_path / "both.npz", features=np.zeros((2, 2)), X=np.ones((2, 2)))
    assert read_features(tmp_path / "both.npz")[0].tolist() == [[1, 1], [1, 1]]  # X first
    np.savez(tmp_path / "t.npz", X_test=np.full((1, 2), 2.0))
    assert read_features(tmp_path / "t.npz")[0].tolist() == [[2, 2]]
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    assert "site" in message(tmp_path / "x.csv", columns=["a", "b"], id_column="site")  # a named id must be there


def test_an_empty_table_has_no_header_and_chunks_are_bounded_below(tmp_path):
    from spmlkit.practitioner.inference import _csv_header, chunk_rows

    (tmp_path / "e.csv").write_text("")
    assert _csv_header(tmp_path / "e.csv") == []
    assert chunk_rows(1, values=100) == 100 and chunk_rows(0, values=100) == 100 and chunk_rows(3, values=100) == 33
    assert chunk_rows(200, values=100) == 1


def test_prediction_input_from_a_bundle_takes_the_test_split_and_numbers_rows_without_ids(tmp_path, monkeypatch):
    from spmlkit.data import Bundle
    from spmlkit.practitioner.inference import prediction_input
    from tests.helpers.image_fixtures import tiny_digits_bundle

    b = tiny_digits_bundle(tmp_path)

    class FineTuned:
        image = object()  # the whole network: it takes image files
        input = {}
        info = {}

    inp = prediction_input(FineTuned(), b.path)
    assert inp.X == b.paths("test") and inp.ids == b.ids("test")
    val = prediction_input(FineTuned(), b.path, split="val")
    assert val.X == b.paths("val") and val.ids == b.ids("val")
    monkeypatch.setattr(Bundle, "ids", lambda self, split: None)
    assert prediction_input(FineTuned(), b.path).ids == [str(i) for i in b.index("test")]
    (tmp_path / "list.txt").write_text("\n".join(b.paths("val")[:2]) + "\n")
    listed = prediction_input(FineTuned(), tmp_path / "list.txt")  # image files, scored by the network itself
    assert listed.X == b.paths("val")[:2] and listed.ids == b.paths("val")[:2]

    class NoInput:  # a model without an input record
        info = {}

    np.save(tmp_path / "x.npy", np.array([[1, 2]], np.float32))
    got = prediction_input(NoInput(), tmp_path / "x.npy")
    assert got.X.tolist() == [[1, 2]] and got.ids == ["0"]


def test_prediction_input_from_a_bundle_reads_the_models_feature_set_and_checks_its_columns(tmp_path):
    from spmlkit.data import prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.features import extract_features
    from spmlkit.practitioner.inference import prediction_input
    from tests.helpers.image_fixtures import tiny_digits_bundle

    b = tiny_digits_bundle(tmp_path)
    for size in (32, 40):
        extract_features(b, backbone="tiny-random", image_size=size, batch_size=8, progress=False,
                         log=lambda m: None)

    class Model:
        def __init__(self, input, info):
            self.input, self.info = input, info

    for model in (Model({"feature_set": "tiny-random-40"}, {}), Model({}, {"feature_set": "tiny-random-40"}),
                  Model(None, {"feature_set": "tiny-random-40"})):
        inp = prediction_input(model, b.path, split="val")
        assert np.array_equal(inp.X, b.features("val", "tiny-random-40")) and inp.ids == b.ids("val")
    Y = np.eye(2, dtype=bool)[np.arange(6) % 2]
    ds = MultiLabelDataset("named", ["p", "q"], {"train": Split(X=np.zeros((6, 2)), Y=Y),
                                                 "test": Split(X=np.arange(12.0).reshape(6, 2), Y=Y)},
                           feature_names=["a", "b"])
    nb = prepare_bundle(ds, tmp_path / "named", log=lambda m: None)
    assert prediction_input(Model({"feature_names": ["a", "b"]}, {}), nb.path).X.tolist() == ds.splits["test"].X.tolist()
    with pytest.raises(DataFormatError) as e:
        prediction_input(Model({"feature_names": ["b", "a"]}, {}), nb.path)
    assert str(e.value) == (f"{nb.path / 'meta.json'}: the bundle's feature columns differ from the model's (names or "
                            "order); predict from a bundle prepared like the training one")


def test_streamed_writers_check_their_rows_and_report_progress(tmp_path):
    from spmlkit.practitioner.inference import (iter_probabilities, write_label_set_chunks, write_probability_chunks,
                                                write_top_k_chunks)

    np.savez(tmp_path / "obj.npz", X=np.array([{"a": 1}], dtype=object))  # refused unread, naming the file
    with pytest.raises(DataFormatError) as e:
        read_features(tmp_path / "obj.npz")
    assert str(e.value).startswith(f"{tmp_path / 'obj.npz'}: array 'X' holds Python objects")

    class Progress:
        n = 0

        def update(self, k):
            self.n += k

    P = np.array([[0.5, 0.25], [0.125, 1.0], [0.0, 0.75]])
    chunks = [(0, P[:2]), (2, P[2:])]
    bar = Progress()
    write_probability_chunks(tmp_path / "p.npy", [], ["a", "b"], chunks, n_rows=3, progress=bar)
    assert bar.n == 3 and np.load(tmp_path / "p.npy").tolist() == P.tolist()
    write_probability_chunks(tmp_path / "q.npy", ["r", "s", "t"], ["a", "b"], chunks)  # rows: one per id
    assert np.load(tmp_path / "q.npy").tolist() == P.tolist()
    with pytest.raises(ValueError) as e:
        write_probability_chunks(tmp_path / "x.npy", ["r", "s", "t"], ["a", "b"], chunks[::-1])
    assert str(e.value) == "chunks out of order: row 2 after 0 rows"
    with pytest.raises(ValueError) as e:
        write_probability_chunks(tmp_path / "y.npy", ["r", "s", "t"], ["a", "b"], chunks[:1])
    assert str(e.value) == "2 rows predicted, 3 expected"
    bar = Progress()
    write_probability_chunks(tmp_path / "p.csv", ["r", "s", "t"], ["a", "b"], chunks, progress=bar)
    assert bar.n == 3
    bar = Progress()
    write_label_set_chunks(tmp_path / "s.csv", ["r", "s", "t"], ["a", "b"], [(0, P[:2] > 0.3), (2, P[2:] > 0.3)],
                           progress=bar)
    assert bar.n == 3
    xy = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    write_top_k_chunks(tmp_path / "k.csv", ["r", "s", "t"], ["a", "b"], chunks, 1, xy=xy)
    assert (tmp_path / "k.csv").read_text() == ("id,x,y,labels,probabilities\nr,1,2,a,0.5\ns,3,4,b,1\n"
                                                "t,5,6,b,0.75\n")

    class Model:
        label_names = ["a", "b"]

        def __init__(self):
            self.rows = []

        def predict_proba(self, X):
            return np.full((len(X), 2), 0.5)

        def iter_decision_function(self, X, rows):
            self.rows.append(rows)
            for s in range(0, len(X), rows):
                yield s, np.zeros((min(rows, len(X) - s), 2), np.float32)

    m = Model()
    (start, got), = iter_probabilities(m, ["a.png", "b.png"])  # image paths: scored in one piece
    assert start == 0 and got.tolist() == [[0.5, 0.5], [0.5, 0.5]]
    out = list(iter_probabilities(m, np.zeros((5, 3)), rows=2))
    assert m.rows == [2] and [s for s, _ in out] == [0, 2, 4] and out[0][1].dtype == np.float64


def test_prediction_input_reads_each_layout_of_a_covariate_model(tmp_path):
    """A model with a covariate encoding: its bundle (ids and places), a table in the raw
    training layout (by name, levels one-hot, ids and places passed through, an unseen
    level refused naming the line), a table of encoded columns by name, a .npy by position."""
    pytest.importorskip("rasterio")
    from spmlkit.data import prepare_bundle
    from spmlkit.data.encoding import CovariateEncoding
    from spmlkit.data.formats.occurrences import records_on_rasters
    from spmlkit.practitioner.inference import prediction_input
    from tests.helpers.rasters import located_records, linear_model, make_stack, write_records

    env = make_stack(tmp_path / "env")
    ds = records_on_rasters(write_records(tmp_path / "r.csv", located_records(25)), [env], background=80)
    b = prepare_bundle(ds, tmp_path / "b", log=lambda m: None)
    enc = CovariateEncoding.from_dict(b.meta["encoding"])
    model = linear_model(enc, b.label_names, np.zeros((5, 2)))
    inp = prediction_input(model, b.path)
    assert np.array_equal(inp.X, b.features("test")) and inp.ids == b.ids("test")
    assert np.array_equal(inp.xy, b.xy("test"))
    for name, sep in (("raw.csv", ","), ("raw.tsv", "\t"), ("raw.TAB", "\t")):
        (tmp_path / name).write_text(sep.join(["temp", "site", "x", "y", "soil", "rain"]) + "\n"
                                     + sep.join(["1.5", "s1", "10", "20", "3", "7"]) + "\n"
                                     + sep.join(["2.5", "s2", "11", "21", "1", "8"]) + "\n")
        raw = prediction_input(model, tmp_path / name, id_column="site")
        assert raw.X.tolist() == [[7, 0, 0, 1, 1.5], [8, 1, 0, 0, 2.5]] and raw.ids == ["s1", "s2"], name
        assert raw.xy.tolist() == [[10, 20], [11, 21]], name
    (tmp_path / "noid.csv").write_text("temp,soil,rain\n1.5,3,7\n2.5,2,8\n")
    assert prediction_input(model, tmp_path / "noid.csv").ids == ["0", "1"]
    (tmp_path / "unseen.csv").write_text("temp,soil,rain\n1.5,3,7\n2.5,9,8\n")
    with pytest.raises(DataFormatError, match=r"unseen.csv, line 3: .*soil"):
        prediction_input(model, tmp_path / "unseen.csv")
    (tmp_path / "enc.csv").write_text("id,temp,soil=3,soil=2,soil=1,rain\nq,1.5,1,0,0,7\n")  # encoded, by name
    got = prediction_input(model, tmp_path / "enc.csv", id_column="id")
    assert got.X.tolist() == [[7, 0, 0, 1, 1.5]] and got.ids == ["q"]
    notes = []
    np.save(tmp_path / "x.npy", np.ones((2, 5), np.float32))
    model.input = {"kind": "features"}  # no names: columns by position, and said so, except for arrays
    assert prediction_input(model, tmp_path / "x.npy", log=notes.append).X.shape == (2, 5) and notes == []
    np.savez(tmp_path / "x.npz", X=np.ones((2, 5), np.float32))
    assert prediction_input(model, tmp_path / "x.npz", log=notes.append).ids == ["0", "1"] and notes == []


def test_prediction_input_from_image_lists_and_tables(tmp_path):
    from spmlkit.practitioner.inference import prediction_input

    _images(tmp_path / "imgs", ["a.png", "b.png"])
    asked = []

    def extractor(paths, **kw):
        asked.append((list(paths), kw))
        return np.zeros((len(paths), 3))

    class Model:
        input = {"kind": "images", "backbone": "tiny-random", "image_size": 32}
        info = {}

    for source in (tmp_path / "imgs", ):
        got = prediction_input(Model(), source, extractor=extractor, batch_size=5)
        assert got.ids == ["a.png", "b.png"] and got.X.shape == (2, 3) and asked[-1][1]["batch_size"] == 5
    (tmp_path / "l.TXT").write_text("imgs/b.png\n")
    assert prediction_input(Model(), tmp_path / "l.TXT", extractor=extractor).ids == ["imgs/b.png"]
    for name, sep in (("t.csv", ","), ("t.TSV", "\t"), ("t.tab", "\t")):
        (tmp_path / name).write_text(f"name{sep}path\nfirst{sep}imgs/a.png\n")
        got = prediction_input(Model(), tmp_path / name, id_column="name", extractor=extractor)
        assert got.ids == ["first"] and asked[-1][0] == [str(tmp_path / "imgs" / "a.png")], name
    (tmp_path / "f.csv").write_text("name,file\nfirst,imgs/b.png\n")
    got = prediction_input(Model(), tmp_path / "f.csv", path_column="file", extractor=extractor)
    assert got.ids == ["imgs/b.png"] and asked[-1][0] == [str(tmp_path / "imgs" / "b.png")]

    class Features:  # a table with a 'path' column is features for a model trained on features
        input = {"kind": "features", "feature_names": ["path", "b"]}
        info = {}

    (tmp_path / "p.csv").write_text("path,b\n1,2\n")
    assert prediction_input(Features(), tmp_path / "p.csv").X.tolist() == [[1, 2]]


def test_logits_of_image_paths_come_in_one_float32_piece():
    from spmlkit.practitioner.inference import iter_logits

    class Model:
        label_names = ["a", "b"]

        def decision_function(self, X):
            return np.arange(2.0 * len(X)).reshape(len(X), 2)

    ((start, got),) = iter_logits(Model(), ["a.png", "b.png"])
    assert start == 0 and got.dtype == np.float32 and got.tolist() == [[0, 1], [2, 3]]


class _Scorer:
    """Linear logits ``X @ W``; keeps the row blocks it was asked for."""

    label_names = ["a", "b", "c"]

    def __init__(self, spec):
        self.label_sets = dict(spec)
        self.blocks = []

    def iter_decision_function(self, X, rows):
        self.blocks.append(rows)
        W = np.array([[1.0, -1.0, 0.5], [0.25, 2.0, -1.0]], np.float32)
        for s in range(0, len(X), rows):
            yield s, (np.asarray(X[s:s + rows], np.float32) @ W)


def test_predict_to_file_takes_a_batch_rule_whole_and_records_the_rule_it_used(tmp_path, monkeypatch):
    from spmlkit.practitioner import inference
    from spmlkit.practitioner.inference import PredictionInput, predict_to_file

    monkeypatch.setattr(inference, "CHUNK_ROWS", 2)
    X = np.random.default_rng(0).normal(size=(5, 2))
    inp = PredictionInput(X, [f"r{i}" for i in range(5)])
    batch = {"rule": "expected_k", "k": 1 / 3, "per": "batch"}
    m = _Scorer(batch)
    predict_to_file(m, inp, tmp_path / "s.csv", kind="labels")
    assert m.blocks == [5]  # the collection's rule: one piece, whatever the chunk size
    for kind in ("proba", "top_k"):
        m = _Scorer(batch)
        predict_to_file(m, inp, tmp_path / f"{kind}.csv", kind=kind, top_k=1)
        assert m.blocks == [2], kind  # chunked
    m = _Scorer(batch)
    got = predict_to_file(m, inp, tmp_path / "t.csv", kind="labels", rule="threshold", threshold=0.7, min_labels=1)
    assert got["used"] == {"rule": "threshold", "k": 1 / 3, "per": "batch", "threshold": 0.7, "min_labels": 1}
    got = predict_to_file(_Scorer(batch), inp, tmp_path / "k.csv", kind="labels", k=0.5)
    assert got["used"] == {"rule": "expected_k", "k": 0.5, "per": "batch"}


def test_the_csv_limit_is_a_whole_line_and_its_bound_is_inclusive(tmp_path, monkeypatch):
    from spmlkit.errors import ConfigError
    from spmlkit.practitioner import inference
    from spmlkit.practitioner.inference import PredictionInput, predict_to_file

    class Rows:  # a length only: refused before a row is read
        def __len__(self):
            return 16_666_667

    with pytest.raises(ConfigError) as e:
        predict_to_file(_Scorer({"rule": "top_k", "k": 1}), PredictionInput(Rows(), []), tmp_path / "p.csv")
    assert str(e.value) == ("16666667 rows x 3 labels = 50,000,001 probabilities is too many for a CSV (the limit is "
                            f"50,000,000, about 450 MB of text); write them as a binary matrix with -o "
                            f"{tmp_path / 'p.npy'} (float32, rows in the input's order), or ask for --labels or --top-k")
    monkeypatch.setattr(inference, "CSV_MAX_VALUES", 6)
    inp = PredictionInput(np.zeros((2, 2)), ["r0", "r1"])
    predict_to_file(_Scorer({"rule": "top_k", "k": 1}), inp, tmp_path / "six.csv")  # 2 x 3 = the limit: written
    assert (tmp_path / "six.csv").read_text().count("\n") == 3


def test_predict_to_file_scores_in_the_blocks_it_is_asked_for(tmp_path):
    from spmlkit.practitioner.inference import PredictionInput, predict_to_file

    inp = PredictionInput(np.random.default_rng(1).normal(size=(5, 2)), [f"r{i}" for i in range(5)])
    for kind in ("proba", "top_k", "labels"):
        m = _Scorer({"rule": "top_k", "k": 1})
        predict_to_file(m, inp, tmp_path / f"{kind}.csv", kind=kind, top_k=1, rows=2)
        assert m.blocks == [2], kind


def test_predict_to_file_says_what_it_wrote_and_shows_progress_on_large_outputs(tmp_path, monkeypatch):
    from spmlkit.practitioner import inference
    from spmlkit.practitioner.inference import PredictionInput, predict_to_file

    bars = []

    class Bar:
        def __init__(self, *args, **kw):
            self.args, self.kw, self.n, self.closed = args, kw, 0, False
            bars.append(self)

        def update(self, k):
            self.n += k

        def close(self):
            self.closed = True

    monkeypatch.setattr(inference, "progress_bar", Bar)
    inp = PredictionInput(np.zeros((5, 2)), [f"r{i}" for i in range(5)], np.arange(10.0).reshape(5, 2))
    got = predict_to_file(_Scorer({"rule": "top_k", "k": 1}), inp, tmp_path / "p.csv")
    assert got == {"message": f"wrote probabilities for 5 example(s) x 3 labels to {tmp_path / 'p.csv'}",
                   "warning": None}
    (bar,) = bars
    assert bar.args == (5, "predict 5 rows x 3 labels", "row") and bar.kw == {"disable": True}
    assert bar.n == 5 and bar.closed
    assert (tmp_path / "p.csv").read_text().splitlines()[:2] == ["id,x,y,a,b,c", "r0,0,1,0.5,0.5,0.5"]
    got = predict_to_file(_Scorer({"rule": "top_k", "k": 1}), inp, tmp_path / "p.npy")
    assert got["message"] == (f"wrote probabilities (float32 .npy, rows in the input's order, columns in "
                              f"model.json's label_names order) for 5 example(s) x 3 labels to {tmp_path / 'p.npy'}")

    class Many:  # 5,000,000 rows x 2 labels = 10,000,000 values: a bar (as the environment allows)
        def __len__(self):
            return 5_000_000

    class Nothing(_Scorer):
        label_names = ["a", "b"]

        def iter_decision_function(self, X, rows):
            return iter(())

    bars.clear()
    predict_to_file(Nothing({"rule": "top_k", "k": 1}), PredictionInput(Many(), []), tmp_path / "m.csv")
    assert bars[0].kw == {"disable": None}


@pytest.mark.parametrize("over", [dict(rule="threshold", threshold=0.6), dict(rule="top_k", k=2),
                                  dict(rule="threshold", threshold=0.99, min_labels=1), dict(k=2),
                                  dict(threshold=0.3, rule="threshold"), dict(rule="threshold", threshold=0.9),
                                  dict(rule="expected_k", k=3)])  # (sets of 3 labels: plausible for k = 3, not 1.2)
def test_streamed_label_sets_apply_every_override_and_count_sets_over_all_chunks(tmp_path, monkeypatch, over):
    from spmlkit.practitioner import inference
    from spmlkit.practitioner.inference import PredictionInput, predict_to_file, rule_warning_k, used_rule
    from spmlkit.practitioner.labelsets import apply_rule_to_logits, format_label_sets, label_set_stats_warning
    from spmlkit.practitioner.report import describe_rule

    X = np.random.default_rng(2).normal(size=(7, 2)) * 2
    m = _Scorer({"rule": "expected_k", "k": 1.2})
    logits = np.concatenate([b for _, b in m.iter_decision_function(X, 7)])
    S = apply_rule_to_logits(logits, inference.model_rule_spec(m, over.get("rule")), **over)  # the dense twin
    inp = PredictionInput(X, [f"r{i}" for i in range(7)], np.zeros((7, 2)))
    got = predict_to_file(m, inp, tmp_path / "s.csv", kind="labels", rows=2, **over)
    lines = (tmp_path / "s.csv").read_text().splitlines()
    assert lines[0] == "id,x,y,labels" and [ln.split(",")[3] for ln in lines[1:]] == format_label_sets(S, m.label_names)
    used = used_rule(m, **over)
    mean, empty = S.sum() / 7, (~S.any(1)).sum() / 7
    assert got == {"message": f"wrote label sets for 7 example(s) to {tmp_path / 's.csv'} (rule: "
                              f"{describe_rule(used['rule'], used)}; {mean:.2f} labels per example)",
                   "warning": label_set_stats_warning(mean, empty, rule_warning_k(m, used, over.get("k"))),
                   "used": used}


@pytest.mark.parametrize("over", [dict(rule="threshold"), dict(rule="expected_k", k=1.2), dict(rule="top_k", k=1)])
def test_an_asked_rule_keeps_only_k_thresholds_and_min_labels_of_the_stored_one(tmp_path, over):
    """A rule asked for (``--threshold-rule``) takes from the model's stored rule only its ``k``,
    ``thresholds`` and ``min_labels``: a ``threshold`` or ``per`` stored beside another rule (a
    model.json written by hand or by another version) does not leak into it.  Streamed sets
    equal the dense ones of :meth:`SavedModel.label_sets_from_proba` and the plain rule's."""
    from scipy.special import expit

    from spmlkit.practitioner.inference import PredictionInput, predict_to_file
    from spmlkit.practitioner.labelsets import format_label_sets, label_sets
    from spmlkit.practitioner.saved import SavedModel

    X = np.random.default_rng(3).normal(size=(9, 2)) * 2
    m = _Scorer({"rule": "per_label", "thresholds": [0.2, 0.7, 0.4], "threshold": 0.97, "per": "batch"})
    P = expit(np.concatenate([b for _, b in m.iter_decision_function(X, 9)]).astype(np.float64))
    dense = SavedModel.label_sets_from_proba(m, P, **over)
    assert (dense == label_sets(P, **over)).all()  # the plain rule: 0.5, per example
    predict_to_file(m, PredictionInput(X, [f"r{i}" for i in range(9)]), tmp_path / "s.csv", kind="labels", rows=4,
                    **over)
    got = [ln.split(",")[1] for ln in (tmp_path / "s.csv").read_text().splitlines()[1:]]
    assert got == format_label_sets(dense, m.label_names) and 0 < dense.sum() < dense.size


def test_streamed_top_k_keeps_places_and_progress(tmp_path, monkeypatch):
    from spmlkit.practitioner import inference
    from spmlkit.practitioner.inference import PredictionInput, predict_to_file

    seen = []

    class Bar:
        def __init__(self, *args, **kw):
            self.n = 0
            seen.append(self)

        def update(self, k):
            self.n += k

        def close(self):
            pass

    monkeypatch.setattr(inference, "progress_bar", Bar)
    inp = PredictionInput(np.zeros((3, 2)), ["p", "q", "r"], np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    got = predict_to_file(_Scorer({"rule": "top_k", "k": 1}), inp, tmp_path / "k.csv", kind="top_k", top_k=5, rows=2)
    assert got == {"message": f"wrote the top 3 labels of 3 example(s) to {tmp_path / 'k.csv'}", "warning": None}
    assert seen[0].n == 3
    assert (tmp_path / "k.csv").read_text().splitlines()[:2] == ["id,x,y,labels,probabilities", "p,1,2,a;b;c,0.5;0.5;0.5"]


def test_label_sets_of_no_rows_and_their_progress(tmp_path, monkeypatch):
    from spmlkit.practitioner import inference
    from spmlkit.practitioner.inference import PredictionInput, predict_to_file
    from spmlkit.practitioner.report import describe_rule

    m = _Scorer({"rule": "top_k", "k": 1})
    got = predict_to_file(m, PredictionInput(np.zeros((0, 2)), []), tmp_path / "none.csv", kind="labels")
    assert got == {"message": f"wrote label sets for 0 example(s) to {tmp_path / 'none.csv'} (rule: "
                              f"{describe_rule('top_k', m.label_sets)}; 0.00 labels per example)", "warning": None,
                   "used": m.label_sets}
    counts = []

    class Bar:
        def __init__(self, *args, **kw):
            counts.append(0)

        def update(self, k):
            counts[-1] += k

        def close(self):
            pass

    monkeypatch.setattr(inference, "progress_bar", Bar)
    predict_to_file(m, PredictionInput(np.zeros((3, 2)), ["a", "b", "c"]), tmp_path / "s.csv", kind="labels", rows=2)
    assert counts == [3]


def test_ids_are_quoted_as_csv_fields_and_gzip_output_is_reproducible(tmp_path):
    import gzip

    write_probabilities(tmp_path / "q.csv", ['a"b', "aX", "c,d"], ["cat"], np.array([[0.5], [0.25], [1.0]]))
    assert (tmp_path / "q.csv").read_text() == 'id,cat\n"a""b",0.5\naX,0.25\n"c,d",1\n'
    write_probabilities(tmp_path / "p.csv.gz", ["r"], ["cat"], np.array([[0.5]]))
    raw = (tmp_path / "p.csv.gz").read_bytes()
    assert raw[3] == 0 and raw[4:8] == b"\0\0\0\0"  # no file name, no time stamp: the same bytes every time
    assert gzip.decompress(raw) == b"id,cat\nr,0.5\n"


def test_the_prediction_file_check_names_the_option_and_what_it_writes(tmp_path):
    from spmlkit.errors import ConfigError
    from spmlkit.practitioner.inference import check_prediction_output

    (tmp_path / "mine.csv").write_text("a user's file\n")
    with pytest.raises(ConfigError) as e:
        check_prediction_output(tmp_path / "mine.csv", label_names=[])
    assert str(e.value).startswith(f"refusing to replace {tmp_path / 'mine.csv'}: it is not a prediction file "
                                   "spmlkit wrote") and str(e.value).endswith("choose a new file with -o/--out or "
                                                                               "pass --overwrite")
    assert check_prediction_output(tmp_path / "mine.csv", label_names=[], overwrite=True) == tmp_path / "mine.csv"
    (tmp_path / "dir").mkdir()
    with pytest.raises(ConfigError) as e:
        check_prediction_output(tmp_path / "dir", label_names=[], option="--to")
    assert str(e.value) == f"--to {tmp_path / 'dir'} is a folder; expected the path of the prediction file to write"
    (tmp_path / "in.csv").write_text("x\n")
    for kw in (dict(source=tmp_path / "in.csv"), dict(model=tmp_path / "in.csv")):
        with pytest.raises(ConfigError, match="is an input of this command"):
            check_prediction_output(tmp_path / "in.csv", label_names=[], overwrite=True, **kw)


def test_empty_top_k_are_integer_indices_and_overrides_reach_the_extractor(tmp_path):
    from spmlkit.practitioner.inference import prediction_input, top_k_indices

    assert top_k_indices(np.zeros((3, 4)), 0).dtype == np.int64 and top_k_indices(np.zeros((0, 4)), 2).dtype == np.int64
    _images(tmp_path / "imgs", ["a.png"])
    asked = []

    class Model:
        input = {"kind": "images", "backbone": "recorded", "image_size": 64}
        info = {}

    prediction_input(Model(), tmp_path / "imgs", backbone="tiny-random", image_size=40,
                     extractor=lambda paths, **kw: asked.append(kw) or np.zeros((len(paths), 2)))
    assert asked[-1]["backbone"] == "tiny-random" and asked[-1]["image_size"] == 40

    class Named:
        input = {"kind": "features", "feature_names": ["a", "b"]}
        info = {}

    (tmp_path / "x.csv").write_text("site,b,a\nr1,1,10\n")
    got = prediction_input(Named(), tmp_path / "x.csv", id_column="site")
    assert got.ids == ["r1"] and got.X.tolist() == [[10, 1]]


def test_an_image_list_is_read_as_images_even_by_a_model_that_records_a_covariate_encoding(tmp_path):
    """A CSV of image paths (``--path-column``, or an image model's ``path`` column) is a list
    of images, whatever else the model records: never read as a covariate table, even when
    its columns happen to be the encoding's covariates."""
    from spmlkit.practitioner.inference import prediction_input

    _images(tmp_path, ["a.png", "b.png"])
    (tmp_path / "list.csv").write_text("path,t\na.png,1\nb.png,2\n")

    class Encoding:
        feature_names = covariates = ["t"]

    class Model:
        input, info, encoding = {"kind": "images", "backbone": "recorded", "image_size": 32}, {}, Encoding()

    seen = []
    got = prediction_input(Model(), tmp_path / "list.csv", path_column="path",
                           extractor=lambda paths, **kw: seen.append(list(paths)) or np.full((len(paths), 3), 7.0))
    assert [p.rsplit("/", 1)[-1] for p in seen[0]] == ["a.png", "b.png"] and got.X.tolist() == [[7.0] * 3] * 2

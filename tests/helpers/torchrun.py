"""Launch a test worker script on several CPU processes with ``torchrun --standalone``
(gloo; the rendezvous picks a free port).  The workers see no GPU and choose gloo
explicitly, so the test means the same on a machine with CUDA (where the default backend
would be NCCL and a second rank on a one-GPU machine an invalid device ordinal)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import REPO


def torchrun(args, nproc: int = 2, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # this checkout's sources, and the repository root for the workers' ``tests.helpers`` imports
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO), env.get("PYTHONPATH", "")])
    env["SPML_NO_PROGRESS"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ""  # CPU processes, whatever the machine has (issue 28, item 2)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc), *args]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    return p


def worker_cases(bundle_path: str, cases_json: str):
    """In a worker launched by :func:`torchrun` with two processes: join the gloo process
    group, open the bundle and read the cases.  Returns ``(ctx, bundle, cases)`` with
    ``cases`` a list of ``(name, case, TrainConfig(**case["config"]))``."""
    from spmlkit.config import TrainConfig
    from spmlkit.data import Bundle
    from spmlkit.training import distributed

    ctx = distributed.init_from_env(backend="gloo")
    assert ctx.world_size == 2 and ctx.backend == "gloo", ctx
    cases = [(name, case, TrainConfig(**case["config"])) for name, case in json.loads(cases_json).items()]
    return ctx, Bundle(bundle_path), cases


def exit_worker() -> None:
    """End a worker launched by :func:`torchrun` once its results are written and
    :func:`spmlkit.training.distributed.shutdown` has torn the process group down:
    ``os._exit`` skips the interpreter's teardown, where gloo's threads were now and then
    destroyed still joinable ("terminate called without an active exception", SIGABRT:
    about one full-suite run in five on the loaded 2-core machine).  A worker that fails
    raises before this, with its own exit status."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

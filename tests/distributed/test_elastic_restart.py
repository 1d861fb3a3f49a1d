"""An elastic restart on accinte over accl: `torchrun --max-restarts=1` with two processes,
one of which dies on the first attempt; the second attempt resumes from the checkpoint the
first one left and trains to the weights of single-process CPU training.

The file is also the training script torchrun runs (`python -m torch.distributed.run ...
test_elastic_restart.py`): its `__main__` block runs `_train` in each worker. Every wait is
bounded: the group's timeout, a deadline in each worker (faulthandler prints its stack and
ends it) and the launch's own timeout here, so a restart that fails to connect fails the
test within a minute instead of hanging CI (each launch takes 20 to 35 s on two busy cores).

Why the restarted group could fail to connect, and the launcher settings, are in
docs/chapters/distributed.md, "Elastic restarts".
"""

from __future__ import annotations

import datetime
import faulthandler
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

STEPS = 4  # training steps in all
CHECKPOINT_STEP = 2  # the first attempt checkpoints after this step, then rank 1 dies
LR = 0.1
GROUP_TIMEOUT = datetime.timedelta(seconds=15)
WORKER_DEADLINE = 25.0  # seconds a worker may live, in each attempt
LAUNCH_TIMEOUT = 55.0  # seconds for the whole torchrun launch, both attempts
RESULTS_ENV = "ELASTIC_RESTART_TEST_DIR"


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    return torch.randn(8, 8), torch.randn(8, 4)


def _optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)


# ---- inside a worker ----------------------------------------------------------------------

# LITERALINCLUDE START: ELASTIC RESTART WORKER
def _train(folder: Path) -> None:
    """One worker of one attempt: resume from the checkpoint if there is one, train on half
    the batch with DDP. On the first attempt rank 1 dies after the checkpoint."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    device = torch.device("accinte", local_rank)
    torch.accinte.set_device(device)
    dist.init_process_group("accl", timeout=GROUP_TIMEOUT)

    model = _model().to(device)
    optimizer = _optimizer(model)
    checkpoint, start = folder / "checkpoint.pt", 0
    if checkpoint.exists():  # a restart: resume where the last checkpoint left off
        state = torch.load(checkpoint, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    ddp = DDP(model)

    x, y = _batch()
    x, y = x.chunk(2)[rank].to(device), y.chunk(2)[rank].to(device)
    for step in range(start, STEPS):
        if attempt == 0 and step == CHECKPOINT_STEP:
            if rank == 0:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "step": step}, checkpoint)
            dist.barrier()  # the checkpoint is on disk before rank 1 dies
            if rank == 1:
                os._exit(3)  # rank 0's next all_reduce fails: torchrun restarts both
        optimizer.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()  # DDP averages the two halves' grads
        optimizer.step()

    # What the attempt computed, for the test: the weights, and one all_reduce by value.
    total = torch.arange(4.0, device=device) + rank
    dist.all_reduce(total)
    torch.save({"attempt": attempt, "start": start, "all_reduce": total.cpu(),
                "weights": {k: v.cpu() for k, v in model.state_dict().items()}},
               folder / f"attempt{attempt}-rank{rank}.pt")
    dist.destroy_process_group()
# LITERALINCLUDE END: ELASTIC RESTART WORKER


# ---- the test ----------------------------------------------------------------------------

def _cpu_weights() -> dict[str, torch.Tensor]:
    """STEPS steps of single-process CPU training on the whole batch."""
    model = _model()
    optimizer = _optimizer(model)
    x, y = _batch()
    for _ in range(STEPS):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    return model.state_dict()


# LITERALINCLUDE START: ELASTIC RESTART LAUNCH
LAUNCHES = {
    # One node, torchrun's defaults: the agent's store is kept across the restart, and accl
    # keys its state under TORCHELASTIC_RESTART_COUNT.
    "standalone": ([sys.executable, "-m", "torch.distributed.run", "--standalone",
                    "--nproc-per-node=2", "--max-restarts=1", "--monitor-interval=0.1"], {}),
    # The setting that holds on any number of nodes: a new store at every restart.
    "new store per restart": ([sys.executable, "-m", "torch.distributed.run", "--standalone",
                               "--nproc-per-node=2", "--max-restarts=1",
                               "--monitor-interval=0.1"],
                              {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}),
}
# LITERALINCLUDE END: ELASTIC RESTART LAUNCH


def _launch(command: list[str], extra_env: dict[str, str], folder: Path):
    env = {**os.environ, **extra_env, RESULTS_ENV: str(folder),
           "GLOO_SOCKET_IFNAME": "lo"}  # loopback only, as every test here
    try:
        return subprocess.run([*command, __file__], env=env, capture_output=True, text=True,
                              timeout=LAUNCH_TIMEOUT)
    except subprocess.TimeoutExpired as e:  # run() killed torchrun; its workers die with it
        raise AssertionError(f"torchrun did not finish in {LAUNCH_TIMEOUT} s:\n"
                             f"{e.stdout}\n{e.stderr}") from None


def _report(out) -> str:
    return (f"exit {out.returncode}\n--- stdout\n{out.stdout[-3000:]}\n"
            f"--- stderr\n{out.stderr[-6000:]}")


@pytest.mark.parametrize("launch", LAUNCHES)
def test_a_restart_after_a_rank_died_trains_to_the_cpus_weights(launch, tmp_path):
    command, extra_env = LAUNCHES[launch]
    out = _launch(command, extra_env, tmp_path)
    assert out.returncode == 0, _report(out)
    assert sorted(p.name for p in tmp_path.glob("attempt*.pt")) == [
        "attempt1-rank0.pt", "attempt1-rank1.pt"], _report(out)  # the first attempt died
    expected = _cpu_weights()
    for rank in (0, 1):
        result = torch.load(tmp_path / f"attempt1-rank{rank}.pt")
        assert result["start"] == CHECKPOINT_STEP  # resumed from the first attempt's checkpoint
        assert result["all_reduce"].tolist() == [1.0, 3.0, 5.0, 7.0]
        for name, weight in expected.items():
            torch.testing.assert_close(result["weights"][name], weight, rtol=0, atol=1e-6,
                                       msg=f"rank {rank}, {name}")


if __name__ == "__main__":  # a worker, started by torchrun
    faulthandler.dump_traceback_later(WORKER_DEADLINE, exit=True)
    _train(Path(os.environ[RESULTS_ENV]))

"""What people train with beyond DDP and FSDP2, on accinte over accl: distributed
checkpoints (torch.distributed.checkpoint: an FSDP2-sharded save, loaded resharded)
and pipeline parallelism (torch.distributed.pipelining: a GPipe schedule over two
ranks), each against the same computation on the CPU."""

import torch
import torch.nn as nn

from distributed import harness


def _model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))


def _save_sharded_load_whole(rank, folder):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict
    from torch.distributed.fsdp import fully_shard

    harness.init("accl")
    dev = harness.device()
    torch.accinte.set_device(dev)
    sharded = _model(0).to(dev)
    fully_shard(sharded)  # every parameter a DTensor shard: half on each rank
    dcp.save(get_model_state_dict(sharded), checkpoint_id=folder)
    # Loaded into whole, unsharded tensors on every rank: DCP reshards.
    whole = _model(1).to(dev)
    state = whole.state_dict()
    dcp.load(state, checkpoint_id=folder)
    whole.load_state_dict(state)
    return {name: p.detach().cpu() for name, p in whole.named_parameters()}


def test_an_fsdp2_sharded_checkpoint_loads_resharded_exactly(tmp_path):
    expected = dict(_model(0).named_parameters())
    for loaded in harness.run(_save_sharded_load_whole, str(tmp_path / "ckpt")):
        assert loaded.keys() == expected.keys()
        for name, tensor in loaded.items():
            assert torch.equal(tensor, expected[name].detach()), name


def _gpipe(rank, microbatches):
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    harness.init("accl")
    dev = harness.device()
    torch.accinte.set_device(dev)
    full = _model(0)
    stage_module = (full[:2] if rank == 0 else full[2:]).to(dev)
    stage = PipelineStage(stage_module, rank, 2, dev)
    torch.manual_seed(2)
    x, target = torch.randn(8, 16), torch.randn(8, 8)
    losses = []
    schedule = ScheduleGPipe(stage, microbatches, loss_fn=nn.functional.mse_loss)
    if rank == 0:
        schedule.step(x.to(dev))
    else:
        schedule.step(target=target.to(dev), losses=losses)
    grads = {name: p.grad.cpu() for name, p in stage_module.named_parameters()}
    return [loss.detach().cpu() for loss in losses], grads


def test_a_gpipe_schedule_over_two_ranks_gives_the_cpus_losses_and_gradients():
    microbatches = 2
    full = _model(0)
    torch.manual_seed(2)
    x, target = torch.randn(8, 16), torch.randn(8, 8)
    cpu_losses = []
    for xs, ts in zip(x.chunk(microbatches), target.chunk(microbatches)):
        loss = nn.functional.mse_loss(full(xs), ts)
        (loss / microbatches).backward()  # the schedule averages over microbatches
        cpu_losses.append(loss.detach())
    (_, first), (losses, second) = harness.run(_gpipe, microbatches)
    assert [float(v) for v in losses] == [float(v) for v in cpu_losses]
    expected = {f"0.{k}": p.grad for k, p in full[0].named_parameters()}
    expected.update({f"2.{k}": p.grad for k, p in full[2].named_parameters()})
    for name, grad in {**first, **second}.items():
        assert torch.equal(grad, expected[name]), name

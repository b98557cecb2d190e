"""Distributed data-parallel training on synthetic data, for the local mode and for clusters.

Every replica gets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK from the operator; the gloo
backend runs on CPUs, BACKEND=nccl on the GPU the replica was given (cuda:0 in its pod or local
process; LOCAL_RANK's under torchrun). DEVICE=cuda trains on the GPU with gloo too: ranks that share
one GPU (the local mode's --share-gpus), which NCCL refuses. The data is generated here (no downloads): points in 20 dimensions labelled
by a hidden linear rule, which a small MLP learns to over 97% accuracy in a few seconds.

Rank 0 saves a checkpoint at the end of each epoch to CHECKPOINT_PATH (default checkpoint.pt in the
working directory; on a cluster, a volume of the master's pod) and every rank resumes from it: when a
rank fails the operator restarts the job's replicas together, and they lose at most one epoch. A run
that finishes removes its checkpoint (the model is in MODEL_PATH).

A rank that hangs (a stuck driver or mount, a frozen process) fails no collective of its own: its peers
wait in theirs for the process group's timeout, 30 minutes by default. PROCESS_GROUP_TIMEOUT (seconds)
shortens it, so the peers fail soon and the operator restarts the job (docs/when-things-fail.md).
"""
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

EPOCHS = int(os.environ.get("EPOCHS", "8"))
TARGET_ACCURACY = float(os.environ.get("TARGET_ACCURACY", "0.95"))
MODEL_PATH = os.environ.get("MODEL_PATH", "model.pt")
CHECKPOINT_PATH = os.environ.get("CHECKPOINT_PATH", "checkpoint.pt")
BACKEND = os.environ.get("BACKEND", "gloo")
DEVICE = os.environ.get("DEVICE", "cuda" if BACKEND == "nccl" else "cpu")
PROCESS_GROUP_TIMEOUT = os.environ.get("PROCESS_GROUP_TIMEOUT")


def fail_once_if_asked():
    """Test hook: FAIL_ONCE_EXIT_CODE=137 makes this replica exit with 137 the first time only."""
    code = os.environ.get("FAIL_ONCE_EXIT_CODE")
    ranks = os.environ.get("FAIL_RANKS", "").split(",")
    if not code or os.environ["RANK"] not in ranks:
        return
    marker = f".failed-once-rank-{os.environ['RANK']}"
    if os.environ.get("FAIL_ALWAYS") or not os.path.exists(marker):
        open(marker, "w").close()
        print(f"rank {os.environ['RANK']}: exiting with code {code} as asked", flush=True)
        sys.exit(int(code))


def raise_if_asked(epoch):
    """Test hook: RAISE_IN_EPOCH=3 makes the FAIL_RANKS raise in epoch 3, as a bug in training code would."""
    ranks = os.environ.get("FAIL_RANKS", "").split(",")
    if os.environ.get("RAISE_IN_EPOCH") == str(epoch + 1) and os.environ["RANK"] in ranks:
        raise ValueError(f"rank {os.environ['RANK']}: a bad batch in epoch {epoch + 1} (RAISE_IN_EPOCH)")


def exhaust_memory_if_asked(epoch):
    """Test hook: OOM_IN_EPOCH=3 makes the FAIL_RANKS allocate without bound in epoch 3, once (a marker file
    in the working directory remembers it): the container's memory limit has the kernel kill it."""
    ranks = os.environ.get("FAIL_RANKS", "").split(",")
    marker = f".oom-once-rank-{os.environ['RANK']}"
    if os.environ.get("OOM_IN_EPOCH") != str(epoch + 1) or os.environ["RANK"] not in ranks or os.path.exists(marker):
        return
    open(marker, "w").close()
    print(f"rank {os.environ['RANK']}: allocating without bound in epoch {epoch + 1} (OOM_IN_EPOCH)", flush=True)
    hog = []
    while True:
        hog.append(bytearray(64 << 20))


def exit_on_sigterm():
    """In a container the training process is PID 1, and PID 1 ignores SIGTERM unless it handles it:
    without this a deleted, paused or timed-out job's pods would wait out their grace period and be
    killed. Checkpoint here if the job should resume where it stopped."""
    def stop(signum, frame):
        print(f"rank {os.environ.get('RANK', '?')}: SIGTERM, stopping", flush=True)
        os._exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)


def resume(model, optimizer, rank):
    """Rank 0 reads the checkpoint, if there is one, and sends it to every rank (only the master needs
    the volume): the epoch to start from, the weights, the optimizer's state and the losses so far."""
    state = [None]
    if rank == 0 and os.path.exists(CHECKPOINT_PATH):
        state[0] = torch.load(CHECKPOINT_PATH, map_location="cpu")
    dist.broadcast_object_list(state, src=0)
    if state[0] is None:
        return 0, []
    model.load_state_dict(state[0]["model"])
    optimizer.load_state_dict(state[0]["optimizer"])
    print(f"rank {rank}: resuming at epoch {state[0]['epoch'] + 1} from {CHECKPOINT_PATH}", flush=True)
    return state[0]["epoch"], state[0]["losses"]


def save_checkpoint(model, optimizer, epoch, losses):
    """Written whole or not at all: a rank killed while saving leaves the last complete checkpoint."""
    partial = CHECKPOINT_PATH + ".partial"
    torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(), "losses": losses}, partial)
    os.replace(partial, CHECKPOINT_PATH)


def synthetic_dataset(samples=8192, features=20):
    generator = torch.Generator().manual_seed(42)
    x = torch.randn(samples, features, generator=generator)
    hidden_rule = torch.randn(features, generator=generator)
    y = (x @ hidden_rule > 0).long()
    return TensorDataset(x, y)


def main():
    exit_on_sigterm()
    fail_once_if_asked()
    torch.set_num_threads(1)  # replicas share the machine's cores
    device = torch.device("cpu")
    if DEVICE == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        print(f"rank {os.environ['RANK']}: training on {torch.cuda.get_device_name(device)}", flush=True)
    timeout = {"timeout": datetime.timedelta(seconds=float(PROCESS_GROUP_TIMEOUT))} if PROCESS_GROUP_TIMEOUT else {}
    dist.init_process_group(BACKEND, **timeout)  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()

    # Every rank contributes rank+1: the sum proves all ranks took part.
    check = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(check)
    expected = world * (world + 1) / 2
    print(f"all-reduce check: rank {rank} of {world} got {check.item():.0f}, expected {expected:.0f}", flush=True)
    if check.item() != expected:
        sys.exit(3)

    torch.manual_seed(0)  # same initial weights everywhere (DDP also broadcasts them)
    dataset = synthetic_dataset()
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=128, sampler=sampler)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    started = time.time()
    first_epoch, losses = resume(model, optimizer, rank)
    for epoch in range(first_epoch, EPOCHS):
        sampler.set_epoch(epoch)
        raise_if_asked(epoch)
        exhaust_memory_if_asked(epoch)
        total = torch.zeros(2, device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()
            optimizer.step()
            total += torch.tensor([loss.item() * len(y), len(y)], device=device)
        dist.all_reduce(total)  # mean loss over all ranks' samples
        losses.append((total[0] / total[1]).item())
        if rank == 0:
            save_checkpoint(model, optimizer, epoch + 1, losses)
            print(f"epoch {epoch + 1}/{EPOCHS}: loss {losses[-1]:.4f}", flush=True)

    with torch.no_grad():
        x, y = dataset.tensors[0].to(device), dataset.tensors[1].to(device)
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    if rank == 0:
        print(f"loss: first epoch {losses[0]:.4f}, last epoch {losses[-1]:.4f}; "
              f"accuracy {accuracy:.4f} (target {TARGET_ACCURACY}); {time.time() - started:.1f}s", flush=True)
        torch.save(model.state_dict(), MODEL_PATH)
        print(f"saved model to {os.path.abspath(MODEL_PATH)}", flush=True)
        if os.path.exists(CHECKPOINT_PATH):
            os.remove(CHECKPOINT_PATH)
    print(f"rank {rank}: final accuracy {accuracy:.4f}", flush=True)  # the same model on every rank
    dist.barrier()
    dist.destroy_process_group()
    if losses[-1] >= losses[0] or accuracy < TARGET_ACCURACY:
        print(f"rank {rank}: training did not converge", flush=True)
        sys.exit(4)


if __name__ == "__main__":
    main()

"""Data-parallel learning: what a policy needs to know of the other learners.

Each of ``world_size`` learners computes gradients on its share of every batch; before
clipping and the optimizer step, :meth:`DataParallel.average_gradients` averages them over
all learners (one ``all_reduce`` per call), so every learner takes the same step and the
parameters stay identical. With equal shares this is exactly the gradient of the whole
batch. Everything else that must agree (advantage statistics, early-stop decisions,
running reward statistics, random noise) goes through :meth:`mean`, :meth:`mean_std`,
:meth:`gather` and :meth:`global_randn`.

Plain ``torch.distributed``: the runtime creates the process group (gloo on CPU, nccl on
GPU) and hands a :class:`DataParallel` to the policy; a single learner keeps the default,
whose methods do nothing.

On CPU, with a few learners, every learner sends its tensor to each of the others and adds
them all up itself, in rank order (so the sum is bitwise the same on every learner): gloo's
``all_reduce`` took ~0.9 ms of wall and ~0.6 ms of CPU for a CartPole DQN's gradients
between two learners on one machine, and a send and a receive each way ~0.2 ms and ~0.13
ms. Past :data:`EXCHANGE_MAX_WORLD` learners, and on GPU, the library's collectives.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import torch
import torch.distributed as dist

#: The most learners whose CPU collectives go by pairwise exchange: each learner sends
#: ``world_size - 1`` copies, where a ring all-reduce sends about two; few learners and
#: small models are latency-bound, so the fewer round trips win.
EXCHANGE_MAX_WORLD = 4


class DataParallel:
    """This learner's rank among ``world_size`` learners, and the collectives they share."""

    def __init__(self, rank: int = 0, world_size: int = 1) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, {world_size})")
        self.rank = rank
        self.world_size = world_size
        self.sync_s = 0.0  # seconds spent in collective calls

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def average_gradients(self, params: Iterable[torch.nn.Parameter]) -> None:
        """Replace each gradient by its mean over all learners (a missing one counts as 0)."""
        if not self.active:
            return
        params = [p for p in params if p.requires_grad]
        if not params:
            return
        t0 = time.perf_counter()
        flat = torch.cat(
            [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params]
        )
        flat = self._sum(flat)
        flat /= self.world_size
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset : offset + n].view_as(p).clone()
            offset += n
        self.sync_s += time.perf_counter() - t0

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """``value`` averaged over all learners (the same tensor on every one)."""
        if not self.active:
            return value
        t0 = time.perf_counter()
        out = self._sum(value.detach().clone())
        self.sync_s += time.perf_counter() - t0
        return out / self.world_size

    def mean_std(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and (unbiased) standard deviation of ``x`` over the rows of every learner."""
        if not self.active:
            return x.mean(), x.std()
        t0 = time.perf_counter()
        stats = torch.stack(
            [x.sum(), (x * x).sum(), torch.tensor(float(x.numel()), device=x.device)]
        )
        stats = self._sum(stats)
        self.sync_s += time.perf_counter() - t0
        total, squares, n = stats
        mean = total / n
        var = (squares - n * mean * mean) / (n - 1).clamp(min=1.0)
        return mean, var.clamp(min=0.0).sqrt()

    def gather(self, x: torch.Tensor, dim: int = 0) -> torch.Tensor:
        """Every learner's ``x`` (equal shapes), concatenated along ``dim`` in rank order."""
        if not self.active:
            return x
        t0 = time.perf_counter()
        x = x.contiguous()
        if self._exchanges(x):
            parts = self._exchange(x)
        else:
            parts = [torch.empty_like(x) for _ in range(self.world_size)]
            dist.all_gather(parts, x)
        self.sync_s += time.perf_counter() - t0
        return torch.cat(parts, dim=dim)

    def _exchanges(self, tensor: torch.Tensor) -> bool:
        return tensor.device.type == "cpu" and self.world_size <= EXCHANGE_MAX_WORLD

    def _exchange(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        """Every learner's ``tensor`` (equal shapes), in rank order: one send and one
        receive per pair of learners, all in flight at once."""
        parts = [
            tensor if r == self.rank else torch.empty_like(tensor) for r in range(self.world_size)
        ]
        requests = []
        for peer in range(self.world_size):
            if peer != self.rank:
                requests.append(dist.isend(tensor, peer))
                requests.append(dist.irecv(parts[peer], peer))
        for request in requests:
            request.wait()
        return parts

    def _sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` summed over all learners: the same values on every learner."""
        if not self._exchanges(tensor):
            dist.all_reduce(tensor)
            return tensor
        parts = self._exchange(tensor.contiguous())
        total = parts[0].clone()
        for part in parts[1:]:
            total += part
        return total

    def global_randn(
        self, local_rows: int, dim: int, generator: torch.Generator, device: torch.device
    ) -> torch.Tensor:
        """This learner's rows of normal noise drawn for the whole batch.

        Every learner draws the noise of all ``world_size * local_rows`` rows from the same
        generator state and keeps its own slice, so N learners use exactly the noise one
        learner would use on the whole batch.
        """
        rows = local_rows * self.world_size
        noise = torch.randn(rows, dim, generator=generator, device=device)
        start = self.rank * local_rows
        return noise[start : start + local_rows]

    def broadcast_(self, tensors: Iterable[torch.Tensor]) -> None:
        """Overwrite ``tensors`` (in place) with rank 0's values."""
        if not self.active:
            return
        t0 = time.perf_counter()
        for tensor in tensors:
            dist.broadcast(tensor.data, src=0)
        self.sync_s += time.perf_counter() - t0

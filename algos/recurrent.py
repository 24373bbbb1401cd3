"""Networks with memory: feed-forward layers, one LSTM or GRU, feed-forward layers, a head.

A network's memory is one float32 tensor per batch of envs, ``[N, k, H]`` (k = 2 for an
LSTM's hidden and cell states, 1 for a GRU's). Workers store with every step the memory it
was acted from (the ``memory`` column), so a learner replays any stored sequence from the
exact state it started in, as R2D2's "stored state" and sb3-contrib's RecurrentPPO do.

Where an episode starts inside a sequence the memory is zeroed before that step
(``starts``); being a multiplication, the reset also cuts the gradient, so no error flows
back across an episode boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from algos.layers import layer_field, recurrent_index
from algos.networks import ACTIVATIONS, DuelingHead, build_body, head_layers, stack_layers
from algos.observations import ObservationInput
from joyrl_ray.batch import MEMORY

__all__ = ["MEMORY", "RecurrentNetwork", "episode_starts", "from_sequences", "to_sequences"]


class RecurrentNetwork(nn.Module):
    """``layers`` with one recurrent layer, on an observation space's input, with a linear
    head of ``out_dim`` (``dueling``: a :class:`~algos.networks.DuelingHead`). :meth:`step`
    acts one step of a batch of envs; :meth:`unroll` runs sequences ``[L, B, ...]``; both
    give the recurrent layer's output (``features``) too."""

    def __init__(
        self,
        layers: Sequence[Any],
        inputs: ObservationInput | Sequence[int],
        out_dim: int,
        *,
        dueling: bool = False,
    ) -> None:
        super().__init__()
        index = recurrent_index(layers)
        if index is None:
            raise ValueError("a recurrent network needs an lstm or gru layer")
        layer = layers[index]
        self.kind = str(layer_field(layer, "layer_type")).lower()
        dim = layer_field(layer, "layer_dim")
        self.hidden = int(dim[0] if hasattr(dim, "__len__") else dim)
        self.encoder, width = build_body(layers[:index], inputs)
        rnn_cls = nn.LSTM if self.kind == "lstm" else nn.GRU
        self.rnn = rnn_cls(width, self.hidden)
        activation = ACTIVATIONS[str(layer_field(layer, "activation")).lower()]
        self.activation: nn.Module = activation() if activation is not None else nn.Identity()
        after, shape = stack_layers(layers[index + 1 :], (self.hidden,))
        head = [DuelingHead(shape[0], out_dim)] if dueling else head_layers(shape, out_dim)
        self.head = nn.Sequential(*after, *head)

    @property
    def slots(self) -> int:
        """States per env in the memory: an LSTM's hidden and cell, a GRU's hidden."""
        return 2 if self.kind == "lstm" else 1

    def initial_memory(self, n: int, device: torch.device | None = None) -> torch.Tensor:
        """The memory at an episode's start: zeros ``[n, k, H]``."""
        return torch.zeros(n, self.slots, self.hidden, device=device)

    def _cell(self, x: torch.Tensor, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of ``x`` ``[B, W]`` from ``memory``: the output ``[B, H]`` and new memory."""
        if self.kind == "lstm":
            h, c = memory[:, 0][None].contiguous(), memory[:, 1][None].contiguous()
            out, (h, c) = self.rnn(x[None], (h, c))
            return out[0], torch.stack([h[0], c[0]], dim=1)
        out, h = self.rnn(x[None], memory[:, 0][None].contiguous())
        return out[0], h[0][:, None]

    def _encode(self, obs: torch.Tensor, lead: int) -> torch.Tensor:
        return self.encoder(obs.flatten(0, lead - 1)).reshape(*obs.shape[:lead], -1)

    def step(
        self, obs: torch.Tensor, memory: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of a batch of envs: (head output, features, the memory after it)."""
        out, memory = self._cell(self._encode(obs, 1), memory)
        features = self.activation(out)
        return self.head(features), features, memory

    def advance(self, obs: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        """The memory ``[B, k, H]`` after sequences ``obs`` ``[L, B, ...]`` read from
        ``memory`` (no episode starts inside): what a burn-in warms."""
        if len(obs) == 0:
            return memory
        x = self._encode(obs, 2)
        _, final = self._run(_Segments.of(None, *x.shape[:2]), x, memory, None)
        return final  # one segment per column, all as long: each column's own end

    def unroll(
        self,
        obs: torch.Tensor,
        memory: torch.Tensor,
        starts: torch.Tensor | None = None,
        next_obs: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Sequences ``obs`` ``[L, B, ...]`` from ``memory`` ``[B, k, H]``, the memory zeroed
        before step ``t`` where ``starts[t]`` (an episode starts there).

        Returns the head's outputs and the features ``[L, B, ...]``, and, given
        ``next_obs``, the features of each step's next observation read with the memory
        after that step (what a bootstrap from that observation needs; before any reset).
        """
        x = self._encode(obs, 2)
        cut = _Segments.of(starts, *x.shape[:2])
        if next_obs is None:
            out, _ = self._run(cut, x, memory, starts)
            features = self.activation(out[cut.position, cut.segment])
            return self.head(features), features, None
        # A step's next observation is the next step's observation, read with the same
        # memory, except at a segment's last step: there the segment's stored next
        # observation is read, as one more step of the segment.
        end_t, end_b = cut.ends
        out, _ = self._run(cut, x, memory, starts, self._encode(next_obs[end_t, end_b], 1))
        steps = out[cut.position, cut.segment]
        last = out[cut.lengths, torch.arange(cut.count, device=out.device)]
        next_out = torch.cat([steps[1:], steps[-1:]]).index_put((end_t, end_b), last)
        features = self.activation(steps)
        return self.head(features), features, self.activation(next_out)

    def _run(
        self,
        cut: _Segments,
        x: torch.Tensor,
        memory: torch.Tensor,
        starts: torch.Tensor | None,
        after_end: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The recurrent layer over every segment at once (one call, not a step loop), with
        ``after_end`` ``[S, W]`` (if given) as one more input after each segment's last step:
        the outputs ``[longest (+1), S, H]``, by position in the segment, and the memory after
        the last position ``[S, k, H]`` (each segment's own end only where none is shorter).

        The segments run side by side, padded to the longest: each segment's padding comes
        after its last step (and its extra input), and the outputs there are never read. A
        plain padded batch goes through CPU torch's fused kernel; a packed one, which would
        stop each segment at its end, steps in Python-sized pieces, several times slower to
        differentiate.
        """
        first = memory if starts is None else memory * (~starts[0]).to(memory.dtype)[:, None, None]
        initial = memory.new_zeros(cut.count, self.slots, self.hidden)
        initial[cut.first] = first
        longest = cut.longest + (after_end is not None)
        padded = x.new_zeros(longest, cut.count, x.shape[-1])
        padded = padded.index_put((cut.position, cut.segment), x)
        if after_end is not None:
            segments = torch.arange(cut.count, device=x.device)
            padded = padded.index_put((cut.lengths, segments), after_end)
        if self.kind == "lstm":
            state = (initial[:, 0][None].contiguous(), initial[:, 1][None].contiguous())
            out, (h, c) = self.rnn(padded, state)
            return out, torch.stack([h[0], c[0]], dim=1)
        out, h = self.rnn(padded, initial[:, 0][None].contiguous())
        return out, h[0][:, None]


class _Segments(NamedTuple):
    """Sequences ``[L, B]`` cut where episodes start: each segment runs from a start (or the
    sequence's first step) to the step before the next start (or the last step)."""

    segment: torch.Tensor  # [L, B]: the segment of each step, numbered column by column
    position: torch.Tensor  # [L, B]: the step's index within its segment
    first: torch.Tensor  # [B]: each column's first segment
    lengths: torch.Tensor  # [S]: each segment's steps
    ends: tuple[torch.Tensor, torch.Tensor]  # each segment's last step: (t, b), by segment
    count: int
    longest: int

    @classmethod
    def of(cls, starts: torch.Tensor | None, steps: int, columns: int) -> _Segments:
        device = starts.device if starts is not None else None
        begins = torch.zeros(steps, columns, dtype=torch.bool, device=device)
        if starts is not None:
            begins |= starts
        begins[0] = True
        in_column = begins.long().cumsum(0) - 1
        per_column = in_column[-1] + 1
        first = per_column.cumsum(0) - per_column
        segment = in_column + first[None]
        t = torch.arange(steps, device=device)[:, None].expand(steps, columns)
        position = t - torch.where(begins, t, torch.zeros_like(t)).cummax(0).values
        count = int(per_column.sum())
        lengths = torch.bincount(segment.flatten(), minlength=count)
        is_end = torch.zeros_like(begins)
        is_end[-1] = True
        is_end[:-1] = begins[1:]
        order = segment[is_end].argsort()
        end_t, end_b = is_end.nonzero(as_tuple=True)
        return cls(
            segment,
            position,
            first,
            lengths,
            (end_t[order], end_b[order]),
            count,
            int(lengths.max()),
        )


def episode_starts(done: np.ndarray) -> np.ndarray:
    """``[T, N]``: True where a step begins a new episode inside the rollout (the step after
    one that ended it). The first step's memory is the stored one: never a start here."""
    starts = np.zeros_like(done, dtype=bool)
    starts[1:] = done[:-1]
    return starts


def to_sequences(x: torch.Tensor, length: int) -> torch.Tensor:
    """``[T, N, ...]`` cut along time into sequences of ``length``: ``[length, S, ...]`` with
    ``S = T / length * N``, the sequences of one time slice side by side, slice after slice
    (with ``length`` 1 the rows keep their ``[T, N]`` order)."""
    steps, envs = x.shape[:2]
    rest = x.shape[2:]
    cut = x.reshape(steps // length, length, envs, *rest).transpose(0, 1)
    return cut.reshape(length, (steps // length) * envs, *rest)


def from_sequences(x: torch.Tensor, steps: int) -> torch.Tensor:
    """The inverse of :func:`to_sequences`: ``[length, S, ...]`` back to ``[T, N, ...]``."""
    length, count = x.shape[:2]
    envs = count // (steps // length)
    rest = x.shape[2:]
    cut = x.reshape(length, steps // length, envs, *rest).transpose(0, 1)
    return cut.reshape(steps, envs, *rest)

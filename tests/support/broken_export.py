"""SAC whose exported graph leaves out the Box scaling (its actions stay in ``[-1, 1]``),
named by import path (``tests.support.broken_export:UNSCALED_SAC``): the export's check
must refuse the file it writes."""

from __future__ import annotations

from algos.export import ActingGraph, build_graph
from algos.registry import AlgoSpec
from algos.sac.config import SACConfig
from algos.sac.policy import SAC, SACPolicy


class UnscaledSACPolicy(SACPolicy):
    def acting_graph(self) -> ActingGraph:
        head, named = self.greedy_head()
        return build_graph(self.observation_module(), head, ("action", *named), self.obs_space)


class UnscaledSAC(SAC):
    policy_cls = UnscaledSACPolicy


UNSCALED_SAC = AlgoSpec("UnscaledSAC", SACConfig, UnscaledSAC)

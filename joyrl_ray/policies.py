"""Policy ids: the seam every role shares.

A run trains one or more policies, each named by its id. Weights, versions, rows, counters,
checkpoints and summaries travel with the id of the policy they belong to. A single-agent
run has one policy, :data:`DEFAULT_POLICY`; a multi-agent run names its policies in its
``multi_agent`` section and maps each agent of the env to one of them.
"""

from __future__ import annotations

#: The one policy of a single-agent run.
DEFAULT_POLICY = "default"

"""The data plane: replay shards, rollout queues and their storage; no knowledge of control."""

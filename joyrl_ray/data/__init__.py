"""The data plane: replay shards (off-policy) or the rollout queue (on-policy)."""

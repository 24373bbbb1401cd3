"""Data flows: how experience moves from workers to learners, one module per flow.

The data path, one hop at a time (replay; the rollout flows differ where marked):

1. ``Worker.step`` collects a chunk: one policy forward and one vector env step per step,
   written into ``[time, env]`` columns (``roles/worker/chunk.py``).
2. The worker's sender prepares it (``ReplaySender.prepare``: n-step folded, stacked
   frames once each; sequence replay cuts overlapping sequences instead; a rollout
   travels whole) and sends it with the worker's report:
   into the worker's replay shard (``DataServer.insert``), which forwards reports to the
   coordinator a few times a second and whose ack carries the stop, throttling and newer
   weights (rollouts: ``RolloutQueue.push_rollout``, then ``Coordinator.report_worker``).
3. The learner's source takes a round (``ReplaySource``: ``DataServer.sample_round`` on
   each shard in turn, a few requests in flight; rollouts: ``take_rollouts``).
4. ``Learner`` learns it (``Algorithm.learn``, gradients averaged over the group) and
   the source sends new priorities back to the shard a round came from.
5. Rank 0 publishes weights (``Coordinator.publish_weights``); the next acks carry the new
   version, and the worker loads it (``ActingWeights.take``): back to 1.

``base`` has the interfaces, ``registry`` maps an algorithm's ``DataNeeds`` to its flow.
"""

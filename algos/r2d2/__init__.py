"""R2D2: recurrent DQN on sequence replay (Kapturowski et al. 2019).

A separate algorithm, not a ``recurrent`` switch on DQN: its data are sequences, not
transitions (workers cut them, replay stores and prioritizes them whole), and its update
unrolls the Q network over each sequence from the memory stored with it. DQN stays the
simple one-step learner it is.
"""

from algos.r2d2.config import R2D2Config
from algos.registry import register_algorithm

register_algorithm("R2D2", R2D2Config, "algos.r2d2.policy:R2D2")

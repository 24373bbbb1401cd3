"""DiscreteCQL: conservative Q-learning from a dataset, for Discrete action spaces."""

from algos.discrete_cql.config import DiscreteCQLConfig
from algos.registry import register_algorithm

register_algorithm("DiscreteCQL", DiscreteCQLConfig, "algos.discrete_cql.policy:DiscreteCQL")

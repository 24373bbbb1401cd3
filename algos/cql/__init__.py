"""CQL: conservative Q-learning on SAC, offline RL for bounded continuous action spaces."""

from algos.cql.config import CQLConfig
from algos.registry import register_algorithm

register_algorithm("CQL", CQLConfig, "algos.cql.policy:CQL")

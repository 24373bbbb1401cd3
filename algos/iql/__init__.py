"""IQL: offline RL for bounded continuous action spaces, learning only from dataset actions."""

from algos.iql.config import IQLConfig
from algos.registry import register_algorithm

register_algorithm("IQL", IQLConfig, "algos.iql.policy:IQL")

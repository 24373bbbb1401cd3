"""BC: behaviour cloning, offline learning of the dataset's own actions (Discrete or Box)."""

from algos.bc.config import BCConfig
from algos.registry import register_algorithm

register_algorithm("BC", BCConfig, "algos.bc.policy:BC")

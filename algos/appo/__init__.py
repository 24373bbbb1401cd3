"""APPO (clipped surrogate on V-trace advantages) and IMPALA (V-trace actor-critic)."""

from algos.appo.config import APPOConfig, IMPALAConfig
from algos.registry import register_algorithm

register_algorithm("APPO", APPOConfig, "algos.appo.policy:APPO")
register_algorithm("IMPALA", IMPALAConfig, "algos.appo.policy:IMPALA")

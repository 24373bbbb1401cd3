"""What the tests share, written once.

- ``runs``: the project root, ``python main.py`` as a user runs it, ``python -c`` in a fresh
  interpreter, configs, optional extras.
- ``cli_runs``: a CLI run to its end with its process tree killed after; summary readers and
  the checks every run shares (solved within a budget, the transitions accounting).
- ``procs``: process trees from /proc, ``TrackedRun``, leftover Ray processes, a writer
  killed mid-write.
- ``clusters``: separate Ray clusters (``ray start --block`` nodes) for the cluster tests,
  their token-authenticated shells, and stopping them with nothing left.
- ``watch``: bounded wait loops on a running main.py, its roles' pids, its log and files.
- envs and algorithms named by import path in the tests' overrides: ``faulty_envs``,
  ``frame_envs``, ``custom_env``, ``custom_algo``, ``diverging_env``, ``slow_algos``,
  ``extra_envs``, ``registering_env``; ``modes_setup``: the small run of ``tests/modes/``.
"""

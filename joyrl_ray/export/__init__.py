"""Export a trained policy for use outside joyrl-ray: one ONNX or TorchScript file.

``python -m joyrl_ray.export <task> --format onnx|torchscript [--out FILE]
[--checkpoint best|last|<update>] [--force]``

``<task>`` is a task directory of a train run (a name under ``--tasks-dir``, or a path).
The command reads its ``config.yaml``, builds the env's spaces and the acting policy, loads
the checkpoint (``best``, the default: ``best.pt``, else the last one; ``last``; or an
update number) and asks the policy for its greedy acting as one module
(``Policy.acting_graph``, :mod:`algos.export`): the runtime traces what the algorithm
returns and never knows which algorithm it is. The file goes to ``--out``, by default
``<task>/exported/policy_<checkpoint>.onnx`` (or ``.pt``); an existing file is replaced only
with ``--force``, and the file appears whole (written under a temporary name, renamed
once checked) or not at all.

After writing, the command replays observations recorded from the env, acting with the
torch policy, through the file (ONNX Runtime, ``torch.jit.load``) and compares the actions
(:mod:`joyrl_ray.export.check`). It prints one line: the file, the checkpoint, its inputs
and outputs, and the check's result. Exit codes: 0 written and checked; 1 the export or
its check failed (nothing written); 2 bad input, one ``error:`` line.

``docs/export.md`` describes the file's inputs and outputs and how to run it.
"""

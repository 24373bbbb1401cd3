"""joyrl-ray: a reinforcement-learning runtime whose moving parts are Ray actors.

The tree is the architecture. Each folder imports only the folders listed below it (a
test holds it to that), and the modules at this root are what every layer shares:
``config/`` (python defaults < yaml < ``key=value``, checked; the ``general_cfg`` schema;
the reference in docs/), ``data_needs`` (what an algorithm asks of the data path),
``batch`` (columns of numpy arrays), ``normalization`` (running observation and return
statistics, merged across workers), ``seeding``, ``heap``.

``export/``, ``export_minari``
    Commands on a finished task directory: ``python -m joyrl_ray.export`` writes a trained
    policy's greedy acting as one ONNX or TorchScript file (the algorithm builds the graph,
    the command traces it) and checks the file's actions against torch's;
    ``python -m joyrl_ray.export_minari`` turns collected trajectories into a Minari dataset.
``sweep/``
    Sweeps under Ray Tune (``main.py --sweep``): each trial one ordinary run in its own
    placement group; the sweep directory, its results and the best trial's config.
``run/``
    The driver side: the CLI, the runner (checks, task directory, the run), the driver
    loop, modes (train, test, resume), the recorder (logs, csv, tensorboard, progress),
    checkpoints, the summary, figures, videos, trajectory files, and ``tracking/`` (the run
    as an MLflow or W&B run). Only it writes files, and only it talks to a tracker.
``backends/``
    How the roles run: in one process (``local``) or as Ray actors (``ray_runtime``), where
    the learner group and the worker fleet own their actors and restarts; placement on the
    cluster; the cluster session (start a local Ray or attach, with clear errors).
``flows/``
    One module per data flow (replay, synchronous rollouts, asynchronous rollouts, test
    mode's reports): which data-plane actors it builds, the worker's sender, the learner's
    source, its closing figures, how its actors fail. The only place that knows which flow
    runs; a new flow is a module here and one line in ``registry``.
``roles/``
    ``worker/`` (envs, acting weights, episodes, the kill schedule, what it needs of a
    flow), ``learner/`` (the learner, shard sampling, the data-parallel group, what it
    needs of a flow), ``evaluator/``. Each with its typed client.
``control/``
    The coordinator and what only it uses: counters and the stop rule, mailboxes, the
    newest weights, report gaps, the env-error budget; its typed client.
``data/``
    The data plane whole: replay shards (``DataServer``), rollout queues, the rate limiter,
    report forwarding, their clients and base class, ``buffers/``. It knows nothing of
    control: it forwards reports to whatever takes them (``ReportSink``).
``wire/``
    What crosses between roles: messages, handles (one calling convention on both
    backends), the clients' base, waiting inside a call, where a process runs.
"""

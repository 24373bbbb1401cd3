"""Data-parallel learners (general_cfg.n_learners > 1) learn exactly what one learner would.

Why: N learners each compute gradients on their share of a batch and average them before
the step (``Algorithm.optimize``); advantage statistics and learning noise go through the
group too (``algos.parallel``). If any of it were off, N learners would learn something
else than one learner on the whole batch, and nothing else would notice.

- Two learners as real Ray actors in a real gloo group, given the two halves of each
  batch, end with the parameters one learner (this process) reaches on the whole batches,
  for DQN, PPO (with and without reward scaling), SAC and TD3; the two ranks end
  bit-identical. PPO is exact with one minibatch per epoch: with several, each learner
  draws its minibatches from its own rows, the same amount of data per step but not the
  same rows as one learner's minibatches.
- The port the group meets at is rank 0's from the moment rank 0 names it: another process
  that binds it before the ranks join is refused, and the group forms there.
- A real 2-learner run keeps the ranks identical over more than 100 gradient steps
  (summary.json ``learners[*].params_digest``), for DQN, SAC and PPO.
- Checkpoints do not depend on the number of learners: a 2-learner run resumes with one
  learner and tests with one, and that 1-learner run (its checkpoints one learner's)
  resumes with two.
- Bad input (n_learners < 1, a batch or rollout that does not split, GPUs the cluster does
  not have) is exit code 2 and one line, before anything starts.
"""

from __future__ import annotations

import errno
import hashlib
import json
import socket
import sys
from pathlib import Path

import numpy as np
import pytest
import ray.cloudpickle
import torch

from algos import get_algorithm
from algos.parallel import DataParallel
from envs.probe import probe_env
from joyrl_ray.config import RunConfig
from joyrl_ray.roles.learner.distributed import ProcessGroup, Rendezvous
from joyrl_ray.run.runner import run
from tests.support.runs import make_cfg

# The rank actor below travels to Ray by value, not by module name.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SEED = 11
UPDATES = 6
SMALL = "[{layer_type: linear, layer_dim: [32], activation: relu}]"
LSTM = (
    "[{layer_type: lstm, layer_dim: [16], activation: none},"
    " {layer_type: linear, layer_dim: [16], activation: relu}]"
)


# ----- 2 learners on halves == 1 learner on the whole -----


def build_policy(cfg: RunConfig):
    """The learning algorithm, seeded as a learner seeds it (same weights, same noise streams)."""
    torch.manual_seed(SEED)
    spec = get_algorithm(cfg.general.algo_name)
    policy = spec.algorithm_cls(cfg.algo, *probe_env(cfg.env), torch.device("cpu"))
    policy.seed(SEED)
    policy.policy.seed(SEED)  # the rollouts' actions
    return policy


def params(policy) -> list[np.ndarray]:
    return [t.detach().cpu().numpy().copy() for t in policy.synced_tensors()]


class RankLearner:
    """One rank of a 2-learner group: builds the policy, joins the group, learns its share.

    The same two rank actors serve every case below: each call builds its policy afresh,
    seeded as a learner seeds it, and leaves the group again at its end."""

    def __init__(self) -> None:
        torch.set_num_threads(1)
        self.meeting: Rendezvous | None = None

    def address(self) -> tuple[str, int]:
        """Rank 0, as a learner's ``rendezvous``: the address the group meets at."""
        self.meeting = Rendezvous()
        return self.meeting.address

    def learn(
        self, cfg: RunConfig, address: tuple[str, int], rank: int, world: int, batches: list[dict]
    ) -> tuple[list[np.ndarray], float]:
        policy = build_policy(cfg)
        group = ProcessGroup.join(
            address,
            rank=rank,
            world_size=world,
            device=torch.device("cpu"),
            rendezvous=self.meeting if rank == 0 else None,
        )
        try:
            policy.join(DataParallel(rank, world))
            for batch in batches:
                policy.learn(batch)
            return params(policy), policy.parallel.sync_s
        finally:
            group.leave()


def replay_batches(policy, rng: np.random.Generator, rows: int = 64) -> list[dict]:
    """Off-policy batches as the DataServer samples them (n-step folded, IS weights)."""
    obs_space, action_space = policy.obs_space, policy.action_space
    obs_space.seed(SEED)
    action_space.seed(SEED)
    batches = []
    for _ in range(UPDATES):
        obs = np.stack([obs_space.sample() for _ in range(rows)]).astype(np.float32)
        next_obs = np.stack([obs_space.sample() for _ in range(rows)]).astype(np.float32)
        actions = np.stack([action_space.sample() for _ in range(rows)])
        batches.append(
            {
                "obs": obs,
                "actions": actions,
                "rewards": rng.normal(size=rows).astype(np.float32),
                "next_obs": next_obs,
                "discounts": np.where(rng.random(rows) < 0.1, 0.0, 0.99).astype(np.float32),
                "weights": rng.uniform(0.5, 1.0, rows).astype(np.float32),  # as with PER
            }
        )
    return batches


def rollout_batches(policy, rng: np.random.Generator, steps: int = 16, envs: int = 8) -> list:
    """On-policy rollouts ``[time, env]`` with the behaviour policy's log-probabilities."""
    rollouts = []
    for _ in range(UPDATES // 2):
        obs = rng.normal(scale=0.5, size=(steps, envs, 4)).astype(np.float32)
        done = rng.random((steps, envs)) < 0.05
        cut = ~done & (rng.random((steps, envs)) < 0.05)  # time limits: bootstrapped
        # Step by step, as workers act: a recurrent policy's memory goes from step to step
        # and is reset where an episode ended (the extras then hold the memory column).
        policy.reset_memory(envs)
        acted = []
        for t in range(steps):
            acted.append(policy.act(obs[t], explore=True, env_steps=0))
            policy.episodes_ended(done[t] | cut[t])
        extras = {k: np.stack([e[k] for _, e in acted]) for k in acted[0][1]}
        rollouts.append(
            {
                "obs": obs,
                "actions": np.stack([a for a, _ in acted]),
                "rewards": np.ones((steps, envs), np.float32),
                "next_obs": rng.normal(scale=0.5, size=(steps, envs, 4)).astype(np.float32),
                "terminated": done,
                "truncated": cut,
                **extras,
            }
        )
    return rollouts


def halves(batch: dict, axis: int) -> list[dict]:
    """Rank r's share: rows (off-policy) or env columns (on-policy), as the runtime splits."""
    n = np.shape(batch["rewards"])[axis]
    lead = (slice(None),) * axis
    share = [(*lead, slice(r * n // 2, (r + 1) * n // 2)) for r in range(2)]
    return [{k: np.ascontiguousarray(v[index]) for k, v in batch.items()} for index in share]


PENDULUM_SMALL = (
    "env_cfg.id=Pendulum-v1",
    f"algo_cfg.actor_layers={SMALL}",
    f"algo_cfg.critic_layers={SMALL}",
    "algo_cfg.batch_size=64",
)
PPO_EXACT = (
    "general_cfg.algo_name=PPO",
    "env_cfg.id=CartPole-v1",
    "algo_cfg.n_minibatches=1",  # minibatches of one learner's rows: not the same split
    "algo_cfg.n_epochs=3",
    "algo_cfg.ent_coef=0.01",
)
#: case -> (overrides, on-policy?)
EXACT_CASES = {
    "DQN": (
        (
            "general_cfg.algo_name=DQN",
            "env_cfg.id=CartPole-v1",
            f"algo_cfg.value_layers={SMALL}",
            "algo_cfg.batch_size=64",
            "algo_cfg.target_update=2",
            "algo_cfg.max_grad_norm=0.5",  # clipping after averaging: clipped here too
        ),
        False,
    ),
    "PPO": ((*PPO_EXACT, "algo_cfg.reward_scaling=false"), True),
    "PPO-reward-scaling": ((*PPO_EXACT, "algo_cfg.reward_scaling=true"), True),
    # An LSTM: each rank replays its env columns' sequences from their stored memory.
    "PPO-LSTM": ((*PPO_EXACT, f"algo_cfg.actor_layers={LSTM}", "algo_cfg.sequence_len=8"), True),
    "SAC": (("general_cfg.algo_name=SAC", *PENDULUM_SMALL), False),
    "TD3": (("general_cfg.algo_name=TD3", *PENDULUM_SMALL, "algo_cfg.policy_delay=2"), False),
}


class RankPair:
    """Two rank actors (real Ray actors, each its own process) shared by the cases below; a
    case that fails replaces them, so that no rank it left mid-call serves the next one."""

    def __init__(self, ray) -> None:
        self.ray = ray
        self.ranks: list = []
        self.renew()

    def renew(self) -> None:
        self.close()
        actor_cls = self.ray.remote(RankLearner).options(num_cpus=0)
        self.ranks = [actor_cls.remote() for _ in range(2)]

    def close(self) -> None:
        for rank in self.ranks:
            self.ray.kill(rank)
        self.ranks = []


@pytest.fixture(scope="module")
def rank_pair(ray_session):
    pair = RankPair(ray_session)
    try:
        yield pair
    finally:
        pair.close()


@pytest.mark.parametrize("algo", list(EXACT_CASES))
def test_two_learners_on_halves_end_where_one_learner_on_the_whole_batch_ends(
    ray_session, rank_pair, tmp_path, algo: str
) -> None:
    ray = ray_session
    overrides, on_policy = EXACT_CASES[algo]
    cfg = make_cfg(tmp_path, *overrides)
    reference = build_policy(cfg)
    rng = np.random.default_rng(SEED)
    acting = reference.policy
    batches = rollout_batches(acting, rng) if on_policy else replay_batches(acting, rng)
    start = params(reference)
    for batch in batches:
        reference.learn(batch)
    expected = params(reference)

    ranks = rank_pair.ranks
    try:
        address = ray.get(ranks[0].address.remote(), timeout=RUN_TIMEOUT_S)
        shares = [halves(b, axis=1 if on_policy else 0) for b in batches]
        calls = [
            rank.learn.remote(cfg, address, r, 2, [share[r] for share in shares])
            for r, rank in enumerate(ranks)
        ]
        (got0, sync0), (got1, sync1) = ray.get(calls, timeout=RUN_TIMEOUT_S)
    except BaseException:
        rank_pair.renew()
        raise
    assert sync0 > 0 and sync1 > 0  # the gradients really went through the group
    assert any(not np.array_equal(a, b) for a, b in zip(start, expected, strict=True))
    for i, (a, b) in enumerate(zip(got0, got1, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"{algo}: tensor {i} differs between ranks")
    for i, (got, want) in enumerate(zip(got0, expected, strict=True)):
        np.testing.assert_allclose(
            got, want, rtol=1e-5, atol=1e-6, err_msg=f"{algo}: tensor {i} != one learner's"
        )


def test_another_process_cannot_take_the_port_the_learners_meet_at_before_they_meet(
    ray_session, rank_pair, tmp_path
) -> None:
    """Rank 0 names the address; until the other ranks join there, the port is rank 0's:
    a process that binds it in between (this test's, as any program on the node could) is
    refused, and the group forms at that address."""
    ray = ray_session
    cfg = make_cfg(tmp_path, *EXACT_CASES["DQN"][0])
    (batch,) = replay_batches(build_policy(cfg).policy, np.random.default_rng(SEED))[:1]
    ranks = rank_pair.ranks
    try:
        address = ray.get(ranks[0].address.remote(), timeout=RUN_TIMEOUT_S)
        with socket.socket() as other:
            try:
                other.bind(("", address[1]))
                other.listen()  # and holds it while the ranks join
                taken = True
            except OSError as exc:
                assert exc.errno == errno.EADDRINUSE, exc
                taken = False
            calls = [
                rank.learn.remote(cfg, address, r, 2, [halves(batch, axis=0)[r]])
                for r, rank in enumerate(ranks)
            ]
            (_, sync0), (_, sync1) = ray.get(calls, timeout=RUN_TIMEOUT_S)
    except BaseException:
        rank_pair.renew()
        raise
    assert not taken, f"another process bound port {address[1]} the learners were to meet at"
    assert sync0 > 0 and sync1 > 0  # the group formed there and averaged the gradients


# ----- real runs (the runner, as main.py calls it, on the session's Ray) -----

#: Seconds for a run: a test's timeout is this for each run it may wait for (the module's
#: run included).
RUN_TIMEOUT_S = 300

RUN_OVERRIDES = (
    "general_cfg.mp_backend=ray",
    "general_cfg.seed=3",
    "general_cfg.progress=false",
    "general_cfg.save_fig=false",
    "general_cfg.online_eval=false",
    "general_cfg.learner_num_cpus=0.5",  # two learners and the workers fit 2 cores
)
DQN_RUN = (
    "general_cfg.algo_name=DQN",
    f"algo_cfg.value_layers={SMALL}",
    "algo_cfg.batch_size=32",
    "algo_cfg.learn_start=200",
    "algo_cfg.updates_per_step=0.5",
)
#: One worker feeds the off-policy runs (the learners split the sampled batches, not the
#: workers' data); the PPO runs have two, whose rollouts the learners split by env column.
TWO_LEARNERS = ("general_cfg.n_learners=2",)
#: algo -> (overrides, least number of gradient steps the run takes)
DIGEST_CASES = {
    "DQN": ((*DQN_RUN, "general_cfg.max_env_steps=600"), 200),
    "SAC": (
        (
            "general_cfg.algo_name=SAC",
            "env_cfg.id=Pendulum-v1",
            "general_cfg.max_env_steps=500",
            f"algo_cfg.actor_layers={SMALL}",
            f"algo_cfg.critic_layers={SMALL}",
            "algo_cfg.batch_size=32",
            "algo_cfg.learn_start=200",
            "algo_cfg.random_steps=200",
            "algo_cfg.updates_per_step=0.5",
        ),
        150,
    ),
    # PPO's update is an iteration of n_epochs x n_minibatches gradient steps (10 x 4 here).
    "PPO": (
        (
            "general_cfg.algo_name=PPO",
            "general_cfg.n_workers=2",
            "general_cfg.n_envs_per_worker=2",
            "general_cfg.max_env_steps=1500",
            "algo_cfg.rollout_len=64",
        ),
        4 * 40,
    ),
}


def train(tasks: Path, *overrides: str) -> tuple[dict, Path]:
    """A training run with ``overrides`` on the session's Ray (real actors, as main.py runs
    them, without starting a Ray of its own); exit 0 expected; (summary.json, task dir)."""
    before = set(tasks.glob("*"))
    result = run(make_cfg(tasks, *RUN_OVERRIDES, *overrides))
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.summary}"
    (task,) = set(tasks.glob("*")) - before
    assert task == result.task_dir
    return json.loads((task / "results" / "summary.json").read_text()), task


@pytest.mark.slow
@pytest.mark.timeout(2 * RUN_TIMEOUT_S)
@pytest.mark.parametrize("algo", sorted(DIGEST_CASES))
def test_ranks_hold_identical_parameters_after_a_real_run(
    two_learner_run, tmp_path, algo: str
) -> None:
    overrides, least_steps = DIGEST_CASES[algo]
    if algo == "DQN":  # the run the checkpoint tests below read too
        summary, _ = two_learner_run
    else:
        summary, _ = train(tmp_path, *overrides, *TWO_LEARNERS)
    learners = summary["learners"]
    assert summary["n_learners"] == 2 and [s["rank"] for s in learners] == [0, 1]
    steps_per_update = 40 if algo == "PPO" else 1
    assert summary["updates"] * steps_per_update >= least_steps, summary["updates"]
    assert {s["updates"] for s in learners} == {summary["updates"]}  # the same steps
    assert learners[0]["params_digest"] == learners[1]["params_digest"], learners
    assert all(s["times"]["sync_s"] > 0 for s in learners)  # gradients went through the group


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_two_ppo_learners_with_several_minibatches_stop_early_on_target_kl_together(
    ray_session, tmp_path
) -> None:
    """The KL early stop is decided on the KL averaged over the learners: both stop after
    the same minibatch, so they take the same steps and end with the same parameters."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    overrides, _ = DIGEST_CASES["PPO"]
    summary, task = train(
        tmp_path,
        *overrides,
        "algo_cfg.n_minibatches=4",
        "algo_cfg.n_epochs=10",
        "algo_cfg.target_kl=0.002",
        "general_cfg.n_learners=2",
    )
    learners = summary["learners"]
    assert {s["updates"] for s in learners} == {summary["updates"]} and summary["updates"] > 0
    assert learners[0]["params_digest"] == learners[1]["params_digest"], learners
    (events,) = (task / "logs").glob("events.*")
    acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
    acc.Reload()
    steps = [e.value for e in acc.Scalars("learner/minibatch_updates")]
    assert steps and min(steps) < 4 * 10, steps  # the KL did stop an iteration's epochs early


def checkpoint_digest(path: Path, cfg: RunConfig) -> str:
    """The parameters digest (as a learner computes it) of a checkpoint's policy."""
    from joyrl_ray.run.checkpoint import load_checkpoint

    policy = build_policy(cfg)
    policy.load_state_dict(load_checkpoint(path)["policy"])
    digest = hashlib.sha256()
    for tensor in policy.synced_tensors():
        digest.update(tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def adam_steps(path: Path) -> set[int]:
    from joyrl_ray.run.checkpoint import load_checkpoint

    state = load_checkpoint(path)["policy"]["optimizer"]["state"]
    return {int(s["step"]) for s in state.values()}


def resume(tasks: Path, source: Path, n_learners: int, max_env_steps: int) -> dict:
    summary, task = train(
        tasks,
        *DQN_RUN,
        f"general_cfg.n_learners={n_learners}",
        f"general_cfg.max_env_steps={max_env_steps}",
        "general_cfg.load_checkpoint=true",
        f"general_cfg.load_path={source}",
    )
    assert summary["resumed_from"] == str(source) and summary["n_learners"] == n_learners
    assert summary["stop_reason"] == "max_env_steps"
    # The optimizer went on from the checkpoint: Adam's step count is the total of updates.
    assert adam_steps(task / "models" / "last.pt") == {summary["updates"]}
    return summary


@pytest.fixture(scope="module")
def two_learner_run(ray_session, tmp_path_factory) -> tuple[dict, Path]:
    tasks = tmp_path_factory.mktemp("two_learners")
    return train(tasks, *DIGEST_CASES["DQN"][0], *TWO_LEARNERS)


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S)
def test_two_learner_checkpoint_holds_the_parameters_both_ranks_ended_with(
    two_learner_run, tmp_path
) -> None:
    summary, source = two_learner_run
    last = source / "models" / "last.pt"
    digests = {s["params_digest"] for s in summary["learners"]}
    assert len(summary["learners"]) == 2 and len(digests) == 1, summary["learners"]
    assert checkpoint_digest(last, make_cfg(tmp_path, *DQN_RUN)) == digests.pop()
    assert adam_steps(last) == {summary["updates"]}


@pytest.fixture(scope="module")
def one_learner_resume(two_learner_run, tmp_path_factory) -> tuple[dict, Path]:
    """The 2-learner run resumed with one learner, to 1000 env steps: (summary, task dir);
    its checkpoints are a 1-learner run's."""
    tasks = tmp_path_factory.mktemp("one_learner")
    _, source = two_learner_run
    resume(tasks, source, n_learners=1, max_env_steps=1000)
    (task,) = tasks.glob("*")
    return json.loads((task / "results" / "summary.json").read_text()), task


@pytest.mark.slow
@pytest.mark.timeout(2 * RUN_TIMEOUT_S)
def test_two_learner_checkpoint_resumes_with_one_learner(
    two_learner_run, one_learner_resume
) -> None:
    first, _ = two_learner_run
    second, _ = one_learner_resume
    assert second["n_learners"] == 1
    assert second["updates"] > first["updates"] and second["env_steps"] >= 1000


@pytest.mark.slow
@pytest.mark.timeout(2 * RUN_TIMEOUT_S)
def test_two_learner_checkpoint_tests_with_one_learner(two_learner_run, tmp_path) -> None:
    _, source = two_learner_run
    done = run(
        make_cfg(
            tmp_path,
            *RUN_OVERRIDES,
            *DQN_RUN,
            "general_cfg.mode=test",
            "general_cfg.n_learners=1",
            "general_cfg.max_episode=3",
            "general_cfg.load_model_step=last",
            f"general_cfg.load_path={source}",
        )
    )
    assert done.exit_code == 0, done.summary
    (path,) = tmp_path.glob("*/results/summary.json")
    tested = json.loads(path.read_text())
    assert tested["mode"] == "test" and tested["episodes"] == 3
    assert tested["loaded_checkpoint"] == str(source / "models" / "last.pt")


@pytest.mark.slow
@pytest.mark.timeout(3 * RUN_TIMEOUT_S)
def test_one_learner_checkpoint_resumes_with_two_learners(one_learner_resume, tmp_path) -> None:
    # The 1-learner checkpoint: the one the resume with one learner above wrote.
    first, source = one_learner_resume
    assert first["n_learners"] == 1
    # Past where that run ended (a Ray run stops past its budget, by what was in flight).
    second = resume(tmp_path, source, n_learners=2, max_env_steps=first["env_steps"] + 400)
    assert second["updates"] > first["updates"]
    digests = {s["params_digest"] for s in second["learners"]}
    assert len(second["learners"]) == 2 and len(digests) == 1, second["learners"]

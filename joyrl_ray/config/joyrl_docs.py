"""What the keys of JoyRL's later presets do here: the rows of docs/config.md's second
"Coming from JoyRL" table (:mod:`joyrl_ray.config.docs` prints them)."""

from __future__ import annotations

from joyrl_ray.config.joyrl_wrappers import BUILT_IN, COUNTERPARTS, REFUSED, WARNED


def _wrappers_row() -> str:
    mapped = "; ".join(
        f"{name}: "
        + (", ".join(wrapped) or "env_cfg.clip_rewards true")
        + "".join(f" (its {key} as env_cfg.{ours})" for key, ours in keys.items())
        for name, (wrapped, keys) in COUNTERPARTS.items()
    )
    return (
        "JoyRL's list of {wrapper_name: ..., its settings}. Built in here, so dropped: "
        f"{', '.join(BUILT_IN)} (JoyRL's lists of one observation or action head, the "
        "action one under its older names too; LazyFrames to arrays; actions are clipped to "
        f"the space here). Mapped onto this project's wrappers and env_cfg keys: {mapped} "
        "(uint8 images are scaled to [0, 1] by the network; rewards are clipped for learning, "
        "returns stay the env's score). Named in the warning line, the run going on without "
        "them (they change what is learnt from, or rendering, not what the agent sees): "
        f"{', '.join(WARNED)}. Refused, having no counterpart without which the preset would "
        "not run as written (they change what the agent sees or how often it acts): "
        f"{', '.join(REFUSED)}. This project's own wrapper names, as strings, may stand in "
        "the same list"
    )


#: The keys of JoyRL's later presets (its presets/ folder, 0.4.1 to 0.6.8): the first JoyRL
#: release on PyPI whose source holds the key, and what it does here.
JOYRL_PRESET_ROWS = (
    (
        "general_cfg.joyrl_version",
        "0.5.1.1",
        "the release the preset was written for: recorded in config.yaml, no other effect",
    ),
    ("general_cfg.n_interactors", "0.4.1", "JoyRL's later name for general_cfg.n_workers"),
    (
        "general_cfg.is_learner_async",
        "0.6.0.2",
        "false (JoyRL's default, its sync mode: each interactor takes exps_trucation_size "
        "steps, then the learner one update) sets lockstep true: Ray's actors take turns as "
        "the single backend's do; true sets lockstep false, free-running. With mp_backend "
        "single the roles take turns either way. Off-policy it also sets updates_per_step "
        "(see learn_frequency)",
    ),
    (
        "general_cfg.exps_trucation_size",
        "0.5.1.1",
        "steps an interactor takes before it sends them (read from algo_cfg too, as JoyRL "
        "merges its sections). On-policy: rollout_len (JoyRL's batch is n_interactors x "
        "this). Off-policy: worker_chunk_steps, and it sets updates_per_step (see "
        "learn_frequency)",
    ),
    (
        "general_cfg.load_model_step",
        "0.2.10",
        "this project's key too: best (else last), last, or an update number",
    ),
    (
        "general_cfg.policy_summary_fre, interact_summary_fre",
        "0.4.1",
        "how often JoyRL logs learner and interactor summaries: no effect (the progress bar, "
        "logs/ and figs/ report every episode and evaluation)",
    ),
    (
        "general_cfg.learner_device",
        "0.6.4",
        "general_cfg.device (the learner's) when device is not given or is JoyRL's custom; "
        "with device cpu or cuda it has no effect, as in JoyRL",
    ),
    (
        "general_cfg.interactor_device",
        "0.6.4",
        "workers act on the CPU here: cpu is what happens, cuda has no effect",
    ),
    (
        "algo_cfg.branch_layers, merge_layers",
        "0.5.1.1",
        "JoyRL's network: one branch ({name, layers: [{layer_type, layer_size, activation}]}) "
        "per observation head, then merge layers on the branches' outputs concatenated. One "
        "observation head here: the first branch's layers then the merge layers (later "
        "branches, which JoyRL skips too, are named in the warning line). A Q network's "
        "value_layers; an on-policy actor-critic's one network with two heads unless "
        "independ_actor: actor_layers and critic_layers both, two networks of that shape "
        "here. Layer types: linear, "
        "conv2d (out_channel; kernel_size and stride 4 unless given), and none and flatten, "
        "passed through; others are refused",
    ),
    (
        "algo_cfg.actor_branch_layers, actor_merge_layers",
        "0.5.1.1",
        "actor_layers (branch then merge, as above): an off-policy actor-critic's actor, an "
        "on-policy one's with independ_actor; no effect otherwise, as in JoyRL",
    ),
    (
        "algo_cfg.critic_branch_layers, critic_merge_layers",
        "0.5.1.1",
        "critic_layers. An on-policy critic (with independ_actor) reads the observation: "
        "branch then merge. An off-policy one, Q of observation and action, reads "
        "concat(observation, action) here, JoyRL's two branches (state, action): each branch "
        "must be layer_type none, as JoyRL's presets write them, and critic_layers is "
        "critic_merge_layers; a branch with layers is refused",
    ),
    (
        "algo_cfg.max_buffer_size",
        "0.5.1.1",
        "buffer_size; no effect on-policy (JoyRL's on-policy queue does not read it either)",
    ),
    (
        "algo_cfg.learn_frequency",
        "0.5.2",
        "off-policy: an update takes learn_frequency new transitions, so updates_per_step is "
        "1 / learn_frequency; in sync mode (is_learner_async false) a round of n_interactors "
        "x exps_trucation_size steps makes at most one update: 1 / max(learn_frequency, "
        "n_interactors x exps_trucation_size). Those of the three a yaml leaves out count at "
        "JoyRL's defaults (1, 1, false). On-policy: no effect",
    ),
    ("algo_cfg.k_epochs", "0.3.0", "n_epochs: passes over each rollout"),
    ("algo_cfg.eps_clip", "0.3.0", "clip_eps: the surrogate's clip"),
    ("algo_cfg.sgd_batch_size", "0.3.0", "minibatch_size: transitions per minibatch"),
    (
        "algo_cfg.entropy_coef",
        "0.3.0",
        "ent_coef, an entropy bonus (from 0.5.1.1 JoyRL's on-policy losses add coef x "
        "entropy to the loss they minimise, a penalty; read here as the bonus it is named "
        "for)",
    ),
    (
        "algo_cfg.critic_loss_coef",
        "0.3.0",
        "vf_coef, doubled: JoyRL's critic loss is coef x MSE, this project's vf_coef "
        "x MSE / 2. No effect with share_optimizer false (the critic's own optimizer and an "
        "unweighted loss, JoyRL up to 0.6.2)",
    ),
    (
        "algo_cfg.actor_lr, critic_lr",
        "0.2.10",
        "an algorithm's own keys where it has both (the off-policy actor-critics). An "
        "on-policy actor-critic (lr and critic_lr here) as JoyRL reads them: with two "
        "optimizers (independ_actor true from 0.6.2.2, share_optimizer false before) the "
        "actor learns at actor_lr (set as lr) and the critic at critic_lr; with one (JoyRL's "
        "default) both learn at lr and these have no effect. With lr only: no effect",
    ),
    (
        "algo_cfg.independ_actor",
        "0.3.0",
        "an on-policy actor-critic: true, an actor and a critic network (actor_* and "
        "critic_* lists) learning at actor_lr and critic_lr; false (JoyRL's default), one "
        "network of branch_layers + merge_layers with both heads: here two networks of that "
        "shape, learning at lr. No "
        "effect for other algorithms",
    ),
    (
        "algo_cfg.share_optimizer",
        "0.3.0",
        "an on-policy actor-critic, as JoyRL 0.3.0 to 0.6.2 read it: true, one optimizer at "
        "lr; false, actor_lr and critic_lr. Given, it decides the learning rates over "
        "independ_actor. No effect for other algorithms",
    ),
    (
        "algo_cfg.return_form",
        "0.6.2.2",
        "the returns of an algorithm with gae_lambda: gae keeps GAE(gae_lambda); td (the "
        "discounted return to the rollout's end, bootstrapped from the last value) and mc "
        "set gae_lambda 1 (JoyRL also standardises those returns per batch, which is not "
        "done here)",
    ),
    (
        "algo_cfg.buffer_type",
        "0.2.10",
        "REPLAY_QUE and PER as in the tables above; PER_QUE is PER; ONPOLICY_QUE is accepted "
        "for an on-policy algorithm, which learns from its own rollouts (another is refused)",
    ),
    (
        "algo_cfg.batch_size",
        "0.6.2.6",
        "on-policy, JoyRL sets the batch to n_interactors x exps_trucation_size whatever the "
        "yaml says: the same batch here (n_workers x rollout_len), or no effect (named) when "
        "the yaml's differs. Without exps_trucation_size (a preset from before 0.6.2.6) "
        "rollout_len is batch_size / n_interactors, rounded up",
    ),
    ("algo_cfg.max_norm", "0.6.8", "max_grad_norm"),
    ("algo_cfg.explore_steps", "0.4.6.4", "random_steps: env steps acting at random first"),
    ("algo_cfg.policy_freq", "0.2.10", "policy_delay: critic updates per actor update"),
    (
        "algo_cfg.policy_loss_weight",
        "0.4.5",
        "JoyRL's weight on a deterministic actor's loss, read by one of its algorithms (not "
        "its twin-critic one): no effect",
    ),
    (
        "algo_cfg.action_space",
        "0.6.7",
        "JoyRL's action head ({type: [dpg]}: deterministic): no effect, each algorithm here "
        "has its own",
    ),
    ("env_cfg.wrappers", "0.5.1.1", _wrappers_row()),
)

"""JoyRL's yaml dialect, its quick start's and its later presets', read as this project's keys.

JoyRL reads its three sections into one flat config object; its presets (0.4.1 to 0.6.8)
name keys that are spelt otherwise here (``n_interactors``), that set one of this
project's keys through a rule of JoyRL's (``learn_frequency``: the update-to-data ratio),
or that have no use here (``policy_summary_fre``). :func:`translate` rewrites each source
layer (the yaml, then the overrides) in place before the sections are merged against their
schemas, and returns the keys accepted with no effect, which the run names in one warning
line. A key that is a field of its section's schema here is this project's and is left
alone. What each key does: :data:`DOC_ROWS` (docs/config.md, "Coming from JoyRL").
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from algos import canonical_name, get_algorithm
from algos.base_config import OnPolicyConfig
from envs import EnvConfig
from joyrl_ray.config.checks import ConfigError
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.config.joyrl_networks import translate_networks
from joyrl_ray.config.joyrl_wrappers import translate_wrappers

Layer = dict[str, dict[str, Any]]

#: JoyRL's names for keys that mean the same here: section -> {JoyRL's key: key here}.
RENAMES = {"general_cfg": {"n_interactors": "n_workers"}, "env_cfg": {"env_id": "id"}}
#: algo_cfg keys JoyRL spells otherwise, where the algorithm has the key here (else the
#: key has no effect, as in JoyRL: max_buffer_size for PPO's on-policy queue).
ALGO_RENAMES = {
    "max_buffer_size": "buffer_size",
    "eps_clip": "clip_eps",
    "k_epochs": "n_epochs",
    "sgd_batch_size": "minibatch_size",
    "entropy_coef": "ent_coef",
    "max_norm": "max_grad_norm",
    "explore_steps": "random_steps",
    "policy_freq": "policy_delay",
}
#: Keys that JoyRL's logging or its own internals read: no effect here.
NO_EFFECT = {
    "general_cfg": ("policy_summary_fre", "interact_summary_fre"),
    "algo_cfg": ("policy_loss_weight", "action_space"),
}
#: Keys of the update cadence (off-policy: updates_per_step; on-policy: rollout_len).
CADENCE = ("learn_frequency", "exps_trucation_size", "is_learner_async")
RETURN_FORMS = ("mc", "td", "gae")


def _fields(schema: type) -> set[str]:
    return {f.name for f in dataclasses.fields(schema)}


@dataclass
class _Translation:
    """The layers being rewritten (and as they were given), what is known of the algorithm,
    and the keys set aside."""

    layers: list[Layer]
    given_layers: list[Layer]
    fields: set[str]  # the algorithm's algo_cfg keys here (empty: algorithm unknown)
    on_policy: bool
    ignored: list[str] = field(default_factory=list)
    placed: set[tuple[int, str, str]] = field(default_factory=set)

    def ignore(self, key: str) -> None:
        if key not in self.ignored:
            self.ignored.append(key)

    def value(self, section: str, key: str, default: Any = None) -> Any:
        """The value that the last layer giving ``section.key`` gave."""
        for layer in reversed(self.given_layers):
            if key in layer.get(section, {}):
                return layer[section][key]
        return default

    def given(self, section: str, key: str) -> bool:
        return any(key in layer.get(section, {}) for layer in self.given_layers)

    def count(self, key: str, default: int = 1) -> int:
        """A whole-number JoyRL key of general_cfg or algo_cfg (JoyRL merges the two)."""
        value = self.value("algo_cfg", key, self.value("general_cfg", key, default))
        if key == "n_interactors" and not self.given("general_cfg", key):
            value = self.value("general_cfg", "n_workers", default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{key}={value!r} is not allowed; allowed: a whole number >= 1")
        return value

    def flag(self, key: str) -> bool | None:
        """A true-or-false JoyRL key of algo_cfg (None: not given)."""
        value = self.value("algo_cfg", key)
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"algo_cfg.{key}={value!r} is not allowed; allowed: true, false")
        return value

    def put(self, i: int, section: str, key: str, value: Any, source: str) -> None:
        """Set ``section.key`` in layer ``i``; a different value the layer gives itself is
        a contradiction."""
        body = self.layers[i].setdefault(section, {})
        if key in body and (i, section, key) not in self.placed and body[key] != value:
            raise ConfigError(
                f"{source} and {section}.{key}={body[key]!r} disagree; {source} sets "
                f"{section}.{key} to {value!r} here: set one of them"
            )
        body[key] = value
        self.placed.add((i, section, key))


def _algorithm(layers: list[Layer]) -> tuple[set[str], bool]:
    """The algo_cfg keys of the algorithm the layers name, and whether it learns on-policy."""
    name = GeneralConfig.algo_name
    for layer in layers:
        name = layer.get("general_cfg", {}).get("algo_name", name)
    try:
        config_cls = get_algorithm(canonical_name(str(name))).config_cls
    except KeyError:  # refused in one line when general_cfg is checked
        return set(), False
    return _fields(config_cls), issubclass(config_cls, OnPolicyConfig)


def translate(layers: list[Layer]) -> list[str]:
    """Rewrite the JoyRL keys of each layer in place; the keys with no effect here."""
    fields, on_policy = _algorithm(layers)
    run = _Translation(layers, copy.deepcopy(layers), fields, on_policy)
    for i, layer in enumerate(layers):
        _renames(run, i, layer)
        general = layer.get("general_cfg", {})
        if "mp_backend" in general and general["mp_backend"] is None:
            general["mp_backend"] = "single"  # JoyRL's null: one process
        _devices(run, i, general)
        if fields:
            _cadence(run, i, layer)
            _algo(run, i, layer.get("algo_cfg", {}))
        wrappers = layer.get("env_cfg", {}).get("wrappers")
        if isinstance(wrappers, list) and any(isinstance(w, dict) for w in wrappers):
            names, settings = translate_wrappers(wrappers, "env_cfg.wrappers", run.ignore)
            layer["env_cfg"]["wrappers"] = names
            for key, value in settings.items():
                run.put(i, "env_cfg", key, value, "env_cfg.wrappers")
        for section, keys in NO_EFFECT.items():
            own = _fields(GeneralConfig) if section == "general_cfg" else fields
            for key in keys:
                if key in layer.get(section, {}) and key not in own:
                    layer[section].pop(key)
                    run.ignore(f"{section}.{key}")
    order = ("general_cfg", "algo_cfg", "env_cfg")
    return sorted(run.ignored, key=lambda key: order.index(key.split(".")[0]))


def _renames(run: _Translation, i: int, layer: Layer) -> None:
    schemas = {"general_cfg": GeneralConfig, "env_cfg": EnvConfig}
    renames = [(s, k, v) for s, names in RENAMES.items() for k, v in names.items()]
    renames += [("algo_cfg", k, v) for k, v in ALGO_RENAMES.items()]
    for section, joyrl_key, key in renames:
        body = layer.get(section, {})
        own = run.fields if section == "algo_cfg" else _fields(schemas[section])
        if joyrl_key not in body or joyrl_key in own:
            continue
        value = body.pop(joyrl_key)
        if key not in own:
            run.ignore(f"{section}.{joyrl_key}")
        elif key in body and body[key] != value:
            raise ConfigError(
                f"{section}.{joyrl_key}={value!r} and {section}.{key}={body[key]!r} disagree; "
                f"{joyrl_key} is JoyRL's name for {key}: set one of them"
            )
        else:
            run.put(i, section, key, value, f"{section}.{joyrl_key}")


def _devices(run: _Translation, i: int, general: dict[str, Any]) -> None:
    """JoyRL's device: cpu or cuda sets both roles', custom (its default) leaves each its own;
    the learner's is the device here, the workers act on the CPU."""
    learner = general.pop("learner_device", None)
    if general.get("device") == "custom":
        general.pop("device")
    if learner is not None:
        if "device" in general:
            run.ignore("general_cfg.learner_device")
        else:
            run.put(i, "general_cfg", "device", learner, "general_cfg.learner_device")
    if general.pop("interactor_device", "cpu") != "cpu":
        run.ignore("general_cfg.interactor_device")


def _cadence(run: _Translation, i: int, layer: Layer) -> None:
    """JoyRL's update cadence. Off-policy: an update needs ``learn_frequency`` new
    transitions; in its sync mode (``is_learner_async: false``) the interactors each take
    ``exps_trucation_size`` steps, then the learner one update. On-policy: each interactor
    sends ``exps_trucation_size`` steps, the learner takes n_interactors times that."""
    general, algo = layer.setdefault("general_cfg", {}), layer.setdefault("algo_cfg", {})
    given = [key for key in CADENCE if key in general or key in algo]
    is_async = general.pop("is_learner_async", None)
    if is_async is not None:
        if not isinstance(is_async, bool):
            raise ConfigError(
                f"general_cfg.is_learner_async={is_async!r} is not allowed; allowed: true, false"
            )
        run.put(i, "general_cfg", "lockstep", not is_async, "general_cfg.is_learner_async")
    steps = "exps_trucation_size"
    has_steps = steps in general or steps in algo
    if has_steps:
        general.pop(steps, None)
        algo.pop(steps, None)
    if run.on_policy:
        if "learn_frequency" in algo:
            algo.pop("learn_frequency")
            run.ignore("algo_cfg.learn_frequency")
        _rollout(run, i, algo, has_steps)
        return
    algo.pop("learn_frequency", None)
    if has_steps:
        run.put(i, "general_cfg", "worker_chunk_steps", run.count(steps), f"{steps}")
    if given:
        per_round = run.count("learn_frequency")
        if not run.value("general_cfg", "is_learner_async", False):
            per_round = max(per_round, run.count("n_interactors") * run.count(steps))
        run.put(i, "algo_cfg", "updates_per_step", 1.0 / per_round, f"{given[0]}")


def _rollout(run: _Translation, i: int, algo: dict[str, Any], has_steps: bool) -> None:
    """On-policy: rollout_len from exps_trucation_size, or (a preset without it, as JoyRL
    read them before 0.6.2.6) from the batch_size over the interactors."""
    steps = "exps_trucation_size"
    n = run.count("n_interactors")
    if has_steps:
        run.put(i, "algo_cfg", "rollout_len", run.count(steps), steps)
    if "batch_size" in algo and "batch_size" not in run.fields:
        batch = algo.pop("batch_size")
        if run.given("general_cfg", steps) or run.given("algo_cfg", steps):
            if batch != n * run.count(steps):  # JoyRL sets it to n_interactors x steps
                run.ignore("algo_cfg.batch_size")
        elif isinstance(batch, int) and batch >= 1 and not isinstance(batch, bool):
            run.put(i, "algo_cfg", "rollout_len", math.ceil(batch / n), "algo_cfg.batch_size")
        else:
            raise ConfigError(
                f"algo_cfg.batch_size={batch!r} is not allowed; allowed: a whole number >= 1"
            )


def _algo(run: _Translation, i: int, algo: dict[str, Any]) -> None:
    fields = run.fields
    actor_critic = run.on_policy and {"lr", "critic_lr", "actor_layers"} <= fields
    independ = bool(run.flag("independ_actor"))
    if "critic_loss_coef" in algo and "critic_loss_coef" not in fields:
        coef = algo.pop("critic_loss_coef")
        if "vf_coef" not in fields or run.flag("share_optimizer") is False:
            run.ignore("algo_cfg.critic_loss_coef")
        else:  # JoyRL: coef x MSE; here vf_coef x MSE / 2
            run.put(i, "algo_cfg", "vf_coef", 2.0 * coef, "algo_cfg.critic_loss_coef")
    if actor_critic:
        _learning_rates(run, i, algo)
    else:
        for key in ("actor_lr", "critic_lr"):
            if key in algo and key not in fields:
                algo.pop(key)
                run.ignore(f"algo_cfg.{key}")
    form = algo.pop("return_form", None) if "return_form" not in fields else None
    if form is not None:
        _return_form(run, i, algo, str(form).lower())
    buffer = algo.get("buffer_type")
    if buffer is not None and "buffer_type" not in fields:
        if str(buffer).upper() != "ONPOLICY_QUE":
            raise ConfigError(
                f"algo_cfg.buffer_type={buffer!r} is not allowed for this algorithm, which "
                "learns from its own rollouts; allowed: ONPOLICY_QUE (or leave it out)"
            )
        algo.pop("buffer_type")
    elif str(buffer).upper() == "PER_QUE":
        algo["buffer_type"] = "PER"
    lists = translate_networks(algo, fields, run.on_policy, actor_critic and independ, run.ignore)
    for key, layers in lists.items():
        run.put(i, "algo_cfg", key, layers, f"algo_cfg's JoyRL network keys (for {key})")
    for key in ("independ_actor", "share_optimizer"):
        if key in algo and key not in fields:
            algo.pop(key)
            if not actor_critic:
                run.ignore(f"algo_cfg.{key}")


def _learning_rates(run: _Translation, i: int, algo: dict[str, Any]) -> None:
    """An on-policy actor-critic's learning rates as JoyRL's PPO reads them: with one
    optimizer (share_optimizer, up to 0.6.2; from 0.6.2.2 unless independ_actor) ``lr`` for
    every parameter, else actor_lr and critic_lr. Here the actor learns at lr, the critic
    at critic_lr (null: lr)."""
    joyrl = any(run.given("algo_cfg", k) for k in ("actor_lr", "independ_actor", "share_optimizer"))
    if not joyrl:
        return  # critic_lr is this project's own key
    shared = run.flag("share_optimizer")
    separate = not shared if shared is not None else bool(run.flag("independ_actor"))
    actor_lr = algo.pop("actor_lr", None)
    if not separate:
        if actor_lr is not None:
            run.ignore("algo_cfg.actor_lr")
        if "critic_lr" in algo:
            algo.pop("critic_lr")
            run.ignore("algo_cfg.critic_lr")
        return
    if actor_lr is not None:
        if "lr" in algo and algo["lr"] != actor_lr:
            run.ignore("algo_cfg.lr")
        algo.pop("lr", None)
        run.put(i, "algo_cfg", "lr", actor_lr, "algo_cfg.actor_lr")


def _return_form(run: _Translation, i: int, algo: dict[str, Any], form: str) -> None:
    """JoyRL's PPO returns: gae is GAE(gae_lambda); td (the discounted return to the end of
    the rollout, bootstrapped from the last value) and mc (not bootstrapped) are lambda 1."""
    if form not in RETURN_FORMS:
        raise ConfigError(
            f"algo_cfg.return_form={form!r} is not allowed; allowed: {', '.join(RETURN_FORMS)}"
        )
    if "gae_lambda" not in run.fields:
        run.ignore("algo_cfg.return_form")
    elif form != "gae":
        if algo.pop("gae_lambda", 1.0) != 1.0:
            run.ignore("algo_cfg.gae_lambda")
        run.put(i, "algo_cfg", "gae_lambda", 1.0, f"algo_cfg.return_form={form}")


def no_effect_line(ignored: list[str]) -> str:
    """The one warning line naming the JoyRL keys that have no effect here."""
    return (
        "JoyRL keys accepted with no effect here (docs/config.md, Coming from JoyRL): "
        + ", ".join(ignored)
    )

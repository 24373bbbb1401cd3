"""Prints the config reference (every key, default, meaning) as markdown tables.

``python -m joyrl_ray.config.docs > docs/config.md`` regenerates the reference from the
schema dataclasses, whose field comments (and comment lines right under a field) are the
documentation.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Sequence

from algos import ALGORITHMS, ALIASES
from envs import ENV_FAMILIES, EnvConfig
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.config.joyrl_docs import JOYRL_PRESET_ROWS
from joyrl_ray.config.league import LeagueConfig
from joyrl_ray.config.loading import JOYRL_KEYS
from joyrl_ray.config.multi_agent import MultiAgentConfig, PolicyConfig

FIELD_LINE = re.compile(r"^\s+(\w+): [^=]+= (.+?)(?:\s+# (.*))?$")
CONTINUATION = re.compile(r"^\s+# (.*)$")  # a comment line right under a field goes on


def _comments(cls: type) -> dict[str, str]:
    notes: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        last = None
        for line in inspect.getsource(klass).splitlines():
            match = FIELD_LINE.match(line)
            more = CONTINUATION.match(line)
            if match and match.group(3):
                last = match.group(1)
                notes[last] = match.group(3)
            elif more and last is not None:
                notes[last] += " " + more.group(1)
            else:
                last = None
    return notes


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return ""
    if isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
        return (
            "[" + ", ".join(f"{v.layer_type} {v.layer_dim[0]} {v.activation}" for v in value) + "]"
        )
    return "null" if value is None else str(value)


def _rows(cls: type, prefix: str) -> list[str]:
    notes = {key: text.replace("|", "&#124;") for key, text in _comments(cls).items()}
    rows = []
    for f in dataclasses.fields(cls):
        factory = f.default_factory
        if factory is not dataclasses.MISSING and dataclasses.is_dataclass(factory):
            rows += _rows(factory, f"{prefix}.{f.name}")  # a nested section: one row per key
            continue
        rows.append(f"| `{prefix}.{f.name}` | `{_default(f)}` | {notes.get(f.name, '')} |")
    return rows


def _keys(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def table(cls: type, section: str) -> str:
    rows = _rows(cls, section)
    return "\n".join(["| key | default | meaning |", "| --- | --- | --- |", *rows])


def reference() -> str:
    parts = [
        "## general_cfg",
        table(GeneralConfig, "general_cfg"),
        "## env_cfg",
        table(EnvConfig, "env_cfg"),
        "## multi_agent (a multi-agent env only; see docs/multi_agent.md)",
        table(MultiAgentConfig, "multi_agent"),
        "Each entry of `multi_agent.policies`:",
        table(PolicyConfig, "multi_agent.policies.<name>"),
        "## league (self-play in a multi-agent game; see docs/multi_agent.md#league)",
        table(LeagueConfig, "league"),
    ]
    # Variants that only change defaults (DoubleDQN) share their base's table; a config that
    # adds keys (APPO over PPO) gets its own.
    families: dict[type, list[str]] = {}
    for name, spec in ALGORITHMS.items():
        if ":" in name:  # an algorithm named by import path is not one of the project's
            continue
        keys = _keys(spec.config_cls)
        same = (b for b in families if issubclass(spec.config_cls, b) and _keys(b) == keys)
        families.setdefault(next(same, spec.config_cls), []).append(name)
    for config_cls, names in families.items():
        parts += [f"## algo_cfg for {', '.join(names)}", table(config_cls, "algo_cfg")]
    return "\n\n".join(parts)


#: What each key of JoyRL's quick start and its config notes does here. Keys not listed
#: under general_cfg / env_cfg, and every other algo_cfg key, mean what the tables say.
JOYRL_ROWS = (
    (
        "general_cfg.env_name",
        "JoyRL's env family (the envs/ folder that gives env_cfg its defaults there). The "
        f"one family here is {', '.join(ENV_FAMILIES)}, which holds every env_cfg.id form, "
        "custom envs too; another value stops the run. Checked and written to config.yaml, "
        "no other effect",
    ),
    (
        "general_cfg.device",
        "cpu or cuda, as in JoyRL; auto, the default here, takes cuda when visible",
    ),
    ("general_cfg.mode", "train or test, as in JoyRL"),
    (
        "general_cfg.collect_traj",
        "as in JoyRL: finished episodes to results/trajs_0.pkl, trajs_1.pkl, ... "
        "(1000 a file), in train or test mode",
    ),
    (
        "general_cfg.mp_backend",
        "single or ray, as in JoyRL; null (JoyRL's default) is single. The default here is ray",
    ),
    (
        "general_cfg.n_workers",
        "Worker actors with ray; with single the workers take turns in the one process",
    ),
    (
        "general_cfg.load_checkpoint",
        "true: train resumes from load_path, test loads it (test mode needs load_path either "
        "way); false: load_path is not read, so a stale one does no harm",
    ),
    (
        "general_cfg.load_path",
        "a task directory's name under tasks_dir (tasks/, as in JoyRL) or a path to one",
    ),
    (
        "general_cfg.max_episode",
        "as in JoyRL; training also stops at max_env_steps (100000 unless set; -1: none). "
        "On a resume it counts the whole run's episodes",
    ),
    ("general_cfg.max_step", "as in JoyRL: steps per episode; -1 keeps the env's own limit"),
    ("general_cfg.seed", "as in JoyRL: 0 leaves the run unseeded"),
    (
        "general_cfg.online_eval, online_eval_episode, model_save_fre",
        "as in JoyRL: every model_save_fre updates a checkpoint is written and, with "
        "online_eval, evaluated over online_eval_episode episodes, the best kept as best.pt",
    ),
    ("general_cfg.save_best_model", "as in JoyRL; left blank (null) it counts as true"),
    ("general_cfg.save_fig, show_fig", "as in JoyRL: reward curves to figs/, or on screen"),
    (
        "algo_cfg.value_layers",
        "a list of {layer_type, layer_dim, activation}, as in JoyRL; in it and every other "
        "*_layers list, layer_size is read as layer_dim and a bare number as a one-item list",
    ),
    (
        "algo_cfg.buffer_type",
        "REPLAY_QUE: the uniform replay, a ring of buffer_size transitions; PER: prioritized",
    ),
    (
        "algo_cfg.epsilon_start, epsilon_end, epsilon_decay",
        "epsilon falls from start to end as exp(-env_steps / decay), env steps of all workers",
    ),
    ("algo_cfg.target_update", "updates between target-network syncs"),
    (
        "algo_cfg.batch_size, buffer_size, gamma, lr",
        "as in JoyRL; every algo_cfg key is in its algorithm's table above",
    ),
    ("env_cfg.id", "a gymnasium id, as in JoyRL, or module:EnvId, module:ClassName"),
    (
        "env_cfg.render_mode",
        "null, human or rgb_array, as in JoyRL; test mode renders (rgb_array, and human "
        "without a display, to videos/video.gif), training does not",
    ),
)


def _table(header: str, rows: Sequence[tuple[str, ...]]) -> list[str]:
    cells = [[f"`{row[0]}`", *(text.replace("|", "&#124;") for text in row[1:])] for row in rows]
    bar = "| " + " | ".join("---" for _ in cells[0]) + " |"
    return [header, bar, *("| " + " | ".join(row) + " |" for row in cells)]


def joyrl_section() -> str:
    """``## Coming from JoyRL``: what a JoyRL yaml's keys do here."""
    aliases = "; ".join(f"{a.name} runs {a.target} ({a.note})" for a in ALIASES.values())
    rows = [
        (
            "general_cfg.algo_name",
            f"the names in the algo_cfg tables; {aliases}. Task directories and checkpoints "
            "name the algorithm that runs",
        ),
        *JOYRL_ROWS,
        ("env_cfg.env_id", f"JoyRL's name for env_cfg.{JOYRL_KEYS['env_cfg']['env_id']}"),
    ]
    lines = [
        "## Coming from JoyRL",
        "",
        "JoyRL's quick-start yaml runs here as JoyRL prints it (tests/data/joyrl_quick_start"
        ".yaml): the same three sections and keys. What each key of its quick start does here:",
        "",
        *_table("| JoyRL key | here |", rows),
        "",
        "JoyRL's later presets (its presets/ folder, one yaml per env and algorithm; copies "
        "of five in tests/data/joyrl/) run here as they are written too. What their further "
        "keys do here, with the first JoyRL release (on PyPI) whose source holds each. A key "
        "a preset leaves out takes this project's default, not JoyRL's; notably "
        "algo_cfg.loss: JoyRL's Q networks learn with MSE, this project's with huber by "
        "default, and JoyRL's CartPole-v1 preset of the plain Q network, as written, stays "
        "near a return of 10 over 20,000 env steps here with huber and reaches 200 within "
        "5,000 with algo_cfg.loss=mse. A key with no effect here is accepted, and the run "
        "names all of them in one warning line:",
        "",
        *_table("| JoyRL key | since JoyRL | here |", list(JOYRL_PRESET_ROWS)),
    ]
    return "\n".join(lines)


def page() -> str:
    """The whole of ``docs/config.md``."""
    intro = (
        "# Config reference\n\n"
        "Every key, its default and its meaning. Generated from the schema dataclasses by\n"
        "`python -m joyrl_ray.config.docs > docs/config.md`; do not edit by hand.\n\n"
        "Defaults come first, then the `--yaml` file, then `section.key=value` arguments.\n"
        "`-1` means no limit."
    )
    return f"{intro}\n\n{reference()}\n\n{joyrl_section()}\n"


if __name__ == "__main__":
    print(page(), end="")

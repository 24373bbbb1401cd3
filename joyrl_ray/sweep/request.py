"""What a sweep was asked for, kept in its directory so that ``--resume`` can go on with it.

``sweep_request.yaml`` holds the run yaml's sections, the command-line overrides and the
sweep's own mapping, as they were given: a resumed sweep checks and builds them again,
exactly as the first start did.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from joyrl_ray.config import ConfigError
from joyrl_ray.run.atomic_file import atomic_write_text

REQUEST_FILE = "sweep_request.yaml"
TUNE_DIR = "tune"  # Ray Tune's experiment, under the sweep's directory


@dataclass(frozen=True)
class SweepRequest:
    run_yaml: dict[str, Any]
    overrides: list[str]
    sweep: Any

    def save(self, root: Path) -> None:
        data = {"run_yaml": self.run_yaml, "overrides": self.overrides, "sweep": self.sweep}
        atomic_write_text(yaml.safe_dump(data, sort_keys=False), root / REQUEST_FILE)

    @classmethod
    def load(cls, root: Path) -> SweepRequest:
        """The request saved in the sweep directory ``root``; one line when it is not one."""
        file = root / REQUEST_FILE
        if not root.is_dir():
            raise ConfigError(f"--resume {root}: no such directory (give a sweep's directory)")
        if not file.is_file() or not (root / TUNE_DIR).is_dir():
            hint = ""
            if (root / "models").is_dir():  # a run's task directory
                hint = (
                    f"; a run resumes with: python main.py --yaml {root / 'config.yaml'} "
                    f"general_cfg.load_checkpoint=true general_cfg.load_path={root}"
                )
            raise ConfigError(
                f"--resume {root}: not a sweep directory (no {REQUEST_FILE} and {TUNE_DIR}/)" + hint
            )
        data = yaml.safe_load(file.read_text())
        return cls(dict(data["run_yaml"]), list(data["overrides"]), data["sweep"])

"""What W&B wrote for an offline run, read without a network: its ``run-<id>.wandb`` file.

W&B keeps an offline run's config, history, summary and files in one log of protobuf
records (those that ``wandb sync`` uploads later); it no longer ships a reader for it in
Python. The log is LevelDB's record format after a 7-byte header (``:W&B``, a magic
number, a version): 32 KiB blocks of records, each a 7-byte header (crc32, length, kind:
1 whole, 2 first, 3 middle, 4 last part) and its bytes. The records themselves are parsed
with W&B's own protobuf classes.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADER = b":W&B"
BLOCK = 32 * 1024
RECORD_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> Iterator[Any]:
    """Every record of a ``.wandb`` file, as ``wandb_internal_pb2.Record``."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[: len(HEADER)] == HEADER, f"{path} is not a W&B run file"
    pos, parts = RECORD_HEADER, b""
    while pos + RECORD_HEADER <= len(data):
        room = BLOCK - pos % BLOCK
        if room < RECORD_HEADER:  # a block's tail too short for a header is padding
            pos += room
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + RECORD_HEADER])
        if kind == 0:
            break
        parts += data[pos + RECORD_HEADER : pos + RECORD_HEADER + length]
        pos += RECORD_HEADER + length
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(parts)
            parts = b""
            yield record


@dataclass
class OfflineRun:
    """The parts of an offline run that a test reads."""

    run_id: str = ""
    name: str = ""
    project: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)  # one dict per logged row
    files: list[str] = field(default_factory=list)
    step_metrics: dict[str, str] = field(default_factory=dict)  # metric (or glob): its x axis
    exit_code: int | None = None


def read_offline_run(run_dir: Path) -> OfflineRun:
    """The offline run in ``run_dir`` (``.../wandb/offline-run-<time>-<id>``)."""
    (path,) = run_dir.glob("run-*.wandb")
    run = OfflineRun()
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.run_id, run.name = record.run.run_id, record.run.display_name
            run.project = record.run.project
            for item in record.run.config.update:
                run.config[item.key] = json.loads(item.value_json)
        elif kind == "history":
            row = {
                "/".join(i.nested_key) or i.key: json.loads(i.value_json)
                for i in record.history.item
            }
            run.history.append(row)
        elif kind == "files":
            run.files += [f.path for f in record.files.files]
        elif kind == "metric" and record.metric.step_metric:
            metric = record.metric
            run.step_metrics[metric.name or metric.glob_name] = metric.step_metric
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
    return run

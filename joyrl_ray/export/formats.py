"""The file formats: how an :class:`~algos.export.ActingGraph` is written, and how the
written file is run again for the check (by the runtime a user of that format would use).

ONNX goes through ``torch.onnx.export`` with ``dynamo=True`` (``torch.export``, then
onnxscript's translation; the older TorchScript-based exporter is deprecated), the batch
axis of every input and output dynamic; the check runs the file in ONNX Runtime.
TorchScript goes through ``torch.jit.trace`` (the graphs have no data-dependent branch) and
``torch.jit.save``; the check runs ``torch.jit.load``. ONNX needs the optional extra
(``requirements-export.txt``); TorchScript needs torch alone.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from algos.export import ActingGraph

#: The ONNX opset of the files (torch 2.13's default; ONNX Runtime runs it from 1.18 on).
ONNX_OPSET = 20
#: The file inside a TorchScript export that names its inputs and outputs (JSON).
SIGNATURE_FILE = "signature.json"

#: Runs an exported file: the inputs (numpy, in the graph's order) to its outputs, in order.
Runner = Callable[[list[np.ndarray]], list[np.ndarray]]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporters' progress prints, warnings and log lines kept out of the command's
    output (one line); a failure still raises."""
    loggers = [logging.getLogger(name) for name in ("torch.onnx", "torch.export", "onnxscript")]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def signature(graph: ActingGraph) -> dict[str, list[dict[str, Any]]]:
    """Each input and output: its name, shape (``"batch"`` first) and dtype."""
    with torch.no_grad():
        outputs = graph.module(*graph.sample)

    def entries(names: tuple[str, ...], tensors: tuple[torch.Tensor, ...]) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "shape": ["batch", *(int(n) for n in tensor.shape[1:])],
                "dtype": str(tensor.dtype).removeprefix("torch."),
            }
            for name, tensor in zip(names, tensors, strict=True)
        ]

    return {
        "inputs": entries(graph.inputs, graph.sample),
        "outputs": entries(graph.outputs, tuple(outputs)),
    }


def write(fmt: str, graph: ActingGraph, path: Path) -> None:
    """Write ``graph`` to ``path`` in format ``fmt`` (a TorchScript file carries its
    :func:`signature` as ``SIGNATURE_FILE``, which ``torch.jit.load`` reads back)."""
    with _quiet(), torch.no_grad():
        if fmt == "onnx":
            batch = torch.export.Dim("batch")
            torch.onnx.export(
                graph.module,
                graph.sample,
                str(path),
                input_names=list(graph.inputs),
                output_names=list(graph.outputs),
                dynamo=True,
                opset_version=ONNX_OPSET,
                external_data=False,
                verbose=False,
                dynamic_shapes=tuple({0: batch} for _ in graph.inputs),
            )
        else:
            traced = torch.jit.trace(graph.module, graph.sample)
            extra = {SIGNATURE_FILE: json.dumps(signature(graph))}
            torch.jit.save(traced, str(path), _extra_files=extra)


def load(fmt: str, path: Path, graph: ActingGraph) -> Runner:
    """A function running the file at ``path`` as a user of the format would."""
    if fmt == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])

        def run_onnx(inputs: list[np.ndarray]) -> list[np.ndarray]:
            feeds = dict(zip(graph.inputs, inputs, strict=True))
            return [np.asarray(x) for x in session.run(list(graph.outputs), feeds)]

        return run_onnx

    module = torch.jit.load(str(path))

    def run_torchscript(inputs: list[np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            outputs = module(*(torch.from_numpy(x) for x in inputs))
        return [x.numpy() for x in outputs]

    return run_torchscript

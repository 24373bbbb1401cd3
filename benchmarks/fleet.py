"""A fleet of synthetic workers against K replay shards and the coordinator.

    python benchmarks/fleet.py                          # N in 16, 64; K in 1, 2, 4
    python benchmarks/fleet.py --workers 16 64 128 --seconds 10

Each synthetic worker is a Ray actor that imports no torch: it holds one pre-made chunk
(``--chunk`` transitions of ``--obs-dim`` float32 observations, put in the object store
once) and pushes it as a real worker does (``ReplaySender.send``: the rows and
the report to its shard ``k mod K`` in one call, which forwards the reports of its workers
to the coordinator a few times a second, and whose ack carries the stop and newer
weights), but by reference, so that the per-row work is the shard's alone and dozens of
workers fit on two cores; ``--pushes-per-s`` times a second, sleeping in between. A
sampler actor takes rounds of batches from every shard at the same time, as a learner
does (``ShardSampler``), at a learner's pace (``--sample-batches-per-s``).

Per point it prints ingest (transitions stored per second), the insert-ack latency p50 /
p99 seen by the workers, the sampler's round latency p50 / p99, and each plane actor's
busy share: its process's CPU seconds over the window's wall seconds (from /proc). The
last line is one JSON object: ``{"ingest_per_s": {"<workers>": {"<shards>": x}},
"ack_p99_ms": {...}, "coordinator_busy": {"<workers>": x}, "shard_busy": {"<workers>":
{"<shards>": x}}}`` (``coordinator_busy`` at the largest K; ``shard_busy`` the busiest
shard's share).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np  # noqa: E402

from joyrl_ray.backends.planes import PlaneSetup, RayPlanes  # noqa: E402
from joyrl_ray.control.coordinator import StopRule  # noqa: E402
from joyrl_ray.data.clients import DataServerClient  # noqa: E402
from joyrl_ray.data_needs import ReplayNeeds  # noqa: E402
from joyrl_ray.flows.replay import ReplaySender, ShardAck  # noqa: E402
from joyrl_ray.roles.learner.sampling import ShardSampler  # noqa: E402
from joyrl_ray.wire.messages import EpisodeColumns, WorkerReport  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def make_chunk(rows: int, obs_dim: int, seed: int) -> dict[str, np.ndarray]:
    """One chunk of folded transitions, as a worker pushes them."""
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((rows, obs_dim)).astype(np.float32)
    return {
        "obs": obs,
        "next_obs": obs + 0.01,
        "actions": rng.integers(0, 2, rows).astype(np.int64),
        "rewards": np.ones(rows, np.float32),
        "discounts": np.full(rows, 0.99, np.float32),
    }


class FleetWorker:
    """Pushes a pre-made chunk at a set rate through a real ``ReplaySender``."""

    def __init__(self, worker_id: int, rows: int, obs_dim: int) -> None:
        import ray

        self.worker_id = worker_id
        self.chunk_ref = ray.put(make_chunk(rows, obs_dim, worker_id))
        self.rows = rows
        self.sender: ReplaySender | None = None

    def connect(self, sender: ReplaySender) -> None:
        self.sender = sender

    def run(self, pushes_per_s: float, seconds: float, start_at: float) -> dict[str, Any]:

        sender = self.sender
        assert sender is not None
        period = 1.0 / pushes_per_s
        # Workers start spread over one period, not all at once.
        next_at = start_at + (self.worker_id * 0.618 % 1.0) * period
        end = start_at + seconds
        latencies: list[float] = []
        pushed = 0
        version = 0
        while True:
            now = time.time()
            if now >= end:
                break
            if next_at > now:
                time.sleep(next_at - now)
            next_at += period
            report = WorkerReport(self.worker_id, self.rows, EpisodeColumns.empty())
            t0 = time.perf_counter()
            # As ReplaySender.send, with the chunk by reference: Ray hands the
            # shard the arrays, so the shard does all the per-row work.
            chunk: Any = self.chunk_ref
            insert = sender.shard.insert(self.worker_id, chunk, None, report, version)
            ack = ShardAck(insert, report, self.rows, version, sender).result(60)
            latencies.append(time.perf_counter() - t0)
            if ack.weights is not None:
                version = ack.weights.version
            pushed += self.rows
        return {"pushed": pushed, "latencies": latencies}


class FleetSampler:
    """Takes rounds of batches from every shard, as a learner's ``ShardSampler`` does."""

    def run(
        self,
        shards: list[DataServerClient],
        rows: int,
        batches_per_s: float,
        seconds: float,
        start_at: float,
    ) -> dict[str, Any]:
        sampler = ShardSampler(shards, rank=0, rows=rows, max_updates=4)
        time.sleep(max(0.0, start_at - time.time()))
        end = start_at + seconds
        latencies: list[float] = []
        batches = 0
        while (now := time.time()) < end:
            ahead = batches / batches_per_s - (now - start_at)
            if ahead > 0:  # a learner's pace: its updates take time
                time.sleep(ahead)
            t0 = time.perf_counter()
            _, grant = sampler.next_round(0.05)
            if grant.batches:
                latencies.append(time.perf_counter() - t0)
                batches += len(grant.batches)
        sampler.settle()
        return {"batches": batches, "latencies": latencies}


def cpu_s(pid: int) -> float:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def percentile_ms(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)) * 1000, 2) if values else float("nan")


def run_point(
    workers: list[Any], sampler: Any, n_shards: int, args: argparse.Namespace
) -> dict[str, Any]:
    import ray

    needs = ReplayNeeds(
        batch_size=args.batch,
        buffer_size=args.buffer,
        learn_start=args.batch,
        updates_per_step=args.updates_per_step,
    )
    setup = PlaneSetup(
        stop_rule=StopRule(),
        needs=needs,
        n_workers=len(workers),
        n_shards=n_shards,
        learner_lag_tolerance=-1,  # never throttle: measure what the shards take in
    )
    planes = RayPlanes(setup, max_pushes_in_flight=1)
    try:
        ray.get([w.connect.remote(planes.sender(i)) for i, w in enumerate(workers)])
        shard_pids = [s.where().result(60).pid for s in planes.data.clients]
        coordinator_pid = planes.coordinator.drain_reports().result(60).placements[0].pid
        start_at = time.time() + 1.0
        runs = [w.run.remote(args.pushes_per_s, args.seconds, start_at) for w in workers]
        sampled = sampler.run.remote(
            planes.data.clients, args.batch, args.sample_batches_per_s, args.seconds, start_at
        )
        time.sleep(max(0.0, start_at - time.time()))
        cpu0 = {pid: cpu_s(pid) for pid in [coordinator_pid, *shard_pids]}
        stored0 = sum(s.stats().result(60).transitions_stored for s in planes.data.clients)
        t0 = time.time()
        time.sleep(args.seconds)
        stored1 = sum(s.stats().result(60).transitions_stored for s in planes.data.clients)
        wall = time.time() - t0
        cpu = {pid: (cpu_s(pid) - c) / wall for pid, c in cpu0.items()}
        results = ray.get(runs)
        sample = ray.get(sampled)
    finally:
        planes.kill()
    acks = [lat for r in results for lat in r["latencies"]]
    return {
        "ingest_per_s": round((stored1 - stored0) / wall),
        "offered_per_s": round(len(workers) * args.pushes_per_s * args.chunk),
        "ack_p50_ms": percentile_ms(acks, 50),
        "ack_p99_ms": percentile_ms(acks, 99),
        "sample_p50_ms": percentile_ms(sample["latencies"], 50),
        "sample_p99_ms": percentile_ms(sample["latencies"], 99),
        "sampled_per_s": round(sample["batches"] * args.batch / args.seconds),
        "coordinator_busy": round(cpu[coordinator_pid], 3),
        "shard_busy": [round(cpu[pid], 3) for pid in shard_pids],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--chunk", type=int, default=1024, help="transitions per push")
    parser.add_argument("--obs-dim", type=int, default=64)
    parser.add_argument("--pushes-per-s", type=float, default=5.0, help="per worker")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument(
        "--sample-batches-per-s", type=float, default=400.0, help="the sampler's pace"
    )
    parser.add_argument("--buffer", type=int, default=1_000_000)
    parser.add_argument("--updates-per-step", type=float, default=0.25)
    parser.add_argument("--num-cpus", type=int, default=2)
    args = parser.parse_args()

    import ray

    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    out: dict[str, dict[str, Any]] = {
        "ingest_per_s": {},
        "ack_p99_ms": {},
        "coordinator_busy": {},
        "shard_busy": {},
    }
    worker_cls = ray.remote(FleetWorker).options(num_cpus=0)
    sampler = ray.remote(FleetSampler).options(num_cpus=0).remote()
    try:
        for n in args.workers:
            workers = [worker_cls.remote(i, args.chunk, args.obs_dim) for i in range(n)]
            ray.get([w.connect.remote(None) for w in workers])  # every worker is up
            for k in args.shards:
                point = run_point(workers, sampler, k, args)
                print(
                    f"workers {n:4d} shards {k}: ingest {point['ingest_per_s']:>9,}/s "
                    f"(offered {point['offered_per_s']:,}/s)  ack p50/p99 "
                    f"{point['ack_p50_ms']}/{point['ack_p99_ms']} ms  sample p50/p99 "
                    f"{point['sample_p50_ms']}/{point['sample_p99_ms']} ms "
                    f"({point['sampled_per_s']:,} rows/s)  busy: coordinator "
                    f"{point['coordinator_busy']:.0%}, shards "
                    + ", ".join(f"{b:.0%}" for b in point["shard_busy"]),
                    flush=True,
                )
                out["ingest_per_s"].setdefault(str(n), {})[str(k)] = point["ingest_per_s"]
                out["ack_p99_ms"].setdefault(str(n), {})[str(k)] = point["ack_p99_ms"]
                out["shard_busy"].setdefault(str(n), {})[str(k)] = max(point["shard_busy"])
                out["coordinator_busy"][str(n)] = point["coordinator_busy"]
            for w in workers:
                ray.kill(w)
    finally:
        ray.shutdown()
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""A policy's agents' transitions cut into chunks: every one once, in its agent's order, with
pieces that end where their agent's episode does not marked truncated."""

from __future__ import annotations

import numpy as np

from joyrl_ray.batch import ACTIONS, NEXT_OBS, OBS, REWARDS, TERMINATED, TRUNCATED
from joyrl_ray.roles.worker.agent_rows import AgentRows


def decide(rows: AgentRows, slots: list[int], step: int) -> None:
    """Each slot decides: its observation says (slot, step), its action is step."""
    obs = np.array([[s, step] for s in slots], np.float32)
    rows.decide(np.array(slots), obs, np.full(len(slots), step), {"log_prob": np.zeros(len(slots))})


def complete(rows: AgentRows, slot: int, step: int, done: bool = False) -> None:
    rows.complete(slot, 1.0, done, False, np.array([slot, step + 1], np.float32))


def test_a_slot_that_decides_less_often_holds_no_chunk_back_and_each_transition_comes_once() -> (
    None
):
    # Slot 0 decides every step; slot 1 (a second player, an agent that left) every third.
    rows = AgentRows(slots=2, length=4)
    chunks = []
    for step in range(30):
        slots = [0, 1] if step % 3 == 0 else [0]
        decide(rows, slots, step)
        for slot in slots:
            complete(rows, slot, step, done=(slot == 0 and step % 7 == 6))
        while rows.full:
            chunks.append(rows.take())
    assert len(chunks) == 5  # 30 + 10 transitions: 5 chunks of 8, nothing left waiting
    # Column after column: each column's pieces in order, then the next column's.
    seen = np.concatenate([c[OBS].transpose(1, 0, 2).reshape(-1, 2) for c in chunks])
    assert len({tuple(o) for o in seen}) == len(seen) == 40  # every transition once
    for slot in (0, 1):  # in its own order
        steps = [int(s) for s, t in zip(seen[:, 1], seen[:, 0], strict=True) if t == slot]
        assert steps == sorted(steps)
    chunk = chunks[0]
    assert chunk[OBS].shape == (4, 2, 2) and chunk[REWARDS].shape == (4, 2)
    assert np.array_equal(chunk[NEXT_OBS][..., 1], chunk[OBS][..., 1] + 1)


def test_a_piece_ends_truncated_where_its_agent_goes_on_and_terminated_where_it_ended() -> None:
    rows = AgentRows(slots=2, length=3)
    for step in range(3):
        decide(rows, [0, 1], step)
        complete(rows, 0, step, done=step == 1)
        complete(rows, 1, step)
    chunk = rows.take()
    # Within a column, consecutive transitions of one slot continue; every piece's last
    # transition ends it: terminated where the episode ended, truncated elsewhere.
    ends = chunk[TERMINATED] | chunk[TRUNCATED]
    assert ends[-1].all()  # the chunk's last row ends every piece
    assert chunk[TERMINATED].sum() == 1
    for t in range(2):
        for c in range(2):
            same = chunk[OBS][t, c, 0] == chunk[OBS][t + 1, c, 0]
            continues = chunk[OBS][t + 1, c, 1] == chunk[OBS][t, c, 1] + 1
            assert ends[t, c] or (same and continues)


def test_an_open_decision_dropped_by_an_env_error_ends_its_agents_piece_truncated() -> None:
    rows = AgentRows(slots=1, length=2)
    decide(rows, [0], 0)
    complete(rows, 0, 0)
    decide(rows, [0], 1)
    assert rows.drop_open(0)  # its env failed before the outcome
    decide(rows, [0], 5)
    complete(rows, 0, 5)
    chunk = rows.take()
    assert chunk[ACTIONS][:, 0].tolist() == [0, 5]
    assert chunk[TRUNCATED][0, 0]  # cut where the env failed: no bootstrap across it


def test_discarded_transitions_never_reach_a_chunk_and_open_decisions_still_take_outcomes() -> None:
    # A policy that may not collect yet (its learner waits for newer weights) forgets what
    # its agents did meanwhile; the decisions still open take their outcomes afterwards.
    rows = AgentRows(slots=2, length=2)
    assert rows.discard() == 0  # nothing held
    for step in range(3):
        decide(rows, [0, 1], step)
        complete(rows, 0, step)
        if step < 2:
            complete(rows, 1, step)
    assert rows.discard() == 5  # slot 1's step-2 decision is still open: kept
    assert not rows.full
    complete(rows, 1, 2)
    for step in (10, 11, 12):
        decide(rows, [0], step)
        complete(rows, 0, step)
    chunk = rows.take()  # what came after the discard, nothing from before it
    assert sorted(int(s) for s in chunk[OBS][..., 1].ravel()) == [2, 10, 11, 12]

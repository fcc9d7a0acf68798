"""Across an interruption: the index batches each training process's DataLoaders asked their workers for
(the loader's own record, worker_hook.py), each rank's interrupted process paired with the next one of its
rank to start, and where the later one's first epoch left the order of the epoch the interrupted one was
in.  observed.py puts it in a run's summary (`resumed_orders`), where the doctor's checks read it (24, 35)
and the grader (`resumed_order`) says it in words."""
from __future__ import annotations

from collections import Counter


def asked_orders(workers: list[dict], epochs: list[dict] | None = None) -> dict[int, list[list[list[int]]]]:
    """Each training process (by pid, in the order they started) and, for each of its iterators in
    turn, the index batches its workers were asked for, in the order the sampler gave them.  With the
    loop's `epochs` tallies: only the iterators the loop received a batch from (an iterator a library
    makes and drops before the loop, whose workers were asked for their first batches all the same,
    is no order); each tally names its iterator's workers."""
    delivered = {pid for e in epochs or [] if e.get("batches", 0) > 0 for pid in e.get("worker_pids", [])}
    by_parent: dict[int, list[dict]] = {}
    for worker in sorted(workers, key=lambda w: w.get("started", 0)):
        if worker.get("asked"):
            by_parent.setdefault(worker.get("ppid"), []).append(worker)
    processes = {}
    for ppid, group in by_parent.items():
        iterators: dict[int, list] = {}
        turn: Counter = Counter()
        for worker in group:  # the k-th worker with an id belongs to the k-th iterator
            iterator = iterators.setdefault(turn[worker.get("worker_id")], [])
            if not delivered or worker.get("pid") in delivered:
                iterator.extend(worker["asked"])
            turn[worker.get("worker_id")] += 1
        processes[ppid] = [[indices for _, indices in sorted(asked)] for _, asked in sorted(iterators.items())
                           if asked]
    return processes


def pairs_by_rank(processes: dict[int, list], loaders: list[dict]) -> dict:
    """Each rank's training processes in the order they started, (pid, iterators), by the rank their loaders
    were built on (None: a job of one process)."""
    ranks = {loader.get("pid"): loader.get("rank") for loader in loaders if loader.get("rank") is not None}
    by_rank: dict = {}
    for pid, iterators in processes.items():
        by_rank.setdefault(ranks.get(pid), []).append((pid, iterators))
    return by_rank


def compared(interrupted: list, resumed: list) -> dict:
    """The resumed process's first iterator against the interrupted process's last one, batch for batch from
    where it resumed (its first epoch being shorter by the batches it skipped), and every sample of the epoch
    counted across the two: the interrupted one's batches before that point, then the resumed one's."""
    full, cut = interrupted[0], interrupted[-1]
    skipped = len(full) - len(resumed)
    differ = [p for p in range(len(resumed)) if 0 <= skipped + p < len(cut) and resumed[p] != cut[skipped + p]]
    at = differ[0] if differ else (0 if skipped < 0 else None)
    # how many distinct samples an epoch holds, not which: a rank's share of an epoch changes each epoch
    counts = Counter(i for batch in cut[:max(skipped, 0)] + resumed for i in batch)
    return {"batches": len(full), "skipped": skipped, "differ_at": None if at is None else skipped + at,
            "asked": resumed[at][:4] if at is not None and resumed else None,
            "was": cut[skipped + at][:4] if differ else None,
            "twice": sum(n - 1 for n in counts.values() if n > 1),
            "never": max(len({i for b in full for i in b}) - len(counts), 0)}


def _ended(pid: int, epochs: list[dict]) -> bool | None:
    """Whether every epoch the process received batches from ran to its end (None: no tally of it); a process
    cut inside one, by a signal or by a loop that stopped to checkpoint and leave, has one that did not."""
    own = [e for e in epochs if e.get("pid") == pid and e.get("batches", 0) > 0]
    return all(e.get("ended") for e in own) if own else None


def resumed_orders(workers: list[dict], epochs: list[dict], loaders: list[dict]) -> list[dict]:
    """For each rank with two training processes whose loaders asked their workers for batches: the first one
    (interrupted: did its last epoch end?) against the next (resumed), as `compared` reads them."""
    found = []
    for rank, processes in sorted(pairs_by_rank(asked_orders(workers, epochs), loaders).items(),
                                  key=lambda item: str(item[0])):
        row = {"rank": rank, "processes": len(processes)}
        if len(processes) >= 2 and processes[0][1] and processes[1][1]:
            (first, interrupted), (second, resumed) = processes[0], processes[1]
            row.update(interrupted=first, resumed=second, interrupted_ended=_ended(first, epochs),
                       **compared(interrupted, resumed[0]))
            # a run cut inside an epoch (its last epoch never ended) followed by one that did not take up its order
            # where it stopped: a resume that lost the order (a first run that ended is no interruption)
            row["order_lost"] = row["interrupted_ended"] is False and bool(
                row["differ_at"] is not None or row["twice"] or row["never"])
        found.append(row)
    return found

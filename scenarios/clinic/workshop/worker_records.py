"""The grade's checks on what each DataLoader worker's own record says (worker_hook.py): the copy it
made, the threads it kept busy and the bytes its sockets received, read by the grading hook from
/proc and the socket calls, and the sampler's indices it was asked for, the loader's own record of
its order.  Never the script's prints: each check a sentence for the attendee.  observations.py
documents the keys.
"""
from __future__ import annotations

import os
from collections import Counter


def _made_batches(seen: dict) -> list[dict]:
    return [w for w in seen.get("workers", []) if w.get("batches", 0) > 1]


def worker_figures(seen: dict) -> dict:
    """The figures these checks judge, from the workers' records: the most busy threads of a worker
    that made batches, the fewest pool threads, and the KB the workers' sockets received per batch
    (None where no worker made one)."""
    workers, made = _made_batches(seen), sum(w.get("batches", 0) for w in seen.get("workers", []))
    received = sum(w.get("socket_bytes", 0) for w in seen.get("workers", []))
    return {"busy_threads": max((w.get("busy_threads", 0) for w in workers), default=None),
            "pool_threads": min((w.get("pool_threads", 0) for w in workers), default=None),
            "worker_net_kb_per_batch": received / 1024 / made if made else None}


def thread_problems(wanted: dict, seen: dict) -> list[str]:
    """`busy_threads` (the most a worker may keep busy) and `pool_threads` (the fewest threads of a pool
    besides the worker loop's own, each with a quarter as much CPU as the busiest of them)."""
    problems = []
    workers = _made_batches(seen)
    most, least = wanted.get("busy_threads"), wanted.get("pool_threads")
    if least is not None and hasattr(os, "sched_getaffinity"):  # a pool is as large as the CPUs, at most
        least = min(least, len(os.sched_getaffinity(0)))
    over = [w for w in workers if most is not None and w.get("busy_threads", 0) > most]
    if over:
        busiest = max(over, key=lambda w: w.get("busy_threads", 0))
        problems.append(f"{len(over)} of the {len(workers)} DataLoader workers kept more than {most} thread"
                        f"{'s' if most != 1 else ''} busy (the grader read each thread's CPU from /proc: worker "
                        f"{busiest.get('worker_id')} had {busiest['busy_threads']}, CPU s per thread "
                        f"{busiest.get('thread_cpu_s')}): the libraries' pools still run in every worker")
    under = [w for w in workers if least is not None and w.get("pool_threads", 0) < least]
    if under:
        problems.append(f"{len(under)} of the {len(workers)} DataLoader workers kept fewer than {least} pool threads "
                        f"busy besides the worker loop's own (the grader read each thread's CPU from /proc: "
                        f"{', '.join(str(w.get('pool_threads', 0)) for w in under)}; CPU s per thread "
                        f"{under[0].get('thread_cpu_s')}): the work ran on one thread in the worker")
    return problems


def socket_problems(wanted: dict, seen: dict) -> list[str]:
    """`worker_net_kb_per_batch`: the bytes the workers' sockets received per batch they made."""
    least, received = wanted.get("worker_net_kb_per_batch"), worker_figures(seen)["worker_net_kb_per_batch"]
    if least is None or received is None or received >= least:
        return []
    return [f"the DataLoader workers' sockets received {received:.3g} KB per batch, under the {least:g} KB a "
            "batch's remote reads bring: the remote reads happened somewhere else than in the workers "
            "(the training process fetched the data first?)"]


def copy_problems(wanted: dict, seen: dict) -> list[str]:
    """`own_copy = { read_mb, uss_growth_mb }`: a worker that read at least read_mb (/proc's rchar) and
    whose own memory (USS, from its smaps) grew at least uss_growth_mb in its loop made a copy of its own.
    Either alone is no copy: a worker reading records by offset reads much and keeps nothing; a fix's
    workers grow where they reuse pages the training process freed before the fork, and read nothing."""
    rule = wanted.get("own_copy")
    if not rule:
        return []
    copies = [w for w in seen.get("workers", []) if (w.get("read_bytes") or 0) / 2**20 >= rule["read_mb"]
              and (w.get("uss_end_mb") or 0) - (w.get("uss_start_mb") or 0) >= rule["uss_growth_mb"]]
    if not copies:
        return []
    worker = copies[0]
    return [f"{len(copies)} of the {len(seen.get('workers', []))} DataLoader workers read the data and kept a copy of "
            f"their own (worker {worker.get('worker_id')}: {(worker.get('read_bytes') or 0) / 2**20:.0f} MiB read, its "
            f"USS {worker['uss_end_mb'] - worker['uss_start_mb']:.0f} MiB larger; /proc, read by the grader): "
            "N workers, N copies, however small each is"]


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


def _pairs_by_rank(processes: dict[int, list], loaders: list[dict]) -> dict:
    """Each rank's interrupted and resumed process (the first two of its rank to start), by the rank
    its loaders were built on (None: a job of one process)."""
    ranks = {loader.get("pid"): loader.get("rank") for loader in loaders if loader.get("rank") is not None}
    by_rank: dict = {}
    for pid, iterators in processes.items():
        by_rank.setdefault(ranks.get(pid), []).append(iterators)
    return by_rank


def resume_problems(wanted: dict, seen: dict) -> list[str]:
    """`resumed_order`: on each rank, the resumed process's first iterator asks for the rest of the
    interrupted epoch, in its order; with the batches the interrupted one had asked for before, every
    sample of the epoch once (35: two launches of two ranks, each rank paired with its own)."""
    if not wanted.get("resumed_order"):
        return []
    by_rank = _pairs_by_rank(asked_orders(seen.get("workers", []), seen.get("epochs", [])), seen.get("loaders", []))
    problems = []
    for rank, processes in sorted(by_rank.items(), key=lambda item: str(item[0])):
        if len(processes) < 2 or not processes[0] or not processes[1]:
            return [f"the grader saw the DataLoader's order in {len(processes)} training process(es)"
                    f"{'' if rank is None else f' of rank {rank}'}; the exercise needs the interrupted one and "
                    "the resumed one, each with DataLoader workers"]
        said = _one_resume(processes[0], processes[1][0])
        problems += [s if rank is None else f"rank {rank}: {s}" for s in said]
    return problems


def _one_resume(interrupted: list, resumed: list) -> list[str]:
    full, cut = interrupted[0], interrupted[-1]
    skipped = len(full) - len(resumed)
    problems = []
    differ = [p for p in range(len(resumed)) if 0 <= skipped + p < len(cut) and resumed[p] != cut[skipped + p]]
    if skipped < 0 or differ:
        p = differ[0] if differ else 0
        was = cut[skipped + p][:4] if differ else "none"
        problems.append(f"the resumed job's DataLoader asked its workers for {resumed[p][:4]}… as batch {skipped + p} "
                        f"of the epoch; the interrupted one had asked for {was}… there: the loader started a new "
                        "order (its own record, read by the grader, whatever the loop trained on)")
    # how many distinct samples an epoch holds, not which: a rank's share of an epoch changes each epoch
    counts = Counter(i for batch in cut[:max(skipped, 0)] + resumed for i in batch)
    twice, never = sum(n - 1 for n in counts.values() if n > 1), len({i for b in full for i in b}) - len(counts)
    if twice or never > 0:
        problems.append(f"across the interruption the DataLoaders asked for {twice} samples twice and {max(never, 0)} "
                        "never in the resumed epoch (the interrupted job's batches before the checkpoint, then "
                        "the resumed job's)")
    return problems


def order_problems(wanted: dict, seen: dict) -> list[str]:
    """`new_order_each_epoch`: no training process's DataLoader asks its workers for one epoch's order
    twice (15: a sampler whose epoch is never set repeats it)."""
    if not wanted.get("new_order_each_epoch"):
        return []
    repeated = sum(len(iterators) - len({repr(order) for order in iterators})
                   for iterators in asked_orders(seen.get("workers", [])).values())
    if not repeated:
        return []
    return [f"{repeated} epoch(s) asked the DataLoader workers for the same order as an earlier epoch of the same "
            "process (the loader's own record of the indices, read by the grader): the sampler repeats its "
            "order, whatever the script prints"]


def worker_record_problems(wanted: dict, seen: dict) -> list[str]:
    return (copy_problems(wanted, seen) + thread_problems(wanted, seen) + socket_problems(wanted, seen)
            + resume_problems(wanted, seen) + order_problems(wanted, seen))

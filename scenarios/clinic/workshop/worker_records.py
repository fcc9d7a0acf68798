"""The grade's checks on what each DataLoader worker's own record says (worker_hook.py): the copy it
made, the threads it kept busy and the bytes its sockets received, read by the grading hook from
/proc and the socket calls, and the sampler's indices it was asked for, the loader's own record of
its order.  Never the script's prints: each check a sentence for the attendee.  observations.py
documents the keys.
"""
from __future__ import annotations

import os

from scenarios.clinic.run.resumes import asked_orders, resumed_orders


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


def resume_problems(wanted: dict, seen: dict) -> list[str]:
    """`resumed_order`: on each rank, the resumed process's first iterator asks for the rest of the
    interrupted epoch, in its order; with the batches the interrupted one had asked for before, every
    sample of the epoch once (35: two launches of two ranks, each rank paired with its own; run/resumes.py)."""
    if not wanted.get("resumed_order"):
        return []
    problems = []
    for row in resumed_orders(seen.get("workers", []), seen.get("epochs", []), seen.get("loaders", [])):
        if "resumed" not in row:
            rank = "" if row["rank"] is None else f" of rank {row['rank']}"
            return [f"the grader saw the DataLoader's order in {row['processes']} training process(es){rank}; the "
                    "exercise needs the interrupted one and the resumed one, each with DataLoader workers"]
        problems += [s if row["rank"] is None else f"rank {row['rank']}: {s}" for s in _one_resume(row)]
    return problems


def _one_resume(row: dict) -> list[str]:
    problems = []
    if row["differ_at"] is not None:
        problems.append(f"the resumed job's DataLoader asked its workers for {row['asked']}… as batch "
                        f"{row['differ_at']} of the epoch; the interrupted one had asked for {row['was'] or 'none'}… "
                        "there: the loader started a new order (its own record, read by the grader, whatever the loop "
                        "trained on)")
    if row["twice"] or row["never"]:
        problems.append(f"across the interruption the DataLoaders asked for {row['twice']} samples twice and "
                        f"{row['never']} never in the resumed epoch (the interrupted job's batches before the "
                        "checkpoint, then the resumed job's)")
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

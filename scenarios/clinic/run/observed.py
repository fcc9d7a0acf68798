"""What the grading hook (observe.py) recorded during an attempt's run, read back for the grade.

The records are JSON lines: `loader` (each DataLoader as built), `epoch` (a running tally per
loader and epoch in the training process), `batch` (each batch the training loop received: its
samples' fingerprints, the training process's dataset state, /dev/shm's use), `worker` (a running
tally per DataLoader worker), `made` (each batch a worker handed over: its random states and its
copy of the dataset's state), `raised` (a loader's next() that raised), `resumed` (an iterator made
from a loaded state), `state_loaded` and `state_saved` (a StatefulDataLoader's load_state_dict and
state_dict, the latter beside the loop's position), `compiled_call` and `ddp` (the training step:
step_hooks.py).  A torn or foreign line is skipped.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter

from scenarios.clinic.run.resumes import resumed_orders


def _records(path) -> list[dict]:
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("k"), str):
            found.append(record)
    return found


def delivered(batches: list[dict]) -> dict:
    """Samples as the training loop received them, by loader and epoch: every distinct one, and
    the ones a loader with workers delivered more than once within one epoch."""
    per_epoch: dict[tuple, Counter] = {}
    for batch in batches:
        key = (batch.get("pid"), batch.get("lid"), batch.get("epoch"), batch.get("workers", 0) > 0)
        per_epoch.setdefault(key, Counter()).update(batch.get("fp") or [])
        for position, rows in enumerate(batch.get("fields") or []):  # one tensor's rows: its own count
            per_epoch.setdefault(key + (position,), Counter()).update(rows)
    repeated = {size: sum(n - 1 for key, counts in per_epoch.items() if key[3] and len(key) == size
                          for n in counts.values() if n > 1) for size in (4, 5)}
    not_asked = sum(a != g for b in batches if b.get("asked") and len(b["asked"]) == len(b.get("got") or ())
                    for a, g in zip(b["asked"], b["got"]))
    # Ranks are processes: a sample that reached the loops of two of them in the same epoch of their
    # loaders was trained on by both (29: a stream split by worker, not by rank).
    processes: dict[tuple, set] = {}
    for batch in batches:
        for sample in batch.get("fp") or []:
            processes.setdefault((batch.get("lid"), batch.get("epoch"), sample), set()).add(batch.get("pid"))
    return {"distinct_samples": sum(len(counts) for key, counts in per_epoch.items() if len(key) == 4),
            "repeated_samples": repeated[4], "repeated_field_rows": repeated[5], "samples_not_asked": not_asked,
            "samples_in_two_processes": sum(len(pids) > 1 for pids in processes.values())}


def per_epoch(loaders: dict, epochs: dict, batches: list[dict]) -> list[dict]:
    """Each loader's epochs as the training process received them, with what its loader was (rank,
    stream or not, workers): the samples delivered and how many of them were distinct."""
    received: dict[tuple, Counter] = {}
    order: dict[tuple, list] = {}
    for batch in batches:
        key = (batch.get("pid"), batch.get("lid"), batch.get("epoch"))
        received.setdefault(key, Counter()).update(batch.get("fp") or [])
        order.setdefault(key, []).extend(batch.get("fp") or [])
    rows = []
    for (pid, lid, epoch), tally in sorted(epochs.items(), key=lambda item: tuple(map(str, item[0]))):
        loader = loaders.get((pid, lid), {})
        counts = received.get((pid, lid, epoch), Counter())
        rows.append({"pid": pid, "lid": lid, "epoch": epoch, "rank": loader.get("rank"),
                     "iterable": loader.get("iterable"), "stream_shuffles": loader.get("stream_shuffles"),
                     "stream_epoch": tally.get("stream_epoch"),
                     "workers": tally.get("workers", 0),
                     "class": loader.get("class"), "batches": tally.get("batches", 0),
                     "ended": bool(tally.get("ended")), "sampler": loader.get("sampler"),
                     "shuffle": loader.get("shuffle"),
                     "order": hashlib.sha1("".join(order.get((pid, lid, epoch), [])).encode()).hexdigest()[:16],
                     "samples": sum(counts.values()), "distinct": len(counts)})
    return rows


def draws(made: list[dict]) -> dict:
    """Random states as the workers left them after each batch: the sources that moved in a worker
    (its draws were made there), and how many of those states two workers both reached (the same
    draws twice: copies of one generator)."""
    series: dict[int, list[dict]] = {}
    for record in sorted(made, key=lambda r: (r.get("pid", 0), r.get("n", 0))):
        series.setdefault(record.get("pid"), []).append(record.get("rng") or {})
    moved = sorted({source for states in series.values() for before, after in zip(states, states[1:])
                    for source in after if before.get(source) != after.get(source)})
    owners: dict[tuple, set] = {}
    for pid, states in series.items():
        for state in states:
            for source in moved:
                if source in state:
                    owners.setdefault((source, state[source]), set()).add(pid)
    shared = sorted({source for (source, _), pids in owners.items() if len(pids) > 1})
    return {"drawn_in_workers": moved, "shared_draw_states": sum(len(p) > 1 for p in owners.values()),
            "shared_draw_sources": shared}


def stale_states(batches: list[dict], made: list[dict]) -> int:
    """States of the training process's dataset (an epoch, a curriculum step) under which it received
    batches from workers, that no worker's copy of the dataset ever had when it made a batch."""
    main = {b.get("ds") for b in batches if b.get("workers", 0) > 0 and b.get("ds")}
    return len(main - {m.get("ds") for m in made})


def steps(loaders: dict, batches: list[dict], stepped: dict[str, list[dict]]) -> dict:
    """What the training step did with the batches (step_hooks.py, loop_hook.py's `raised`): the shapes the
    loader delivered against those a compiled module received, each DDP rank's steps and parameters at its
    exit, each loader's next() that raised, and how many distinct values each field of the samples held."""
    values: dict[int, set] = {}
    for batch in batches:
        for position, rows in enumerate(batch.get("fields") or []):
            values.setdefault(position, set()).update(rows)
    return {"delivered_shapes": dict(Counter(str(b.get("shape")) for b in batches if b.get("shape"))),
            "compiled_shapes": dict(Counter(str(c.get("shape")) for c in stepped["compiled_call"])),
            "ddp_ranks": [{key: d.get(key) for key in ("rank", "forwards", "params")} for d in stepped["ddp"]],
            "loader_raised": [{**{key: r.get(key) for key in ("error", "waited_s", "timeout", "where")},
                               "rank": loaders.get((r.get("pid"), r.get("lid")), {}).get("rank")}
                              for r in stepped["raised"]],
            "field_values": [len(values[position]) for position in sorted(values)],
            # per training process (one that built a loader): the batch each iterator made from a loaded state
            # resumed at, past batch 0
            "resumes": {str(pid): sorted(r["at"] for r in stepped["resumed"] if r.get("pid") == pid
                                         and isinstance(r.get("at"), int) and r["at"] > 0)
                        for pid in {pid for pid, _ in loaders}}}


def unused_states(records: list[dict], loaders: dict) -> list[dict]:
    """States loaded into a StatefulDataLoader that the loop never resumed from: after the load, it
    received batches from an iterator of that loader made before it (32: iter() taken first)."""
    loaded: dict[tuple, int] = {}
    unused: Counter = Counter()
    for record in records:
        key = (record.get("pid"), record.get("lid"))
        if record["k"] == "state_loaded":
            loaded[key] = record.get("iterators", 0)
        elif record["k"] == "batch" and key in loaded and record.get("epoch", 0) <= loaded[key]:
            unused[key] += 1
    return [{"pid": pid, "lid": lid, "batches": n, "rank": loaders.get((pid, lid), {}).get("rank")}
            for (pid, lid), n in sorted(unused.items(), key=lambda item: str(item[0]))]


def sigterm_exposed(epochs: list[dict], workers: list[dict]) -> list[dict]:
    """Training processes that catch SIGTERM (a graceful shutdown) with workers that die of it: torch's
    worker handler, or the parent's Python handler inherited by fork, which torch's has replaced (40)."""
    caught = {e.get("pid"): e.get("sigterm_handler") for e in epochs if e.get("sigterm") == "caught"}
    exposed: dict = {}
    for worker in workers:
        trainer = worker.get("ppid")
        if trainer in caught and worker.get("sigterm") == "caught" \
                and worker.get("sigterm_handler") in (None, caught[trainer]):
            exposed.setdefault(trainer, []).append(worker.get("pid"))
    return [{"pid": pid, "handler": caught[pid], "workers": len(pids),
             "of": sum(w.get("ppid") == pid and "sigterm" in w for w in workers)} for pid, pids in exposed.items()]


def _waits_and_pools(records: list[dict]) -> dict:
    """What each long fetch's loop thread waited in (blocked.py: the last reading of a fetch holds its counts),
    and each process's first use of a library's thread pool (pool_hooks.py)."""
    long_fetches = {(r.get("pid"), r.get("at")): r.get("waits", {}) for r in records if r["k"] == "blocked"}
    return {"long_fetch_waits": list(long_fetches.values()), "pools_used": [r for r in records if r["k"] == "pool"]}


def summary(path) -> dict:
    """What the hook recorded: the last record of each loader, epoch and worker, with totals."""
    loaders, epochs, workers, batches, made, compiles = {}, {}, {}, [], [], 0
    stepped: dict[str, list[dict]] = {"compiled_call": [], "ddp": [], "raised": [], "resumed": [], "state_saved": []}
    replaced: dict[str, set] = {"replaced": set(), "unhooked": set()}
    records = _records(path)
    for record in records:
        kind = record["k"]
        if kind == "loader":
            loaders[(record.get("pid"), record.get("lid"))] = record
        elif kind == "epoch":
            epochs[(record.get("pid"), record.get("lid"), record.get("epoch"))] = record
        elif kind == "worker":
            workers[record.get("pid")] = record
        elif kind in replaced:
            replaced[kind].update(record.get("names", []))
        elif kind == "batch":
            batches.append(record)
        elif kind == "made":
            made.append(record)
        elif kind == "compile":  # each start once (torch._dynamo.reset() numbers them from "0/0" again)
            compiles += 1
        elif kind in stepped:
            stepped[kind].append(record)
    return {**_totals(list(loaders.values()), list(epochs.values()), list(workers.values())),
            **delivered(batches), **draws(made), "stale_dataset_states": stale_states(batches, made),
            "shm_peak_mb": max((b["shm_mb"] for b in batches if isinstance(b.get("shm_mb"), (int, float))),
                               default=None),
            "sample_bytes": min((b["bytes"] for b in batches if b.get("workers", 0) > 0
                                 and isinstance(b.get("bytes"), (int, float))), default=None),
            "compiles": compiles,
            "batch_shapes": len({str(b.get("shape")) for b in batches if b.get("shape")}),
            **{kind: sorted(names) for kind, names in replaced.items()}, **steps(loaders, batches, stepped),
            "per_epoch": per_epoch(loaders, epochs, batches), "unused_states": unused_states(records, loaders),
            "sigterm_exposed": sigterm_exposed(list(epochs.values()), list(workers.values())),
            **_waits_and_pools(records),
            "resumed_orders": resumed_orders(list(workers.values()), list(epochs.values()), list(loaders.values())),
            "miscounted_states": [{**{key: r.get(key) for key in ("pid", "lid", "epoch", "says", "received")},
                                   "rank": loaders.get((r.get("pid"), r.get("lid")), {}).get("rank")}
                                  for r in stepped["state_saved"] if r.get("says") != r.get("received")]}


def _totals(loaders: list[dict], epochs: list[dict], workers: list[dict]) -> dict:
    worker_cpu = sum(w.get("cpu_s", 0.0) for w in workers)
    fetch_cpu = sum(w.get("fetch_cpu_s", 0.0) for w in workers)
    fetch_wall = sum(w.get("fetch_wall_s", 0.0) for w in workers)
    read = sum(w.get("read_bytes", 0) for w in workers)
    worker_batches = sum(w.get("batches", 0) for w in workers)
    with_workers = [e for e in epochs if e.get("workers", 0) > 0]
    main_cpu = sum(e.get("main_cpu_s", 0.0) for e in with_workers)
    step, waited = (sum(e.get(key, 0.0) for e in with_workers) for key in ("step_s", "steady_wait_s"))
    return {
        "loaders": loaders, "epochs": epochs, "workers": workers,
        "real_workers": len(workers),
        "worker_batches": worker_batches,
        "worker_cpu_s": round(worker_cpu, 4),
        "worker_fetch_cpu_s": round(fetch_cpu, 4),
        "worker_ms_per_batch": round(1000 * fetch_cpu / worker_batches, 3) if worker_batches else None,
        "worker_wall_ms_per_batch": round(1000 * fetch_wall / worker_batches, 3) if worker_batches else None,
        "worker_read_kb_per_batch": round(read / 1024 / worker_batches, 2) if worker_batches else None,
        "batches": sum(e.get("batches", 0) for e in epochs),
        "samples": sum(e.get("samples", 0) for e in epochs),
        "batches_from_workers": sum(e.get("batches", 0) for e in with_workers),
        "main_cpu_between_batches_s": round(main_cpu, 4),
        # the work the lesson is about: the workers' CPU from an index to its batch (their loop's
        # waiting and pickling left out) against the training thread's own between two batches
        "worker_share": round(fetch_cpu / (fetch_cpu + main_cpu), 4) if fetch_cpu + main_cpu > 0 else None,
        # the training loop's time between batches against its waiting for them, past each first batch
        "loop_busy_share": round(step / (step + waited), 4) if step + waited > 0 else None,
        "undaemonic_workers": sum(1 for w in workers if w.get("daemon") is False),
        # threading locks a worker's dataset still reached after a batch, as the fork copied them
        "inherited_locks": sum(w.get("inherited_locks", 0) for w in workers if w.get("batches", 0)),
        "start_methods": sorted({loader["start_method"] for loader in loaders
                                 if loader.get("workers", 0) > 0 and loader.get("start_method")}),
    }

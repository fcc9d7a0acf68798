"""What the training did with the batches, against the exercise's `observe` table (observations.py lists
the keys): each rank's DDP steps and weights, the shapes the compiled module received, a loader that
raised after a stall, the fields of a sample, a stream's order epoch after epoch, the resumes a loader
made; read from what the grading hook recorded around the step (run/step_hooks.py) and the loop
(run/loop_hook.py).  Each check a sentence."""
from __future__ import annotations

import json
import math
from collections import Counter


def counted(count: float, thing: str) -> str:
    """"1 batch", "3 batches": a count and its thing, as every sentence of the grade says it."""
    return f"{count:g} {thing}{'' if count == 1 else 'es' if thing.endswith(('tch', 'ss', 'sh')) else 's'}"


def _stream_orders_repeated(rows: list[dict]) -> list[str]:
    """Whole epochs of a stream's loader (8 or more distinct samples) that delivered an earlier epoch's
    samples in the same order, as the DataLoader delivered them (39: a shuffle that never hears set_epoch)."""
    earlier: dict[tuple, set] = {}
    repeated = 0
    for row in rows:
        if not (row.get("iterable") and row.get("ended") and row.get("distinct", 0) >= 8):
            continue
        orders = earlier.setdefault((row.get("pid"), row.get("lid")), set())
        repeated += row["order"] in orders
        orders.add(row["order"])
    if not repeated:
        return []
    return [f"{counted(repeated, 'epoch')} of a stream's loader delivered the same samples in the same order as an "
            "earlier epoch (the DataLoader's delivery, seen by the grader): the stream's shuffle must hear each "
            "new epoch"]


def _elements_problems(wanted: dict, delivered: Counter) -> list[str]:
    """`delivered_elements`: the elements of the batches' first tensor the loop received, all batches together
    (34: every token of every sample, padded or not; a crop to a few tokens delivers far fewer)."""
    least = wanted.get("delivered_elements")
    if least is None:
        return []
    got = sum(math.prod(json.loads(shape)) * n for shape, n in delivered.items() if shape.startswith("["))
    if got >= least:
        return []
    return [f"the training loop received {got:,} elements of the batches' first tensor over the run, under the "
            f"{least:,} the samples hold (the DataLoader's delivery, seen by the grader): a batch cut to fit one "
            "shape throws the data away; keep every element and give the step a few shapes"]


def step_problems(wanted: dict, seen: dict) -> list[str]:
    """The training step, seen by step_hooks.py and the loader's next() that raised (loop_hook.py)."""
    problems = []
    ranks = seen.get("ddp_ranks", [])
    if wanted.get("same_steps") and (len(ranks) < 2 or len({(r["forwards"], r["params"]) for r in ranks}) > 1):
        said = ", ".join(f"rank {r['rank']} {counted(r['forwards'], 'step')}"
                         for r in sorted(ranks, key=lambda r: str(r["rank"])))
        apart = "; they ended with different weights" if len({r["params"] for r in ranks}) > 1 else ""
        problems.append(f"the ranks' DistributedDataParallel models took {said or 'no step: no DDP model ran'}{apart}"
                        ": every rank must run the same steps, each joined by its partner's, and end with the same "
                        "weights")
    delivered, compiled = Counter(seen.get("delivered_shapes", {})), Counter(seen.get("compiled_shapes", {}))
    if wanted.get("compiled_step") and delivered - compiled:
        missing = sum((delivered - compiled).values())
        problems.append(f"{counted(missing, 'batch')} the loader delivered never reached the compiled step with its "
                        f"own shape ({', '.join(sorted(delivered - compiled))[:120]}; the compiled module received "
                        f"{sum(compiled.values())} calls): the compiled step must train on the batches as delivered")
    problems += _elements_problems(wanted, delivered)
    problems += _stall_problems(wanted.get("stalled_then_raised"), seen)
    resumes = Counter(wanted.get("resumes", []))
    short = {pid: at for pid, at in seen.get("resumes", {}).items() if resumes - Counter(at)}
    if short:
        said = "; ".join(", ".join(map(str, at)) or "none" for at in short.values())
        problems.append(f"the training processes resumed their loaders at batches {said} (the "
                        f"states torchdata was given); the exercise resumes each at "
                        f"{', '.join(map(str, wanted['resumes']))}: every resume must happen, from the checkpoint the "
                        "run before it wrote")
    if wanted.get("new_stream_order_each_epoch"):
        problems += _stream_orders_repeated(seen.get("per_epoch", []))
    constant = [position for position, count in enumerate(seen.get("field_values", [])) if count < 2]
    if wanted.get("varied_fields") and constant:
        problems.append(f"field{'s' if len(constant) > 1 else ''} {', '.join(map(str, constant))} of the samples "
                        "held one value for every sample (as the DataLoader delivered them): a field emptied so "
                        "that it crosses is not the sample the loop needs")
    return problems


def _stall_problems(least: float | None, seen: dict) -> list[str]:
    """`stalled_then_raised`: a loader's next() raised after its loop waited `least` seconds, and the stall is a
    read that waits (blocked.py's readings of the worker's loop thread during each fetch longer than a second): a
    fetch that slept or computed, then raised, has no read to bound.  The readings are judged only where they
    could be named (an architecture blocked.py knows)."""
    if least is None:
        return []
    if not [r for r in seen.get("loader_raised", []) if (r.get("waited_s") or 0) >= least]:
        return [f"no rank's DataLoader raised after its loop waited {least:g} s or more for a batch "
                f"({len(seen.get('loader_raised', []))} raised sooner): the stall must stay, and the rank "
                "stuck in it must say so itself before the others give up"]
    named = [waits for waits in seen.get("long_fetch_waits", []) if set(waits) - {"other"}]
    if not named or any(waits.get("read", 0) * 2 >= sum(waits.values()) for waits in named):
        return []
    tally: Counter = Counter()
    for waits in named:
        tally.update(waits)
    said = ", ".join(f"{kind} {n}" for kind, n in tally.most_common() if kind != "other")
    return [f"no DataLoader worker waited on a read through its long fetch (its loop thread, read 4 times a "
            f"second: {said}): the stall must stay a read, bounded by a timeout, not replaced by a pause and a "
            "raise of its own"]

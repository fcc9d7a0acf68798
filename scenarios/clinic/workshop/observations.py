"""What the grading hook saw inside PyTorch (scenarios/clinic/run/observe.py, read back by
observed.py) against the exercise's `observe` table: each check a sentence for the attendee.

The keys of the table, each judged on what the hook recorded while the attempt ran, never on
the attempt's prints (every key a minimum):

    workers               processes that ran PyTorch's DataLoader worker loop (default 1); other
                          processes below the script do not count
    batches               batches the training process received from all its DataLoaders, every
                          epoch: the whole workload, not a shorter run through another door
    worker_batches        batches the workers produced (default 1)
    every_worker_batches  batches each worker produced: no worker left idle
    samples               distinct samples (by their bytes) the training loop received, summed over its
                          epochs: the set that must arrive, however it is batched (02: the 84 readable)
    unique                true: no sample arrives twice within an epoch of a loader with workers, as the
                          DataLoader delivered it (what the loop drops afterwards does not count)
                          "every field": no row of any one tensor twice either (11: another record's bytes)
    one_rank_each         true: no sample reaches the training loops of two processes (two ranks) in the same
                          epoch of their loaders (29: a stream split by worker, not by rank); N: no more than N
                          (37: the 16 rare samples a balancing sampler draws again and again reach both)
    requested = N         field N of each sample holds its index: it must be the index the sampler asked
                          for, batch by batch (11: the next record in the file, with its own bytes, is not)
    worker_ms_per_batch   the workers' CPU milliseconds per batch, from taking the index to handing it over,
                          every thread of theirs but the queue's feeder and resource sharer (a pool in
                          __getitem__ counts; pickling the batch does not)
    worker_wall_ms_per_batch  the same span on the wall clock: where the lesson's work is waiting on
                          storage (07), that waiting is done in the workers, not by threads of the loop
    worker_read_kb_per_batch  bytes the workers read (read(2) and kin, /proc's rchar) per batch: where the
                          lesson is reading a file in the workers (18), they read it, not a copy made earlier
    worker_share          that CPU / (that CPU + the training thread's own CPU between batches): the loading
                          is done in the workers, not handed back hollow (a thread pool's spin is not counted)
    compiles              a maximum: the compilations dynamo started in the training process (torch.compile's
                          own events, each graph for a new batch shape; 34: 4)
    draws = "distinct"    a random state moved in the workers as they made batches, and no two workers
                          ever reached the same state (12: the draws as the workers made them)
    current_dataset       true: every state of the training process's dataset (its plain settings: an
                          epoch) under which batches arrived was a worker copy's state when it made one (14)
    shm_peak_mb           the most /dev/shm may hold when a batch arrives, read by the hook (10)
    fresh_locks           true: after making a batch, no worker's dataset still reaches a threading lock
                          the fork copied (01: a fork timed to miss the refresh is still the race)
    sample_bytes          the fewest bytes a sample may have as a loader with workers delivers it, from the
                          lesson's own data (04: a 96x96 RGB crop is 27648 bytes at 8 bits): not hollow
    start_methods         the start methods a loader with workers may use (a list)
    not_samplers          sampler classes no DataLoader may be built with (37: Lightning's DistributedSamplerWrapper,
                          the framework's sampler in place of the user's)
    daemonic              true: every worker is still daemonic at its last batch (17)
    agree                 { printed_figure = "batches" or "samples" }: a count the script prints may
                          not exceed what the hook saw delivered (the prints are a second signal);
                          { printed_share = "loop_busy_share" }: nor a share of the time the loop computed
                          the share the hook timed between batches, past the first (07)
    own_copy              { read_mb, uss_growth_mb }: no worker both read that much (/proc's rchar) and grew
                          its own memory (USS) that much in its loop: a copy of its own (19)
    busy_threads          a maximum: the threads any worker kept busy, each thread's CPU read from /proc by
                          the hook (busy: a quarter of the worker's CPU since its first batch and in each half of
                          that span, scenarios/threads.py; 21: 1)
    pool_threads          the threads each worker kept busy besides its worker loop's own, each with a quarter
                          of the busiest one's CPU, the same census (23: tokenizers' pool, 2 on 2 cores)
    worker_net_kb_per_batch  bytes the workers' sockets received per batch: the remote reads are the
                          workers' (22: the images from the object store, not fetched by the training process)
    resumed_order         true: the resumed process's DataLoader asks its workers for the rest of the
                          interrupted epoch, in the order the interrupted one asked, every sample once (24;
                          35: each rank's processes paired by the rank their loaders were built on)
    new_order_each_epoch  true: no process's DataLoader asks its workers for an earlier epoch's order again (15)
    new_stream_order_each_epoch  true: no whole epoch of a stream's loader (8 or more distinct samples) delivers
                          an earlier epoch's samples in the same order (39: the shuffle never hears set_epoch)
    resumes               [batch, …]: each training process made iterators from loaded StatefulDataLoader states
                          resuming at these batches, at least (36: at 6, and at 6 then 9; torchdata's own record)
Those six are judged in worker_records.py, on each worker's own record; these in training_steps.py:
    same_steps            true: every rank's DistributedDataParallel model ran forward the same number of times and
                          ended with the same parameters (30: an extra batch under no_sync() or a caught timeout
                          leaves them apart)
    compiled_step         true: every batch the loader delivered reached the torch.compile'd module with its own
                          shape (34: not a crop of it, not an uncompiled step)
    delivered_elements    at least this many elements of the batches' first tensor reached the loop, all batches
                          together (34: every token of the samples kept; a crop in the collate delivers fewer)
    stalled_then_raised   seconds: a DataLoader's next() raised after its loop had waited at least that long (31:
                          the stall stays, and the stuck rank says so; its timeout or a deadline of the worker's),
                          and a worker's fetch that lasted past a second waited mostly on a read (run/blocked.py),
                          not a pause before an error of the attempt's own
    varied_fields         true: no field of the samples, tensor or not, holds one value for every sample (33: a
                          caption emptied, a file pickled as None); the hook fingerprints every field
"""
from __future__ import annotations

from scenarios.clinic.workshop.training_steps import counted as _n, step_problems
from scenarios.clinic.workshop.worker_records import worker_record_problems

# A share the script times itself and the hook times around the same calls: the script's clock
# stops a little sooner (its own bookkeeping falls in neither part), so its share can only be lower.
SHARE_SLACK = 0.02
OBSERVE_KEYS = ("workers", "batches", "worker_batches", "every_worker_batches", "worker_ms_per_batch",
                "worker_share", "start_methods", "agree", "daemonic", "samples", "unique", "draws",
                "current_dataset", "shm_peak_mb", "fresh_locks", "sample_bytes", "requested",
                "worker_wall_ms_per_batch", "worker_read_kb_per_batch", "busy_threads", "pool_threads",
                "worker_net_kb_per_batch", "resumed_order", "own_copy", "new_order_each_epoch", "one_rank_each",
                "compiles", "same_steps", "compiled_step", "stalled_then_raised", "varied_fields",
                "new_stream_order_each_epoch", "resumes", "not_samplers", "delivered_elements")


def _replaced_and_agree(wanted: dict, seen: dict, reported: dict) -> list[str]:
    problems = []
    if seen.get("replaced"):
        problems.append(f"the attempt replaced {', '.join(seen['replaced'])} while it ran: the grade reads the "
                        "script's own output and exit status, so these stay Python's")
    if seen.get("unhooked"):
        problems.append(f"the attempt put back PyTorch's {', '.join(seen['unhooked'])} over the grading hook: the "
                        "grade judges what the DataLoaders did through that hook, so it stays in place")
    for name, key in wanted.get("agree", {}).items():
        value, measured = reported.get(name), seen.get(key)
        if value is None or measured is None:
            continue
        if key == "loop_busy_share" and not value <= measured + SHARE_SLACK:
            problems.append(f"it reported {name}={value:g}, but the grader timed the training loop busy "
                            f"{measured:.0%} of the time between the DataLoader's batches (and waiting in it the "
                            f"rest): the printed figure contradicts what the loop did")
        elif key != "loop_busy_share" and not value <= measured:
            problems.append(f"it reported {name}={value:g}, but the training process received "
                            f"{measured:g} {key} from its DataLoaders: the printed figure contradicts what they did")
    return problems


def _workload(wanted: dict, seen: dict, ended: bool) -> list[str]:
    """The samples that must arrive, as the training loop received them (a run that did not end as
    fixed does fell short for that reason, said first)."""
    problems = []
    batches, distinct = seen.get("batches", 0), seen.get("distinct_samples", 0)
    if ended and batches < wanted.get("batches", 0):
        problems.append(f"the training process received {_n(batches, 'batch')} from its DataLoaders; the "
                        f"workload is at least {wanted['batches']}: run the whole workload")
    if ended and distinct < wanted.get("samples", 0):
        problems.append(f"the training loop received {distinct} distinct samples; the workload is "
                        f"{wanted['samples']} (every one that must arrive): run the whole workload")
    rows = seen.get("repeated_field_rows", 0)
    if wanted.get("unique") == "every field" and rows:
        problems.append(f"{rows} rows of one tensor arrived again within the same epoch under another sample "
                        "(another record's bytes, as the DataLoader delivered them): whatever the loop repairs "
                        "afterwards, the workers read the wrong bytes")
    astray = seen.get("samples_not_asked", 0)
    if wanted.get("requested") is not None and astray:
        problems.append(f"{astray} samples arrived under another index than the one the sampler asked for (field "
                        f"{wanted['requested']} of the batch, as the DataLoader delivered it): each worker must read "
                        "the record it was asked for, not the next one in the file")
    repeated = seen.get("repeated_samples", 0)
    if wanted.get("unique") and repeated:
        problems.append(f"the training loop received {repeated} samples again within the same epoch (same "
                        "bytes, as the DataLoader delivered them): each sample arrives once, whatever the loop "
                        "drops afterwards")
    shared, allowed = seen.get("samples_in_two_processes", 0), wanted.get("one_rank_each")
    allowed = 0 if allowed is True else allowed  # a number: samples the lesson itself deals to every rank
    if allowed is not None and allowed is not False and shared > allowed:
        problems.append(f"{shared} samples reached the training loops of two ranks in the same epoch (same bytes, "
                        "as their DataLoaders delivered them"
                        f"{f'; {allowed} may, drawn again and again' if allowed else ''}): every rank trained on "
                        "them; each rank must get its own share")
    return problems


def _workers_did_the_work(wanted: dict, seen: dict) -> list[str]:
    problems = []
    made = seen.get("worker_batches", 0)
    if made < wanted.get("worker_batches", 1):
        problems.append(f"the DataLoader workers produced {_n(made, 'batch')}; the exercise needs at least "
                        f"{wanted.get('worker_batches', 1)} from them")
    idle = [w for w in seen.get("workers", []) if w.get("batches", 0) < wanted.get("every_worker_batches", 0)]
    if idle:
        least = wanted["every_worker_batches"]
        ids = ", ".join(sorted(str(w.get("worker_id")) for w in idle))
        produced = "no batch" if least == 1 else f"fewer than {least} batches"
        problems.append(f"{len(idle)} of the {seen.get('real_workers', 0)} DataLoader workers (ids {ids}) produced "
                        f"{produced}: every worker must do its share")
    per_batch = seen.get("worker_ms_per_batch")
    if per_batch is not None and per_batch < wanted.get("worker_ms_per_batch", 0):
        problems.append(f"the DataLoader workers spent {per_batch:.3g} ms of CPU per batch making it, under the "
                        f"{wanted['worker_ms_per_batch']:g} ms a batch costs at least when they do the loading: "
                        "the work is done somewhere else than in the workers")
    waited = seen.get("worker_wall_ms_per_batch")
    if waited is not None and waited < wanted.get("worker_wall_ms_per_batch", 0):
        problems.append(f"the DataLoader workers took {waited:.3g} ms per batch from its index to handing it over, "
                        f"under the {wanted['worker_wall_ms_per_batch']:g} ms a batch's requests take at least when "
                        "the workers make them: the loading waits somewhere else than in the workers")
    read = seen.get("worker_read_kb_per_batch")
    if read is not None and read < wanted.get("worker_read_kb_per_batch", 0):
        problems.append(f"the DataLoader workers read {read:.3g} KB per batch, under the "
                        f"{wanted['worker_read_kb_per_batch']:g} KB a batch's samples take from the file: the data was "
                        "read somewhere else than in the workers (the training process read it whole?)")
    share = seen.get("worker_share")
    if share is not None and share < wanted.get("worker_share", 0):
        problems.append(f"the workers spent {share:.0%} of the CPU time between an index and its batch plus the "
                        f"training thread's own between batches ({seen.get('main_cpu_between_batches_s', 0):.2f} s); "
                        f"the exercise needs at least {wanted['worker_share']:.0%}: the loading is the workers' work")
    return problems


def _what_the_workers_made_it_from(wanted: dict, seen: dict) -> list[str]:
    problems = []
    if wanted.get("draws") == "distinct":
        if not seen.get("drawn_in_workers"):
            problems.append("no random state moved in any DataLoader worker while it made its batches: the "
                            "random draws the lesson is about are not made in the workers")
        elif seen.get("shared_draw_states"):
            problems.append(f"{seen['shared_draw_states']} random states were reached by two workers "
                            f"({', '.join(seen.get('shared_draw_sources', []))}): the workers drew the same "
                            "numbers, whatever the script records")
    if wanted.get("current_dataset") and seen.get("stale_dataset_states"):
        problems.append(f"the training process's dataset was in {seen['stale_dataset_states']} state(s) (its "
                        "epoch, say) that no worker's copy had when it made a batch: the workers made the "
                        "batches from an older dataset")
    size, least = seen.get("sample_bytes"), wanted.get("sample_bytes")
    if least is not None and size is not None and size < least:
        problems.append(f"a sample arrived from the workers as {size:g} bytes; the exercise's sample is at least "
                        f"{least:g} bytes: the workers must send the data itself, not a reference to it")
    peak, most = seen.get("shm_peak_mb"), wanted.get("shm_peak_mb")
    if most is not None and peak is not None and peak > most:
        problems.append(f"/dev/shm held {peak:g} MiB at a batch's arrival (measured by the runner's hook); "
                        f"the exercise allows {most:g} MiB")
    return problems


def _how_they_ran(wanted: dict, seen: dict) -> list[str]:
    problems = []
    cleared = seen.get("undaemonic_workers", 0)
    if wanted.get("daemonic") and cleared:
        problems.append(f"{_n(cleared, 'worker')} cleared {'its' if cleared == 1 else 'their'} daemon flag: "
                        "a DataLoader worker stays daemonic (it may start no processes), and the exercise keeps it so")
    if wanted.get("fresh_locks") and seen.get("inherited_locks"):
        problems.append(f"the workers still reached {seen['inherited_locks']} threading lock(s) copied by the fork "
                        "(from their dataset or a module global) after making a batch: a fork that lands while one "
                        "is held deadlocks that worker, however the fork was timed")
    built, most = seen.get("compiles", 0), wanted.get("compiles")
    if most is not None and built > most:
        problems.append(f"torch.compile compiled the step {_n(built, 'time')} (dynamo's own compilation events, "
                        f"seen by the grader); the exercise allows {most}: every batch shape the loader gives it "
                        "that it has not seen is compiled again")
    refused = set(wanted.get("not_samplers", []))
    wrapped = sorted({loader.get("sampler") for loader in seen.get("loaders", [])} & refused)
    if wrapped:
        problems.append(f"a DataLoader that ran iterated a {', '.join(wrapped)} (its sampler, as built; recorded by "
                        "the grader): the framework put its own sampler in place of yours")
    methods = set(seen.get("start_methods", []))
    allowed = wanted.get("start_methods")
    if allowed and methods - set(allowed):
        problems.append(f"the DataLoader started its workers with {', '.join(sorted(methods - set(allowed)))}; "
                        f"the exercise needs {' or '.join(allowed)}")
    return problems


def observation_problems(wanted: dict, seen: dict, reported: dict | None = None, ended: bool = True) -> list[str]:
    """The exercise's `observe` table against what the hook saw inside PyTorch (observe.py), and
    the figures the script reported against it (`agree`: a printed count may not exceed the seen one).
    `ended` False: the run did not end as fixed does, so its batches fell short for that reason."""
    problems = _replaced_and_agree(wanted, seen, reported or {})
    real = seen.get("real_workers", 0)
    if real < wanted.get("workers", 1):
        problems.append(f"the runner saw {_n(real, 'process')} run PyTorch's DataLoader worker loop; the exercise "
                        f"needs at least {wanted.get('workers', 1)} (other processes below the script do not count)")
        return problems  # what follows is about workers there were not
    return (problems + _workload(wanted, seen, ended) + _workers_did_the_work(wanted, seen)
            + _what_the_workers_made_it_from(wanted, seen) + _how_they_ran(wanted, seen)
            + step_problems(wanted, seen) + worker_record_problems(wanted, seen))

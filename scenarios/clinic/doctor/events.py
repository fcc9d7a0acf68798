"""The probe's events and the constants both sides of the process boundary share.

The probe's child (probe_child.py) prints one line per event on its stdout, `clinic-probe {json}`,
so that whatever it measured before a hang, a crash or its time limit survives; the parent
(probe.py) parses them into a ProbeResult; the checks read them with `probe.first(NAME)` and
`probe.all(NAME)`.  A name that is not one of NAMES fails on both sides: a misspelt event is
an error, never an empty reading.  This module imports nothing, so the probe's child and its
spawned workers load it alone.
"""
PREFIX = "clinic-probe "
PROBE_FOLDER_PREFIX = "clinic-probe-"   # the probe's temporary folders, hidden from reports

STARTED = "started"              # pid, fd_soft_limit: the probe's process is up
LOADED = "loaded"                # seconds: the user's function returned the loader
STAGE = "stage"                  # stage: ITERATE, COMPARE or DRAWS begins
WORKERS_STARTED = "workers-started"   # pids, seconds, parent_uss
FIRST_BATCH = "first-batch"      # seconds, bytes, shapes of the first batch
BATCH = "batch"                  # n, seconds, measuring_s: one batch delivered
MEMORY = "memory"                # n, uss per worker, fds, shm: a reading between batches
TICK = "tick"                    # progress within a stage: a slow stage is told from a stuck one
ITERATE = "iterate"              # the loader as configured: its stage, and its summary event
COMPARE = "compare"              # the same batches with num_workers=0 (or 2 workers)
DRAWS = "draws"                  # one index fetched through two workers
RANKS = "ranks"                  # a stream read as rank 0 and rank 1 of 2 would read it (probe_ranks.py)
SKIPPED = "skipped"              # stage, why: the probe's time was spent
ERROR = "error"                  # stage, type, message, traceback
BAD_INPUT = "bad-input"          # message: the loader could not be built
DONE = "done"                    # seconds: every stage ran
CUDA_REQUESTS = "cuda-requests"  # requests (stage, call, where), batch_on_cuda: cuda_requests.finish()

NAMES = frozenset({STARTED, LOADED, STAGE, WORKERS_STARTED, FIRST_BATCH, BATCH, MEMORY, TICK, ITERATE,
                   COMPARE, DRAWS, RANKS, SKIPPED, ERROR, BAD_INPUT, DONE, CUDA_REQUESTS})

# The probe fetches one index DRAW_PAIRS times through each of two workers, and twice as often in
# its own process; scenario 12's check says why 16 pairs make its verdict safe.
DRAW_PAIRS = 16


def known(name: str) -> str:
    """`name`, if it is an event's; a misspelt one raises."""
    if name not in NAMES:
        raise ValueError(f"no probe event {name!r}; the events are {', '.join(sorted(NAMES))}")
    return name

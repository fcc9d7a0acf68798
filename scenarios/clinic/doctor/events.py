"""The probe's events and the constants both sides of the process boundary share.

The probe's child (probe_child.py) prints one line per event on its stdout, `clinic-probe {json}`,
so that whatever it measured before a hang, a crash or its time limit survives; the parent
(probe.py) parses them into a ProbeResult; the checks read them with `probe.first(NAME)` and
`probe.all(NAME)`.  A name that is not one of NAMES, or an event without its FIELDS, fails on
both sides: a misspelt event or field is an error, never an empty reading.  This module imports
nothing, so the probe's child and its spawned workers load it alone.
"""
PREFIX = "clinic-probe "
PROBE_FOLDER_PREFIX = "clinic-probe-"   # the probe's temporary folders, hidden from reports

STARTED = "started"              # the probe's process is up
LOADED = "loaded"                # the user's function returned the loader
STAGE = "stage"                  # a stage begins: ITERATE, COMPARE, DRAWS or RANKS
WORKERS_STARTED = "workers-started"
FIRST_BATCH = "first-batch"      # the first batch's time, bytes and storages
BATCH = "batch"                  # one batch delivered
MEMORY = "memory"                # a reading between batches: uss per worker, descriptors, /dev/shm
TICK = "tick"                    # progress within a stage: a slow stage is told from a stuck one
ITERATE = "iterate"              # the loader as configured: its stage, and its summary event
COMPARE = "compare"              # the same batches with num_workers=0 (or 2 workers)
DRAWS = "draws"                  # one index fetched through two workers
RANKS = "ranks"                  # a stream read as rank 0 and rank 1 of 2 would read it (probe_ranks.py)
SKIPPED = "skipped"              # the probe's time was spent
ERROR = "error"                  # the user's code raised in a stage
BAD_INPUT = "bad-input"          # the loader could not be built
DONE = "done"                    # every stage ran
CUDA_REQUESTS = "cuda-requests"  # cuda_requests.finish(): the CUDA the loader's code asked for

# The fields each event carries, at least: the child emits them, the parent reads them, both check them.
FIELDS = {
    STARTED: ("pid", "fd_soft_limit", "sharing_strategy"),
    LOADED: ("seconds",),
    STAGE: ("stage",),
    WORKERS_STARTED: ("pids", "seconds", "parent_uss"),
    FIRST_BATCH: ("seconds", "bytes", "storages"),
    BATCH: ("n", "seconds", "measuring_s"),
    MEMORY: ("n", "uss", "fds", "shm"),
    TICK: (),                        # n, within a stage's batches; or the stage still at work
    ITERATE: ("batches", "seconds", "measuring_s", "cpu_wait_share", "cpu_seconds", "samples", "sample_hashes",
              "ended"),
    COMPARE: ("workers", "batches", "seconds", "first_batch_s", "cpu_seconds", "samples", "sample_hashes", "ended"),
    DRAWS: ("index", "by_worker", "in_process"),
    RANKS: ("world_size", "ranks", "rebuilt"),
    SKIPPED: ("stage", "why"),
    ERROR: ("stage", "type", "message", "own", "traceback"),
    BAD_INPUT: ("message",),
    DONE: ("seconds",),
    CUDA_REQUESTS: ("requests",),
}
NAMES = frozenset(FIELDS)
SUMMARIES = (ITERATE, COMPARE, DRAWS, RANKS)   # a stage that had nothing to measure sends its name alone

# The probe fetches one index DRAW_PAIRS times through each of two workers, and twice as often in
# its own process; scenario 12's check says why 16 pairs make its verdict safe.
DRAW_PAIRS = 16


def known(name: str) -> str:
    """`name`, if it is an event's; a misspelt one raises."""
    if name not in NAMES:
        raise ValueError(f"no probe event {name!r}; the events are {', '.join(sorted(NAMES))}")
    return name


def checked(event: dict) -> dict:
    """`event`, if it is a known event with its FIELDS; else it raises, on whichever side reads it."""
    name = known(event.get("event"))
    missing = [field for field in FIELDS[name] if field not in event]
    if missing and not (name in SUMMARIES and event.keys() == {"event"}):
        raise ValueError(f"probe event {name!r} lacks {', '.join(missing)} (it carries {', '.join(FIELDS[name])})")
    return event

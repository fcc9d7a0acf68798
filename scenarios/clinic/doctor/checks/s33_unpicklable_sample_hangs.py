"""33 · a batch a worker's queue cannot pickle: its feeder thread prints why, drops it, and the loop waits forever."""
import re

from scenarios.clinic.doctor.evidence import stage_text
from scenarios.clinic.doctor.findings import finder
from scenarios.clinic.doctor.job import waits_for_data

SCENARIO = "33"
_PLAIN = ("return tensors, numbers, str and lists or dicts of them from __getitem__: read what the loop "
          "needs there, and keep open files, locks, generators and library handles in the worker")
FIXES = {
    "unpicklable-sample": _PLAIN + "; DataLoader(timeout=…) above your slowest healthy batch turns the wait into "
                          "an error (scenario 33's measure_timeout.py)",
    "lost-batch": _PLAIN + " (the job's output holds the feeder's traceback through multiprocessing/queues.py, "
                  "in _feed: it names what did not pickle); DataLoader(timeout=…) makes the next such wait an error",
}
# A worker's result queue pickles each batch in its feeder thread (multiprocessing/queues.py, Queue._feed),
# which prints a failure and goes on: a traceback through that frame is a batch that never left the worker,
# whoever made the queue.  Inside the DataLoader's own frames the same words are a start method's (09's).
_FEEDER = r"multiprocessing[/\\]queues\.py\"?, line \d+, in _feed\b"
CONTEXT = _FEEDER
# From the feeder's frame, through that traceback's own frames (indented lines), to its exception line: a pickling
# error there is the batch the queue could not send.  The same words without that frame are a start method's
# (09's); another error in the feeder (a full /dev/shm, no descriptor left) is 04's or 08's; a pickling error
# further down the log, after the feeder's own exception, is another failure's.
ERRORS = [(_FEEDER + r"(?:\n[ \t]+[^\n]*)*\n[^\n]*?(?:cannot pickle|Can't pickle|Can't get local object|PicklingError"
           r"|cannot be pickled)", "unpicklable-sample")]
# An open file in a batch: 11's pickling text (an open file in a dataset that spawn must send), but
# through the feeder's frame it is a sample's, and 11's lesson (each worker opens its own) would not fix it.
WINS_OVER = ("11",)
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("unpicklable-sample: a traceback through Queue._feed in the probe's output, which a loader whose batches "
           "pickle never prints; no chance in it: {loaders}. lost-batch: {jobs}; too few to show 1 in 1000, but in a"
           " healthy loader the awaited batch is always being made or on its way, so no worker sits idle all window")
# A hang the probe meets after a batch was dropped is this wait, not a lock's (01's "hang").
EXPLAINS = [("01", "hang")]
_found = finder(SCENARIO, FIXES)
_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception)\b.*")
_WAITING = re.compile(r"[(/](?:queues|connection|selectors|threading)\.py:\d+\)")


def _feeder_errors(output: list[str]) -> list[str]:
    """The last line of each feeder traceback in the output: what the queue could not pickle."""
    found = []
    for at, line in enumerate(output):
        if re.search(_FEEDER, line):
            found += [next((later.strip() for later in output[at + 1:at + 40] if _ERROR_LINE.match(later.strip())),
                           "an error while pickling")]
    return found


def measured(examined, probe):
    lost = _feeder_errors(probe.output)
    if not lost:
        return []
    waited = f"; the probe then waited {probe.stall_s:.1f} s for the batch and was stopped: the loop would " \
             "wait forever" if probe.outcome == "hang" else ""
    return [_found("risk", "unpicklable-sample",
                   f"while {stage_text(probe.stage, examined.workers)}, a worker's queue could not pickle "
                   f"{len(lost)} batch(es) and dropped them: {lost[0]} (printed by the queue's feeder thread, "
                   f"in the worker){waited}")]


def _waits_for_index(stack: str) -> bool:
    """The worker's main thread sits in its index queue's get, called by the worker loop itself: it has
    nothing to make (a worker waiting on a socket or a lock in the dataset's code is not this)."""
    main = re.split(r"(?m)^Thread ", stack)
    frames = [line.strip() for line in (main[1] if len(main) > 1 else "").splitlines()[1:] if line.startswith("    ")]
    loop = next((i for i, frame in enumerate(frames) if frame.startswith("_worker_loop ")), None)
    return loop is not None and loop > 0 and all(_WAITING.search(frame) for frame in frames[:loop])


def running(job):
    """The training process waits for a batch at every look, and every worker has waited for its next index,
    using no CPU, all the while: no process is making the batch it waits for."""
    if not job.workers or job.started or not job.trainer_stacks or \
            not all(waits_for_data(stack) for stack in job.trainer_stacks):
        return []
    idle = [w for w in job.alive_workers if w.cpu_share < 0.05 * job.seconds and _waits_for_index(w.stack)]
    if len(idle) < len(job.alive_workers):
        return []
    return [_found("risk", "lost-batch",
                   f"for {job.seconds:.1f} s the training process waited for a batch while all {len(idle)} workers "
                   "waited for their next index, using no CPU: the batch it waits for was made and never arrived. "
                   "A worker's queue could not pickle it (its feeder thread printed why, in the job's output)",
                   details="\n\n".join(w.stack for w in idle[:2]))]

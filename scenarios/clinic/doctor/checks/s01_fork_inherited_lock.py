"""01 · a lock copied, held, into forked workers; and a loop that waits forever (timeout=0)."""
import sys
import threading

from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.evidence import stage_text, worker_frames
from scenarios.clinic.doctor.findings import finder
from scenarios.clinic.doctor.job import stuck_workers, waits_for_data
from scenarios.clinic.doctor.stacks import frames, main_thread_state, processes
from scenarios.clinic.paths import shown

SCENARIO = "01"
_PER_WORKER_FIX = ("fixes/per_worker.py (PerWorker(factory): each worker builds its own object, lock or "
                  "connection included, on first use); or multiprocessing_context='forkserver' (then check "
                  "pickling, scenario 09)")
FIXES = {
    "threads-and-locks": _PER_WORKER_FIX,
    "threads-at-fork": "start threads after the loader's workers exist (persistent_workers=True), or "
                       "multiprocessing_context='forkserver'",
    "timeout": "DataLoader(timeout=…) above your slowest healthy batch turns the wait into an error; a detector, "
               "not a fix (scenario 01's myth_timeout.py)",
    "hang": "if the stack shows a lock: " + _PER_WORKER_FIX + "; if it shows a queue put: /dev/shm is full "
            "(scenario 04)",
}
# A lock in what spawn or forkserver (Python 3.14's default) must pickle for a worker: the pickler refuses
# it whoever starts the process; under fork the same dataset would hang.  Each process making its own
# lock is 01's fix.  Before 09's and 33's wider "cannot pickle".
_LOCK = r"cannot pickle '_thread\.R?[Ll]ock' object"
ERRORS = [(r"DataLoader timed out after", "hang"), (_LOCK, "threads-and-locks")]
LIKELY = [(_LOCK, "threads-and-locks", "a lock is what the pickler refuses: the object a spawned or forkserver "
           "child must unpickle holds one (or a cache refreshed by a thread does), so each process must make its own")]
WINS_OVER = ("09", "33")
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("threads-and-locks, threads-at-fork, timeout: read from this process and the loader, no chance in them; "
           "{loaders}. hang: the probe's longest wait between events, {hang}. {jobs}")
_found = finder(SCENARIO, FIXES)


def _threads_at_fork() -> str:
    """The other threads of this process and where each one is, as a fork would find them."""
    frames = sys._current_frames()
    threads = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()
               and not t.name.startswith(("clinic-", "IPythonHistorySavingThread"))]
    where = [f"'{t.name}'" + (f" at {shown(frames[t.ident].f_code.co_filename)}:{frames[t.ident].f_lineno}"
                              if t.ident in frames else "") for t in threads]
    return f"{len(threads)} other thread(s) run: {'; '.join(where[:4])}" if threads else ""


def static(examined):
    findings = []
    if examined.forked:
        findings += _locks_at_fork(examined.found("lock"))
    # True of every loader with workers (PyTorch's default): a general note, shown with --all.  The
    # reasons of this loader's own (a lock, a thread at fork) are the findings above.
    if examined.workers and not examined.setup.timeout:
        stops = "a lock inherited at fork, a full /dev/shm" if examined.forked else \
            "a deadlock in __getitem__, a full /dev/shm"
        findings.append(_found("note", "timeout", f"timeout=0 (the default): a worker that stops ({stops}) "
                               "leaves the loop waiting forever without a message", general=True))
    return findings


def _locks_at_fork(locks):
    threads = _threads_at_fork()
    # An RLock of Python < 3.14 has no locked(); its repr says.
    held = [(path, lock) for path, lock in locks
            if (lock.locked() if hasattr(lock, "locked") else repr(lock).startswith("<locked"))]
    if held:
        kind = "RLock" if "RLock" in type(held[0][1]).__name__ else "Lock"
        return [_found("risk", "threads-and-locks",
                       f"{held[0][0]} (a threading.{kind}) is held right now" + (f", and {threads}" if threads else "")
                       + ". Forked workers inherit it held, with no thread to release it: their first "
                       "__getitem__ that takes it waits forever")]
    if locks and threads:
        return [_found("risk", "threads-and-locks",
                       f"the dataset holds {len(locks)} lock(s) ({', '.join(sorted(p for p, _ in locks)[:3])}"
                       f"{', …' if len(locks) > 3 else ''}) and {threads}. If a thread holds "
                       "a lock at the moment the workers fork (every epoch, without persistent workers), those "
                       "workers wait on it forever")]
    if threads:
        return [_found("note", "threads-at-fork",
                       f"when the workers fork, {threads}. A lock one of them holds at that moment (in a library, "
                       "a logger, a cache) stays held in every worker; the dataset itself holds no lock")]
    return []


def measured(examined, probe):
    if probe.outcome != "hang":
        return []
    workers = examined.workers
    pids = (probe.first(events.WORKERS_STARTED) or {}).get("pids", [])
    where = worker_frames(probe.stacks, pids) if workers else ""
    states = [main_thread_state(block) for pid, block in processes(probe.stacks) if not pids or pid in pids]
    if workers and states and all(state == "active" for state in states):
        # every worker computing when the probe stopped: a slow batch (a huge collate), not a wait
        return [_found("note", "hang", f"no batch in {probe.stall_s:.1f} s while {stage_text(probe.stage, workers)}, "
                       f"every worker computing: slow, not stuck ({where})", details=probe.stacks)]
    return [_found("risk", "hang",
                   f"no progress for {probe.stall_s:.1f} s while {stage_text(probe.stage, workers)} "
                   f"({len(probe.all('batch'))} batch(es) before it): the probe was stopped there"
                   + (f". Where the workers wait: {where}" if where else ""), details=probe.stacks)]


def running(job):
    """Workers that use no CPU, inside the dataset's code rather than waiting for an index,
    while the trainer waits for a batch: a wait that nothing will end."""
    if not job.workers or not any(waits_for_data(s) for s in job.trainer_stacks):
        return []
    # A worker in time.sleep or a read is slow, not locked: only a futex wait is a lock nothing releases.
    stuck = [w for w in stuck_workers(job) if w.waits_on_a_lock]
    if len(stuck) < len(job.workers):
        return []
    where = "; ".join(f"worker {w.pid} in {frames(w.stack)}" for w in stuck[:2])
    return [_found("risk", "hang", f"for {job.seconds:.1f} s the training process waited for a batch while all "
                   f"{len(stuck)} workers used no CPU inside the dataset's code ({where}): a lock or a condition "
                   "nothing will release", details="\n\n".join(w.stack for w in stuck))]

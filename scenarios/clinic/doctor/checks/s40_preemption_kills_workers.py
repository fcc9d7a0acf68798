"""40 · the job's SIGTERM reached its DataLoader workers too: they died before its graceful shutdown."""
import re

from scenarios.clinic.doctor.findings import finder

SCENARIO = "40"
FIXES = {
    "preempted-workers": "a worker_init_fn that ignores SIGTERM and SIGINT in each worker "
                         "(signal.signal(signal.SIGTERM, signal.SIG_IGN), scenario 40's fixed.py): the training "
                         "process takes the scheduler's signal, writes its checkpoint and leaves, and its iterator's "
                         "shutdown ends the workers; end the iterator before the process exits (PyTorch's fallback, "
                         "terminate(), is a SIGTERM they now ignore)",
}
# torch/csrc/DataLoader.cpp: a worker's SIGTERM handler exits quietly when its parent sent the signal and dies of
# it otherwise; the training process's SIGCHLD handler then names the signal.  Someone other than the loader
# ended the worker: ahead of 06's generic "killed by signal", whose lesson is a native crash.
ERRORS = [(r"killed by signal: Terminated", "preempted-workers")]
WINS_OVER = ("06",)
# The text says who did not send it (the parent), not who did: the whole job's SIGTERM is the common sender,
# a tool that picked the worker alone the other.
ASK = [(r"killed by signal: Terminated", "who sent SIGTERM? A scheduler cancelling or preempting the job (`scancel`, "
        "a Slurm time limit, a spot instance's notice), `kill -TERM -PGID`, a launcher stopping a rank's process "
        "group: every process of the job got it, the workers first to die of it: 40. A tool that picked the worker "
        "alone (earlyoom or a container's memory watch, a person's `kill PID`) says so in its own log: then what "
        "the worker was short of (06, 19). The worker's own parent never causes this "
        "text: PyTorch's handler exits quietly for it")]
# A worker ended while the training process unwinds from a failure printed above: that failure is the cause.
CONSEQUENCE = r"killed by signal: Terminated"
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("a reading of the signal masks (/proc/PID/status) of the training process and each settled worker, "
           "no chance in it: it fires only where the training process has a SIGTERM handler of its own and a worker "
           "keeps PyTorch's, which is the risk itself. {jobs} In your run (doctor -- COMMAND): the same reading, "
           "taken inside each process, where the training process's handler is not a framework's that only stops "
           "the loop (Lightning's); a worker's own handler, from its worker_init_fn, is not PyTorch's")
_found = finder(SCENARIO, FIXES)


def running(job):
    """The training process catches SIGTERM (a graceful shutdown: a checkpoint at the next step) while its workers
    keep PyTorch's SIGTERM handler, which dies of any SIGTERM not sent by the training process: a scheduler's
    SIGTERM to the whole job ends them first, and the training process fails before its checkpoint."""
    if not job.trainer_catches_sigterm:
        return []
    # A worker still starting (not settled) may not have run its worker_init_fn yet: no evidence either way.
    exposed = [w.pid for w in job.workers if w.settled and w.catches_sigterm]
    if not exposed:
        return []
    said = (f"{len(exposed)} of its {len(job.workers)} DataLoader workers keep PyTorch's: a SIGTERM to the whole job "
            "(scancel, a preemption, kill -TERM -PGID) kills them first")
    figures = {"workers_exposed": len(exposed), "workers": len(job.workers)}
    # /proc shows that a handler is set, not whose: in a Lightning fit it is Lightning's, which only stops the fit
    # (and calls a handler of the user's set before fit beside its own); that one cannot be seen from here.
    if any(_LIGHTNING_FIT.search(stack) for stack in job.trainer_stacks):
        return [_found("note", "preempted-workers",
                       f"the training process (pid {job.trainer}) runs a Lightning fit, whose SIGTERM handler only "
                       f"stops it, and {said}. Nothing is lost unless your own SIGTERM handler (a checkpoint) was set "
                       "before fit: Lightning calls it too, after the workers have died", figures=figures)]
    return [_found("risk", "preempted-workers",
                   f"the training process (pid {job.trainer}) has a SIGTERM handler of its own, but {said}, and the "
                   "training process fails with \"is killed by signal: Terminated\" before its shutdown code runs",
                   figures=figures)]


_LIGHTNING_FIT = re.compile(r"(?:lightning[/\\](?:pytorch|fabric)|pytorch_lightning)[/\\]")


# A framework's own SIGTERM handler that only stops the loop (Lightning's _SignalConnector: it tells the ranks
# and ends the fit, no checkpoint unless SLURM requeues on SIGUSR1): the job ends either way, nothing is lost.
_STOPS_ONLY = ("lightning.", "pytorch_lightning.", "lightning_fabric.")


def observed(run):
    """In the user's own run: the same reading as `running`, taken by the observer in each process (the
    training process at each iter(), each worker after its worker_init_fn), before any signal comes; where
    the training process's handler is its own (a checkpoint to write), not a framework's that only stops."""
    exposed = [e for e in run.get("sigterm_exposed") or [] if not (e.get("handler") or "").startswith(_STOPS_ONLY)]
    if not exposed:
        return []
    first = exposed[0]
    return [_found("risk", "preempted-workers",
                   f"measured in your run: the training process has a SIGTERM handler of its own "
                   f"({first['handler']}), but {first['workers']} of its {first['of']} DataLoader workers keep "
                   "PyTorch's (read from /proc in each worker after its worker_init_fn): a SIGTERM to the whole "
                   "job (scancel, a preemption, kill -TERM -PGID) kills them first, and the training process "
                   "fails with \"is killed by signal: Terminated\" before its shutdown code runs",
                   figures={"workers_exposed": first["workers"], "workers": first["of"], "processes": len(exposed)})]

"""21 · thread pools sized for the machine in every worker: more busy threads than cores.

The running part counts busy threads (each used at least a quarter of its worker's CPU and a
tenth of a core over the window) and calls it a risk beyond 1.25 busy threads per usable core.
On scenario 21's fixed loader, about 20 runs never counted more than one busy thread per worker;
its broken loader counted two per worker in every run.  A near-idle healthy job beside two
spinning processes once counted its queue feeder thread (2 clock ticks in 3 s): hence the tenth
of a core.
"""
import sys

from scenarios.clinic.doctor.findings import finder
from scenarios.host import usable_cores

SCENARIO = "21"
FIXES = {
    "threads-per-worker": "worker_init_fn=limit_worker_threads from fixes/worker_threads.py: OpenCV, BLAS/OpenMP "
                          "(threadpoolctl) and torch each get cores // workers threads in every worker (OpenCV 0, "
                          "never 1, for one thread: cv2.setNumThreads(1) can hang in a forked worker)",
}
_LIMITERS = ("setNumThreads", "threadpool_limits", "set_num_threads", "limit_worker_threads")
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("static: pools sized from the machine, no chance in it: {loaders}. running: busy threads counted over the"
           " window (one healthy job's model keeps a core busy); {jobs}. In your run (doctor -- COMMAND): more "
           "threads kept busy by the workers together than usable cores, with 2 or more in one worker: counts")
_found = finder(SCENARIO, FIXES)


def _pools() -> dict:
    """Threads each library's pool will start in a worker, as this process has them sized."""
    pools = {}
    cv2 = sys.modules.get("cv2")
    if cv2 is not None:
        pools["OpenCV"] = cv2.getNumThreads()
    try:
        from threadpoolctl import threadpool_info
        for pool in threadpool_info():
            pools[f"{pool['internal_api']} ({pool['user_api']})"] = pool["num_threads"]
    except ImportError:
        pass
    return pools


def static(examined):
    import inspect

    workers, cores, init = examined.workers, examined.setup.usable_cores, examined.loader.worker_init_fn
    if not workers or workers * 2 <= cores:
        return []
    try:
        limits = init is not None and any(name in inspect.getsource(init) for name in _LIMITERS)
    except (OSError, TypeError):
        limits = init is not None
    big = {name: n for name, n in _pools().items() if n > 1 and "torch" not in name}
    if limits or not big:
        return []
    return [_found("note", "threads-per-worker",
                   f"{workers} workers on {cores} usable cores, and each worker's "
                   + ", ".join(f"{name} pool starts {n} threads" for name, n in list(big.items())[:3])
                   + ": if __getitem__ uses them (an OpenCV resize, a numpy matrix product) they compete for the "
                   "cores, spinning while they wait; no worker_init_fn limits them",
                   # Pools are sized for the machine in every process: unseen in use, a general note (--all).
                   general=True)]


def running(job):
    busy = sum(w.busy_threads for w in job.workers)
    if not job.workers or busy <= 1.25 * job.cores:
        return []
    return [_found("risk", "threads-per-worker",
                   f"{busy} busy threads in {len(job.workers)} workers on {job.cores} usable cores over "
                   f"{job.seconds:.1f} s ({', '.join(str(w.busy_threads) for w in job.workers)} per worker): their "
                   "libraries' pools compete for the cores")]


def observed(run):
    """In the user's own run: the workers together kept more threads busy than the machine has cores, each
    thread's CPU read from /proc by the hook (a quarter of its worker's CPU, in both halves of its life).
    A count of threads against a count of cores."""
    busy = [w.get("busy_threads", 0) for w in run.get("workers", []) if w.get("batches", 0)]
    cores = usable_cores()[0]
    # One past the cores is a pool sized to the machine and the loop thread handing it work: 23's fixed.py, its one
    # worker tokenizing on tokenizers' pool, showed 3 on 2 cores in 1 of 4 runs and was named here.
    if not busy or max(busy) < 2 or sum(busy) <= cores + 1:
        return []
    return [_found("risk", "threads-per-worker",
                   f"measured in your run: {len(busy)} DataLoader workers kept {sum(busy)} threads busy on {cores} "
                   f"usable cores (up to {max(busy)} in one worker): their libraries' pools compete for the cores",
                   figures={"workers": len(busy), "busy_threads": sum(busy), "most_in_one": max(busy),
                            "cores": cores})]

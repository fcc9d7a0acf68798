"""20 · workers that outlive a training job killed by SIGKILL (a cancelled job, the OOM killer)."""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "20"
FIXES = {
    "workers-outlive-the-job": "worker_init_fn=DieWithTrainer() from fixes/worker_lifetime.py ties each worker's life "
                               "to the training process (PR_SET_PDEATHSIG, or a watch on its pid under forkserver); "
                               "`python -m scenarios doctor --orphans` lists what earlier jobs left",
}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "read from the setup, no chance in it: {loaders}"
_found = finder(SCENARIO, FIXES)


def _tied(loader) -> bool:
    init = loader.worker_init_fn
    return init is not None and "DieWithTrainer" in type(init).__qualname__ + getattr(init, "__qualname__", "")


def static(examined):
    loader, method = examined.loader, examined.setup.start_method
    if not examined.workers or _tied(loader) or method not in ("forkserver", "spawn"):
        return []
    return [_found("note", "workers-outlive-the-job",
                   f"under {method} the workers' parent is "
                   f"{'the fork server' if method == 'forkserver' else 'a fresh interpreter'}"
                   ", not this process: if the job is killed by SIGKILL (a cancelled job, the OOM killer) PyTorch's "
                   "check of the parent never fires, and every worker stays, holding its memory, until killed by hand")]

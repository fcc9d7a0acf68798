"""31 · one rank's loader stalls: it waits for a batch with no end while the other ranks die in a collective."""
from scenarios.clinic.doctor.findings import finder
from scenarios.clinic.doctor.job import stuck_workers, waits_for_data
from scenarios.clinic.doctor.stacks import frames
from scenarios.torchrun_ranks import rank_of

SCENARIO = "31"
FIXES = {
    "rank-waits-for-its-loader": "DataLoader(timeout=…) below the process group's timeout "
                                 "(init_process_group(timeout=…)): the stuck rank then raises 'DataLoader timed out' "
                                 "first and torchrun names it as the root cause; then fix what the stuck worker waits "
                                 "for (a read without a timeout, a lock: its stack below)",
}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("rank-waits-for-its-loader: read through job.stuck_workers, the reading behind 01's running rule, with "
           "one stuck worker enough where 01 wants them all; {jobs}, among them tests/jobs/even_ranks.py, a healthy "
           "2-rank DDP job: too few to show 1 in 1000")
# The rank waits for its batch because a worker is stuck, not because loading is slow: 07's advice (more
# workers) was a false risk on tests/jobs/stalled_rank.py, whose stuck rank already has 2.
EXPLAINS = [("07", "loading-waits")]
# One rank's loader timing out while the job's other ranks wait for it: what fixed.py's stuck rank prints.
# Alone, "DataLoader timed out" is 01's; printed under a rank's prefix, the other ranks' collective errors
# (a timeout, "Connection closed by peer") are its consequence and 31 is the lesson.
IN_A_RANK = [(r"DataLoader timed out after", "rank-waits-for-its-loader",
              "a rank's own loader timed out: the job's other ranks wait for it in a collective")]
_found = finder(SCENARIO, FIXES)


def running(job):
    """One rank of a distributed job waited for a batch in every sample of the window while a worker sat
    in the dataset's own code using no CPU: the rank the others wait for in a collective (a process
    alone is 01's to judge)."""
    rank = rank_of(job.trainer)
    if rank is None or len(job.trainer_stacks) < 2 or not all(waits_for_data(s) for s in job.trainer_stacks):
        return []
    stuck = stuck_workers(job)
    if not stuck:
        return []
    where = "; ".join(f"worker {w.pid} in {frames(w.stack)}" for w in stuck[:2])
    return [_found("risk", "rank-waits-for-its-loader",
                   f"for {job.seconds:.1f} s rank {rank[0]} of {rank[1]} (process {job.trainer}) waited for a batch "
                   f"while {len(stuck)} of its {len(job.workers)} worker(s) sat in the dataset's code using no CPU "
                   f"({where}). The other ranks wait for it in a collective and will die with the collective "
                   "timeout, which names no loader",
                   details="\n\n".join(w.stack for w in stuck))]

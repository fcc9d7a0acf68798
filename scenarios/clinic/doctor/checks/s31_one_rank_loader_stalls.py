"""31 · one rank's loader stalls: it waits for a batch with no end while the other ranks die in a collective."""
import re

from scenarios.clinic.doctor.findings import finder, text_finder
from scenarios.clinic.doctor.job import stuck_workers, waits_for_data
from scenarios.clinic.doctor.printed import COLLECTIVE_TIMEOUT
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
# The rank that printed "DataLoader timed out" (IN_A_RANK) or that torchrun had to stop names the lesson: the
# other ranks' collective errors (30's question) and the loader's own timeout read alone (01's) follow from it.
WINS_OVER = ("01", "30")
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
                   details="\n\n".join(w.stack for w in stuck),
                   figures={"rank": rank[0], "world_size": rank[1], "pid": job.trainer, "stuck_workers": len(stuck)})]


# torchrun's failure report (torch/distributed/elastic/multiprocessing/errors/__init__.py): "rank      : 1
# (local_rank: 1)", then "exitcode  : -15 (pid: 4242)  (SIGTERM)".  A collective's timeout, as 30's ERRORS and
# LOG_TEXTS hold them (printed.COLLECTIVE_TIMEOUT: gloo's transport, NCCL's watchdog).
_RANK_LINE = re.compile(r"^\s*rank\s*:\s*(\d+)\s*\(local_rank")
_EXIT_LINE = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")
_read = text_finder(SCENARIO, FIXES, __doc__)


def _exit_codes(lines: list[str]) -> dict[str, int]:
    """{rank: exit code} from torchrun's failure report."""
    codes, rank = {}, None
    for line in lines:
        named, code = _RANK_LINE.match(line), _EXIT_LINE.match(line)
        rank = named[1] if named else rank
        if code and rank is not None:
            codes[rank], rank = int(code[1]), None
    return codes


def pasted(lines, raw):
    """A collective timed out in one rank while torchrun had to stop another with SIGTERM, that rank having
    printed no error of its own: it never reached the collective."""
    codes = _exit_codes(lines)
    stopped = [rank for rank, code in codes.items() if code == -15]
    timeout = next((line.strip() for line in raw if COLLECTIVE_TIMEOUT.search(line)), "")
    if not stopped or not timeout:
        return []
    silent = [r for r in stopped if not any(re.match(rf"\[rank{r}\]:.*(?:Error|Exception)\b", line) for line in raw)]
    if not silent:
        return []
    waited = [rank for rank, code in codes.items() if code > 0]
    where = f"rank {', rank '.join(waited)} timed out in a collective" if waited else "a collective timed out"
    return [_read("likely", "rank-waits-for-its-loader",
                  f"{where} ({timeout[:120]}) while torchrun stopped rank {', rank '.join(silent)} with SIGTERM "
                  "(exitcode -15), which printed no error of its own",
                  f"rank {silent[0]} never reached the collective the others waited in: it was still in its step or "
                  "its loader, not past its last batch (a rank out of batches, 30, leaves its loop and raises in a "
                  "collective of its own). Where it waited: `python -m scenarios doctor --pid` on the launcher's PID "
                  "while the job hangs")]

"""30 · a collective timed out: a rank waited for a peer that never came (uneven batch counts, or 31's stuck loader)."""
import re

import psutil

from scenarios.clinic.doctor.findings import finder, text_finder
from scenarios.clinic.doctor.job import waits_for_data
from scenarios.clinic.doctor.printed import COLLECTIVE_TIMEOUT
from scenarios.clinic.doctor.stacks import frame_lines, frames
from scenarios.torchrun_ranks import rank_of

SCENARIO = "30"
_QUESTION = ("the text cannot say why the peer did not come; the question that decides: where was each rank when "
             "it timed out? One past its last batch (a barrier, saving, the next epoch) means uneven batch counts "
             "(30); one inside its DataLoader waiting for a batch means a stalled loader (31); neither, a rank busy "
             "elsewhere (evaluation on rank 0 alone, a slow checkpoint)")
FIXES = {
    "collective-timeout": "give every rank the same number of batches: DistributedSampler as the loader's sampler (it "
                          "pads), drop_last=True, shards of equal size, or DDP's join() for inputs that stay uneven; "
                          "print len(loader) on every rank to see it. " + _QUESTION[0].upper() + _QUESTION[1:],
    "uneven-batches": "give every rank the same number of batches: DistributedSampler as the loader's sampler (it "
                      "pads), drop_last=True, shards of equal size, or DDP's join() for inputs that stay uneven",
    "rank-waits-in-collective": "compare every rank's stack (py-spy dump --pid on each): a rank past its loop means "
                                "uneven batch counts (30: DistributedSampler, drop_last=True or DDP's join()); a rank "
                                "waiting for a batch means its loader stalled (31: DataLoader(timeout=) below the "
                                "process group's timeout, so that rank says so)",
}
# gloo's transport raises it in the rank whose recv (or send) found no peer within the process group's timeout;
# NCCL's watchdog logs its own line for the same wait; older releases word both otherwise (COLLECTIVE_TIMEOUT
# holds every wording).  Raised in a traceback, or logged bare (gloo's line as CosyVoice#180's job logs it).
ERRORS = [(COLLECTIVE_TIMEOUT.pattern, "collective-timeout")]
LOG_TEXTS = ERRORS
# A collective times out wherever a rank is late: one more batch (30), a loader stalled in one rank (31), a rank
# busy elsewhere (a checkpoint, an evaluation).  The text alone cannot choose; `pasted` adds what the log shows.
ASK = [(COLLECTIVE_TIMEOUT.pattern,
        "where was each rank when it timed out? One still training while the others wait in the collective: 30 "
        "(equal batch counts); one waiting for its own loader's batch: 31 (DataLoader(timeout=)); `python -m "
        "scenarios doctor --pid` on the launcher's PID shows each rank's stack")]
# The collective's frames hold the lesson whoever started the process: no DataLoader frame is in the traceback of
# a rank that waits in DDP's backward() or a barrier.
CONTEXT = (r"torch[/\\]distributed[/\\]|third_party[/\\]gloo[/\\]|ProcessGroup(?:Gloo|NCCL)"
           r"|nn[/\\]parallel[/\\]distributed")
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("collective-timeout: a text only a timed-out collective prints; no healthy job prints it. On the public "
           "logs labelled before this check (tests/logs/public, the corpora's logs-b) it names 30 in all 3 NCCL "
           "watchdog logs, labelled none: their threads found no cause, the text cannot, and the finding says so. "
           "rank-waits-in-collective: {jobs}; of them only tests/jobs/even_ranks.py, a healthy 2-rank DDP job with 2"
           " workers per rank, enters a collective, so only its examinations could have tripped the rule: too few to"
           " show 1 in 1000. In your run (doctor -- COMMAND): a rank's loader that ended its epoch after fewer "
           "batches than another rank "
           "received in the same epoch, a count")
_found = finder(SCENARIO, FIXES)
_read = text_finder(SCENARIO, FIXES, __doc__)

# The innermost Python frame of a rank waiting for its peers: a torch.distributed collective; DDP's backward(), whose
# gradient all_reduce the autograd engine waits for in C++; or DDP's own forward, which syncs with every rank (its
# buckets, its buffers) before the model runs.  The innermost frame alone: a forward or backward that computes is
# deeper, in the model's code.
_COLLECTIVE = re.compile(r"^(?:all_reduce|all_gather\w*|barrier|broadcast\w*|reduce_scatter\w*|reduce|gather\w*|"
                         r"scatter\w*|all_to_all\w*|monitored_barrier|wait) \(.*torch[/\\]distributed[/\\]"
                         r"|^_engine_run_backward \(.*torch[/\\]autograd[/\\]graph\.py"
                         r"|^(?:DistributedDataParallel\.)?\w+ \(.*torch[/\\]nn[/\\]parallel[/\\]distributed\.py")
_IDLE_SHARE = 0.05  # of one core over the window: a thread that waits, not one that computes


def _waiting_in(stack: str) -> str:
    """The collective the main thread waits in, from its innermost frame; '' if none."""
    lines = frame_lines(stack)
    return lines[0] if lines and _COLLECTIVE.search(lines[0]) else ""


def _launcher_of(pid: int) -> str:
    """The PID of the process that started this rank (torchrun's agent, accelerate, srun), or 'LAUNCHER'."""
    try:
        return str(psutil.Process(pid).ppid())
    except psutil.Error:
        return "LAUNCHER"


def running(job):
    """A training process that waited in one collective for the whole window, using no CPU, while
    its workers sat idle (no batch asked for): its peers are elsewhere."""
    stacks = [s for s in job.trainer_stacks if frame_lines(s)]
    if len(stacks) < 2 or len(stacks) < len(job.trainer_stacks) or any(waits_for_data(s) for s in stacks):
        return []
    waits = [_waiting_in(s) for s in stacks]
    idle_workers = all(w.cpu_share < _IDLE_SHARE * job.seconds for w in job.workers)
    if not all(waits) or not idle_workers or job.trainer_cpu_s > _IDLE_SHARE * job.seconds:
        return []
    where, rank = frames(stacks[-1]), rank_of(job.trainer)
    who = f"rank {rank[0]} of {rank[1]} (process {job.trainer})" if rank else f"process {job.trainer}"
    # One rank seen alone cannot say why its peer is late: the launcher's PID shows every rank.
    decides = "the other ranks' stacks decide" if job.via_launcher else \
        f"the other ranks' stacks decide: doctor --pid {_launcher_of(job.trainer)} examines every rank"
    return [_found("risk" if job.via_launcher else "note", "rank-waits-in-collective",
                   f"for {job.seconds:.1f} s {who} waited in a "
                   f"collective ({where}) using no CPU, its {len(job.workers)} DataLoader worker(s) idle: a peer rank "
                   "is not in the same collective. Past its last batch (uneven batch counts, 30) or stuck in its own "
                   f"loader (31): {decides}", details=stacks[-1],
                   figures={"rank": rank[0] if rank else None, "pid": job.trainer})]


def observed(run):
    """In the user's own run: one rank's loader ended its epoch after fewer batches than another rank
    received in the same epoch: the rank with more waits in a collective the other never joins.  A count."""
    found, by_epoch = [], {}
    for row in run.get("per_epoch", []):
        if row.get("rank") is not None:
            by_epoch.setdefault((row["lid"], row["epoch"]), {})[row["rank"]] = row
    for (_, epoch), ranks in sorted(by_epoch.items()):
        ended = {rank: row["batches"] for rank, row in ranks.items() if row.get("ended")}
        most = max(ranks.values(), key=lambda row: row["batches"])
        short = [(rank, n) for rank, n in ended.items() if n < most["batches"]]
        if len(ranks) > 1 and short:
            rank, n = min(short, key=lambda item: item[1])
            found.append(_found("risk", "uneven-batches",
                                f"measured in your run: in epoch {epoch}, rank {rank}'s loader ended after {n} "
                                f"batches while rank {most['rank']} received {most['batches']}: rank "
                                f"{most['rank']} waits in its collective for a peer that has left the loop",
                                figures={"epoch": epoch, "short_rank": rank, "short_batches": n,
                                         "long_rank": most["rank"], "long_batches": most["batches"]}))
            break
    return found


# Which rank a line is about: a launcher's "[rank3]:" mark, NCCL's "[Rank 3]", torchrun's "rank : 3 (local_rank",
# a trainer's own "Rank 3," or "rank 3" at a line's end.
_RANK_OF_LINE = re.compile(r"\[rank(\d+)\]:|\[Rank (\d+)\]|\brank\s*:\s*(\d+)\s*\(local_rank|\bRank (\d+)\b"
                           r"|\brank (\d+)\s*$|on rank (\d+)\b")
_WORLD = re.compile(r"\bworld[_ ]size[ :=]+(\d+)", re.I)
# The end of an epoch, as trainers and users write it: "at the end of the first epoch", "after … the 1st epoch",
# "epoch 3 finished", or a progress count at its total (35/35).
_EPOCH_END = re.compile(r"end of (?:the |an |each |every )?(?:\w+ )?(?:training )?epoch|after (?:\w+ )*?"
                        r"(?:the )?(?:1st|first|\d+(?:st|nd|rd|th)) epoch|epoch \d+ (?:finished|completed|done|ended)"
                        r"|\b(\d+)/\1\b", re.I)


def _ranks(line: str) -> set[int]:
    return {int(n) for m in _RANK_OF_LINE.finditer(line) for n in m.groups() if n is not None}


def _waiting(line: str) -> set[int]:
    """The rank that timed out on this line: the last rank named before its timeout (NCCL's "[Rank 3]", a
    launcher's mark), else one named after it ("on rank 3"); a trainer's line it was glued to counts not."""
    at = COLLECTIVE_TIMEOUT.search(line).start()
    before = [n for m in _RANK_OF_LINE.finditer(line, 0, at) for n in m.groups() if n is not None]
    return {int(before[-1])} if before else _ranks(line[at:])


def pasted(lines, raw):
    """A collective timed out, and the log says which ranks timed out and which it names otherwise (the rank they
    waited for, where those are fewer than the ranks that waited), and whether the wait began at the end of an
    epoch.  The level stays *possible*: a rank can be late for any reason; what the log shows narrows the question."""
    timed_out = [i for i, line in enumerate(raw) if COLLECTIVE_TIMEOUT.search(line)]
    if not timed_out:
        return []
    waiting = set().union(*(_waiting(raw[i]) for i in timed_out))
    world = max((int(m[1]) for line in raw for m in _WORLD.finditer(line)), default=0)
    named = waiting | set().union(*(_ranks(line) for line in raw))
    absent = sorted(set(range(max(world, max(named, default=-1) + 1))) - waiting) if waiting else []
    said = []
    if absent and len(absent) <= len(waiting):
        said.append(f"rank {', '.join(map(str, sorted(waiting)))} timed out; rank {', '.join(map(str, absent))} "
                    "printed no timeout here: the rank the others waited for, if its lines are all pasted")
    end = next((m for line in raw[:timed_out[0]][-40:] for m in [_EPOCH_END.search(line)] if m), None)
    if end:
        said.append(f"the wait began at the end of an epoch ({end.group(0)!r}): a rank out of batches, 30, is "
                    "the likelier; a loader stalled at the next epoch's start, 31, the other")
    if not said:
        return []
    first = COLLECTIVE_TIMEOUT.search(raw[timed_out[0]])
    return [_read("possible", "collective-timeout", raw[timed_out[0]][first.start():].strip()[:200] + "; "
                  + "; ".join(said), ASK[0][1])]

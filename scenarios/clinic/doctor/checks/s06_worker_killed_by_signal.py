"""06 · a worker killed by a signal: a native crash (a decoder's segfault on a damaged file)."""
import re
import signal

from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.evidence import faulting_frame, stage_text
from scenarios.clinic.doctor.findings import finder

SCENARIO = "06"
FIXES = {
    "worker-crash": "fixes/native_crash.py (CrashTrail shows the worker's Python stack and last sample; check_span "
                    "before native code trusts a header); with num_workers=0 the crash happens in your process, "
                    "where faulthandler can show it",
}
# A worker's death, not the pin-memory thread's (scenario 27 owns "Pin memory thread exited unexpectedly").
ERRORS = [(r"killed by signal|DataLoader worker \(pid.{0,2000}?exited unexpectedly", "worker-crash")]
# torch's words for a worker gone without a signal named: the OOM killer (19), a full /dev/shm (04)
# and a native crash (06) all end in them; "with exit code N": the worker's own error, printed before.
ASK = [(r"exited unexpectedly with exit code", "what did the worker print before it exited? Its own error decides "
        "(rerun with num_workers=0 to see it in your process)"),
       (r"exited unexpectedly", "what ended the worker? A 'Killed process' line in `dmesg`, or the job's memory "
        "limit reached: 19 (the OOM killer); a 'Bus error' or a full /dev/shm (`df -h /dev/shm`): 04; a "
        "segmentation fault or a native library's crash: 06")]
# PyTorch's words for a worker that ended by exiting, no signal (torch/csrc/DataLoader.cpp): the cause is the
# worker's own error, printed before it (spawn's bootstrapping error, say); where the log holds one, above it
# in the same paragraph or earlier, this is its consequence, not a second failure.  Alone, it stays 06's.
CONSEQUENCE = r"exited unexpectedly with exit code \d+"
# torch/csrc/DataLoader.cpp: the worker's own SIGSEGV and SIGFPE handlers, printed without a traceback.
LOG_TEXTS = [(r"ERROR: Unexpected (?:segmentation fault|floating-point exception) encountered in worker",
              "worker-crash")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "a signal that ended the probe's process or a worker: {loaders}. {jobs}"
_found = finder(SCENARIO, FIXES)


def error_detail(error: dict, probe) -> str:
    """What PyTorch learnt about the death: the signal, and the worker's last words."""
    signal_line = re.search(r"is killed by signal: [^\n]+", error.get("traceback", ""))
    last_words = next((line.strip(" \0") for line in probe.output if "encountered in worker" in line), "")
    return "".join(f" ({text.strip()})" for text in (signal_line and signal_line.group(0), last_words) if text)


def measured(examined, probe):
    if probe.first(events.ERROR) or probe.outcome != "crashed":
        return []
    status = probe.exit_status
    died = (f"killed by signal {signal.Signals(-status).name}" if status is not None and status < 0
            else f"exited with status {status}")
    frame = faulting_frame(probe.output)
    last = next((line for line in reversed(probe.output) if line.strip()), "")
    return [_found("risk", "worker-crash",
                   f"the probe's process itself {died} while {stage_text(probe.stage, examined.workers)}"
                   + (f", in {frame}" if frame else f"; its last words: {last.strip()[:300]}" if last else ""),
                   details="\n".join(probe.output[-40:]))]


def running(job):
    """A worker a signal killed: its zombie's wait status says so.  A worker that exited by
    itself (a non-persistent loader's at its epoch's end) or was already reaped is no finding."""
    if not job.gone:
        return []
    return [_found("risk", "worker-crash",
                   f"{len(job.gone)} of the job's worker(s) were killed "
                   f"({', '.join(f'{w.pid} {w.ended}' for w in job.gone)}): "
                   "the training loop fails with \"exited unexpectedly\" at its next batch, or waits")]

"""Reading what the probe saw: the stage it was in, PyTorch's own words in a traceback, the user's
frame in it, and where stuck workers wait.  Shared by the checks; no verdicts here."""
from __future__ import annotations

import re
import signal

from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.stacks import frame_lines, frames, main_thread_state, processes
from scenarios.clinic.paths import is_theirs


STAGES = {events.ITERATE: "iterating the loader as configured",
          events.COMPARE: "reading the same batches with num_workers=0",
          events.DRAWS: "fetching one index through 2 workers", "build": "building the loader"}


def stage_text(name: str, workers: int) -> str:
    if name == events.COMPARE and not workers:
        return "reading through 2 workers"
    return STAGES.get(name, name or "starting")


def genuine_lines(message: str, tb: str) -> tuple[str, str]:
    """(PyTorch's or Python's own headline, the line of user code it points at)."""
    text = message or tb
    lines = [line for line in text.splitlines() if line.strip()]
    caught = next((line.strip() for line in lines if "in DataLoader worker process" in line), "")
    last = lines[-1].strip() if lines else ""
    user_frame = ""
    for line in (message + "\n" + tb).splitlines():
        match = re.match(r'\s*File "([^"]+)", line (\d+),? in (\S+)', line)
        if match and is_theirs(match.group(1)):
            user_frame = f"{match.group(1)}:{match.group(2)} in {match.group(3)}"
    headline = caught if caught and caught != last else ""
    return (f"{headline} … {last}" if headline else last), user_frame


def faulting_frame(output: list[str]) -> str:
    """The user's innermost frame in faulthandler's dump (most recent call first)."""
    for line in output:
        match = re.match(r'\s*File "([^"]+)", line (\d+) in (\S+)', line)
        if match and is_theirs(match.group(1)):
            return f"{match.group(1)}:{match.group(2)} in {match.group(3)}"
    return ""


def in_process_outcome(probe) -> str:
    """After an error in the workers the probe reads the same samples in its own process:
    what happened there, as a sentence to add to the evidence."""
    errors = [e for e in probe.all(events.ERROR) if not e.get("own")]  # the doctor's own are no evidence
    if len(errors) > 1 and errors[1].get("stage") == events.COMPARE:
        headline, frame = genuine_lines(f"{errors[1].get('type')}: {errors[1].get('message', '')}",
                                         errors[1].get("traceback", ""))
        first_line = genuine_lines(f"{errors[0].get('type')}: {errors[0].get('message', '')}",
                                    errors[0].get("traceback", ""))[0]
        if first_line.endswith(headline):
            return "; with num_workers=0 the same error, in the probe's own process"
        return f"; with num_workers=0: {headline}" + (f" (raised at {frame})" if frame else "")
    if probe.first(events.COMPARE):
        return "; with num_workers=0 the same batches load without error: it fails only in workers"
    status = probe.exit_status
    if probe.stage == events.COMPARE and not probe.first(events.DONE) and status is not None and status < 0:
        frame = faulting_frame(probe.output)
        return (f"; with num_workers=0 the probe's own process died of {signal.Signals(-status).name}"
                + (f" in {frame}" if frame else ""))
    return ""


def worker_frames(stacks: str, pids: list[int]) -> str:
    """The top frames of each worker's stack (py-spy's dump), one entry per worker."""
    shown = []
    for pid, block in processes(stacks):
        if pids and pid not in pids:
            continue
        state = main_thread_state(block)
        shown.append(f"worker {pid}" + (f" ({state})" if state else "") + " in "
                     + (frames(block, 3) if frame_lines(block) else block.strip().splitlines()[0][:200]))
    return "; ".join(shown[:2])


def in_flight(setup, probe) -> dict | None:
    """Batches in flight as fixes/memory_in_flight.py counts them, from the probe's first batch:
    the bytes in /dev/shm, the job's predicted peak, and the arithmetic as a sentence (04 and 10)."""
    from fixes.memory_in_flight import batches_in_flight, predicted_peak_bytes
    from scenarios.clinic.doctor.findings import mb

    first = probe.first(events.FIRST_BATCH)
    if not first or not setup.num_workers:
        return None
    batch, workers, prefetch = first["bytes"], setup.num_workers, setup.prefetch_factor or 2
    measured_shm = max((m.get("shm") or 0 for m in probe.all(events.MEMORY)), default=0)
    count = batches_in_flight(workers, prefetch)
    pinned = workers * prefetch * batch if setup.pin_memory else 0
    return {"bytes": count * batch, "pinned": pinned, "peak": predicted_peak_bytes(batch, workers, prefetch) + pinned,
            "arithmetic": f"one batch is {mb(batch)}; {workers} workers × prefetch_factor {prefetch} + 2 = {count} "
                          f"batches in flight: {mb(count * batch)}"
                          + (f" (the probe's loader held up to {mb(measured_shm)} of /dev/shm)"
                             if measured_shm else "")}

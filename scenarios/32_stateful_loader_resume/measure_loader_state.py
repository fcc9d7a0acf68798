"""Scenario 32, measured: what a StatefulDataLoader's state holds after broken.py's resume, and
what happens when a state is resumed with another num_workers (torchdata 0.11.0).

    python scenarios/32_stateful_loader_resume/measure_loader_state.py

One process, no kill.  A 2-worker loader (96 samples, batches of 8, shuffle=True) yields 3
batches and gives its state_dict().
- broken.py's order in a new loader (iter() first, then load_state_dict()): 5 batches from the
  iterator taken first, then state_dict(), as the next checkpoint would take it.
- The state resumed in loaders with 1, 3 and 0 workers: the rest of the epoch, or the error
  raised as the iterator is made; once as this interpreter runs (assertions on) and once in
  `python -O` (assertions stripped), where the same loads go further.
"""
import subprocess
import sys
import warnings

import psutil
from torchdata.stateful_dataloader import StatefulDataLoader

SAMPLES, BATCH, WORKERS, DONE = 96, 8, 2, 3
OTHER_WORKERS = (1, 3, 0)
warnings.filterwarnings("ignore", message="'set_vital' is deprecated")  # torchdata 0.11 on torch 2.13
warnings.filterwarnings("ignore", message="This DataLoader will create 3 worker processes")  # a 2-core machine


def loader(workers):
    return StatefulDataLoader(list(range(SAMPLES)), BATCH, shuffle=True, num_workers=workers,
                              multiprocessing_context="fork" if workers else None)


def saved_state():
    first = loader(WORKERS)
    batches = iter(first)
    done = [next(batches).tolist() for _ in range(DONE)]
    return first.state_dict(), done


def state_after_late_load(state):
    """broken.py's order: iter() taken, then load_state_dict(); 5 batches; then state_dict()."""
    resumed = loader(WORKERS)
    batches = iter(resumed)
    resumed.load_state_dict(state)
    workers_before = len(psutil.Process().children())
    for _ in range(5):
        next(batches)
    saved = resumed.state_dict()
    workers_after = len(psutil.Process().children())
    del batches, resumed
    return saved["_snapshot"]["_snapshot_step"], workers_after - workers_before


def resume_with(workers, state, done):
    """How resuming `state` with `workers` workers ends: 'ok' (every sample once in the epoch),
    'wrong' (it ran, but not every sample once) or the error's type and first line."""
    resumed = loader(workers)
    resumed.load_state_dict(state)
    try:
        rest = [b.tolist() for b in resumed]
    except Exception as error:  # what torchdata raises is the measurement
        return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else '(no message)'}"
    once = sorted(i for b in done + rest for i in b) == list(range(SAMPLES))
    return "ok" if once else "wrong"


def main():
    state, done = saved_state()
    if "-O" in sys.argv[1:]:  # the child interpreter of the second half
        for workers in OTHER_WORKERS:
            print(f"resumed with {workers}: {resume_with(workers, state, done)}")
        return
    recorded, extra_workers = state_after_late_load(state)
    print(f"iter() before load_state_dict(): after {DONE} + 5 batches, state_dict() says {recorded} batches, "
          f"and started {extra_workers} more workers for an iterator the loop never uses")
    print(f"metric late_load_state_batches={recorded}")
    print(f"metric late_load_extra_workers={extra_workers}")
    outcomes = {"asserts": {w: resume_with(w, state, done) for w in OTHER_WORKERS}}
    child = subprocess.run([sys.executable, "-O", __file__, "-O"], capture_output=True, text=True, timeout=60)
    outcomes["python_O"] = dict(zip(OTHER_WORKERS, (line.split(": ", 1)[1] for line in child.stdout.splitlines()
                                                    if line.startswith("resumed with "))))
    for mode, found in outcomes.items():
        for workers, outcome in found.items():
            print(f"a {WORKERS}-worker state resumed with num_workers={workers} ({mode}): {outcome}")
        print(f"metric {mode}_errors={sum(o not in ('ok', 'wrong') for o in found.values())}")
        print(f"metric {mode}_resumed_every_sample_once={sum(o == 'ok' for o in found.values())}")
    key_error = any("_sampler_iter_yielded" in outcome for outcome in outcomes["python_O"].values())
    print(f"metric key_error_sampler_iter_yielded={int(key_error)}")


if __name__ == "__main__":
    main()

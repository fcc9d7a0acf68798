"""32 · a StatefulDataLoader's state that cannot resume it: loaded after iter(), or saved with another num_workers."""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "32"
FIXES = {
    "state-after-iter": "load the state before the loop takes its iterator: loader.load_state_dict(state), then "
                        "iter(loader) or `for batch in loader` (scenario 32's fixed.py); a state loaded later waits "
                        "for the next iter()",
    "state-other-workers": "resume with the num_workers the state was saved with (torchdata 0.11.0 asserts it); "
                           "under accelerate with num_workers > 0, an accelerate with its PR #3931; then "
                           "load_state_dict() before the first iter(loader) (scenario 32's fixed.py)",
}
# torchdata 0.11.0's own texts (torchdata/stateful_dataloader/stateful_dataloader.py) when a state is
# loaded into a loader with another num_workers: the two messages of its shape checks, and the KeyError
# where those checks are stripped (python -O) or where a wrapper (accelerate's adjust_state_dict_for_prefetch)
# reads a worker state's keys as a single-process state's.  Each names a StatefulDataLoader state alone.
LOG_TEXTS = [(r"State doesn't contain key '_(?:num_yielded|snapshot)' expected for (?:single process|multiprocess) "
              r"dataloader", "state-other-workers"),
             (r"KeyError: '_sampler_iter_yielded'", "state-other-workers")]
# A bare AssertionError, whose traceback's source line is the only words it has; and a key of a worker
# state missing under python -O, a generic KeyError that counts in torchdata's frames only.
ERRORS = [(r"assert self\._num_workers == state_dict\[self\._NUM_WORKERS\]", "state-other-workers"),
          (r"KeyError: '_snapshot'", "state-other-workers")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("error texts only, no rule on a loader: a state loaded after iter() leaves the loader looking as one "
           "loaded before it (its _iterator None, the state kept for the next iter()), so nothing examined can tell "
           "them apart; the texts are torchdata's own and printed only by a StatefulDataLoader given a state of "
           "another num_workers. In your run (doctor -- COMMAND): batches the loop received, after a state was loaded "
           "into a StatefulDataLoader, from an iterator of it made before the load: no chance in it, a healthy loop "
           "takes its iterator after the load or never loads one")

# The iterator taken before the state was loaded goes on in a new order: the resume's lost order (24's reading of
# the run) is this mistake's, and 24's advice, a StatefulDataLoader's state, is already taken (fresh-49's run_m).
EXPLAINS = [("24", "resume-mid-epoch")]
_found = finder(SCENARIO, FIXES)


def observed(run):
    """In the user's own run: a state loaded into a StatefulDataLoader whose loop kept the iterator it had
    taken before: the state waits for the next iter(), and this epoch goes on from where that iterator was."""
    unused = run.get("unused_states") or []
    if not unused:
        return []
    first = unused[0]
    rank = "" if first.get("rank") is None else f" on rank {first['rank']}"
    return [_found("risk", "state-after-iter",
                   f"measured in your run: load_state_dict() was called on a StatefulDataLoader{rank} after its "
                   f"iterator was taken, and the loop received {first['batches']} more batches from that iterator: "
                   "the loaded state was never used (it waits for the next iter()), so the resumed epoch went on "
                   "from the old iterator's position, not the checkpoint's",
                   figures={"batches": first["batches"], "loaders": len(unused)})]

"""36 · a stream with no state of its own, resumed by count: torchdata 0.11.0 counts the skipped batches twice.

Static: a StatefulDataLoader whose dataset is an IterableDataset with no state_dict()/load_state_dict() of
its own (nor its iterator, which the doctor cannot see before iter()): on every resume torchdata fast-forwards
it by the state's batch count, and the state a resumed run saves counts the skipped batches again, so the
second resume within an epoch skips batches (read from the loader's class and the dataset's methods: no chance
in it).  Text: torchdata's own warning for that fast-forward; the bare StopIteration its iterator raises,
inside StatefulDataLoader.__iter__, when the fast-forward runs past the stream's end; and its ValueError when
the fast-forward ends on another worker than the state recorded.
"""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "36"
_STATE_FIX = ("give the IterableDataset a state_dict()/load_state_dict() of its own (its position in each worker "
              "copy: torchdata saves it per worker and fast-forwards nothing; scenario 36's fixed.py), or a stream "
              "library whose dataset has one (datasets.IterableDataset, torchdata.nodes)")
FIXES = {"stream-fast-forward": _STATE_FIX, "fast-forward-past-end": _STATE_FIX,
         "fast-forward-other-worker": _STATE_FIX, "stream-without-state": _STATE_FIX}
# torchdata 0.11.0 (stateful_dataloader.py, _StatefulMultiProcessingDataLoaderIter.__init__ and
# _StatefulSingleProcessDataLoaderIter.load_state_dict) logs this on every resume of a stream without state.
# The first resume after a fresh start is exact, so the text alone cannot tell a lost batch: ASK.
LOG_TEXTS = [(r"naively fast-forwarding your dataset by \d+ steps", "stream-fast-forward")]
ASK = [(r"naively fast-forwarding your dataset by \d+ steps",
        "was the checkpoint written by a run that was itself resumed in this epoch? torchdata counts the batches it "
        "fast-forwarded a second time in that run's state: if N is more than the steps trained in the epoch at that "
        "checkpoint, N minus those steps were skipped (fewer batches than N left in the stream: a bare StopIteration)"),
       (r"last_yielded_worker_id does not match",
        "was the checkpoint written by a run that was itself resumed in this epoch? then torchdata's batch count ran "
        "ahead by the batches it fast-forwarded there, and the dataset did not change; if it was a first resume, the "
        "stream did change between the runs")]
# The same fast-forward run dry while the resumed iterator is made: StopIteration with no message, raised from
# next(self) in the iterator's __init__, which only the resume's fast-forward loops call there.  And the check
# after a fast-forward that ended on another worker than the state recorded: torchdata blames a changed dataset,
# but an inflated count whose surplus is no multiple of num_workers raises it too (scenario 36's measure_endings.py).
ERRORS = [(r"stateful_dataloader\.py\", line \d+, in __init__\n\s*next\(self\)\n(?:.*\n)*?\W{0,3}StopIteration\s*$",
           "fast-forward-past-end"),
          (r"last_yielded_worker_id does not match, the dataset may have changed", "fast-forward-other-worker")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("static: the loader's class and its dataset's methods, read, no chance in it; only a StatefulDataLoader "
           "over an IterableDataset without state_dict() trips it, and every such loader's second resume in an epoch "
           "is fast-forwarded by a count that includes the batches skipped before. Texts: torchdata's own, printed "
           "only by a resume of such a stream. In your run (doctor -- COMMAND): a state_dict() whose batch count "
           "is not the batch its iterator resumed at plus the batches the loop received since, both counted: no "
           "chance in it (none in the fixed runs of 32, 35 and 36, which save states before, during and after "
           "their epochs, resumed and not, map-style and stream, tests/test_doctor_run.py)")
_found = finder(SCENARIO, FIXES)


def observed(run):
    """In the user's own run: a StatefulDataLoader saved a state whose batch count runs ahead of the loop's
    position (its resume's fast-forward counted twice): the next resume from it skips the difference."""
    wrong = [s for s in run.get("miscounted_states") or [] if s.get("says", 0) > s.get("received", 0)]
    if not wrong:
        return []
    first = wrong[0]
    rank = "" if first.get("rank") is None else f" on rank {first['rank']}"
    return [_found("risk", "stream-fast-forward",
                   f"measured in your run: a StatefulDataLoader{rank} saved a state at batch {first['says']} of its "
                   f"epoch while the loop was at batch {first['received']} (where its iterator resumed, plus the "
                   f"batches received since): a resume from that state skips {first['says'] - first['received']} "
                   f"batches ({len(wrong)} such state(s) saved)",
                   figures={key: first[key] for key in ("says", "received", "rank")} | {"states": len(wrong)})]


def static(examined):
    loader = examined.loader
    if not examined.setup.iterable or not type(loader).__module__.startswith("torchdata.stateful_dataloader"):
        return []
    dataset = loader.dataset
    if callable(getattr(dataset, "state_dict", None)) and callable(getattr(dataset, "load_state_dict", None)):
        return []
    return [_found("risk", "stream-without-state",
                   f"{examined.setup.dataset} is an IterableDataset with no state_dict()/load_state_dict() under a "
                   "StatefulDataLoader: a resume fast-forwards it by the state's batch count (reading and dropping "
                   "them), and the state a resumed run saves counts those batches twice, so a second resume in the "
                   "same epoch skips as many batches as the first resume fast-forwarded (unless iter(dataset) "
                   "returns an iterator with a state of its own)")]

"""32 · a StatefulDataLoader's state that cannot resume it: loaded after iter(), or saved with another num_workers."""
SCENARIO = "32"
FIXES = {
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
           "another num_workers")

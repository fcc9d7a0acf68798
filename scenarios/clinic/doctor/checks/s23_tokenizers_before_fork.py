"""23 · tokenizers' thread pool used before the workers fork: they tokenize on one thread, or hang."""
import os

from scenarios.clinic.doctor.findings import finder

SCENARIO = "23"
FIXES = {
    "tokenizers-before-fork": "keep the training process from running tokenizers' thread pool before the DataLoader "
                              "forks (fixes/serial_tokenizers.py: serial_tokenizers() around that use), or "
                              "multiprocessing_context='forkserver'; never TOKENIZERS_PARALLELISM=true with fork",
}
# tokenizers' own warning up to 0.22.1 (silent from 0.22.2 on), once per forked worker.
LOG_TEXTS = [(r"huggingface/tokenizers: The current process just got forked, after parallelism has already been used",
              "tokenizers-before-fork")]
# tokenizers' rule for the variable: anything but these turns parallelism on.
_OFF = ("", "off", "false", "f", "no", "n", "0")
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "read from this process, no chance in it: {loaders}"
# A hang the probe meets where this is a risk is the pool's wait, not a lock's (01's "hang").
EXPLAINS = [("01", "hang")]
_found = finder(SCENARIO, FIXES)


def static(examined):
    tokenizers = examined.found("tokenizer")
    if not (tokenizers and examined.forked):
        return []
    path = tokenizers[0][0]
    forced = os.environ.get("TOKENIZERS_PARALLELISM")
    if forced is not None and forced.strip().lower() not in _OFF:
        return [_found("risk", "tokenizers-before-fork",
                       f"{path} is a tokenizers.Tokenizer, the workers fork, and TOKENIZERS_PARALLELISM={forced}: if "
                       "this process used the tokenizer's thread pool before the fork (encode_batch, padding, "
                       "training), a worker's first batch waits forever for pool threads fork did not copy")]
    return [_found("note", "tokenizers-before-fork",
                   f"{path} is a tokenizers.Tokenizer and the workers fork: if this process used its thread pool "
                   "first (encode_batch, a fast tokenizer's __call__ on a list, padding), every worker tokenizes on "
                   "one thread (tokenizers up to 0.22.1 says so in a warning; later releases are silent)")]

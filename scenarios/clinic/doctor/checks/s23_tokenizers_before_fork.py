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
HEALTHY = ("read from this process, no chance in it: {loaders}. In your run (doctor -- COMMAND): tokenizers' batch "
           "calls timed against each worker's start, a record with no chance in it")
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


def observed(run):
    """In the user's own run: the training process ran tokenizers' thread pool (a batch call, a trainer) before
    its DataLoader forked workers, and those workers call tokenizers too: each of them tokenizes on one thread
    (silent since 0.22.2), or waits forever with TOKENIZERS_PARALLELISM=true.  Read from the hook on tokenizers'
    entry points, each process's first call timed against each worker's start; a count with no chance in it."""
    used = [p for p in run.get("pools_used", []) if p.get("lib") == "tokenizers"]
    calling = {p["pid"] for p in used}
    first = {p["pid"]: p for p in sorted(used, key=lambda p: -p["t"]) if p.get("on")}  # each process's first
    forked = {loader.get("pid") for loader in run.get("loaders", []) if loader.get("start_method") == "fork"}
    hit = [w for w in run.get("workers", []) if w.get("pid") in calling and w.get("ppid") in first
           and w.get("ppid") in forked and first[w["ppid"]]["t"] < w.get("started", 0)]
    if not hit:
        return []
    parent = first[hit[0]["ppid"]]
    forced = parent.get("configured")
    then = "waits forever for pool threads the fork did not copy" if forced else \
        "tokenizes on one thread (tokenizers says nothing since 0.22.2)"
    return [_found("risk", "tokenizers-before-fork",
                   f"measured in your run: the training process called tokenizers' {parent['what']}() before its "
                   f"DataLoader forked {len(hit)} worker(s) that call tokenizers too: each of them {then}",
                   figures={"workers": len(hit), "first_call": parent["what"], "parallelism": forced})]

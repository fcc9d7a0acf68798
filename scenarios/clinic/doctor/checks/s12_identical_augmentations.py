"""12 · a random generator copied into every worker: the workers draw the same "random" numbers.

The measured part fetches one index 16 times (events.DRAW_PAIRS) through each of two workers, and 2 × 16
times in one process.  A generator copied into both workers makes worker 0's k-th draw equal
worker 1's k-th draw, every time.  Confirmed only when all 16 pairs agree across workers
while at most half of the 16 in-process pairs agree (the sample is random).  For a healthy
augmentation whose two draws agree with probability p, that happens with probability
p**16 · P(Binomial(16, p) <= 8), at most 2.7e-4 over every p (largest near p = 0.74): below one
in a thousand.  A coin flip (p = 0.5) trips it with probability 9e-6.
"""
import re

from scenarios.clinic.doctor import events, printed
from scenarios.clinic.doctor.findings import finder, text_finder
from scenarios.clinic.doctor.holdings import public_name

SCENARIO = "12"
_PAIRS = events.DRAW_PAIRS   # as many as the probe fetches
_RESEED_FIX = ("fixes/worker_seeding.py (worker_init_fn=reseed_dataset_generators re-seeds the generators on the "
              "dataset per worker and epoch); or re-seed it per worker in worker_init_fn from "
              "torch.utils.data.get_worker_info().seed, or draw from "
              "torch's global generator, which PyTorch seeds per worker and epoch")
# worker_init_fns that re-seed what the dataset holds: fixes/worker_seeding.py's, or one calling its parts
_RESEEDERS = ("reseed_dataset_generators", "reseed_generators", "reseed_generator")
FIXES = {"rng-on-dataset": _RESEED_FIX, "repeated-draws": _RESEED_FIX,
         "frozen-worker-info": "re-seed the dataset's own generators in worker_init_fn from get_worker_info().seed "
                               "(read it, do not assign it): " + _RESEED_FIX}
# torch 2.12 made WorkerInfo a frozen dataclass: code that re-seeds a worker by assigning its seed now
# raises dataclasses' error, which an `except RuntimeError` around it no longer catches.
_FROZEN_SEED = r"FrozenInstanceError: cannot assign to field '?seed'?"
ERRORS = [(_FROZEN_SEED, "frozen-worker-info")]
LIKELY = [(_FROZEN_SEED, "frozen-worker-info", "WorkerInfo is frozen since torch 2.12: a worker's seed can be "
           "read, not assigned, whoever's code tried it")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("static: the generators on the dataset, no chance in it. measured: {draws}. {loaders}. In your run "
           "(doctor -- COMMAND): two or more "
           "random states two workers both reached, a count with no chance in it (states of 64 bits or more)")
_found = finder(SCENARIO, FIXES)


def static(examined):
    held = examined.found("rng") if examined.workers else []
    if not held:
        return []
    init = examined.loader.worker_init_fn
    what = _held(held)
    in_place = _fix_in_place(init)
    if in_place:
        return [_found("note", "rng-on-dataset", f"{what} stored on the dataset, and the fix is in place: {in_place}")
                .fixed(in_place)]
    return [_found("note" if init is not None else "risk", "rng-on-dataset",
                   f"{what} stored on the dataset: every worker starts from a copy of the same state, so the "
                   f"{examined.workers} workers draw the same \"random\" numbers (PyTorch re-seeds only torch's, "
                   "numpy's and random's global generators)"
                   + (" — unless worker_init_fn re-seeds it" if init is not None else ""))]


def _held(held: list) -> str:
    """One finding for every generator the dataset holds: 'dataset.rng is a numpy…', or a list of paths."""
    kinds = sorted({public_name(obj) for _, obj in held})
    if len(held) == 1:
        return f"{held[0][0]} is a {kinds[0]}"
    paths = ", ".join(path for path, _ in held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
    return f"{paths} are {' and '.join(kinds)} generators"


def _fix_in_place(init) -> str:
    """What shows that worker_init_fn re-seeds the dataset's generators, or ''."""
    import inspect

    if init is None:
        return ""
    name = getattr(init, "__qualname__", type(init).__qualname__)
    if name in _RESEEDERS:
        return f"worker_init_fn is {getattr(init, '__module__', '?')}.{name}"
    try:
        source = inspect.getsource(init)
    except (OSError, TypeError):
        return ""
    called = next((r for r in _RESEEDERS if f"{r}(" in source), "")
    return f"worker_init_fn {name} calls {called}()" if called else ""


def _verdict(drawn: dict) -> str | None:
    """'copied' (confirmed), 'independent' (measured, not seen), or None (too few draws, or the
    sample is not random enough to tell)."""
    workers, alone = drawn.get("by_worker", []), drawn.get("in_process", [])
    pairs = list(zip(*workers[:2])) if len(workers) >= 2 else []
    alone_pairs = list(zip(alone[0::2], alone[1::2]))
    if len(pairs) < _PAIRS or len(alone_pairs) < _PAIRS:
        return None
    if sum(a == b for a, b in alone_pairs[:_PAIRS]) > _PAIRS // 2:
        return None  # the sample mostly repeats in one process: agreement across workers proves nothing
    return "copied" if all(a == b for a, b in pairs[:_PAIRS]) else "independent"


def measured(examined, probe):
    drawn = probe.first(events.DRAWS)
    if not drawn or _verdict(drawn) != "copied":
        return []
    return [_found("risk", "repeated-draws",
                   f"measured: index {drawn['index']} is random "
                   f"(in one process at most {_PAIRS // 2} of {_PAIRS} pairs "
                   f"of reads agreed), yet fetched {_PAIRS} times in each of two workers, both workers returned the "
                   "identical sample every time: the random state the workers draw from is a copy, not a fresh seed")]


def merge(findings, probe):
    """The measurement confirms the static suspicion (one finding, a risk) or, where it measured
    independent draws, turns it into a note; too few draws leave it as it is."""
    static_ones = [f for f in findings if f.check == "rng-on-dataset"]
    confirmed = [f for f in findings if f.check == "repeated-draws"]
    drawn = probe.first(events.DRAWS) if probe is not None else None
    for finding in static_ones:
        if confirmed:
            finding.level, finding.evidence = "risk", f"{finding.evidence}; {confirmed[0].evidence}"
            finding.in_place = ""  # measured copied all the same: the fix line stands
        elif drawn and _verdict(drawn) == "independent":
            has_init = finding.level == "note"  # static() names a risk only where no worker_init_fn is set
            finding.level = "note"
            apart = f"the probe measured independent draws in two workers ({_PAIRS} pairs)"
            finding.evidence += f"; {apart}: something re-seeds it"
            if has_init:  # the re-seeding worker_init_fn, shown at work
                finding.fixed(finding.in_place or f"worker_init_fn is set and {apart}")
    return static_ones if static_ones and confirmed else static_ones + confirmed


def observed(run):
    """In the user's own run: random states that two workers both reached after a batch, the draws
    of copies of one generator.  Two 64-bit or larger states agreeing by chance would need more draws than
    any run makes: a count with no chance in it."""
    shared = run.get("shared_draw_states", 0)
    if shared < 2:
        return []
    sources = ", ".join(run.get("shared_draw_sources", [])) or "a generator"
    return [_found("risk", "repeated-draws",
                   f"measured in your run: {shared} random states of {sources} were reached by two DataLoader "
                   "workers: each worker draws the same numbers, so their augmentations repeat",
                   figures={"shared_states": shared, "sources": run.get("shared_draw_sources", [])})]


# Printed output (explain): a draw is a number with a fraction of at least two digits (a counter, an index or a
# rounded setting has none); "worker 3", "worker_id=3", "[worker 3]" mark whose it is.
_DRAW = re.compile(r"-?\d+\.\d{2,}(?:e-?\d+)?")
_WORKER = re.compile(r"\bworker(?:[ _]?id)?\s*[:=#]?\s*(\d+)", re.I)
_BARE_VALUES = re.compile(r"^\s*(?:-?\d+(?:\.\d+)?\s*[,;]?\s*){4,}$")
_SETTLE = ("`python -m scenarios doctor FILE.py:make_loader` fetches one index through two workers and compares "
           "their draws")
_read = text_finder(SCENARIO, FIXES, __doc__)


def _worded_draw(line: str) -> bool:
    """A line with words and a draw ("Rotating by 19.3670"), not a worker's own."""
    return bool(_DRAW.search(line) and re.search(r"[A-Za-z]{3}", line)) and not _WORKER.search(line)


def _bare_value(line: str) -> bool:
    return bool(printed.VALUE.match(line))


def _same_run_sizes(lines: list[str]) -> list:
    """Printed draws (worded, or bare values that are not a dataset's indices: those are samples, 13) that come in
    runs of one size k >= 2, at least two of them: k processes drew the same "random" numbers."""
    kinds = [("draws", _worded_draw)] + ([] if printed.dataset_indices(lines)[0] else [("values", _bare_value)])
    for kind, keep in kinds:
        runs = printed.runs(lines, keep)
        sizes = [n for _, n in runs if n >= 2]
        if len(sizes) >= 2 and len(set(sizes)) == 1 and len(sizes) >= 0.8 * len(runs):
            return [_read("likely", "repeated-draws", f"{len(sizes)} printed {kind} each {sizes[0]} times in a row "
                          f"({runs[0][0][:60]} …)", f"each value comes {sizes[0]} times, then the next: {sizes[0]} "
                          "processes drew the same numbers, as DataLoader workers do whose generator was copied at "
                          "the fork")]
    return []


def _same_by_worker(lines: list[str]) -> list:
    """Draws of 12 or more significant digits printed under two or more workers' names: two such
    values agree by chance never, so each shared one is a draw both workers made (a line that is no
    draw of theirs, a worker's own test value, may differ and does not hide the rest)."""
    drawn: dict[str, set] = {}
    for line in lines:
        worker, draw = _WORKER.search(line), _DRAW.search(line)
        if worker and draw:
            drawn.setdefault(draw.group(0), set()).add(worker[1])
    shared = [value for value, workers in drawn.items() if len(workers) >= 2]
    workers = set().union(*(drawn[value] for value in shared)) if shared else set()
    if len(shared) < 2:
        return []
    return [_read("likely", "repeated-draws", f"{len(workers)} workers printed the same {len(shared)} draws "
                  f"({', '.join(shared[:3])} …)", "a generator copied into each worker at the fork gives each "
                  "the same numbers; " + _SETTLE)]


def _one_line_of_equals(lines: list[str]) -> list:
    """One line of four or more equal numbers with a fraction: one draw per worker, each the same?"""
    line = next((line.strip() for line in lines if _BARE_VALUES.match(line) and "." in line
                 and len(set(re.findall(r"-?\d+(?:\.\d+)?", line))) == 1), None)
    if line is None:
        return []
    count = len(re.findall(r"-?\d+(?:\.\d+)?", line))
    return [_read("possible", "repeated-draws", f"{count} equal values on one printed line ({line[:60]})",
                  f"are these {count} random draws, one a worker or a sample? Then each came out the same, a generator "
                  "copied at the fork (12); a value the code sets is no draw. " + _SETTLE)]


def pasted(lines, raw):
    """Printed draws that repeat: runs of one size (each of k workers printed it), the same sequence under each
    worker's name, or a line of equal values."""
    return _same_run_sizes(lines) or _same_by_worker(lines) or _one_line_of_equals(lines)

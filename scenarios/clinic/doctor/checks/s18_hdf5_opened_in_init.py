"""18 · an h5py file opened in __init__, before the workers fork."""
import sys

from scenarios.clinic.doctor.findings import finder

SCENARIO = "18"
FIXES = {
    "hdf5-handle": "open the h5py.File in each worker on first use (fixes/per_worker.py: PerWorker(h5py.File, "
                   "path, 'r')), never in __init__",
}
# HDF5's own words when two workers move one shared offset under each other.
ERRORS = [(r"filter returned failure during read|wrong B-tree signature|bad symbol table|Can't read data"
           r"|bad object header|incorrect metadata checksum|can't read data|h5py objects cannot be pickled",
           "hdf5-handle")]
# h5py refuses to pickle its handles: a dataset holding one cannot reach a spawned child, whoever
# starts it; opening the file in each worker is 18's fix.  Before 09's and 33's wider "cannot be pickled".
LIKELY = [(r"h5py objects cannot be pickled", "hdf5-handle", "h5py refuses to pickle an open handle: the object "
           "a spawned child must unpickle holds one, so each process must open the file itself")]
WINS_OVER = ("09", "33")
# h5py's own read (h5py/_hl/dataset.py's `self.id.read(...)`) failing inside a worker: whatever HDF5's words (they
# change between releases: "Can't synchronously read data", "Unable to open object"), two workers that read
# through one handle a fork copied is this lesson.
FRAMES = [(r"h5py[/\\]_hl[/\\]\w+\.py\"?, line \d+, in \w+\s*\n\s*self\.id\.read\b", "hdf5-handle",
           "h5py's read failed inside a DataLoader worker: an h5py file a fork copied into every worker moves one "
           "shared state under their reads (a damaged file fails with num_workers=0 too: try it)")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "the handles open when examined, no chance in it: {loaders}"
_found = finder(SCENARIO, FIXES)


def _hdf5_driver(obj) -> str:
    """The HDF5 driver an h5py File, Group or Dataset reads through: 'sec2' for a path (pread),
    'fileobj' for a Python file object, 'stdio' for C stdio (both with a shared offset)."""
    try:
        return str(getattr(obj, "file", obj).driver)
    except Exception:  # a closed file
        return "unknown"


def _hdf5_versions() -> str:
    h5py = sys.modules.get("h5py")
    return f"{h5py.__version__} (HDF5 {h5py.version.hdf5_version})" if h5py else "here"


def static(examined):
    if not examined.forked:
        return []
    findings, workers = [], examined.workers
    for path, obj in examined.found("hdf5"):
        driver = _hdf5_driver(obj)
        if driver in ("fileobj", "stdio"):
            findings.append(_found("risk", "hdf5-handle",
                                   f"{path} is an h5py {type(obj).__name__} opened before the workers fork, read "
                                   "through "
                                   f"{'a Python file object' if driver == 'fileobj' else 'the stdio driver'}: the "
                                   f"{workers} workers share one file offset (h5py errors such as 'filter returned "
                                   "failure during read', or silently wrong samples)"))
        else:
            findings.append(_found("note", "hdf5-handle",
                                   f"{path} is an h5py {type(obj).__name__} opened before the workers fork (driver "
                                   f"{driver}): h5py {_hdf5_versions()} reads such a file by position, which held in "
                                   "scenario 18's runs, but HDF5's caches and locks are copied into each worker, and "
                                   "an HDF5 older than 1.10.5 or a file object breaks it"))
    return findings

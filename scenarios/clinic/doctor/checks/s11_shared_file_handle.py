"""11 · a file or connection opened before the workers fork, shared by all of them."""
from scenarios.clinic.doctor.findings import finder
from scenarios.clinic.doctor.holdings import public_name

SCENARIO = "11"
FIXES = {
    "open-handles": "fixes/per_worker_file.py (PerWorkerFile: each worker opens its own descriptor and reads "
                    "with os.pread), or open the file on first use in __getitem__",
    "open-connection": "fixes/per_worker.py (PerWorker(connect): each process, every worker included, opens "
                       "its own connection on first use)",
}
# An open file inside what spawn or forkserver must pickle for the child (the dataset): the pickler
# refuses it, whoever starts the process; the lesson is each process opening its own (09's "make it
# picklable" would not say how).  Before 09's wider "cannot pickle"; after 33's, whose text is a
# worker's queue failing to pickle a batch (an open file in a sample, not in the dataset).
_OPEN_FILE = r"cannot pickle '(?:_io\.)?(?:Buffered\w+|TextIOWrapper|FileIO)' (?:object|instances)"
ERRORS = [(_OPEN_FILE, "open-handles")]
LIKELY = [(_OPEN_FILE, "open-handles", "an open file is what the pickler refuses: the object a spawned child "
           "must unpickle holds one, so each process must open its own")]
WINS_OVER = ("09",)
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "the handles open when examined, no chance in it: {loaders}"
# A worker's error where every worker reads through one handle (a zip's Bad CRC-32, a record that does not
# parse: the offset moved under it) is this handle's doing before it is a damaged file's (02's catch-all).
EXPLAINS = [("02", "worker-error")]
_found = finder(SCENARIO, FIXES)


def static(examined):
    if not examined.forked:
        return []
    workers = examined.workers
    findings = [_found("risk", "open-handles",
                       f"{path} is an open file ({getattr(obj, 'name', type(obj).__name__)!s}, mode "
                       f"{getattr(obj, 'mode', '?')}): the {workers} forked workers share its offset, so one worker's "
                       "seek moves where another reads, and samples silently hold another record's bytes")
                for path, obj in examined.found("file")]
    findings += [_found("risk", "open-connection",
                        f"{path} is an open {public_name(obj)}: the {workers} forked workers would talk over one "
                        "connection, their requests and replies interleaved")
                 for path, obj in examined.found("socket") + examined.found("connection")]
    return findings

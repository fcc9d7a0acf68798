"""`python -m scenarios explain`: logs from the scenarios' own runs, texts from torch's sources,
logs wrapped by launchers, and logs with no DataLoader failure in them."""
import json
import re
import subprocess
import sys

import pytest
from conftest import REPO_ROOT, scenario_report

from scenarios.clinic.doctor import catalogue
from scenarios.clinic.doctor.checks import CHECKS
from scenarios.clinic.doctor.explain import explain_text, unwrap

# (scenario, variant whose output holds a genuine traceback, the scenario explain must name).  11's
# myth_forkserver: forkserver cannot pickle the dataset's open file; 11's fix (the file opened in each
# worker) is what ends it, and 11's check owns that text (an open file a started child cannot unpickle).
OWN_RUNS = [("01", "myth_timeout", "01"), ("02", "broken", "02"), ("04", "broken", "04"), ("06", "broken", "06"),
            ("08", "broken", "08"), ("09", "broken", "09"), ("09", "broken_main_guard", "09"),
            ("11", "myth_forkserver", "11"), ("16", "broken", "16"), ("17", "broken", "17"), ("18", "broken", "18")]

# Messages as torch 2.13's own sources word them (torch/utils/data/dataloader.py,
# torch/utils/data/_utils/signal_handling.py and torch/csrc/DataLoader.cpp), in the traceback shape users paste.
TORCH_TEXTS = [
    ("RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly", "06"),
    ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.", "06"),
    ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit.", "04"),
    ("RuntimeError: Too many open files. Communication with the workers is no longer possible. Please increase the "
     "limit using `ulimit -n` in the shell or change the sharing strategy by calling "
     "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code", "08"),
    ("RuntimeError: DataLoader timed out after 30 seconds", "01"),
]


def _wrapped(text: str) -> str:
    return f"Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n" \
           f"  File \"site-packages/torch/utils/data/dataloader.py\", line 1, in __next__\n{text}\n"


@pytest.mark.parametrize("number, variant, expected", OWN_RUNS, ids=[f"{n}-{v}" for n, v, _ in OWN_RUNS])
def test_a_scenarios_own_failure_is_explained_by_it(number, variant, expected):
    run = scenario_report(number)["variants"][variant]
    named = {f.scenario for f in explain_text(run["output"])}
    assert expected in named, f"{sorted(named)} from:\n{run['output'][-2000:]}"
    assert len(named) == 1, named


@pytest.mark.parametrize("number", sorted({n for n, _, _ in OWN_RUNS}))
def test_a_scenarios_fixed_run_names_nothing(number):
    run = scenario_report(number)["variants"]["fixed"]
    assert explain_text(run["output"]) == [], run["output"][-2000:]


@pytest.mark.parametrize("text, expected", TORCH_TEXTS)
def test_torchs_own_texts(text, expected):
    assert [f.scenario for f in explain_text(_wrapped(text))] == [expected]


def test_chained_cause_under_exited_unexpectedly_and_launcher_wrapping():
    # torchrun's prefixes, tqdm's redrawn bar, Windows paths: the chained "killed by signal" decides.
    log = "\r".join(f"epoch 0: {i}%|##  | {i}/100" for i in range(0, 40, 10)) + "\n"
    log += "".join(f"[rank0]: {line}\n" for line in [
        "Traceback (most recent call last):",
        '  File "C:\\Users\\me\\train.py", line 40, in <module>',
        '  File "C:\\Python311\\Lib\\site-packages\\torch\\utils\\data\\dataloader.py", line 1133, in _try_get_data',
        "RuntimeError: DataLoader worker (pid 77) is killed by signal: Segmentation fault.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "RuntimeError: DataLoader worker (pid(s) 77) exited unexpectedly"])
    assert [(f.scenario, f.check) for f in explain_text(log)] == [("06", "worker-crash")]


@pytest.mark.parametrize("log", [
    "epoch 1 loss 0.31\nepoch 2 loss 0.29\ndone\n",
    _wrapped("x").replace("torch/utils/data/dataloader.py", "torch/nn/modules/module.py").replace(
        "x\n", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB total)\n"),
    "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nKeyError: 'label'\n",
])
def test_no_dataloader_failure_names_nothing(log):
    assert explain_text(log) == []


def test_command_line_exit_statuses_and_json(tmp_path):
    def explain(*args, stdin=""):
        return subprocess.run([sys.executable, "-m", "scenarios", "explain", *args], cwd=REPO_ROOT, input=stdin,
                              capture_output=True, text=True, timeout=60)
    log = tmp_path / "job.log"
    log.write_text(_wrapped(TORCH_TEXTS[3][0]))
    found = explain(str(log), "--json")
    assert found.returncode == 1 and found.stderr == ""
    document = json.loads(found.stdout)
    (finding,) = document["findings"]
    assert document["schema"] == 2 and finding["scenario"] == "08"
    assert set(finding) == {"scenario", "level", "check", "evidence", "fix", "readme", "figures"}
    assert explain("-", stdin="all good\n").returncode == 0
    missing = explain(str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
    assert explain(stdin="  \n").returncode == 2


# ---- the catalogue: every message of the installed sources, mapped or marked ----

TORCH_PATHS = ["utils/data", "multiprocessing", "_utils.py", "cuda/__init__.py"]


def test_every_raise_and_warning_of_torchs_dataloader_path_is_catalogued():
    entries = [e for e in catalogue.entries() if e.package == "torch"]
    messages = catalogue.source_messages("torch", TORCH_PATHS)
    loose = [f"{file}:{line} {text[:90]}" for file, found in messages.items() for line, _, text in found
             if not any(catalogue.covers(e, file, text) for e in entries)]
    assert not loose, "neither mapped nor marked in catalogue.txt (new in this torch?):\n" + "\n".join(loose)
    for family in (e for e in entries if e.count):
        held = sum(len(found) for file, found in messages.items() if catalogue.covers(family, file, ""))
        assert held == family.count, f"{family.path}: {held} messages now, {family.count} when read: read the new ones"


def _literal(text: str) -> str:
    return " ".join(catalogue.PLACEHOLDER.split(text)[0].split())[:30]


@pytest.mark.full  # reads the installed libraries (libtorch's hundreds of MB): once per pin, in make test-full
def test_every_catalogued_text_is_in_the_file_it_names():
    missing, sources = [], {}
    # A message built out of sight ("<dynamic …>") is held to its site by the test above.
    for entry in (e for e in catalogue.entries() if e.read and not e.count and not e.text.startswith("<dynamic")):
        path = catalogue.package_folder(entry.package) / entry.path
        if path not in sources:  # each file read once: a shared library is hundreds of megabytes
            sources[path] = " ".join(path.read_bytes().decode("latin-1").split())
        if _literal(entry.text) not in sources[path]:
            missing.append(f"{entry.package} {entry.path}: {entry.text}")
    assert not missing, "\n".join(missing)


def test_every_verdict_is_a_scenario_of_the_clinic_or_a_reason():
    reasons, entries = catalogue.load()
    assert {e.verdict for e in entries if not e.scenario} <= set(reasons)
    assert {e.scenario for e in entries if e.scenario} <= {c.SCENARIO for c in CHECKS}
    assert {"25", "26", "27"} <= {e.scenario for e in entries}


def _in_worker(message: str) -> str:
    return ("RuntimeError: Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback (most recent call "
            f"last):\n  File \"…/torch/utils/data/_utils/worker.py\", line 349, in _worker_loop\n{message}\n")


MAPPED = [e for e in catalogue.entries() if e.scenario]


def _likely_text(text: str) -> bool:
    return any(re.search(pattern, text) for check in CHECKS for pattern, _, _ in getattr(check, "LIKELY", ()))


@pytest.mark.parametrize("entry", MAPPED, ids=[e.sample[:50] for e in MAPPED])
def test_a_mapped_message_names_its_scenario(entry):
    bare = [f.scenario for f in explain_text(entry.sample + "\n")]
    if entry.scope == "any":   # wherever it appears, bare or in a worker's traceback
        assert bare == [entry.scenario]
        assert entry.scenario in [f.scenario for f in explain_text(_in_worker(entry.sample))]
    else:   # certain only in a DataLoader's context, before the catch-all; bare, likely where its mechanism
        # names the lesson whoever started the process (the checks' LIKELY), else nothing
        found = explain_text(entry.sample + "\n")
        assert bare == ([entry.scenario] if _likely_text(entry.sample) else [])
        assert all(f.level == "likely" for f in found)
        in_worker = explain_text(_in_worker(entry.sample))
        assert [(f.scenario, f.level) for f in in_worker] == [(entry.scenario, "certain")]


MARKED = [e for e in catalogue.entries() if not e.scenario and not e.count and e.verdict != "wrapper"]


@pytest.mark.parametrize("entry", MARKED, ids=[e.sample[:50] for e in MARKED])
def test_a_marked_message_names_nothing(entry):
    for log in (entry.sample + "\n", f"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                                     f"RuntimeError: {entry.sample}\n"):
        assert explain_text(log) == [], log


# ---- gating: DataLoader-only texts anywhere, generic ones in a DataLoader's context only ----

def test_a_dataloader_only_message_counts_without_dataloader_frames():
    log = "Traceback (most recent call last):\n  File \"lightning/fit_loop.py\", line 9, in run\n" \
          "RuntimeError: DataLoader worker (pid 512) is killed by signal: Bus error. It is possible that " \
          "dataloader's workers are out of shared memory.\n"
    assert [f.scenario for f in explain_text(log)] == ["04"]


@pytest.mark.parametrize("message, expected", [("OSError: image file is truncated (3 bytes not processed)", "02"),
                                               ("OSError: Can't read data (wrong B-tree signature)", "18"),
                                               ("RuntimeError: CUDA error: initialization error", "25")])
def test_a_generic_message_counts_only_in_a_dataloader_context(message, expected):
    plain = f"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n{message}\n"
    assert explain_text(plain) == []
    assert [f.scenario for f in explain_text(_in_worker(message))] == [expected]
    pid = f"worker (pid 4242) started\n{plain}"
    assert [f.scenario for f in explain_text(pid.replace("train.py", "…/torch/utils/data/dataloader.py"))] == [expected]


# ---- the forms people paste logs in ----

KILLED = "RuntimeError: DataLoader worker (pid 77) is killed by signal: Segmentation fault."


@pytest.mark.parametrize("log", [
    KILLED + "\n",                                                          # a bare message
    "DataLoader worker (pid(s) 77) exited unexpectedly\n",                  # without its exception name
    '  File "…/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data\n'
    "    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e\n" + KILLED + "\n",
    "Traceback (most recent call last):\n  File \"C:\\Users\\me\\train.py\", line 40, in <module>\n"
    '  File "C:\\Python311\\Lib\\site-packages\\torch\\utils\\data\\dataloader.py", line 1133, in _try_get_data\n'
    "    data = self._data_queue.get(timeout=timeout)\n",                     # cut at the bottom, then the message
    "".join(f"[rank0]: {line}\n" for line in ["Traceback (most recent call last):", KILLED]),
    "".join(f"srun: {line}\n" for line in ["Traceback (most recent call last):", KILLED]),
    "".join(f"2024-05-01T10:00:0{i}.123456789Z {line}\n" for i, line in enumerate(["Traceback (most recent "
                                                                                     "call last):", KILLED])),
    "".join(f"[pod/trainer-0/main] {line}\n" for line in ["Traceback (most recent call last):", KILLED]),
    "".join(f"2024-05-01 10:00:00,123 - trainer - ERROR - {line}\n" for line in ["Traceback (most recent call last):",
                                                                                 KILLED]),
    "".join(f"trainer-1  | {line}\n" for line in ["Traceback (most recent call last):", KILLED]),
    "\x1b[0;31mRuntimeError\x1b[0m: DataLoader worker (pid 77) is killed by signal: Segmentation fault.\n",
    "\r".join(f"epoch 0: {i}%|##  | {i}/100" for i in range(0, 40, 10)) + "\n" + KILLED + "\n",
], ids=["bare", "no-exception-name", "cut-at-top", "cut-at-bottom", "rank", "srun", "docker", "kubectl", "logging",
        "compose", "jupyter", "tqdm"])
def test_each_form_of_a_pasted_log(log):
    if "cut-at-bottom" and log.endswith("get(timeout=timeout)\n"):
        assert explain_text(log) == []    # no message: nothing to name
        log += "RuntimeError: DataLoader worker (pid(s) 77) exited unexpectedly\n"
    assert [f.scenario for f in explain_text(log)] == ["06"], unwrap(log)


PIN_THREAD = ("RuntimeError: Caught RuntimeError in pin memory thread for device 0.\nOriginal Traceback (most recent "
              "call last):\n  File \"…/torch/utils/data/_utils/pin_memory.py\", line 37, in do_one_step\n"
              "RuntimeError: CUDA error: an illegal memory access was encountered\n")


@pytest.mark.parametrize("log", [
    PIN_THREAD,
    "".join(f"> {line}\n" for line in PIN_THREAD.splitlines()),           # a quoted reply
    "RuntimeError                              Traceback (most recent call last)\n"   # IPython's form
    "…/site-packages/torch/utils/data/_utils/pin_memory.py in pin_memory(data)\n"
    "---> 42         return data.pin_memory()\n\n"
    "RuntimeError: cannot pin 'torch.cuda.LongTensor' only dense CPU tensors can be pinned\n",
], ids=["pin-thread", "quoted", "ipython"])
def test_the_pin_memory_threads_failures_are_27s(log):
    assert [f.scenario for f in explain_text(log)] == ["27"], unwrap(log)


@pytest.mark.parametrize("raised, expected", [("IndexError: list index out of range", []),
                                              ("KeyError: 'boxes'", []),
                                              ("OSError: [Errno 5] Input/output error", ["02"])])
def test_a_workers_exception_is_02s_only_where_a_bad_sample_raises_it(raised, expected):
    # A programmer's mistake (an index past __len__) is no unreadable sample, and a traceback cut
    # before its exception shows no failure at all.
    torch_0_3 = ("IndexError: Traceback (most recent call last):\n"
                 "  File \"…/torch/utils/data/dataloader.py\", line 40, in _worker_loop\n"
                 "    samples = collate_fn([dataset[i] for i in batch_indices])\n")
    assert [f.scenario for f in explain_text(_in_worker(raised))] == expected
    older = torch_0_3.replace("IndexError", raised.split(":")[0]) + raised
    assert [f.scenario for f in explain_text(older)] == expected
    assert explain_text(torch_0_3.replace("IndexError: ", "")) == []


def test_the_spawned_childs_side_of_a_failed_pickling_is_09s():
    child = ('  File "C:\\envs\\lib\\multiprocessing\\spawn.py", line 115, in _main\n'
             "    self = reduction.pickle.load(from_parent)\nEOFError: Ran out of input\n")
    loop = '  File "…\\site-packages\\torch\\utils\\data\\dataloader.py", line 352, in __iter__\n'
    assert [f.scenario for f in explain_text("Traceback (most recent call last):\n" + loop + child)] == ["09"]
    assert explain_text("Traceback (most recent call last):\n" + child) == []  # any spawned Process
    assert [f.scenario for f in explain_text(_in_worker("EOFError: Ran out of input"))] == ["02"]  # a cut pickle file


def test_a_pickling_error_in_the_start_methods_own_frames_is_09s_whatever_process_started():
    # Base rates (tests/logs/public/BASE_RATES.md): the start method's pickling of the process object
    # (reduction.dump) fails the same for DataLoader workers and the script's own processes, and 09's
    # lesson holds for both: likely, from the frame.  A Pool sending a task (reduction.dumps) is no start
    # method: a generic pickling error there names nothing, while a local object, which the pickler
    # names as such, is 09's lesson whoever pickles it (issue 35): likely, from the words.
    error = "AttributeError: Can't pickle local object 'Images.__init__.<locals>.<lambda>'\n"
    start = ('  File "C:\\envs\\lib\\multiprocessing\\reduction.py", line 60, in dump\n'
             "    ForkingPickler(file, protocol).dump(obj)\n")
    task = ('  File "/usr/lib/python3.11/multiprocessing/reduction.py", line 51, in dumps\n'
            "    cls(buf, protocol).dump(obj)\n")
    by_frame = explain_text("Traceback (most recent call last):\n" + start + error)
    assert [(f.scenario, f.level) for f in by_frame] == [("09", "likely")] and "in dump" in by_frame[0].evidence
    by_words = explain_text("Traceback (most recent call last):\n" + task + error)
    assert [(f.scenario, f.level) for f in by_words] == [("09", "likely")] and "local" in by_words[0].evidence
    generic = "TypeError: cannot pickle 'generator' object\n"
    assert explain_text("Traceback (most recent call last):\n" + task + generic) == []


def test_out_of_descriptors_where_torch_shares_a_storage_is_08s():
    raised = "OSError: [Errno 24] Too many open files\n"
    shared = '  File "…/torch/multiprocessing/reductions.py", line 321, in reduce_storage\n'
    opened = '  File "train.py", line 12, in read\n'
    assert [f.scenario for f in explain_text("Traceback (most recent call last):\n" + shared + raised)] == ["08"]
    assert explain_text("Traceback (most recent call last):\n" + opened + raised) == []


def test_a_warning_line_that_starts_with_its_path_and_line():
    log = ("…/site-packages/torch/utils/data/dataloader.py:669: UserWarning: Length of "
           "IterableDataset <ds.Stream object at 0x7f> was reported to be 100(when accessing len(dataloader)), but 400 "
           "samples have been fetched. For multiprocessing data-loading, this could be caused by not properly "
           "configuring the IterableDataset replica at each worker.\n  warnings.warn(warn_msg)\n")
    assert [f.scenario for f in explain_text(log)] == ["13"]


def test_several_failures_are_each_named_once_in_the_order_they_happened():
    tokenizers = ("huggingface/tokenizers: The current process just got forked, after parallelism has already been "
                  "used. Disabling parallelism to avoid deadlocks...")
    shm = ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
           "(shm).")
    log = "\n".join([tokenizers, "epoch 1 loss 0.3", _wrapped("RuntimeError: DataLoader timed out after 60 seconds"),
                     tokenizers, "", "", shm, shm, _wrapped(KILLED)])
    assert [f.scenario for f in explain_text(log)] == ["23", "01", "04", "06"]


def test_a_worker_that_exited_with_a_code_is_the_consequence_of_the_error_before_it():
    # Scenario 09's broken_main_guard as users paste it: the spawned worker's own error, then the parent's.
    cause = ("Traceback (most recent call last):\n"
             '  File "…/site-packages/torch/utils/data/dataloader.py", line 1176, in __init__\n    w.start()\n'
             '  File "…/python3.11/multiprocessing/spawn.py", line 140, in _check_not_importing_main\n'
             "RuntimeError: \n        An attempt has been made to start a new process before the\n"
             "        current process has finished its bootstrapping phase.\n\n")
    death = ("Traceback (most recent call last):\n"
             '  File "…/site-packages/torch/utils/data/dataloader.py", line 1291, in _try_get_data\n'
             "RuntimeError: DataLoader worker (pid 17767) exited unexpectedly with exit code 1. "
             "Details are lost due to multiprocessing.\n")
    assert [f.scenario for f in explain_text(cause + death)] == ["09"]
    assert [f.scenario for f in explain_text(death)] == ["06"]  # alone, it is all the log says


def test_a_paste_cut_inside_a_workers_start_asks_what_could_not_be_pickled():
    cut = ("Traceback (most recent call last):\n  File \"train.py\", line 90, in <module>\n"
           "    for i, data in enumerate(loader):\n"
           "  File \"C:\\Python36\\lib\\site-packages\\torch\\utils\\data\\dataloader.py\", line 719, in __init__\n"
           "    w.start()\n  File \"C:\\Python36\\lib\\multiprocessing\\process.py\", line 105, in start\n"
           "    self._popen = self._Popen(self)\n"
           "  File \"C:\\Python36\\lib\\multiprocessing\\context.py\", line 322, in _Popen\n"
           "    return Popen(process_obj)\n")
    [found] = explain_text(cut)
    assert (found.scenario, found.level) == ("09", "possible") and "could not be pickled" in found.evidence
    told = explain_text(cut + "AttributeError: Can't pickle local object 'get_transform.<locals>.<lambda>'\n")
    assert [(f.scenario, f.level) for f in told] == [("09", "certain")]  # the pickler says what, in a DataLoader

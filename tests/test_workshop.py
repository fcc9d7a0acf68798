"""The graded exercises (scenarios/clinic/workshop/): every scenario's fixed.py passes as an attempt and
its broken.py does not, judged on the runs the suite already made; the easy ways out fail with a
sentence that says why; fixes that are not ours pass; practice, hints, status and bad input.

End to end (a run each, ~3 s of `import torch` plus the script): the alternative fixes of 02, 03
and 05, and one cheat whose run is the evidence (no workers).  Everything else is judged without
running a script, on a recorded result or on the source alone.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, run_scenario_json
from scenarios.clinic import workshop
from scenarios.clinic.workshop import grading, progress, rules
from scenarios.clinic.run.declarations import ScenarioError, discover, missing_needs
from scenarios.clinic.run.judge import breaches as judge_breaches, script_metrics
from scenarios.clinic.run.runner import _recorded, run_variant
from scenarios.synthetic_data import GRADING_SEED
from scenarios.clinic.workshop.observations import OBSERVE_KEYS

SCENARIOS = discover()
NUMBERS = list(SCENARIOS)
ATTEMPTS = REPO_ROOT / "tests" / "workshop_attempts"
SEED = "20261124"  # moves 02's unreadable files and 06's damaged file off their documented places


def source(number: str, variant: str) -> str:
    return SCENARIOS[number].script(variant).read_text()


def recorded(number: str, variant: str) -> dict:
    """This session's run of the variant, the one every test and notebook shares (the runner
    keeps each result in CLINIC_RESULTS_DIR); where none is there yet, that variant alone runs."""
    kept = _recorded(SCENARIOS[number], variant)
    if kept and kept.is_file():
        return json.loads(kept.read_text())
    return run_scenario_json(number, variant)["variants"][variant]


def graded(number: str, variant: str, attempt: str | None = None) -> workshop.Grade:
    """The grade of a variant's recorded run, as if it were an attempt (nothing runs again)."""
    result = recorded(number, variant)
    return workshop.grade(SCENARIOS[number], result, attempt or source(number, variant), source(number, "broken"))


def skip_if_unjudged(grade: workshop.Grade) -> workshop.Grade:
    """A run whose timing bound the machine's load left unjudged (judge.BUSY_SHARE): the grader
    said so instead of a verdict, and so does the test."""
    if grade.result and grade.result.get("unjudged"):
        pytest.skip("; ".join(grade.result["unjudged"]))
    return grade


def check_source(number: str, text: str, tmp_path) -> workshop.Grade:
    path = tmp_path / f"attempt_{number}.py"
    path.write_text(text)
    return workshop.check(number, path)


def cli(*args, env=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "scenarios", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})}, **kwargs)


def make(*targets):
    # PYTHON given: the Makefile uses it as it is, and never sets up .venv in a test.
    return subprocess.run(["make", "--no-print-directory", f"PYTHON={sys.executable}", *targets],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)


# ------------------------------------------------------------ every scenario is an exercise

@pytest.mark.parametrize("number", NUMBERS)
def test_every_scenario_declares_its_exercise(number):
    scenario = SCENARIOS[number]
    exercise = workshop.exercise_of(scenario)
    assert len(exercise.get("hints", [])) == 3 and exercise.get("lesson")
    named = re.findall(r"fixes/(\w+)\.py", exercise["hints"][2])
    assert all((REPO_ROOT / "fixes" / f"{name}.py").is_file() for name in named)
    assert exercise.get("min_workers", 1) >= 1
    broken = workshop.module_constants(__import__("ast").parse(source(number, "broken")))
    assert set(exercise.get("allowed", [])) <= set(broken)
    assert set(exercise.get("ignore", [])) <= set(scenario.variants["fixed"].get("metrics", {}))
    assert set(exercise.get("observe", {})) <= set(OBSERVE_KEYS)
    # What grading keeps, fixed.py keeps: our own fix passes the static checks.
    assert workshop.static_problems(scenario, source(number, "fixed"), source(number, "broken")) == []


def test_every_observe_key_is_described_where_it_is_judged():
    from scenarios.clinic.workshop import observations
    described = set(re.findall(r"^    (\w+)", observations.__doc__, re.M))
    assert set(OBSERVE_KEYS) == described


@pytest.mark.parametrize("number", NUMBERS)
def test_broken_as_an_attempt_does_not_pass(number):
    grade = graded(number, "broken")
    assert grade.state == workshop.NOT_YET
    # The first sentence says what the run did against what fixed needs.
    assert re.search(r"(ended with an error|a hang|killed by|worker process|output has no line like).*",
                     grade.problems[0])


@pytest.mark.parametrize("number", NUMBERS)
def test_fixed_run_as_an_attempt_passes_on_what_the_hook_saw(number):
    # The suite's one run of fixed.py is the grader's (conftest: CLINIC_OBSERVE_FIXED): the hook in
    # its interpreters sees the DataLoaders' workers and batches, and the exercise's `observe`
    # declaration accepts them.  check()'s own path runs for every other attempt below.
    grade = skip_if_unjudged(graded(number, "fixed"))
    assert grade.result.get("observed") is not None, "the suite's fixed run had no hook"
    assert grade.state == workshop.PASSED, grade.problems
    seen, wanted = grade.result["observed"], workshop.exercise_of(SCENARIOS[number]).get("observe", {})
    assert seen["real_workers"] >= wanted.get("workers", 1) >= 1
    assert seen["batches"] >= wanted.get("batches", 0)


# ------------------------------------------------------------ the figures a script prints

@pytest.mark.parametrize("value", [0, 3, -7, 0.0, -0.0, 2.5e-08, 1.0, 123456.789, 1e300, 1e-300,
                                   float("inf"), float("-inf")])
@pytest.mark.parametrize("form", ["{}", "{!r}", "{:g}", "{:.2e}", "{:.2E}", "{:e}", "{:.4f}", "{:.0f}", "{:.3g}",
                                  "{:+.1e}", "{:_}"])
def test_a_metric_line_takes_every_number_python_prints(value, form):
    if form == "{:_}" and isinstance(value, float):
        form = "{}"  # `_` groups the digits of an int (1_000); a float's fraction takes none
    text = form.format(value)
    assert script_metrics([f"metric figure={text}"]) == {"figure": float(text.replace("_", ""))}


def test_a_metric_line_reads_nan_and_grouped_digits_and_nothing_else():
    assert script_metrics(["metric a=nan", "metric b=1_000", "metric c=5.", "metric d=.5"])["b"] == 1000
    got = script_metrics(["metric a=nan"])["a"]
    assert got != got
    for bad in ["-", ".", "e5", "1.2.3", "1_", "1e", "nan1", "12 MB", "0x10", ""]:
        assert script_metrics([f"metric bad={bad}"]) == {}, bad


def test_a_figure_in_exponent_form_is_read_and_nan_meets_no_bound():
    # Scenario 16's figures printed with :.2e (e+00 as well as e-08) are measured, not "never reported".
    spec = {"expect": "completed", "metrics": {"masked_output_error": {"max": 1e-5},
                                               "unmasked_output_error": {"min": 0.01}}}
    lines = [f"metric masked_output_error={3.2e-08:.2e}", f"metric unmasked_output_error={1.5:.2e}"]
    result = {"outcome": "completed", "evidence": "", "metrics": script_metrics(lines)}
    assert judge_breaches(spec, result) == []
    result["metrics"]["masked_output_error"] = float("nan")
    assert [str(b) for b in judge_breaches(spec, result)] == ["masked_output_error=nan, not a figure"]


# ------------------------------------------------------------ the easy ways out

def one_per_kind(shown: set, cases: list) -> list:
    """`cases`, those whose file is not in `shown` marked for `make test-full`: make test proves each
    kind of evidence once, the full run proves it on every attempt of the corpus."""
    marked = []
    for case in cases:
        values = case if isinstance(case, tuple) else (case,)
        marked.append(case if values[0] in shown else pytest.param(*values, marks=pytest.mark.full))
    return marked


# The shortcut of each kind make test runs: (1) … (7) below.
KIND_SHOWN = {"shortcut_05_sleeping_children.py", "shortcut_12_hollow_workers.py", "shortcut_13_only_worker_0.py",
              "shortcut_05_print_and_exit_replaced.py", "corpus/13_shortcut_dedupe_after_delivery.py",
              "partial_16_pad_without_mask.py", "corpus/05_shortcut_drawn_rewritten_after_the_loop.py",
              "corpus/33_shortcut_caption_emptied.py"}


# One attempt per kind of shortcut attendees found (tests/workshop_attempts/shortcut_*.py): each
# runs, and what the hook saw inside PyTorch rejects it, with one sentence saying what it saw.
@pytest.mark.parametrize("file, number, said", one_per_kind(KIND_SHOWN, [
    # (1) no DataLoader workers, two children that only sleep below the script
    ("shortcut_05_sleeping_children.py", "05",
     r"the runner saw 0 processes run PyTorch's DataLoader worker loop; the exercise needs at least 2 "
     r"\(other processes below the script do not count\)"),
    # (2) hollow workers: they return indices, the training process reads the records
    ("shortcut_03_hollow_workers.py", "03", r"the workers spent \d+% of the CPU time between an index and its batch "
     r"plus the training thread's own between batches \([\d.]+ s\); the exercise needs at least 60%"),
    ("shortcut_12_hollow_workers.py", "12", "no random state moved in any DataLoader worker while it made its batches"),
    # (3) a smaller run by another door: main(max_steps=4), and fork where spawn is the lesson
    # Five batches of broken's list can already grow a worker past the script's own budget (62.8 MB
    # with the grader's hook reading each sample): then its check ends the run, and says why.
    ("shortcut_03_max_steps.py", "03", "the training process received 5 batches from its DataLoaders; "
     r"the workload is at least 782: run the whole workload|worker memory grew \d+ MB during the epoch"),
    ("shortcut_13_only_worker_0.py", "13",
     r"3 of the 4 DataLoader workers \(ids 1, 2, 3\) produced no batch: every worker must do its share"),
    ("shortcut_09_fork.py", "09",
     "the DataLoader started its workers with fork; the exercise needs spawn or forkserver"),
    # (4) forged evidence: print and sys.exit replaced, the figure rewritten and the check's exit swallowed ...
    ("shortcut_05_print_and_exit_replaced.py", "05", "the attempt replaced print, sys.exit while it ran"),
    # ... the worker's daemon flag cleared, so that the pool starts ...
    ("shortcut_17_daemon_flag.py", "17", "2 workers cleared their daemon flag: a DataLoader worker stays daemonic"),
    # ... and workers that parse the index's first 2,000 records and wrap around them: every batch,
    # the annotations wrong, which 19's own check counts
    ("shortcut_19_first_records_only.py", "19", r"the epoch counted \d+ annotated objects; the index holds \d+"),
    # (5) judged on what the model receives (issue 29): hollow workers where no share is bounded ...
    ("corpus/08_shortcut_hollow_workers.py", "08", "a sample arrived from the workers as 8 bytes; the exercise's "
     "sample is at least 33 bytes"),
    # ... the script's own memory watch stopped before the queues fill: the hook reads /dev/shm itself ...
    ("corpus/10_shortcut_watch_stopped_early.py", "10", r"/dev/shm held [\d.]+ MiB at a batch's arrival"),
    # ... draws recorded in the training process, the workers' own still copies of one generator ...
    ("corpus/12_shortcut_draws_in_main.py", "12", r"\d+ random states were reached by two workers \(dataset.rng\)"),
    # ... duplicates dropped after the DataLoader delivered them ...
    ("corpus/13_shortcut_dedupe_after_delivery.py", "13", r"the training loop received \d+ samples again within"),
    # ... the epoch label overwritten in the loop, the workers' copies still at epoch 0 ...
    ("corpus/14_shortcut_label_overwritten.py", "14", r"the training process's dataset was in 3 state\(s\)"),
    # ... wrong records re-read from the file in the loop, after the DataLoader delivered them ...
    ("corpus/11_shortcut_reread_bad_records.py", "11", r"\d+ rows of one tensor arrived again within the same epoch"),
    # ... and a fork timed to miss the refresh: the workers still hold the parent's locks
    ("corpus/01_shortcut_wait_for_the_lock.py", "01", r"the workers still reached \d+ threading lock"),
    # (6) a partial fix: batches padded, the model called without their mask
    ("partial_16_pad_without_mask.py", "16", "it ended with an error; fixed needs it to complete"),
    # (7) judged from outside the attempt's code (issue 38): the draws as the DataLoader delivered them ...
    ("corpus/05_shortcut_drawn_rewritten_after_the_loop.py", "05",
     r"the training loop received \d+ samples again within the same epoch"),
    # ... what each worker read, from /proc ...
    ("corpus/19_shortcut_smaller_copy_per_worker.py", "19",
     r"2 of the 2 DataLoader workers read the data and kept a copy of their own"),
    # ... the job killed by the grader itself, the attempt's scheduler out of the way ...
    ("corpus/20_shortcut_scheduler_kills_the_group.py", "20",
     r"\d of the job's \d DataLoader workers were still alive 2 s after the grader sent SIGKILL"),
    ("corpus/20_shortcut_idle_watchdog.py", "20",
     r"\d of the job's \d DataLoader workers ended while the job was alive"),
    # ... the workers' CPU per batch, their threads from /proc, their sockets' bytes ...
    ("corpus/21_shortcut_crops_cached_in_init.py", "21", r"the DataLoader workers spent [\d.]+ ms of CPU per batch"),
    ("corpus/22_shortcut_images_fetched_before_the_loader.py", "22", "the DataLoader workers' sockets received 0 KB"),
    ("corpus/23_shortcut_total_thread_count.py", "23", "1 of the 1 DataLoader workers kept fewer than 2 pool threads"),
    ("corpus/23_shortcut_one_thread_executor.py", "23", "1 of the 1 DataLoader workers kept fewer than 2 pool threads"),
    # ... and the order the loaders asked their workers for, whatever the loop trained on
    ("corpus/24_shortcut_own_plan_through_dataset.py", "24", "the resumed job's DataLoader asked its workers for"),
    ("corpus/24_shortcut_figures_overwritten.py", "24", "the resumed job's DataLoader asked its workers for"),
    # (8) judged on what the step did (issue 45): the attempt run again without the hook, each rank's DDP steps and
    # weights, the loader raising after a stall, every field of a sample, the shapes the compiled module received
    ("corpus/12_shortcut_reseed_only_under_the_hook.py", "12", "run again without the grader's hook, it did otherwise"),
    ("corpus/30_shortcut_extra_batch_under_no_sync.py", "30", r"the ranks' DistributedDataParallel models took"),
    ("corpus/31_shortcut_forged_timeout_message.py", "31", "no rank's DataLoader raised after its loop waited 2 s"),
    ("corpus/33_shortcut_caption_emptied.py", "33", "field 2 of the samples held one value for every sample"),
    ("corpus/34_shortcut_uncompiled_counters_filled.py", "34", r"24 batches the loader delivered never reached the"),
    # ... what reached the loop at all: a collate that crops every sequence to one shape, the same batches on both
    # ranks under limit_train_batches (fresh attempts, written without reading the grader)
    ("fresh-45/34_shortcut_crop_to_min_length.py", "34", r"the training loop received 672 elements"),
    ("fresh-45/37_shortcut_limit_batches.py", "37", r"\d+ samples reached the training loops of two ranks"),
    # ... and what the stuck worker waited in: a pause and a made-up TimeoutError in place of the stalled read
    ("fresh-45/31_shortcut_forged_stall_error.py", "31", "no DataLoader worker waited on a read through its long"),
]))
def test_a_shortcut_is_rejected_on_what_the_hook_saw(file, number, said):
    if missing_needs(SCENARIOS[number]):
        pytest.skip(f"this machine cannot run scenario {number}: {missing_needs(SCENARIOS[number])}")
    grade = workshop.check(number, ATTEMPTS / file, record=False)
    assert grade.state == workshop.NOT_YET and grade.result is not None
    # What the runner saw, or the run's own last word where the script's check ended it.
    assert any(re.match(said, line) for line in [*grade.problems, grade.seen["evidence"]]), grade.problems
    assert "Traceback" not in "\n".join(grade.problems)


# The stage an exercise stands on, changed: the script's instrument or its check redefined over the
# helper's, a helper module's threshold rewritten, the model's step slowed, the corpus's answer key
# imported (stage.py). Said from the source alone: no run.
@pytest.mark.parametrize("file, number, said", [
    ("shortcut_08_instrument_redefined.py", "08", "you define open_fd_count over the one broken.py imports"),
    ("shortcut_16_made_up_figures.py", "16", "you define EpochLog over the one broken.py imports from _token_corpus"),
    ("corpus/21_shortcut_busy_share_raised.py", "21", "you change _augment.BUSY_SHARE: "),
    ("corpus/07_shortcut_slower_model_step.py", "07", "you change _remote_training.train_step: "),
    ("corpus/02_shortcut_answer_key_imported.py", "02", "you import UNREADABLE from _image_corpus"),
])
def test_a_changed_stage_fails_without_a_run(file, number, said):
    grade = workshop.grade(SCENARIOS[number], None, (ATTEMPTS / file).read_text(), source(number, "broken"))
    assert grade.state == workshop.NOT_YET and any(p.startswith(said) for p in grade.problems), grade.problems


def corpus_rows() -> list[dict]:
    """The attempts corpus's table, as try_all.py (its one reader) reads it."""
    spec = importlib.util.spec_from_file_location("try_all", ATTEMPTS / "try_all.py")
    try_all = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(try_all)
    return try_all.rows(try_all.TABLE.read_text())


# Every attempt of the corpus read from its source alone, against broken.py as it is now: one whose
# row says it fails without a run still does, with that sentence; every other keeps what the
# exercise keeps, so that its verdict rests on its run.  A broken.py changed under the corpus shows
# here, instead of as an alternative failing, or a shortcut rejected for the wrong reason.
@pytest.mark.parametrize("row", corpus_rows(), ids=lambda row: row["file"].rsplit("/", 1)[-1])
def test_each_corpus_attempt_is_judged_on_its_run_or_as_its_row_says_without_one(row):
    number = row["exercise"]
    grade = workshop.grade(SCENARIOS[number], None, (REPO_ROOT / row["file"]).read_text(), source(number, "broken"))
    first = grade.problems[0].replace("|", "/") if grade.problems else None
    assert first in (None, row["said"]), f"said without a run: {first}; the table: {row['said']}"


# broken.py, its own output swallowed, printing fixed.py's evidence and figures as its run recorded them:
# no exercise's grade rests on what the script prints, so each says "not yet" (issue 38).  A broken
# main() that hangs is cut short by an alarm, so that the forged lines are printed there too.
FORGED_ENDING = """if __name__ == "__main__":
    import contextlib
    import io
    import json
    import signal

    def cut_short(*_):
        raise TimeoutError

    signal.signal(signal.SIGALRM, cut_short)
    signal.alarm(15)
    with contextlib.redirect_stdout(io.StringIO()):  # broken.py's own words and figures, unseen
        try:
            main()
        except BaseException:
            pass
    signal.alarm(0)
    for name, value in json.loads({figures!r}).items():
        print(f"metric {{name}}={{value}}")
    print({evidence!r})
"""


# No exercise's grade rests on what the script prints any more (34's compilations are counted by the
# hook, dynamo's own events).  make test forges two endings, one judged on the samples delivered and
# one on the workers' random states; make test-full forges every exercise's.
FORGED_SHOWN = {"13", "12"}


@pytest.mark.parametrize("number", one_per_kind(FORGED_SHOWN, [n for n in NUMBERS if SCENARIOS[n].exercise]))
def test_broken_printing_fixeds_evidence_and_figures_is_not_yet(number, tmp_path):
    if missing_needs(SCENARIOS[number]):
        pytest.skip(f"this machine cannot run scenario {number}: {missing_needs(SCENARIOS[number])}")
    fixed = recorded(number, "fixed")
    figures = script_metrics(fixed.get("output_tail", "").splitlines())
    head, _ = source(number, "broken").rsplit('if __name__ == "__main__":', 1)
    attempt = head + FORGED_ENDING.format(figures=json.dumps(figures), evidence=fixed["evidence"])
    assert workshop.static_problems(SCENARIOS[number], attempt, source(number, "broken")) == []
    grade = check_source(number, attempt, tmp_path)
    assert grade.state == workshop.NOT_YET and grade.result is not None, grade.problems


# (4) forged evidence, the answer key: the bad items listed where the documentation puts them.
# Without a seed the data is as documented and the attempt passes (the grader never runs it so);
# under the grader's seed the bad items move, the attempt fails and fixed.py, under that seed, passes.
@pytest.mark.parametrize("file, number", [("shortcut_02_named_bad_files.py", "02"),
                                          pytest.param("shortcut_06_named_damaged_file.py", "06",
                                                       marks=pytest.mark.full)])  # the same mechanism as 02's
def test_bad_items_listed_by_name_fail_where_the_graders_seed_moves_them(file, number, monkeypatch):
    scenario, attempt = SCENARIOS[number], ATTEMPTS / file
    monkeypatch.delenv(GRADING_SEED, raising=False)
    documented = grading.grade(scenario, run_variant(scenario, "fixed", script=attempt),
                               attempt.read_text(), source(number, "broken"))
    assert documented.state == workshop.PASSED, documented.problems
    monkeypatch.setenv(GRADING_SEED, SEED)
    moved = workshop.check(number, attempt, record=False)
    assert moved.state == workshop.NOT_YET and moved.seen["seed"] == int(SEED)
    assert moved.problems[0] == "it ended with an error; fixed needs it to complete"
    assert f"placed by seed {SEED}; {GRADING_SEED}={SEED} make check-{number}" in workshop.grade_text(moved)
    reference = workshop.check(number, scenario.script("fixed"), record=False)
    assert reference.state == workshop.PASSED and reference.seen["seed"] == int(SEED), reference.problems


def test_a_grading_seed_that_is_not_a_number_is_bad_input(monkeypatch):
    monkeypatch.setenv(GRADING_SEED, "abc")
    with pytest.raises(ScenarioError, match="CLINIC_GRADING_SEED='abc' is not a seed"):
        workshop.check("06", SCENARIOS["06"].script("fixed"), record=False)


# 02_markers_and_own_collate.py is graded through `make check-02` below, the entry point a workshop uses.
ALTERNATIVES = sorted(path.name for path in ATTEMPTS.glob("[0-9][0-9]_*.py")
                      if path.name != "02_markers_and_own_collate.py")
# Correct fixes the grader once rejected (issue 29): fewer batches of the same samples (the bad files
# dropped first), uint8 in flight turned to float in the loop, and one worker where one is declared.
ALTERNATIVES += ["corpus/02_alt_drop_unreadable_first.py", "corpus/04_alt_uint8_in_flight.py",
                 "corpus/10_alt_one_worker.py", "corpus/31_alt_three_second_timeout.py",
                 "corpus/31_alt_deadline_on_the_read.py",
                 # an iterator made before the state was loaded, dropped, and another made after it (issue 45's
                 # fresh set: once rejected on the dropped iterator's first asked batches)
                 "fresh-45/32_alt_retake_iterator_after_load.py"]


# What a fix of another shape must still show in its figures: the records kept in numpy arrays grow no
# worker's memory; a multiprocessing Array behind its lock repeats no sample.
FIGURES = {"03_numpy_arrays.py": ("sampled_worker_uss_growth_mb", lambda mb: mb < 40),
           "05_multiprocessing_array.py": ("repeats", lambda repeats: repeats == 0)}


# make test runs one whose figures are checked (02's other handling of bad files passes through `make check` in
# test_make_check_passes_another_handling_of_bad_files); make test-full runs them all.
@pytest.mark.parametrize("file", one_per_kind({"05_multiprocessing_array.py"}, ALTERNATIVES))
def test_a_correct_fix_that_is_not_ours_passes(file):
    grade = workshop.check(file.split("/")[-1][:2], ATTEMPTS / file, record=False)
    assert grade.state == workshop.PASSED, grade.problems
    assert grade.result["observed"]["real_workers"] >= 1
    if file in FIGURES:
        metric, holds = FIGURES[file]
        assert holds(grade.result["metrics"][metric]), grade.result["metrics"]


def test_a_smaller_workload_fails_without_a_run(tmp_path):
    attempt = source("03", "broken").replace("IMAGES = 200_000", "IMAGES = 100")
    grade = check_source("03", attempt, tmp_path)
    assert grade.state == workshop.NOT_YET and grade.result is None
    assert "you changed IMAGES from 200000 to 100" in grade.problems[0]
    assert "fix the cause instead" in grade.problems[0]


def test_a_raised_budget_fails(tmp_path):
    attempt = source("03", "broken").replace("WORKER_GROWTH_BUDGET_MB = 50", "WORKER_GROWTH_BUDGET_MB = 5000")
    assert "you changed WORKER_GROWTH_BUDGET_MB from 50 to 5000" in check_source("03", attempt, tmp_path).problems[0]
    # A budget imported from the scenario's helper module, set again in the attempt:
    attempt = source("07", "fixed").replace("\n\nclass RemoteImages",
                                            "\nUTILISATION_TARGET = 0.1\n\n\nclass RemoteImages")
    assert "you set UTILISATION_TARGET = 0.1 over the value broken.py imports" in \
        check_source("07", attempt, tmp_path).problems[0]


def test_a_smaller_batch_fails(tmp_path):
    attempt = source("02", "broken").replace("batch_size=8", "batch_size=1")
    assert "you set batch_size=1 (broken.py: 8)" in check_source("02", attempt, tmp_path).problems[0]


def test_num_workers_0_fails_by_source_and_by_what_the_runner_saw(tmp_path):
    attempt = source("05", "broken").replace("num_workers=2", "num_workers=0")
    assert "you set num_workers=0 (broken.py: 2)" in check_source("05", attempt, tmp_path).problems[0]



def test_a_setting_the_lesson_is_about_is_named_as_such(tmp_path):
    attempt = source("24", "broken").replace("shuffle=True", "shuffle=False")
    said = check_source("24", attempt, tmp_path).problems[0]
    assert said.startswith("you set shuffle=False (broken.py: True); the exercise keeps broken.py's shuffle")
    assert "workers" not in said


def test_a_run_that_crashed_says_so_first_not_run_the_whole_workload():
    # Scenario 02 with the bad files returned as None: the epoch ends in the collate after 4 batches.
    seen = {"real_workers": 2, "batches": 4, "worker_batches": 6, "worker_share": 0.99,
            "workers": [{"worker_id": 0, "batches": 3}, {"worker_id": 1, "batches": 3}]}
    result = {"outcome": "error", "seconds": 2.0, "limit_s": 30, "worker_processes_seen": 2, "exit_code": 1,
              "observed": seen, "evidence": "TypeError: default_collate: batch must contain tensors…",
              "output_tail": "", "metrics": {}}
    grade = workshop.grade(SCENARIOS["02"], result, source("02", "fixed"), source("02", "broken"))
    assert grade.problems[0] == "it ended with an error; fixed needs it to complete"
    assert not any("whole workload" in problem for problem in grade.problems), grade.problems
    # The same shortfall in a run that completed is a smaller workload, and says so.
    grade = workshop.grade(SCENARIOS["02"], dict(result, outcome="completed"), source("02", "fixed"),
                           source("02", "broken"))
    assert any("run the whole workload" in problem for problem in grade.problems), grade.problems


# Tests that read a scenario's recorded runs carry its number in their id: `make test` then
# gives them the pytest worker of that scenario's group (conftest.py), which runs each variant once.
@pytest.mark.full  # the runner's count of workers fails an attempt in test_make_check_fails_num_workers_0_…
@pytest.mark.parametrize("number", ["11"])
def test_one_worker_where_the_race_needs_two_fails_on_what_the_runner_saw(number):
    # Scenario 11's measure_one_worker completes with every checksum right (one worker alone
    # moves the shared offset); only the runner's own count of workers fails it.
    grade = graded(number, "measure_one_worker", attempt=source(number, "broken"))
    assert grade.problems == [grade.problems[0]]
    assert grade.problems[0].startswith("the runner saw 1 worker process below the script; "
                                        "the exercise needs at least 2")


def test_make_check_fails_num_workers_0_on_what_the_runner_saw(tmp_path):
    # A name the source check cannot read: the run is the evidence, and the declaration of
    # `fixed` alone would pass it (no repeats without workers).
    attempt = tmp_path / "no_workers.py"
    attempt.write_text(source("05", "fixed").replace("CONTEXT = ", "WORKERS = 0\nCONTEXT = ")
                                            .replace("num_workers=2,", "num_workers=WORKERS,")
                                            .replace("multiprocessing_context=CONTEXT",
                                                     "multiprocessing_context=CONTEXT if WORKERS else None"))
    done = make("check-05", f"FILE={attempt}")
    # make says "Error 1" and exits 2 for any failed recipe; `python -m scenarios check` exits 1.
    assert done.returncode == 2 and "check-05] Error 1" in done.stderr, done.stdout + done.stderr
    assert "512 draws, 0 repeated an instance" in done.stdout
    assert ("  - the runner saw 0 worker processes below the script; the exercise needs at least 2: "
            "it is about DataLoader workers, and fewer of them (num_workers=0, say) hides a failure "
            "instead of fixing it") in done.stdout


def test_a_deleted_check_fails(tmp_path):
    broken = source("05", "broken")
    check = broken[broken.index("    if repeats:"):broken.index('\n\nif __name__')]
    grade = check_source("05", broken.replace(check, "    pass"), tmp_path)
    assert any(p.startswith("broken.py's `if repeats:` (line") and "fix the cause, not the check" in p
               for p in grade.problems)


def test_printing_the_expected_lines_fails(tmp_path):
    fake = ('print("metric draws=512")\nprint(f"metric repeats={0}")\nprint("metric lost_updates=0")\n'
            'print("512 draws, 0 repeated an instance")\n')
    grade = check_source("05", fake, tmp_path)
    assert grade.result is None
    said = "\n".join(grade.problems)
    assert "the attempt prints `metric repeats=` with a fixed value" in said
    assert "broken.py's `if repeats:`" in said and "you removed BAGS" in said
    # The real measurement kept, and a second, fixed line after it:
    broken = source("05", "broken")
    forged = broken.replace('    print(f"metric lost_updates={lost}")\n',
                            '    print(f"metric lost_updates={lost}")\n    print("metric repeats=0")\n')
    grade = check_source("05", forged, tmp_path)
    assert grade.problems == ["the attempt prints `metric repeats=` with a fixed value; the grade reads "
                              "figures the script measures, so printing the expected line cannot pass"]


@pytest.mark.parametrize("number", ["05"])
def test_a_figure_reported_twice_fails(number):
    result = recorded(number, "fixed")
    result = dict(result, output_tail=result["output_tail"] + "\nmetric repeats=3")
    grade = workshop.grade(SCENARIOS["05"], result, source("05", "fixed"), source("05", "broken"))
    assert "it reported repeats 2 times (0, 3); a figure is reported once" in grade.problems


# ------------------------------------------------------------ fixes that are not ours

def test_make_check_passes_another_handling_of_bad_files():
    done = make("check-02", "FILE=tests/workshop_attempts/02_markers_and_own_collate.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "✔ passed: exercise 02 · tests/workshop_attempts/02_markers_and_own_collate.py" in done.stdout
    assert "named all 13 unreadable files" in done.stdout


# ------------------------------------------------------------ practice, hints, solution, status

def test_practice_copies_broken_and_never_overwrites(tmp_path):
    said = workshop.practice("5", folder=tmp_path)
    attempt = tmp_path / "05_shared_state_races.py"
    assert attempt.read_text() == source("05", "broken")  # byte for byte: tests/test_workshop_room.py
    assert "make check-05" in said and "scenarios/05_shared_state_races/README.md" in said
    attempt.write_text("# my attempt, half done\n")
    said = workshop.practice("05", folder=tmp_path)
    assert attempt.read_text() == "# my attempt, half done\n"
    assert "already there" in said


def test_hints_come_one_at_a_time_then_the_last_again(tmp_path):
    hints = workshop.exercise_of(SCENARIOS["12"])["hints"]
    shown = [workshop.hint("12", folder=tmp_path) for _ in range(4)]
    assert [text.split(": ", 1)[0] for text in shown] == [
        "Hint 1 of 3 for exercise 12", "Hint 2 of 3 for exercise 12", "Hint 3 of 3 for exercise 12",
        "Hint 3 of 3 for exercise 12"]
    assert hints[0] in shown[0] and hints[2] in shown[3] and "make solution-12" in shown[3]


def test_a_hint_first_says_what_the_last_check_of_this_attempt_saw(tmp_path):
    scenario = SCENARIOS["29"]
    attempt = progress.attempt_path(scenario, tmp_path)
    attempt.parent.mkdir(parents=True, exist_ok=True)
    attempt.write_text("# split by rank only\n")
    graded = workshop.Grade("29", str(attempt), workshop.NOT_YET,
                            ["48 samples arrived twice within one rank's epoch"], {"seconds": 9.0})
    progress.record_grade(scenario, graded, attempt.read_text(), folder=tmp_path)
    said = workshop.hint("29", folder=tmp_path)
    assert said.splitlines()[0].endswith("said: 48 samples arrived twice within one rank's epoch")
    assert said.splitlines()[1].startswith("Hint 1 of 3 for exercise 29")
    attempt.write_text("# split by rank and by worker\n")
    assert "on an earlier version of your file" in workshop.hint("29", folder=tmp_path).splitlines()[0]


def test_solution_is_our_diff(tmp_path):
    done = cli("solution", "12", "--yes", env={rules.WORKSHOP_ENV: str(tmp_path)})
    assert done.returncode == 0
    assert "+++ scenarios/12_identical_augmentations/fixed.py" in done.stdout
    assert re.search(r"^\+.*# FIX:", done.stdout, flags=re.M)
    # Not shown unless asked: without a terminal to answer, it says how to ask.
    done = cli("solution", "12", env={rules.WORKSHOP_ENV: str(tmp_path)}, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout == "" and "SHOW=1" in done.stderr


def test_status_reads_attempts_and_the_last_grade(tmp_path):
    workshop.practice("05", folder=tmp_path)
    workshop.practice("12", folder=tmp_path)
    text = (tmp_path / "12_identical_augmentations.py").read_text()
    passed = workshop.Grade("12", "workshop/12_identical_augmentations.py", workshop.PASSED, [], {"seconds": 5})
    workshop.record_grade(SCENARIOS["12"], passed, text, folder=tmp_path)
    states = {row["exercise"]: row["state"] for row in workshop.status(folder=tmp_path)}
    assert states["01"] == "not started"
    assert states["05"] == "not yet (never checked)"
    assert states["12"] == "passed"
    assert f"1 of {len(NUMBERS)} passed" in workshop.status_table(workshop.status(folder=tmp_path))
    (tmp_path / "12_identical_augmentations.py").write_text(text + "\n# changed\n")
    states = {row["exercise"]: row["state"] for row in workshop.status(folder=tmp_path)}
    assert states["12"] == "not yet (changed since it passed)"


# ------------------------------------------------------------ cannot run here: status 3

def test_a_machine_without_what_the_scenario_needs_is_status_3(monkeypatch, tmp_path):
    monkeypatch.setattr(grading, "missing_needs", lambda scenario: "needs the 'fork' start method")
    with pytest.raises(workshop.CannotRunHere, match="scenario 05 cannot run here: needs the 'fork'"):
        workshop.check("05", SCENARIOS["05"].script("fixed"))


def test_an_attempt_that_exits_3_cannot_run_here():
    result = {"outcome": "cannot-run", "seconds": 0.4, "worker_processes_seen": 0, "exit_code": 3,
              "evidence": "cannot run here: needs unprivileged user namespaces", "output_tail": ""}
    grade = workshop.grade(SCENARIOS["04"], result, source("04", "fixed"), source("04", "broken"))
    assert grade.state == workshop.CANNOT_RUN and grade.exit_status == 3
    assert grade.problems == ["this machine cannot run it: cannot run here: needs unprivileged user namespaces"]


# ------------------------------------------------------------ bad input: status 2, no traceback

@pytest.mark.parametrize("args, said", [
    (["check", "99"], "error: no scenario 99; available: 01"),
    (["check", "x5"], "error: 'x5' is not a scenario number"),
    (["check", "05", "no/such/file.py"], "error: no file no/such/file.py"),
    (["check", "05"], "error: no attempt"),
    (["check", "05", "tests"], "error: tests is a folder"),
    (["hint", "42"], "error: no scenario 42"),
    (["practice", "42"], "error: no scenario 42"),
])
def test_bad_input_is_one_line_and_status_2(args, said, tmp_path):
    done = cli(*args, env={rules.WORKSHOP_ENV: str(tmp_path)})
    assert done.returncode == 2
    assert done.stderr.startswith(said) and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_syntax_error_is_shown_as_the_attendees_own(tmp_path):
    attempt = tmp_path / "attempt.py"
    attempt.write_text(source("05", "broken").replace("BAGS * VISITS", "BAGS * (VISITS", 1))
    done = cli("check", "05", str(attempt))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "error: the attempt is not valid Python:"
    assert re.match(rf'  File "{re.escape(str(attempt))}", line \d+$', lines[1])
    assert lines[-1].startswith("SyntaxError: ") and "^" in lines[-2]


def test_a_file_that_is_not_python_text(tmp_path):
    attempt = tmp_path / "model.pt"
    attempt.write_bytes(b"\x80\x02\xff\xfe binary")
    done = cli("check", "05", str(attempt))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is not Python source" in done.stderr


# ------------------------------------------------------------ what the model receives (issue 29)

def test_a_sample_fingerprint_is_its_bytes_and_leaves_the_attempts_random_state_alone():
    import numpy as np
    import torch
    from scenarios.clinic.observer import Observer
    from scenarios.clinic.run import fingerprints

    images, labels = torch.arange(24.0).reshape(4, 6), torch.tensor([0, 1, 0, 1])
    state = np.random.get_state(legacy=False)["state"]["key"].copy()
    prints = Observer.fingerprints((images, labels))
    assert len(set(prints)) == 4  # four different samples
    assert prints == Observer.fingerprints([images.clone(), labels.clone()])  # same bytes, same print
    assert Observer.fingerprints((images, labels.flip(0))) != prints  # a label is part of a sample
    assert (np.random.get_state(legacy=False)["state"]["key"] == state).all()
    assert fingerprints.sample_bytes((images, labels)) == 6 * 4 + 8


def test_a_generator_the_dataset_holds_is_read_without_drawing_from_it():
    import numpy as np
    from scenarios.clinic.run import fingerprints

    class Augmenting:
        def __init__(self):
            self.rng, self.epoch = np.random.default_rng(0), 3
    dataset = Augmenting()
    before = fingerprints.random_states(dataset)
    assert before == fingerprints.random_states(dataset)  # reading moved nothing
    dataset.rng.random()
    after = fingerprints.random_states(dataset)
    assert after["dataset.rng"] != before["dataset.rng"] and after["numpy"] == before["numpy"]
    assert fingerprints.dataset_state(dataset) != fingerprints.dataset_state(type("D", (), {"epoch": 2})())


def _records(tmp_path, *records):
    path = tmp_path / "observed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n{torn")
    from scenarios.clinic.run.observed import summary
    return summary(path)


def test_a_state_loaded_after_the_loops_iterator_was_taken_is_unused_while_that_iterator_goes_on(tmp_path):
    batch = {"k": "batch", "pid": 1, "lid": 1, "workers": 2}
    records = [{"k": "loader", "pid": 1, "lid": 1, "rank": 1}, dict(batch, epoch=1),
               {"k": "state_loaded", "pid": 1, "lid": 1, "iterators": 1}, dict(batch, epoch=1), dict(batch, epoch=1)]
    assert _records(tmp_path, *records)["unused_states"] == [{"pid": 1, "lid": 1, "batches": 2, "rank": 1}]
    taken = records[:3] + [{"k": "resumed", "pid": 1, "lid": 1, "at": 6}, dict(batch, epoch=2)]
    assert _records(tmp_path, *taken)["unused_states"] == [], "the next iter() took the state"


def test_a_saved_state_is_miscounted_where_its_count_is_not_the_loops_position(tmp_path):
    loader = {"k": "loader", "pid": 1, "lid": 1, "rank": 0}
    saved = {"k": "state_saved", "pid": 1, "lid": 1, "epoch": 1}
    seen = _records(tmp_path, loader, dict(saved, says=9, received=9), dict(saved, says=15, received=9))
    assert seen["miscounted_states"] == [{"pid": 1, "lid": 1, "epoch": 1, "says": 15, "received": 9, "rank": 0}]


@pytest.mark.parametrize("worker_handler, exposed", [(None, 1), ("__main__:request_stop", 1),
                                                     ("__main__:ignore_in_worker", 0)])
def test_workers_that_die_of_the_sigterm_their_training_process_catches_are_exposed(tmp_path, worker_handler,
                                                                                     exposed):
    epoch = {"k": "epoch", "pid": 1, "lid": 1, "epoch": 1, "sigterm": "caught",
             "sigterm_handler": "__main__:request_stop"}
    worker = {"k": "worker", "pid": 2, "ppid": 1, "sigterm": "caught", "sigterm_handler": worker_handler}
    ignoring = {"k": "worker", "pid": 3, "ppid": 1, "sigterm": "ignored", "sigterm_handler": None}
    seen = _records(tmp_path, epoch, worker, ignoring)["sigterm_exposed"]
    assert seen == ([{"pid": 1, "handler": "__main__:request_stop", "workers": 1, "of": 2}] if exposed else [])


def test_samples_are_counted_as_delivered_whatever_the_loop_drops(tmp_path):
    batch = {"k": "batch", "pid": 1, "lid": 1, "epoch": 1, "workers": 2}
    seen = _records(tmp_path, dict(batch, fp=["a", "b"]), dict(batch, fp=["a", "c"]),
                    dict(batch, epoch=2, fp=["a", "b"]), dict(batch, lid=2, workers=0, fp=["a", "a"]))
    assert seen["distinct_samples"] == 3 + 2 + 1  # per loader and epoch
    assert seen["repeated_samples"] == 1  # "a" twice in epoch 1; the loader without workers is not judged
    wanted = {"workers": 0, "samples": 7, "unique": True}
    problems = grading.observation_problems(wanted, seen)
    assert any("received 6 distinct samples; the workload is 7" in p for p in problems), problems
    assert any("received 1 samples again within the same epoch" in p for p in problems), problems


def test_copies_of_one_generator_and_a_stale_dataset_show_in_what_the_workers_made(tmp_path):
    made = [{"k": "made", "pid": pid, "n": n, "rng": {"torch": f"{pid}{n}", "dataset.rng": f"s{n}"}, "ds": "e0"}
            for pid in (10, 11) for n in (1, 2, 3)]
    delivered = [{"k": "batch", "pid": 1, "lid": 1, "epoch": e, "workers": 2, "fp": [], "ds": f"e{e}"}
                 for e in (0, 1)]
    seen = _records(tmp_path, *made, *delivered)
    assert seen["drawn_in_workers"] == ["dataset.rng", "torch"]
    assert seen["shared_draw_states"] == 3 and seen["shared_draw_sources"] == ["dataset.rng"]
    assert seen["stale_dataset_states"] == 1  # e1 was never a worker copy's state
    wanted = {"workers": 0, "worker_batches": 0, "draws": "distinct", "current_dataset": True}
    problems = grading.observation_problems(wanted, seen)
    assert len(problems) == 2, problems
    quiet = _records(tmp_path, *[dict(m, rng={"dataset.rng": "s0"}) for m in made])
    assert "no random state moved" in grading.observation_problems(dict(wanted, current_dataset=False), quiet)[0]


def test_an_aspect_grading_cannot_see_is_said_for_the_attempt():
    grade = graded("01", "fixed")
    said = workshop.grade_text(grade)
    assert grade.seen["not_judged"] and all(f"not judged: {what}" in said for what in grade.seen["not_judged"])


def test_a_lock_in_a_module_global_of_the_scripts_own_class_is_reached_from_the_worker(tmp_path, monkeypatch):
    # 01's shortcut moved the cache off the dataset into a module global; the worker still uses the
    # fork's copy of its lock.  A module, a class or a logger among the globals is not walked.
    script = tmp_path / "attempt_global.py"
    script.write_text("import logging, threading\n"
                      "class Cache:\n    def __init__(self):\n        self.lock = threading.Lock()\n"
                      "class Plain:\n    pass\n"
                      "LABELS = Cache()\nLOG = logging.getLogger('x')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__("attempt_global")
    from scenarios.clinic.run import fingerprints
    dataset = module.Plain()
    assert fingerprints.thread_locks(dataset) == {id(module.LABELS.lock)}
    dataset.cache = module.LABELS
    assert fingerprints.thread_locks(dataset) == {id(module.LABELS.lock)}  # one lock, reached twice
    import torch
    assert fingerprints.thread_locks(torch.utils.data.TensorDataset(torch.zeros(2))) == set()  # torch's own module


def test_functions_put_back_over_the_hook_are_named_and_fail(tmp_path):
    seen = _records(tmp_path, {"k": "unhooked", "pid": 1, "names": ["_BaseDataLoaderIter.__next__"]},
                    {"k": "replaced", "pid": 1, "names": ["print"]})
    assert seen["unhooked"] == ["_BaseDataLoaderIter.__next__"] and seen["replaced"] == ["print"]
    problems = grading.observation_problems({"workers": 0, "worker_batches": 0}, seen)
    assert any("put back PyTorch's _BaseDataLoaderIter.__next__ over the grading hook" in p for p in problems)


# ------------------------------------------------------------ each worker's own record (worker_records.py)

def _asking(ppid: int, batches: list, started: float) -> list[dict]:
    """Two workers of one iterator, taking the index batches in turn as PyTorch deals them."""
    return [{"ppid": ppid, "worker_id": w, "started": started, "batches": 3,
             "asked": [[k, batch] for k, batch in enumerate(batches) if k % 2 == w]} for w in (0, 1)]


def test_a_resume_is_judged_on_the_order_each_loader_asked_its_workers_for():
    from scenarios.clinic.workshop.worker_records import resume_problems
    epoch = [[i, i + 1] for i in range(0, 12, 2)]
    interrupted = _asking(1, epoch, 0) + _asking(1, epoch[:4], 1)  # killed with 4 batches asked
    wanted = {"resumed_order": True}
    assert resume_problems(wanted, {"workers": interrupted + _asking(2, epoch[2:], 2)}) == []
    restarted = resume_problems(wanted, {"workers": interrupted + _asking(2, epoch[::-1][:4], 2)})
    assert restarted and restarted[0].startswith("the resumed job's DataLoader asked its workers for [10, 11]")
    replayed = resume_problems(wanted, {"workers": interrupted + _asking(2, epoch, 2)})
    assert replayed == [], "a loader that asks for the whole epoch again, in its order, resumes it (a fast-forward)"


def test_a_resume_of_many_ranks_pairs_each_rank_with_its_own_and_skips_iterators_that_delivered_nothing():
    from scenarios.clinic.workshop.worker_records import resume_problems
    epochs = {0: [[0, 1], [2, 3], [4, 5], [6, 7]], 1: [[8, 9], [10, 11], [12, 13], [14, 15]]}
    workers, loaders, tallies = [], [], []
    for launch, (rank, order, started) in enumerate([(0, epochs[0], 0), (1, epochs[1], 0.5), (1, epochs[1][2:], 1),
                                                     (0, epochs[0][::-1][:2], 1.5)]):
        asked = _asking(launch, order, started)
        for n, worker in enumerate(asked):
            worker["pid"] = 10 * launch + n
        dropped = [dict(w, pid=100 + 10 * launch + w["worker_id"], started=started - 0.1)
                   for w in _asking(launch, order[:2], 0)]
        workers += asked + (dropped if launch >= 2 else [])  # a library's iterator, made and dropped unread
        loaders.append({"pid": launch, "rank": rank})
        tallies.append({"pid": launch, "batches": len(order), "worker_pids": [w["pid"] for w in asked]})
    problems = resume_problems({"resumed_order": True}, {"workers": workers, "loaders": loaders, "epochs": tallies})
    assert len(problems) == 1 and problems[0].startswith("rank 0: "), problems  # rank 1 resumed its own order
    assert "asked its workers for [6, 7]… as batch 2" in problems[0] and "had asked for [4, 5]" in problems[0]


def test_a_run_cut_inside_an_epoch_and_started_again_in_another_order_is_a_lost_order_for_the_doctor():
    from scenarios.clinic.doctor.checks import s24_resume_mid_epoch as s24, s35_distributed_resume_order as s35
    from scenarios.clinic.run.resumes import resumed_orders
    epoch = [[i, i + 1] for i in range(0, 12, 2)]
    first = _asking(1, epoch, 0) + _asking(1, epoch[::-1][:4], 1)   # epoch 2 cut after 4 batches asked
    cut = [{"pid": 1, "epoch": 1, "batches": 6, "ended": True}, {"pid": 1, "epoch": 2, "batches": 3}]
    again = _asking(2, epoch, 2)   # started over: epoch 0's order, the whole epoch
    [row] = resumed_orders(first + again, cut + [{"pid": 2, "epoch": 1, "batches": 6, "ended": True}], [])
    assert row["order_lost"] and row["skipped"] == 0 and row["differ_at"] == 0
    [found] = s24.observed({"resumed_orders": [row]})
    assert found.level == "risk" and "started it again from its first batch in another order" in found.evidence
    assert s35.observed({"resumed_orders": [row]}) == []   # one process, no rank: 24's
    # the same order taken up where it stopped: a resume that kept it; a first run that ended is no interruption
    [kept] = resumed_orders(first + _asking(2, epoch[::-1][2:], 2), cut, [])
    assert not kept["order_lost"] and s24.observed({"resumed_orders": [kept]}) == []
    ended = [dict(e, ended=True) for e in cut]
    [rerun] = resumed_orders(first + again, ended, [])
    assert rerun["interrupted_ended"] and not rerun["order_lost"]
    ranked = [dict(row, rank=r) for r in (0, 1)]
    [named] = s35.observed({"resumed_orders": ranked})
    assert named.level == "risk" and named.figures["ranks"] == 2 and s24.observed({"resumed_orders": ranked}) == []


def test_busy_threads_and_pool_threads_are_read_from_each_workers_census():
    from scenarios.clinic.workshop.worker_records import thread_problems
    oversubscribed = {"workers": [{"worker_id": 0, "batches": 4, "busy_threads": 2, "pool_threads": 1,
                                   "thread_cpu_s": [0.36, 0.33]}]}
    assert thread_problems({"busy_threads": 1}, oversubscribed)[0].startswith(
        "1 of the 1 DataLoader workers kept more than 1 thread busy")
    assert thread_problems({"pool_threads": 2}, oversubscribed)[0].startswith(
        "1 of the 1 DataLoader workers kept fewer than 2 pool threads busy")
    assert thread_problems({"busy_threads": 2, "pool_threads": 1}, oversubscribed) == []


def test_compilations_and_the_loops_busy_share_are_read_from_the_hooks_records(tmp_path):
    # dynamo numbers its compilations from "0/0" again after torch._dynamo.reset(): each start counts
    compiles = [{"k": "compile", "pid": 1, "id": f"0/{n % 4}"} for n in range(9)]
    epoch = {"k": "epoch", "pid": 1, "lid": 1, "epoch": 1, "workers": 2, "batches": 30, "step_s": 1.2,
             "steady_wait_s": 0.3}
    seen = _records(tmp_path, *compiles, epoch)
    assert seen["compiles"] == 9 and seen["loop_busy_share"] == 0.8
    wanted = {"workers": 0, "worker_batches": 0, "compiles": 4, "agree": {"utilisation": "loop_busy_share"}}
    problems = grading.observation_problems(wanted, seen, {"utilisation": 0.93})
    assert any(p.startswith("torch.compile compiled the step 9 times") for p in problems), problems
    assert any(p.startswith("it reported utilisation=0.93, but the grader timed the training loop busy 80%")
               for p in problems), problems
    honest = grading.observation_problems(dict(wanted, compiles=9), seen, {"utilisation": 0.81})
    assert honest == [], "a share within the slack of the one timed, and compilations within the bound"


# ------------------------------------------------------------ what the step did (training_steps.py)

@pytest.mark.parametrize("wanted, seen, said", [
    ({"same_steps": True}, {"ddp_ranks": [{"rank": 0, "forwards": 5, "params": "a"},
                                          {"rank": 1, "forwards": 4, "params": "a"}]}, "took rank 0 5 steps, rank 1 4"),
    ({"same_steps": True}, {"ddp_ranks": [{"rank": 0, "forwards": 5, "params": "a"},
                                          {"rank": 1, "forwards": 5, "params": "b"}]}, "ended with different weights"),
    ({"compiled_step": True}, {"delivered_shapes": {"[4, 16]": 3}, "compiled_shapes": {"[2, 8]": 3}},
     r"3 batches the loader delivered never reached the compiled step"),
    ({"stalled_then_raised": 2}, {"loader_raised": [{"waited_s": 0.1}]}, "no rank's DataLoader raised after"),
    # 3 s asleep in __getitem__ and then a made-up TimeoutError: the stall's read never happened
    ({"stalled_then_raised": 2}, {"loader_raised": [{"waited_s": 3.1}], "long_fetch_waits": [{"sleep": 8}]},
     "no DataLoader worker waited on a read through its long fetch .*sleep 8"),
    ({"varied_fields": True}, {"field_values": [64, 8, 1]}, "field 2 of the samples held one value"),
    ({"new_stream_order_each_epoch": True},
     {"per_epoch": [{"pid": 1, "lid": 1, "iterable": True, "ended": True, "distinct": 8, "order": "x"}] * 3},
     "2 epochs of a stream's loader delivered the same samples in the same order"),
    ({"resumes": [6, 6, 9]}, {"resumes": {"1": [6, 6, 24]}}, "the training processes resumed their loaders at "
                                                             "batches 6, 6, 24"),
])
def test_what_the_step_did_is_judged_and_said(wanted, seen, said):
    from scenarios.clinic.workshop.training_steps import step_problems

    problems = step_problems(wanted, seen)
    assert len(problems) == 1 and re.search(said, problems[0]), problems
    fixed = {"ddp_ranks": [{"rank": 0, "forwards": 5, "params": "a"}, {"rank": 1, "forwards": 5, "params": "a"}],
             "delivered_shapes": {"[4, 16]": 3}, "compiled_shapes": {"[4, 16]": 3},
             "loader_raised": [{"waited_s": 4.0}], "long_fetch_waits": [{"read": 12, "running": 1}, {"other": 3}],
             "field_values": [64, 8, 64], "resumes": {"1": [6, 6, 9]},
             "per_epoch": [{"pid": 1, "lid": 1, "iterable": True, "ended": True, "distinct": 8, "order": o}
                           for o in "xyz"]}
    assert step_problems(wanted, fixed) == []


def test_a_threads_system_call_is_named_by_what_it_waits_on():
    import socket
    import threading

    from scenarios.clinic.run import blocked

    if not blocked.KINDS:
        pytest.skip(f"no system call table for {blocked.platform.machine()}: every reading is 'other'")
    ours, theirs = socket.socketpair()
    seen = []
    ready = threading.Event()

    def reader():
        seen.append(threading.get_native_id())
        ready.set()
        ours.recv(1)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    ready.wait(5)
    deadline = time.monotonic() + 5
    while blocked._reading(seen[0]) != "read" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert blocked._reading(seen[0]) == "read"
    theirs.send(b"x")
    thread.join(5)
    assert blocked.kind_of("running") == "running" and blocked.kind_of("230 0x0") in ("sleep", "other")

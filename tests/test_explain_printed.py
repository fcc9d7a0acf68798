"""`explain` on what users print and on logs whose context decides (issue 47): printed values read as
evidence, never *certain*, each with the question that decides; rules that name a scenario only where the
text shows its mechanism; context that adds to what a log's texts name, never takes it away."""
import re

from scenarios.clinic.doctor.explain import explain_text


def levels(text: str) -> list[tuple[str, str]]:
    return [(f.scenario, f.level) for f in explain_text(text)]


def asks_with_a_command(text: str) -> bool:
    return bool(re.search(r"\[possible: .*\?.*python -m scenarios doctor", explain_text(text)[0].evidence))


# -- 1. printed output --------------------------------------------------------------------------------------

def _rank_ids(shift: int = 0) -> str:
    return "".join(f"[rank {r}] epoch 0 step {s} ids [{s * 4 + r * shift}, {s * 4 + 1 + r * shift}, "
                   f"{s * 4 + 2 + r * shift}]\n" for s in range(3) for r in (0, 1))


def test_ranks_that_print_the_same_ids_are_29_with_how_many_and_the_question():
    assert levels(_rank_ids()) == [("29", "possible")]
    evidence = explain_text(_rank_ids())[0].evidence
    assert "2 of 2 ranks" in evidence and "same 3 lists of ids, 9 ids" in evidence
    assert asks_with_a_command(_rank_ids())
    assert levels(_rank_ids().replace("[rank 1]", "[rank1]:")) == [("29", "possible")]  # torchrun's own mark
    assert levels("class Shards(IterableDataset):\n" + _rank_ids()) == [("29", "likely")]  # a stream shown
    assert levels(_rank_ids(shift=100)) == []                                  # each rank its own ids: healthy


def test_workers_that_print_the_same_draws_are_12():
    worded = "".join(f"Rotating by {v}\n" * 4 for v in (19.3670429735, 4.0394864697, 13.1304701759))
    assert levels(worded) == [("12", "likely")] and "each 4 times in a row" in explain_text(worded)[0].evidence
    by_worker = "".join(f"worker {w}: brightness={v}\n" for w in (0, 1, 2) for v in (0.8127, 1.1934, 0.9551))
    assert levels(by_worker) == [("12", "likely")] and "3 workers" in explain_text(by_worker)[0].evidence
    own = "".join(f"worker {w}: brightness={v + w / 100:.4f}\n" for w in (0, 1, 2) for v in (0.8127, 1.1934))
    assert levels(own) == []                                                  # each worker its own draws
    one_line = "0.35 0.35 0.35 0.35 0.35 0.35\n"
    assert levels(one_line) == [("12", "possible")] and asks_with_a_command(one_line)
    assert levels("1 1 1 1 1 1\n") == []                                      # whole numbers: no draws


# torch.profiler's key_averages().table() as torch 2.13 prints it (the name cut at 55 characters).
PROFILE = """\
-------------------------------------------------------  ------------  ------------  ------------  ------------
                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total
-------------------------------------------------------  ------------  ------------  ------------  ------------
enumerate(DataLoader)#_SingleProcessDataLoaderIter._...        86.08%     409.937ms        88.56%     411.991ms
                                           aten::linear         0.03%     115.720us         2.99%      12.758ms
                                            aten::addmm         2.28%       9.718ms         2.32%       9.915ms
-------------------------------------------------------  ------------  ------------  ------------  ------------
Self CPU time total: 426.683ms
"""
CPROFILE = """\
         989 function calls (983 primitive calls) in 0.418 seconds

   ncalls  tottime  percall  cumtime  percall filename:lineno(function)
       11    0.000    0.000    0.314    0.038 …/site-packages/torch/utils/data/dataloader.py:720(__next__)
       40    0.001    0.000    0.100    0.010 train.py:5(step)
"""


def test_a_profile_mostly_in_the_loaders_next_is_a_loop_that_waits_for_data():
    assert levels(PROFILE) == [("28", "likely")] and "89% of the profiled time" in explain_text(PROFILE)[0].evidence
    workers = PROFILE.replace("_SingleProcessDataLoaderIter", "_MultiProcessingDataLoaderIter")
    assert levels(workers) == [("07", "possible")] and asks_with_a_command(workers)
    assert levels(PROFILE.replace("88.56%", "18.56%")) == []                  # the step, not the loader, costs
    assert levels(CPROFILE) == [("07", "possible")] and "75%" in explain_text(CPROFILE)[0].evidence


def test_data_time_against_step_time_in_the_imagenet_examples_columns():
    log = "".join(f"Epoch: [0][{i}/5005]\tTime 10.452 (5.893)\tData 10.404 (5.632)\tLoss 6.9\n" for i in (0, 10, 20))
    assert levels(log) == [("07", "possible")] and asks_with_a_command(log)
    assert levels(log.replace("Data 10.404", "Data 0.104")) == []


def test_a_low_gpu_figure_with_words_about_waiting_for_data():
    idle = "GPU utilisation is at 0% most of the time, it is waiting for data (num_workers=0)\n"
    assert levels(idle) == [("28", "possible")] and asks_with_a_command(idle)
    slow_io = "GPU usage about 30% and dropping to 0 while it waits on the data, reading from an NFS share\n"
    assert levels(slow_io) == [("07", "possible")]
    assert levels("GPU utilisation at 20%: the model is small\n") == []       # low, no words about data
    assert levels("GPU at 97%, waiting for data is no issue\n") == []          # busy


def _lines(line: str, n: int = 3) -> str:
    return "".join(line.format(i=i * 50) + "\n" for i in range(1, n + 1))


MMCV = "Epoch [1][{i}/7330]\tlr: 2.000e-02, eta: 20:01:13, time: 0.455, data_time: 0.412, memory: 3011, loss: 1.20"
OWN_LOOP = "step {i}: data: 410ms iter: 455ms loss 0.93"


def test_data_time_most_of_the_step_in_mmcv_detectron2_timm_and_a_loops_own_words():
    timm = "Train: 0 [ {i}/1251 ( 4%)]  Loss: 6.91 (6.93)  Time: 0.455s,  562.41/s  (0.451s,  567.10/s)  Data: 0.412"
    detectron2 = "d2.utils.events]:  eta: 1:02:11  iter: {i}  total_loss: 2.1  time: 0.4550  data_time: 0.4120"
    for log in map(_lines, (MMCV, timm, detectron2, OWN_LOOP)):
        assert levels(log) == [("07", "possible")] and asks_with_a_command(log), log
        assert levels(log.replace("0.412", "0.012").replace("410ms", "12ms")) == [], log   # a small share: healthy
    one = "Epoch: [0][400/5005]  data_time: 0.412 (0.398)  time: 0.455\n"       # its running average says so too
    assert levels(one) == [("07", "possible")]
    assert levels("Epoch: [0][0/5005]  data_time: 10.40 (10.40)  time: 10.45 (10.45)\n") == []   # a run's first
    assert levels(_lines("epoch {i}  data: 50000 samples  time: 3600s")) == []  # no data time: more than the step


def test_waits_that_come_in_bursts_add_up_to_most_of_the_time():
    times = ["time: 0.51  data_time: 0.01"] * 2 + ["time: 9.80  data_time: 9.31"] + ["time: 0.49  data_time: 0.02"] * 2
    bursts = "".join(f"it {i}  {t}\n" for i, t in enumerate(times))
    assert levels(bursts) == [("07", "possible")] and "9.31 s at once" in explain_text(bursts)[0].evidence
    first = "".join(f"it {i}  {t}\n" for i, t in enumerate([times[2]] + times[:2] + times[3:]))
    assert levels(first) == []                                        # the paste's first: the workers' start
    epoch = "".join(f"[{e}][{i}/900]  Time {s} ({a})  Data {d} ({b})\n" for e, i, s, a, d, b in
                    ((0, 100, 0.5, 0.6, 0.01, 0.1), (1, 0, 9.8, 9.8, 9.3, 9.3), (1, 10, 0.5, 1.3, 0.01, 0.9),
                     (1, 20, 0.5, 0.9, 0.02, 0.5), (1, 30, 0.5, 0.8, 0.01, 0.3)))
    assert levels(epoch) == []                                        # an epoch's first: its average is its value
    assert levels(epoch.replace("Data 9.3 (9.3)", "Data 9.3 (4.1)")) == [("07", "possible")]   # mid-epoch: a wait


def test_a_next_batch_told_to_take_seconds():
    for text in ("each next() on the dataloader takes 10~20s\n", "batches take a very long time to load\n",
                 "GPU utilisation is low (~5%) and batches arrive in bursts, loading is very slow\n"):
        assert levels(text)[0][0] in ("07", "28") and asks_with_a_command(text), text
    assert levels("each next() on the dataloader takes 0.02s\n") == []
    assert levels("next() takes a long time and then it hangs forever\n") == []     # stopped: a hang's lesson


def test_the_share_of_the_step_told_in_words():
    assert levels("Data loading took 80% of the step\n") == [("07", "possible")]
    assert asks_with_a_command("I profiled it: 85 % of the time is spent waiting for data.\n")
    assert levels("Data loading took 5% of the step\n") == []
    assert levels("Data loading is not the bottleneck: 90% of the time is spent in backward\n") == []


def test_what_the_text_shows_of_workers_and_storage_decides_between_07_and_28():
    assert levels("num_workers: 0\n" + _lines(MMCV)) == [("28", "likely")]
    assert levels("num_workers: 0, images read from an S3 bucket\n" + _lines(MMCV)) == [("07", "likely")]
    assert levels("images read from an NFS share\n" + _lines(MMCV)) == [("07", "possible")]
    few = explain_text("DataLoader(train_set, batch_size=64, num_workers=4)\n" + _lines(MMCV))
    assert [(f.scenario, f.level) for f in few] == [("07", "possible")] and "num_workers=4" in few[0].evidence
    advice = "Rerunning with num_workers=0 may give better error trace.\n"   # PyTorch's own words: no setting
    assert ("07", "possible") in levels(advice + _lines(MMCV))
    told = "GPU utilisation is at 0% most of the time, waiting for data"
    for extra in ("", "num_workers=0", "num_workers=8", "reading from a remote bucket"):
        for text in (_lines(MMCV), _lines(OWN_LOOP), told, PROFILE, PROFILE.replace("_SingleP", "_MultiP")):
            found = [f.scenario for f in explain_text(f"{extra}\n{text}")]
            assert found in (["07"], ["28"]), (extra, text)               # one lesson, never both


PY_SPY_TOP = """\
  %Own   %Total  OwnTime  TotalTime  Function (filename)
  3.00%  83.00%    1.21s    33.80s   __next__ (torch/utils/data/dataloader.py:733)
 12.00%  14.00%    4.90s     5.70s   forward (model.py:41)
"""
LIGHTNING = """\
|  Action                                    \t|  Mean duration (s)\t|  Num calls\t|  Total time (s)\t|  Percentage %\t|
|  Total                                     \t|  -              \t|  2411     \t|  500.12   \t|  100 %    \t|
|  [_TrainingEpochLoop].train_dataloader_next\t|  0.41           \t|  1000     \t|  410.3    \t|  82.04    \t|
|  run_training_batch                        \t|  0.07           \t|  1000     \t|  70.1     \t|  14.02    \t|
"""


def test_other_profilers_rows_for_the_loaders_next():
    for text, share in ((PY_SPY_TOP, "83%"), (LIGHTNING, "82%"),
                        ("the profiler puts 88% of the time in _SingleProcessDataLoaderIter.__next__\n", "88%"),
                        ("DataLoader.__next__   71.3%\ntrain_step   25.0%\n", "71%")):
        assert levels(text)[0][0] in ("07", "28") and share in explain_text(text)[0].evidence, text
    assert levels(PY_SPY_TOP.replace("83.00%", "9.00%")) == []
    assert levels(LIGHTNING.replace("82.04", "2.04")) == []
    assert levels("Validation DataLoader 0: 100%|##########| 50/50 [00:01<00:00, 30.1it/s]\n") == []


def test_a_gpu_told_idle_between_steps_or_starving():
    for text in ("GPU util at 0% most of the time\n", "GPU usage ~30% and drops to 0 every few seconds\n",
                 "The GPU is starving, the epoch takes an hour\n"):
        assert levels(text) == [("28", "possible")] and asks_with_a_command(text), text
    assert levels("GPU usage ~30% and drops to 0; the dataset is on a network drive\n") == [("07", "possible")]
    assert levels("GPU utilisation is 0%. Is the model on the CPU?\n") == []          # no idling told, no data
    assert levels("GPU memory usage 30%, it drops to 0 after each epoch\n") == []     # the memory's figure
    assert levels("Training hangs at epoch 3, GPU util drops to 0 and stays\n") == []  # stopped, not waiting
    assert levels("The GPU is not waiting for data.\n") == []


def test_printed_values_are_never_certain_and_a_text_with_repeats_is_never_healthy():
    for text in (_rank_ids(), PROFILE, "0.35 0.35 0.35 0.35 0.35 0.35\n", _lines(MMCV), _lines(OWN_LOOP),
                 "Data loading took 80% of the step\n", PY_SPY_TOP, LIGHTNING, "GPU is starving\n",
                 "num_workers=0\n" + _lines(MMCV)):
        assert explain_text(text) and all(f.level in ("likely", "possible") for f in explain_text(text))


# -- 2. a rule names its scenario only where the text shows its mechanism ----------------------------------

LIMIT = ("W1127 10:00:00.000000 123 torch/_dynamo/convert_frame.py:1995] torch._dynamo hit config.recompile_limit (8)\n"
         "W1127 10:00:00.000000 123 torch/_dynamo/convert_frame.py:1995]    function: 'step' (train.py:40)\n"
         "W1127 10:00:00.000000 123 torch/_dynamo/convert_frame.py:1995]    last reason: 0/7: tensor '{name}' size "
         "mismatch at index 0. expected 4096, actual 11008\n")


def test_a_recompile_limit_is_34_only_where_a_batch_changed_size():
    assert levels(LIMIT.format(name="x")) == [("34", "likely")]
    assert levels(LIMIT.format(name="w")) == []                               # a weight per shape: a quantisation loop
    assert levels(LIMIT.format(name="L['self'].weight")) == []
    assert levels(LIMIT.splitlines()[0] + "\n") == []                         # no guard failure shown at all


FEEDER = ('Traceback (most recent call last):\n  File "/usr/lib/python3.11/multiprocessing/queues.py", line 244, '
          'in _feed\n    obj = _ForkingPickler.dumps(obj)\n  File "/usr/lib/python3.11/multiprocessing/reduction.py", '
          'line 51, in dumps\n    cls(buf, protocol).dump(obj)\n')


def test_33_needs_the_feeders_own_pickling_error_and_quotes_it():
    found = explain_text(FEEDER + "TypeError: cannot pickle 'generator' object\n")
    assert [(f.scenario, f.level) for f in found] == [("33", "likely")]
    assert found[0].evidence.startswith("TypeError: cannot pickle 'generator' object")
    other = FEEDER + ("OSError: [Errno 28] No space left on device\n\nDuring handling of the above exception, another "
                      "exception occurred:\n\nTraceback (most recent call last):\n  File \"prep.py\", line 3, in "
                      "<module>\n    pool.map(f, items)\nTypeError: cannot pickle 'generator' object\n")
    assert "33" not in [f.scenario for f in explain_text(other)]


TIMED_OUT = ('[rank1]: Traceback (most recent call last):\n[rank1]:   File "train.py", line 40, in <module>\n'
             '[rank1]:     for batch in loader:\n[rank1]:   File "…/torch/utils/data/dataloader.py", line 1450, in '
             '_try_get_data\n[rank1]:     f"DataLoader timed out after {self._timeout} seconds"\n'
             '[rank1]: RuntimeError: DataLoader timed out after 10 seconds\n')


def test_a_ranks_loader_timeout_ranks_31_above_01_and_quotes_the_message():
    found = explain_text(TIMED_OUT)
    assert [f.scenario for f in found] == ["31", "01"]
    assert all("RuntimeError: DataLoader timed out after 10 seconds" in f.evidence for f in found)
    assert "{self._timeout}" not in " ".join(f.evidence for f in found)


# -- 3. context that adds, never subtracts ------------------------------------------------------------------

def test_a_worker_that_exited_with_a_code_below_its_cause_in_one_paragraph_keeps_the_cause():
    child = ('Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
             '  File "C:\\Python311\\lib\\multiprocessing\\spawn.py", line 134, in _check_not_importing_main\n'
             "RuntimeError: \n        An attempt has been made to start a new process before the\n"
             "        current process has finished its bootstrapping phase.\n")
    death = ("RuntimeError: DataLoader worker (pid 9184) exited unexpectedly with exit code 1. Details are lost due "
             "to multiprocessing. Rerunning with num_workers=0 may give better error trace.\n")
    assert [f.scenario for f in explain_text(child + death)] == ["09"]
    assert [f.scenario for f in explain_text(child + "\n" + death)] == ["09"]
    assert levels(death) == [("06", "possible")]                              # alone, it is all the log says


SUMMARY = ("[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] Timed out "
           "waiting 1800000ms for send operation to complete\ntrain.py FAILED\n" + "-" * 40 + "\nFailures:\n[1]:\n"
           "  time      : 2026-11-27_10:00:00\n  host      : node1\n  rank      : 1 (local_rank: 1)\n"
           "  exitcode  : -15 (pid: 4242)  (SIGTERM)\n  error_file: <N/A>\n"
           "  traceback : Signal 15 (SIGTERM) received by PID 4242\n" + "-" * 40 + "\n"
           "Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-27_10:00:00\n  host      : node1\n"
           "  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 4241)\n  error_file: <N/A>\n")


def test_torchruns_summary_names_the_rank_it_stopped_as_31():
    found = explain_text(SUMMARY)
    assert [(f.scenario, f.level) for f in found] == [("31", "likely")]
    assert "rank 0 timed out" in found[0].evidence and "stopped rank 1 with SIGTERM" in found[0].evidence
    both_raised = SUMMARY.replace("-15 (pid: 4242)  (SIGTERM)", "1 (pid: 4242)")
    assert levels(both_raised) == [("30", "possible")]                        # no rank stopped: the question stays


H5PY_IN_WORKER = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
                  '    for batch in loader:\nRuntimeError: Caught OSError in DataLoader worker process 1.\n'
                  'Original Traceback (most recent call last):\n'
                  '  File "…/torch/utils/data/_utils/worker.py", line 349, in _worker_loop\n'
                  '    data = fetcher.fetch(index)\n  File "…/h5py/_hl/dataset.py", line 955, in __getitem__\n'
                  '    self.id.read(mspace, fspace, arr, mtype, dxpl=self._dxpl)\n'
                  '  File "h5py/h5d.pyx", line 181, in h5py.h5d.DatasetID.read\n{error}\n')


def test_h5pys_read_failing_inside_a_worker_is_18_whatever_hdf5_says():
    for error in ("OSError: Can't synchronously read data (address of object past end of allocation)",
                  "Can't synchronously read data (inflate() failed)"):   # with and without the class
        assert levels(H5PY_IN_WORKER.format(error=error)) == [("18", "likely")]
    outside = H5PY_IN_WORKER.format(error="OSError: Can't synchronously read data (inflate() failed)")
    outside = outside.replace("Caught OSError in DataLoader worker process 1", "OSError").replace("_worker_loop", "run")
    assert "18" not in [f.scenario for f in explain_text(outside)]            # no worker: a damaged file prints it too

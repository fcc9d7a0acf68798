"""Scenario 36, measured: the two other ways the same second resume ends, both loud.

    python scenarios/36_second_resume/measure_endings.py

The job resumed twice, in one process for one rank's share (rank 0 of 2), with broken.py's and
fixed.py's own stream and loop (their module constants changed here, nothing else):

- a shorter stream, 112 samples (56 per rank, 14 batches): the state the resumed run writes at its
  step 9 says 15, more than the share holds, and the third run's `for batch in loader` fails inside
  StatefulDataLoader.__iter__, where torchdata fast-forwards: the iterator runs dry, and its
  StopIteration leaves iter() as an error with no message (a `for` ends quietly only on a
  StopIteration from next());
- the first stop after step 3 instead of 6: the resumed run's state at step 9 says 12, and after
  fast-forwarding 12 batches the last one came from the other worker than the state recorded
  (with 2 workers taking turns, an odd surplus): torchdata raises `ValueError: last_yielded_worker_id
  does not match, the dataset may have changed`.  The surplus of broken.py's job, 6, is even: silence.

Each traceback is printed as the job would print it.  With fixed.py's stream both jobs train each
sample once.
"""
import traceback
import warnings

import broken
import fixed
from _three_jobs import run_job

CASES = {"short_stream": (112, (6, 9)), "odd_first_stop": (192, (3, 9))}  # stream, the steps a run stops after


def resumed_twice(script, stream, stops):
    script.STREAM = stream
    try:
        job = run_job(script.train, rank=0, world=2, stops=stops)
    except (StopIteration, ValueError) as failed:
        print("".join(traceback.format_exception(failed)), end="")
        frames = [frame.name for frame in traceback.extract_tb(failed.__traceback__)]
        return {"raised": type(failed).__name__, "in_iter": "__iter__" in frames, "trained_once": 0}
    trained = sorted(i for step in job["trained_on"] for i in step)
    return {"raised": None, "in_iter": False, "trained_once": int(trained == list(range(0, stream, 2)))}


def main():
    warnings.filterwarnings("ignore", message="'set_vital' is deprecated")
    figures, said = {}, {}
    for case, (stream, stops) in CASES.items():
        wrong, right = resumed_twice(broken, stream, stops), resumed_twice(fixed, stream, stops)
        said[case] = wrong["raised"] if wrong["in_iter"] else "no error from iter(loader)"
        figures.update({f"{case}_stop_iteration": int(wrong["raised"] == "StopIteration"),
                        f"{case}_value_error": int(wrong["raised"] == "ValueError"),
                        f"{case}_raised_in_iter": int(wrong["in_iter"]),
                        f"{case}_fixed_trained_once": right["trained_once"]})
    for name, value in figures.items():
        print(f"metric {name}={value}")
    fixed_once = all(figures[f"{case}_fixed_trained_once"] for case in CASES)
    print(f"resumed twice, iter(loader) raised {said['short_stream']} on a stream of 14 batches per rank and "
          f"{said['odd_first_stop']} with the first stop at step 3; with the stream's own state, "
          f"{'each sample once' if fixed_once else 'samples wrong'}")


if __name__ == "__main__":
    main()

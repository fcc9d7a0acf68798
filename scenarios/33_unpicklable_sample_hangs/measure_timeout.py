"""Scenario 33, measured: what DataLoader(timeout=6) makes of the hang.

    python scenarios/33_unpicklable_sample_hangs/measure_timeout.py

broken.py again, with timeout=6.  Expect the same pickling tracebacks, then
`RuntimeError: DataLoader timed out after 6 seconds` about six seconds after the
loop asked for its first batch, and no batch.  The wait ends, which is what a
job that must not sit idle for hours needs; the error itself does not say why
(the feeder's traceback printed above it does), and each epoch would stop the
same way.  A timeout shorter than the slowest healthy batch fails healthy runs.
"""
import time

from broken import main

TIMEOUT_S = 6

if __name__ == "__main__":
    started = time.perf_counter()
    try:
        main(timeout=TIMEOUT_S)
    except RuntimeError:
        print(f"metric raised_after_s={time.perf_counter() - started:.2f}", flush=True)
        raise

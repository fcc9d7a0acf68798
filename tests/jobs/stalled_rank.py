"""Scenario 31's broken.py as a job that stays hung for the doctor to examine: the same 2 torchrun ranks,
rank 1's sample 13 read from storage that never answers, with a process group timeout of 5 minutes
instead of 8 s.

    python tests/jobs/stalled_rank.py

This process is torchrun's agent (the launcher's PID); each rank prints "rank R: step 1 done"; rank 1
then waits for its second batch and rank 0 in that step's all_reduce, until killed.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scenarios" / "31_one_rank_loader_stalls"))

import broken

if __name__ == "__main__":
    broken.TIMEOUT_S = 300
    broken.main()

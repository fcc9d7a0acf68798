"""Scenario 24's interrupted job, reused here (imported by the scripts, not run).

run_job(train, kill_after_step) runs train(job) in a fresh process, SIGKILLs that process and
its DataLoader workers after a given step, and runs train(job) again in another fresh process,
which resumes from the last checkpoint; report(...) counts, per sample and per epoch, what the
job trained on across the interruption.  Both live in scenarios/24_resume_mid_epoch/_job.py;
its folder goes on sys.path, which the spawned attempts inherit, so that they import it too.
"""
import os
import sys

from scenarios import host

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(host.__file__)), "24_resume_mid_epoch"))

from _job import SAVE_EVERY, report, run_job

__all__ = ["SAVE_EVERY", "report", "run_job"]

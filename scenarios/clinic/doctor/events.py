"""The probe's events: one line each on the probe's stdout, `checkup-probe {json}`, so that
whatever it measured before a hang, a crash or its time limit survives.  The probe's child
(probe_child.py) writes them; the parent (probe.py) reads them; the checks read the parsed events.

Names: started, loaded, stage, workers-started, first-batch, batch, memory, tick, iterate,
compare, draws, skipped, error, bad-input, done.
"""
PREFIX = "checkup-probe "

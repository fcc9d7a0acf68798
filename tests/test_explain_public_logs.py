"""`explain` on logs users posted in public issue threads (tests/logs/public/SOURCES.md names each
thread): each names exactly the scenario a reader would expect, and a log with no DataLoader
failure in it (CUDA OOM in the model, an NCCL timeout, a KeyError in the loop, a healthy bar) names none."""
import pathlib
import re

import pytest

from scenarios.clinic.doctor.explain import explain_text

PUBLIC = pathlib.Path(__file__).parent / "logs" / "public"
ROW = re.compile(r"^\| (\S+\.log) \| [^|]+ \| \S+ \| (none|\d\d(?:, \d\d)*) \|$")


def _expected() -> dict[str, set[str]]:
    rows = [ROW.match(line) for line in (PUBLIC / "SOURCES.md").read_text(encoding="utf-8").splitlines()]
    return {m.group(1): (set() if m.group(2) == "none" else set(m.group(2).split(", "))) for m in rows if m}


EXPECTED = _expected()
# Logs explain gets wrong today, each with why (SOURCES.md's notes); strict: a fix must remove the entry.
KNOWN_MISSES = {"pytorch_15950_daemonic.log": "a bare CPython assertion, printed by any daemonic process: without a "
                                              "DataLoader context it is no evidence of one"}


def test_every_public_log_has_a_row_and_the_set_is_large_enough():
    logs = {p.name for p in PUBLIC.glob("*.log")}
    assert logs == set(EXPECTED), logs ^ set(EXPECTED)
    assert sum(1 for e in EXPECTED.values() if e) >= 15 and sum(1 for e in EXPECTED.values() if not e) >= 4


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_MISSES[n], strict=True))
                                  if n in KNOWN_MISSES else n for n in sorted(EXPECTED)])
def test_explain_names_exactly_the_expected_scenarios(name):
    text = (PUBLIC / name).read_text(encoding="utf-8")
    findings = explain_text(text)
    assert {f.scenario for f in findings} == EXPECTED[name], [(f.scenario, f.check, f.evidence) for f in findings]

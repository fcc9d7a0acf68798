"""`explain` on logs users posted in public issue threads (tests/logs/public/SOURCES.md names each
thread), labelled by the lesson that fixes the user's problem: each names exactly that scenario at
*certain* or *likely*; a log no lesson of the clinic fixes (CUDA OOM in the model, a KeyError in the
loop, a healthy bar) gets no *certain* or *likely* finding; a log whose text cannot decide (`NN?`)
gets only *possible* ones, which ask the question that decides."""
import importlib.util
import json
import pathlib
import re

import pytest

from scenarios.clinic.doctor.explain import FIRM, explain_text

PUBLIC = pathlib.Path(__file__).parent / "logs" / "public"
_SPEC = importlib.util.spec_from_file_location("rates", PUBLIC.parent / "rates.py")
rates = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(rates)
ROW = re.compile(r"^\| (\S+\.log) \| [^|]+ \| \S+ \| (none|\d\d\??(?:, \d\d)*) \|$")


def _expected() -> dict[str, set[str]]:
    rows = [ROW.match(line) for line in (PUBLIC / "SOURCES.md").read_text(encoding="utf-8").splitlines()]
    return {m.group(1): (set() if m.group(2) == "none" else set(m.group(2).split(", "))) for m in rows if m}


EXPECTED = _expected()
# Logs explain gets wrong today, each with why (SOURCES.md's notes); strict: a fix must remove the entry.
_NO_CONTEXT = "a generic message with no DataLoader frame, wrapper or worker in the paste: any process prints it"
_CUT = "the paste stops at reduction.dump, before the exception that says what did not pickle (09, 11 or 18)"
KNOWN_MISSES = {"detectron2_3900_openblas_threads.log": _NO_CONTEXT + " (OpenBLAS failing to start its threads)",
                "distill_and_select_11_btree_init.log": _NO_CONTEXT + " (h5py; a damaged file prints the same)",
                "pathml_255_symbol_table.log": _NO_CONTEXT + " (h5py; a damaged file prints the same)",
                "elektronn3_12_btree_quoted.log": _NO_CONTEXT + " (h5py's read error, the quote cut above its loader)",
                "pytorch_20260_cuda_init_bare.log": _NO_CONTEXT + " (CUDA's initialization error: a driver that "
                                                    "cannot start prints it too)",
                "masktextspotterv3_51_errno24_bare.log": _NO_CONTEXT + " (Errno 24: files a script leaves open too)",
                "super_selfish_2_stack_gray_rgb_bare.log": _NO_CONTEXT + " (torch.stack; without workers the same)",
                "pytorch_31465_spawn_child_cut_windows.log": "the paste stops before the child's exception",
                "torchmd_net_323_pin_thread_persistent_workers.log": "27 named; the other error is a setup check that "
                                                                     "names its own fix, labelled 14",
                "pytorch_1838_opencv_hang_ctrl_c_py27.log": "a Ctrl-C while waiting for a batch: a slow healthy "
                                                            "loader shows the same",
                "low_rank_fusion_15_cant_pickle_cut_windows.log": _CUT,
                "pytorch_geometric_366_cant_pickle_quoted_windows.log": _CUT,
                "pytorch_48370_pin_loop_valueerror_windows.log": "the pin memory thread's own traceback, without the "
                                                                 "line the training process prints"}


def test_every_public_log_has_a_row_and_the_set_is_large_enough():
    logs = {p.name for p in PUBLIC.glob("*.log")}
    assert logs == set(EXPECTED), logs ^ set(EXPECTED)
    assert len(EXPECTED) >= 100 and sum(1 for e in EXPECTED.values() if not e) >= 20  # issue 27's floor


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_MISSES[n], strict=True))
                                  if n in KNOWN_MISSES else n for n in sorted(EXPECTED)])
def test_explain_names_exactly_the_expected_scenarios(name):
    text = (PUBLIC / name).read_text(encoding="utf-8")
    findings = explain_text(text)
    shown = [(f.level, f.scenario, f.check, f.evidence) for f in findings]
    firm = {f.scenario for f in findings if f.level in FIRM}
    if any(label.endswith("?") for label in EXPECTED[name]):   # the text cannot decide: explain asks
        assert findings and not firm and all("?" in f.evidence for f in findings), shown
    else:
        assert firm == EXPECTED[name], shown


def test_the_stored_rates_are_what_rates_py_measures_now():
    # tests/logs/RATES.json holds the figures the front page shows (`python -m scenarios tables` renders them,
    # `tables --check` holds the page to the file); here the file is held to what rates.py measures today.
    stored = json.loads(rates.STORED.read_text(encoding="utf-8"))
    assert list(stored["sets"]) == list(rates.SETS)
    assert {name: s["measured"] for name, s in stored["sets"].items()} == \
        {name: rates.figures(rates.LOGS / name) for name in rates.SETS}, "run `python tests/logs/rates.py --store`"
    for name, kept in stored["sets"].items():   # history: what was measured before any change made for a set
        assert set(kept) <= {"measured", "first_measured"}
        assert "first_measured" not in kept or kept["first_measured"]["note"], name

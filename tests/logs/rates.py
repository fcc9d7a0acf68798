"""`explain` measured on every labelled log set: of the logs with an error text, how many it
names right first at *certain* or *likely*; of the clean logs, how many get a *certain* or
*likely* finding (each a false alarm).  A label is the lesson that fixes the user's problem;
`cuda` stands for any GPU scenario (25, 26, 27); `NN?` marks a log whose text cannot decide
(the thread found NN; the right answer is a *possible* finding that asks the deciding question).
A folder's ACCEPT.json may list printed-output logs (no error text: "printed") and other answers a reader
of the text alone may rightly give ("accept"); a printed log is right where its first finding, *likely* or
*possible*, names its label or an accepted answer.  An undecidable log that gets no question counts among the
error logs, as wrong.

    python tests/logs/rates.py [SET ...]      # sets: public, held-out, or a folder with EXPECT.json
    python tests/logs/rates.py --store        # measure every set of SETS into RATES.json

RATES.json holds each set's figures as `figures` counts them ("measured", rewritten by --store) and, for a
set gathered after the rules it tests, what was measured before any change made for it ("first_measured":
history, written once by hand from the set's notes; --store keeps it as it is).  `python -m scenarios
tables` renders the front page's explain rates from it, and tests/test_explain_public_logs.py holds it to
what this file measures now.
"""
import json
import pathlib
import re
import sys

LOGS = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(LOGS.parents[1]))

from scenarios.clinic.doctor.explain import explain_text  # noqa: E402  (after sys.path names the repository)

ROW = re.compile(r"^\| (\S+\.(?:log|txt)) \| [^|]+ \| \S+ \| ([^|]+?) \|")
FIRM = ("certain", "likely", "risk")
GPU = {"25", "26", "27"}
SETS = ("public", "held-out", "held-out-36", "held-out-48", "held-out-50", "shared-a", "shared-b")
STORED = LOGS / "RATES.json"
ABOUT = ("Written by `python tests/logs/rates.py --store`: each set's figures as rates.py counts them now "
         "(measured) and, for a set gathered after the rules it tests, before any change made for it "
         "(first_measured: history, kept by --store as it is). Rendered into README.md by `python -m scenarios "
         "tables`.")


def labels(folder: pathlib.Path) -> dict[str, set[str]]:
    """{file: labels} from the folder's EXPECT.json, else its SOURCES.md table's last column."""
    if (folder / "EXPECT.json").exists():
        return {k: set(v) for k, v in json.loads((folder / "EXPECT.json").read_text()).items()}
    rows = [ROW.match(line) for line in (folder / "SOURCES.md").read_text(encoding="utf-8").splitlines()]
    return {m[1]: set() if m[2] == "none" else set(m[2].split(", ")) for m in rows if m}


def right(scenario: str, wanted: set[str]) -> bool:
    return scenario in wanted or ("cuda" in wanted and scenario in GPU)


def accepted(folder: pathlib.Path) -> tuple[set[str], dict[str, list[set[str]]]]:
    """(printed-output logs, {file: other right answers}) from the folder's ACCEPT.json, where it has one."""
    path = folder / "ACCEPT.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    # an answer is a list of scenarios, or one scenario written as a string ("07", not the set {"0", "7"})
    return set(data.get("printed", ())), {k: [{a} if isinstance(a, str) else set(a) for a in v]
                                          for k, v in data.get("accept", {}).items()}


def judge_printed(text: str, answers: list[set[str]]) -> str:
    """'printed right' where the first finding (any level but a firm false alarm) names a right answer; for a
    healthy run's output (labelled none), where no certain or likely finding names what is not accepted."""
    findings = [f for f in explain_text(text) if f.level in ("likely", "possible")]
    if not answers[0]:   # a healthy run's printed output: right unless a firm finding names what no one accepts
        firm = [f for f in explain_text(text) if f.level in FIRM]
        return "printed wrong" if firm and not any(right(firm[0].scenario, a) for a in answers[1:]) \
            else "printed right"
    if not findings:
        return "printed silent"
    # a label NN? (the text cannot decide; the thread found NN) is right where a printed log's finding, never
    # firmer than likely, names NN
    answers = [{label.rstrip("?") for label in a} for a in answers]
    return "printed right" if any(right(findings[0].scenario, a) for a in answers) else "printed wrong"


def judge(text: str, wanted: set[str]) -> str:
    """'right', 'wrong', 'silent' (an error log), 'clean' or 'false' (a clean log), 'asks' ('?')."""
    findings = explain_text(text)
    firm = [f for f in findings if f.level in FIRM]
    if not wanted:
        return "false" if firm else "clean"
    if any(w.endswith("?") for w in wanted):
        return "asks" if findings and not firm else "wrong"
    if not firm:
        return "silent"
    return "right" if right(firm[0].scenario, wanted) else "wrong"


def measure(folder: pathlib.Path, show: bool) -> dict:
    counts, (printed, accept) = {}, accepted(folder)
    for name, wanted in sorted(labels(folder).items()):
        text = (folder / name).read_text(encoding="utf-8", errors="replace")
        verdict = judge_printed(text, [wanted] + accept.get(name, [])) if name in printed else judge(text, wanted)
        counts[verdict] = counts.get(verdict, 0) + 1
        if show and verdict not in ("right", "clean", "asks", "printed right"):
            print(f"  {verdict:6} {name} (label {', '.join(sorted(wanted)) or 'none'})")
    return counts


def figures(folder: pathlib.Path, show: bool = False) -> dict[str, int]:
    """The set's figures, as RATES.json stores them."""
    c, (printed, _), wanted = measure(folder, show), accepted(folder), labels(folder)
    undecidable = [n for n, w in wanted.items() if n not in printed and any(label.endswith("?") for label in w)]
    return {"logs": len(wanted), "error_logs": c.get("right", 0) + c.get("wrong", 0) + c.get("silent", 0),
            "right": c.get("right", 0), "wrong": c.get("wrong", 0), "silent": c.get("silent", 0),
            "clean_logs": c.get("clean", 0) + c.get("false", 0), "clean_named": c.get("false", 0),
            "undecidable": len(undecidable), "asked": c.get("asks", 0),
            "printed": sum(v for k, v in c.items() if k.startswith("printed")),
            "printed_right": c.get("printed right", 0)}


def line(name: str, f: dict[str, int]) -> str:
    return (f"{name}: error logs right first at certain/likely {f['right']} of {f['error_logs']} ({f['wrong']} wrong, "
            f"{f['silent']} silent); clean logs with a certain/likely finding {f['clean_named']} of {f['clean_logs']}; "
            f"undecidable logs asked {f['asked']}"
            + (f"; printed-output logs right at likely/possible {f['printed_right']} of {f['printed']}"
               if f["printed"] else ""))


def store(measured: dict[str, dict], path: pathlib.Path = STORED) -> None:
    """Rewrite the stored figures, keeping each set's first_measured (history) as it is."""
    old = json.loads(path.read_text(encoding="utf-8"))["sets"] if path.exists() else {}
    kept = {name: s["first_measured"] for name, s in old.items() if "first_measured" in s}
    sets = {name: {"measured": counted, **({"first_measured": kept[name]} if name in kept else {})}
            for name, counted in measured.items()}
    path.write_text(json.dumps({"about": ABOUT, "sets": sets}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(args: list[str]) -> int:
    show, keep = "-v" in args, "--store" in args
    sets = list(SETS) if keep else [a for a in args if a != "-v"] or ["public"]
    measured = {}
    for name in sets:
        folder = LOGS / name if (LOGS / name).is_dir() else pathlib.Path(name)
        measured[folder.name] = figures(folder, show)
        print(line(folder.name, measured[folder.name]))
    if keep:
        store(measured)
        print(f"stored in {STORED.relative_to(LOGS.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

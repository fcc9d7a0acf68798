"""The doctor measured on folders of loaders labelled in an EXPECT.json (file stem: the scenarios it must
name as risks; [] for a well-built loader): each loader examined once, as `doctor FILE.py:make_loader`
does, probe included.  Per folder: the faulty loaders whose scenario is named as a risk, the clean
ones with no risk, and every risk no label asks for (a false risk).

    python tests/loaders/rates.py FOLDER [FOLDER ...]     # e.g. tests/loaders/fresh-c
"""
import json
import pathlib
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]


def examine(path: pathlib.Path) -> tuple[list[str], list[str], float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "scenarios", "doctor", f"{path}:make_loader", "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    findings = json.loads(done.stdout)["findings"]
    risks = sorted({f["scenario"] for f in findings if f["level"] == "risk"})
    notes = sorted({f["scenario"] for f in findings if f["level"] == "note"})
    return risks, notes, time.perf_counter() - started


def main(folders: list[str]) -> int:
    for folder in map(pathlib.Path, folders):
        named = faulty = clean = quiet = false = 0
        for stem, labels in sorted(json.loads((folder / "EXPECT.json").read_text()).items()):
            stem = stem.removesuffix(".py")
            try:
                risks, notes, seconds = examine(folder / f"{stem}.py")
            except (json.JSONDecodeError, KeyError, subprocess.TimeoutExpired) as err:
                print(f"  {stem}: the doctor gave no findings ({type(err).__name__})")
                continue
            wrong = [risk for risk in risks if risk not in labels]
            faulty, clean = faulty + bool(labels), clean + (not labels)
            named += bool(labels) and any(label in risks for label in labels)
            quiet += not labels and not risks
            false += len(wrong)
            print(f"  {stem}: expected {labels}, risks {risks}, notes {notes}, {seconds:.1f} s"
                  + (f"; FALSE {wrong}" if wrong else ""), flush=True)
        print(f"{folder.name}: faulty named {named}/{faulty}, clean without a risk {quiet}/{clean}, "
              f"false risks {false}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

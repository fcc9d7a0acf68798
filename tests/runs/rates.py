"""How `doctor -- COMMAND` does on a folder of training scripts with an answer key, as users run them.

    python tests/runs/rates.py tests/runs/fresh [--seconds 90]

The folder's LABELS.md holds a table: file | command (from the repository root, `python` meaning this
interpreter) | label (the scenario whose lesson fixes the script, `none` for a healthy one) | … .  Each
command runs under the doctor, one after another; a faulty run is right when its label is named at
risk (other risks beside it are counted as such), a healthy run when nothing is named at risk.
Prints one line per script and the rates; exit status 0 (a measurement, not a check).
"""
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\|\s*`?([\w./-]+\.py)`?\s*\|\s*`([^`]+)`\s*\|\s*(\w+)\s*\|")


def rows(folder: Path) -> list[tuple[str, list[str], str]]:
    found = []
    for line in (folder / "LABELS.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            words = shlex.split(match.group(2))
            found.append((match.group(1), [sys.executable if words[0] == "python" else words[0], *words[1:]],
                          match.group(3)))
    return found


def judged(command: list[str], seconds: float) -> tuple[list[str], float]:
    done = subprocess.run([sys.executable, "-m", "scenarios", "doctor", "--json", "--seconds", str(seconds), "--",
                           *command], cwd=ROOT, capture_output=True, text=True, timeout=seconds + 240)
    report = json.loads(done.stdout) if done.stdout.strip() else {"findings": []}
    risks = sorted({f["scenario"] for f in report["findings"] if f["level"] == "risk"})
    took = re.search(r"after (\d+) s", report.get("run", ""))
    return risks, float(took.group(1)) if took else 0.0


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else ROOT / "tests" / "runs" / "fresh"
    seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 90.0
    faulty = healthy = faulty_right = healthy_right = extra = 0
    for name, command, label in rows(folder):
        risks, took = judged(command, seconds)
        if label == "none":
            healthy, healthy_right = healthy + 1, healthy_right + (not risks)
            verdict = "right" if not risks else "FALSE RISK"
        else:
            named = label.zfill(2) in risks
            faulty, faulty_right = faulty + 1, faulty_right + named
            extra += len(set(risks) - {label.zfill(2)})
            verdict = "right" if named else "missed"
        print(f"{name:<12} label {label:<5} risks {','.join(risks) or '-':<12} {verdict:<10} ({took:.0f} s)",
              flush=True)
    print(f"\nfaulty runs named at risk by their label: {faulty_right} of {faulty}; other risks beside them: {extra}")
    print(f"healthy runs with no risk: {healthy_right} of {healthy}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

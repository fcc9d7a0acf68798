"""Presentation: the live status line, the verdict a person reads, the summary of many
scenarios."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from scenarios.clinic.run import judge


class LiveStatus:
    """One status line, redrawn in place on a terminal, plain lines otherwise."""

    def __init__(self, label: str, stream):
        self.label, self.stream = label, stream
        self.tty = stream is not None and stream.isatty()
        self.last_plain = 0.0
        self.text = ""

    def update(self, elapsed: float, sample: dict) -> None:
        if self.stream is None:
            return
        workers = " ".join(f"{mb:.0f}" for mb in sample["workers"]) or "-"
        self.text = f"  [{self.label}] {elapsed:5.1f} s   main {sample['main']:6.0f} MB   workers {workers} MB"
        if self.tty:
            self.stream.write("\r\033[K" + self.text)
            self.stream.flush()
        elif elapsed - self.last_plain >= 2.0:
            self.last_plain = elapsed
            print(self.text, file=self.stream, flush=True)

    def echo(self, line: str) -> None:
        if self.stream is None:
            return
        if self.tty:
            self.stream.write("\r\033[K")
        print(f"  │ {line}", file=self.stream, flush=True)
        if self.tty and self.text:
            self.stream.write(self.text)
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _mark(name: str, ok: bool) -> str:
    if name.startswith("broken"):
        return "✔ reproduced" if ok else "✘ did NOT reproduce"
    if name.startswith("fixed"):
        return "✔ fixed" if ok else "✘ NOT fixed"
    return "✔ as declared" if ok else "✘ differs from its declaration"


def verdict(report: dict) -> str:
    """The short text a person reads at a glance."""
    declaration = f"scenarios/{report['slug']}/scenario.toml"
    rows = [f"Scenario {report['scenario']} · {report['title']}"
            f"   (torch {report['torch']}, Python {report['python']})"]
    for name, run in report["variants"].items():
        rows.append(f"  {name:<22} {run['outcome']:<10} {run['seconds']:6.1f} s   {_mark(name, run['as_expected'])}")
        if run["evidence"]:
            rows.append(f"      evidence: {run['evidence'][:160]}")
        figures = {k: v for k, v in run["metrics"].items() if k != "seconds"}
        if figures:
            rows.append("      figures:  " + ", ".join(f"{k}={v:g}" for k, v in figures.items()))
        for breach in run["breaches"]:
            rows.append(f"      differs from {declaration}: {judge.Breach.of(breach)}")
        for line in run.get("unjudged", []):
            rows.append(f"      {line}")
        if run["stacks"]:
            rows.append("      where it is stuck:")
            rows.extend("        " + line for line in run["stacks"].splitlines())
        if run["leaked_shm_files"]:
            rows.append(f"      removed leftover /dev/shm files: {', '.join(run['leaked_shm_files'])}")
        if run["surviving_processes"]:
            rows.append(f"      WARNING: {run['surviving_processes']} process(es) outlived SIGKILL")
    return "\n".join(rows)


def summary(reports: list[dict], not_run: dict[str, str]) -> str:
    """One line per scenario run, then those this machine could not run, with why."""
    rows = ["Summary"]
    for report in reports:
        marks = "  ".join(f"{name} {'✔' if run['as_expected'] else '✘'} {run['outcome']} {run['seconds']:.0f}s"
                          for name, run in report["variants"].items())
        rows.append(f"  {report['scenario']}  {report['title'][:60]:<60}  {marks}")
    for number, why in not_run.items():
        rows.append(f"  {number}  not run here: {why}")
    return "\n".join(rows)


def torch_version() -> str | None:
    try:
        return version("torch")
    except PackageNotFoundError:
        return None

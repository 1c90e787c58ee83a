"""Screenshots with headless Chromium (Debian's /usr/bin/chromium): the pages of the built site and
the two reports the docs show, each a committed run's report.html rendered again by ``rag-eval report``.

    python docs/tools/screenshot.py demo docs/assets/demo-report.png  # the demo's retrieval (home page)
    python docs/tools/screenshot.py report docs/assets/report.png     # a prompt comparison (the report page)
    python docs/tools/screenshot.py page site/index.html OUT.png      # one page of the built site

A run records the absolute paths of the machine it ran on (a temporary folder, another checkout);
the copy that is shot shows each as the path inside this repository where that file is, else as
its file name, and a shot whose page still shows an absolute path of the run is refused.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A small audit with two prompts and human labels, committed with the tests.
REPORT_RUN = ROOT / "tests" / "data" / "old_runs" / "compare-labelled"
# `rag-eval retrieval configs/demo.yaml`: the demo's config, its retrieval stage (no model needed).
DEMO_RUN = ROOT / "tests" / "data" / "old_runs" / "demo-retrieval"
# Each shot's height: the demo's ends below the retrievers' plot.
RUNS = {"report": (REPORT_RUN, 1100), "demo": (DEMO_RUN, 920)}
_ABSOLUTE = re.compile(r"(?<![\w.])/(?:tmp|work|home|root|Users|var|private)/[^\s<>\"']+")


def chromium() -> str | None:
    """The Chromium binary, or None where none is installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(args: list[str]) -> subprocess.CompletedProcess:
    binary = chromium()
    if binary is None:
        raise RuntimeError("no chromium: apt-get install -y chromium")
    base = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-dev-shm-usage"]
    return subprocess.run([*base, *args], capture_output=True, text=True, timeout=120)


def shoot(page: Path, out: Path, width: int = 1280, height: int = 900) -> Path:
    """A PNG of the page as Chromium renders it."""
    proc = _run([f"--window-size={width},{height}", f"--screenshot={out}", page.resolve().as_uri()])
    if not out.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {page}: {proc.stderr[-2000:]}")
    return out


def dom(page: Path) -> str:
    """The page's DOM after Chromium ran its scripts."""
    return _run(["--virtual-time-budget=3000", "--dump-dom", page.resolve().as_uri()]).stdout


def shown_path(path: str) -> str:
    """An absolute path a run recorded, as shown in a screenshot: the shortest tail of it that is a
    file of this repository (``data/python-docs/questions.jsonl``), else its file name."""
    parts = Path(path).parts[1:]
    for i in range(len(parts) - 1, -1, -1):
        tail = Path(*parts[i:])
        if (ROOT / tail).exists():
            return tail.as_posix()
    return Path(path).name


def _without_machine_paths(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_machine_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_machine_paths(v) for v in value]
    if isinstance(value, str) and _ABSOLUTE.fullmatch(value):
        return shown_path(value)
    return value


def render_report(run: Path, folder: Path) -> Path:
    """report.html of a copy of ``run`` in ``folder``, rendered again by ``rag-eval report``, with the
    run's absolute paths shown by :func:`shown_path`; an error if the page still shows one."""
    copy = folder / run.name
    shutil.copytree(run, copy)
    for name in ("report.json", "summary.json"):
        if (copy / name).is_file():
            data = json.loads((copy / name).read_text(encoding="utf-8"))
            (copy / name).write_text(json.dumps(_without_machine_paths(data), indent=1), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "rag_eval.cli", "-q", "report", str(copy)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    html = copy / "report.html"
    left = sorted(set(_ABSOLUTE.findall(html.read_text(encoding="utf-8"))))
    if left:
        raise RuntimeError(f"{html} still shows absolute paths of the run: {', '.join(left[:5])}")
    return html


def report_screenshot(out: Path, run: Path = REPORT_RUN, height: int = 1100) -> Path:
    """report.html of a committed run (the prompt comparison unless ``run`` is given), rendered
    again by :func:`render_report`, as a PNG 1280 pixels wide."""
    with tempfile.TemporaryDirectory() as tmp:
        return shoot(render_report(run, Path(tmp)), out, 1280, height)


if __name__ == "__main__":
    what, *rest = sys.argv[1:]
    if what in RUNS:
        print(report_screenshot(Path(rest[0]), *RUNS[what]))
    else:
        print(shoot(Path(rest[0]), Path(rest[1])))

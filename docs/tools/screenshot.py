"""Screenshots with headless Chromium (Debian's /usr/bin/chromium): the pages of the built site and
the report.html the docs show (docs/assets/report.png).

    python docs/tools/screenshot.py report docs/assets/report.png   # re-render a test run's report, shoot it
    python docs/tools/screenshot.py page site/index.html OUT.png     # one page of the built site
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A small audit with two prompts and human labels, committed with the tests.
REPORT_RUN = ROOT / "tests" / "data" / "old_runs" / "compare-labelled"


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


def report_screenshot(out: Path) -> Path:
    """report.html of the committed test run, rendered again by ``rag-eval report``, as a PNG."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / REPORT_RUN.name
        shutil.copytree(REPORT_RUN, run)
        subprocess.run(
            [sys.executable, "-m", "rag_eval.cli", "-q", "report", str(run)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        return shoot(run / "report.html", out, 1280, 1100)


if __name__ == "__main__":
    what, *rest = sys.argv[1:]
    if what == "report":
        print(report_screenshot(Path(rest[0])))
    else:
        print(shoot(Path(rest[0]), Path(rest[1])))

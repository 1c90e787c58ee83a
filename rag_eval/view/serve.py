"""Serving the view: on 127.0.0.1 unless ``--host`` names another address (then with a warning,
since anyone who reaches it can read the runs and write labels)."""

from __future__ import annotations

import importlib
import ipaddress
import socket
import sys
import threading
from pathlib import Path

import uvicorn

from rag_eval.errors import ConfigError, DataError, Problem
from rag_eval.view.app import create_app

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8321
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_port(host: str, port: int) -> None:
    """A ConfigError naming the option when the address cannot be listened on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host.strip("[]"), port))
        except OSError as exc:
            raise ConfigError(
                Problem(
                    f"--host {host} --port {port}",
                    f"cannot listen there ({exc.strerror or exc})",
                    "choose another port with --port N",
                )
            ) from None


def serve(runs_dir: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, adapt: bool = False) -> int:
    """Serve the view of ``runs_dir`` until interrupted."""
    if not runs_dir.is_dir():
        raise DataError(
            Problem(
                str(runs_dir),
                "the runs folder does not exist",
                "give the folder holding run folders (report.out of the config, e.g. runs/)",
            )
        )
    local = is_loopback(host)
    if not local:
        print(
            f"warning: serving on {host}, not 127.0.0.1: anyone who can reach this address can read every run in "
            f"{runs_dir} and write its labels files; there is no login",
            file=sys.stderr,
        )
    _check_port(host, port)
    app = create_app(
        runs_dir, allowed_hosts=[h.strip("[]") for h in LOOPBACK_NAMES] + [host] if local else None, adapt=adapt
    )
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    print(f"rag-eval view: {runs_dir.resolve()} at http://{shown}:{port}/ (Ctrl-C stops it)", flush=True)
    # The prediction-powered estimators' package takes seconds to import: not on the first label.
    threading.Thread(target=importlib.import_module, args=("ppi_py",), daemon=True).start()
    uvicorn.run(app, host=host.strip("[]"), port=port, log_level="warning")
    return 0

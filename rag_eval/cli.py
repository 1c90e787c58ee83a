"""The ``rag-eval`` command line. Exit status: 0 ok, 1 a gate failed, 2 bad config or data, 3 internal error.

Each command is a module of ``rag_eval.commands`` (its options beside its handler, the handler one
call of the Python API plus printing); this module assembles them and runs one."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback

from rag_eval import progress
from rag_eval.commands import (
    compare,
    diff,
    generate,
    history,
    judge_check,
    label,
    lint,
    prompts,
    report,
    retrieval,
    run,
    traces,
    validate,
    view,
)
from rag_eval.errors import RagEvalError
from rag_eval.offline import go_offline
from rag_eval.orchestration.pipeline import RunInterrupted
from rag_eval.version import __version__

# The commands in the order ``rag-eval --help`` lists them.
COMMANDS = (
    validate,
    run,
    compare,
    report,
    label,
    judge_check,
    generate,
    lint,
    retrieval,
    diff,
    history,
    traces,
    view,
    prompts,
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (the command-line reference of the docs is generated from it)."""
    parser = argparse.ArgumentParser(prog="rag-eval", description="Audit a RAG system stage by stage.")
    parser.add_argument("--version", action="version", version=f"rag-eval {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars or status lines")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    go_offline()
    args = build_parser().parse_args(argv)

    progress.set_enabled(not getattr(args, "quiet", False))
    # A polite kill ends like Ctrl-C: the local model server is stopped and records are kept.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # A shell without job control starts background commands with SIGINT ignored, and Python then
    # leaves it so: `kill -INT` would be lost. rag-eval stops on it as on Ctrl-C wherever it runs.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a reader gone away is found here, not at exit
        return code
    except RagEvalError as exc:
        print(f"rag-eval: {exc.render()}", file=sys.stderr)
        if (kept := getattr(exc, "run_dir", None)) is not None:
            go_on = f", or continue it with --resume {kept}" if args.command == "run" else ""
            print(
                f"rag-eval: the run stopped; its folder keeps what was written: {kept} (status.json: failed, with "
                f"the reason); fix the problem and run again{go_on}",
                file=sys.stderr,
            )
        return exc.exit_code
    except RunInterrupted as exc:
        how = (
            f"resume it with: rag-eval run {args.config} --resume {exc.run_dir}"
            if args.command == "run"
            else "run the command again: cached model calls are free"
        )
        print(f"rag-eval: interrupted; finished records are in {exc.run_dir}; {how}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        # A command that writes no run folder: one that calls a model (generate, judge-check) has
        # its calls in the response cache, so the same command again goes on from there.
        calls = args.command in ("generate", "judge-check")
        print(
            "rag-eval: interrupted"
            + (
                f"; the model calls made are in the response cache (unless --no-cache): run `rag-eval {args.command} "
                "...` again with the same arguments to go on from there"
                if calls
                else ""
            ),
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): no error of rag-eval's, but not a whole output either, so
        # the status a shell gives a process that SIGPIPE ended; nothing more is written to the pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except Exception:
        traceback.print_exc()
        print(
            "rag-eval: internal error (a bug in rag-eval): please report it with the traceback above", file=sys.stderr
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())

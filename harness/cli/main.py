"""The ``harness`` command line: the parser of every command, and the dispatch to each command's ``run``.

The command line's edge: the arguments and the user's environment (``harness.core.environment``, read once
here) become a run plan or a job's connection, and nothing below reads either again. Each command is a module
of this package (its arguments and its run); its parser's ``set_defaults(run=...)`` says which run.

Exit codes are ``harness.core.exit_codes.ExitCode`` (docs/cli.md): 0 success; 1 unexpected error; 2 bad input,
an old spelling (one line on stderr, no traceback); 3 a check, baseline, story or safety check failed; 4 a job
paused or failed (`harness jobs resume JOB`); 5 the run did not complete.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys

from harness.cli import (
    check,
    climb,
    explore,
    forecast,
    jobs,
    notebook,
    report,
    run,
    runs,
    scenarios,
    standin,
    story,
    suite,
    sweep,
    worker,
)
from harness.cli.old import old_command
from harness.cli.parser import OneLineParser
from harness.core.environment import UserEnvironment
from harness.core.errors import HarnessError
from harness.core.exit_codes import ExitCode

FS_REFUSALS = (errno.EROFS, errno.EACCES, errno.EPERM)  # a file-system refusal, not a bug: one line, exit 2

# in `harness --help`'s order: a run and its products, their reports, the history, the jobs, the machinery
COMMANDS = (run, climb, sweep, story, suite, explore, check, report, forecast, runs, notebook, scenarios, jobs,
            worker, standin)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="harness", description="Load-test swamp-style sync layers on DynamoDB and S3.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # name the command whose options these are not, so its --help is the one to read
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _refused_by_the_file_system(e: OSError) -> str:
    """A write the file system refused, as one line; any other OSError is a bug and goes on up (a traceback)."""
    if e.errno not in FS_REFUSALS or not e.filename:
        raise e
    return f"cannot write {e.filename}: {e.strerror}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    old = old_command(argv)
    if old:
        print(old, file=sys.stderr)
        return ExitCode.BAD_INPUT
    args = _parse(argv)
    try:
        return args.run(args, UserEnvironment.read())  # the user's environment, read once, here
    except HarnessError as e:
        print(f"harness: {e}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except BrokenPipeError:  # `harness scenarios | head`: the reader has what it wanted; no traceback, nothing lost
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit would raise too
        return ExitCode.OK
    except OSError as e:  # the file system refused a write (read-only, immutable, no permission): the user's to fix
        print(f"harness: {_refused_by_the_file_system(e)}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt as e:
        print(f"harness: interrupted ({getattr(e, 'name', 'SIGINT')})", file=sys.stderr)
        return 128 + int(getattr(e, "signum", signal.SIGINT))

"""What every command's parser shares: the one-line error, the duration types, the stand-in and baseline options,
and the action an old spelling answers with.

One module so a word means one thing on every command: ``--users`` is Locust's users, ``--run-dir`` the
directory a command writes, ``--baseline ... --threshold 10%`` a comparison, ``--dynamodb-stand-in`` and
``--s3-stand-in`` the embedded servers.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, NoReturn

from harness.core.durations import DurationArg
from harness.core.exit_codes import ExitCode

duration = DurationArg()  # every positive duration option: one type, one message ("must be positive")
duration_or_zero = DurationArg(zero_ok=True)  # a wait that 0 turns off

DYNAMODB_STAND_INS = "dynalite (default), dynalite-memory, moto, moto-indexed, dynamodb-local (AWS's DynamoDB " \
    "Local, on Java: `bash .ci/install dynamodb-local`)"


class OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line naming the problem and where the usage is, exit 2 (no usage block)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # "-5s" is a (negative) value, not an unknown option: no option of ours starts with a digit, so the
        # option's type says what is wrong with it ("must be positive") instead of "expected one argument"
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.BAD_INPUT, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


class OldSpelling(argparse.Action):
    """An option renamed by issue 53: one line naming the new spelling, exit 2, never a silent alias.

    Hidden from ``--help`` (the meta test that wants help on every option skips these by their class); the
    table of old and new spellings is docs/cli.md's.
    """

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kwargs: Any) -> None:
        kwargs.pop("help", None)
        super().__init__(option_strings, dest, nargs=kwargs.pop("nargs", "?"), help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> NoReturn:
        parser.exit(ExitCode.BAD_INPUT, f"{parser.prog}: {option_string} is now {self.new} (docs/cli.md: old "
                    "spellings)\n")


def old_option(p: argparse.ArgumentParser, flag: str, new: str) -> None:
    """``flag`` answers with one line naming ``new`` (the dest is private: nothing reads it)."""
    p.add_argument(flag, action=OldSpelling, new=new, dest=f"_old_{flag.strip('-').replace('-', '_')}")


def add_stand_in_arguments(p: Any, s3_default: str = "seaweedfs") -> None:
    """The embedded stand-ins, one option per service named alike (``--stand-in`` was DynamoDB's)."""
    p.add_argument("--dynamodb-stand-in", dest="stand_in", metavar="NAME", help="embedded DynamoDB stand-in when no "
                   f"endpoint is set: {DYNAMODB_STAND_INS}")
    p.add_argument("--s3-stand-in", choices=["seaweedfs", "moto"], help="embedded S3 stand-in when no endpoint is "
                   f"set: {s3_default} (default; moto with --dynamodb-stand-in moto|moto-indexed), moto")
    old_option(p, "--stand-in", "--dynamodb-stand-in")


def tolerance(text: str) -> float:
    """``--threshold``: a percentage below 100 (``10%`` or ``10``), as a fraction."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*", text)
    if not m or float(m.group(1)) >= 100:
        raise argparse.ArgumentTypeError(f"a tolerance is a percentage below 100, e.g. 10% (got {text!r})")
    return float(m.group(1)) / 100


def add_threshold_argument(g: Any) -> None:
    g.add_argument("--threshold", type=tolerance, default=0.10, metavar="PCT",
                   help="how much credibly worse than --baseline is tolerated, in percent (default 10%%)")

"""``harness-swamp``'s command line: swamp's, for the spec's loop (and ``init``, which swamp's repo setup is).

    harness-swamp init --plan PLAN.json [--namespace NS] [--holder NAME]
    harness-swamp model TYPE method run METHOD INSTANCE [--skip-checks] [--skip-reports] [--json]
    harness-swamp model delete INSTANCE --force [--json]
    harness-swamp data prune --force [--json]

Exit codes as swamp's with ``--json`` (``src/presentation/output/error_output.ts``): 0; 75 (EX_TEMPFAIL) for a
lock timeout; 1 for any other failure, ``{"error", "code"}`` on stderr; 2 for a command line it does not know.
Imports are deferred to what the command needs: every call is a new process, and its start is paid each time.
"""

from __future__ import annotations

import time

STARTED_NS = time.time_ns()  # as early as this process can tell: swamp.cli.bootstrap starts here

import json  # noqa: E402 - after the first clock reading
import sys  # noqa: E402

USAGE = ("usage: harness-swamp init --plan PLAN.json [--namespace NS] [--holder NAME] | model TYPE method run METHOD "
         "INSTANCE [--json] | model delete INSTANCE --force [--json] | data prune --force [--json]")
EXIT_TEMPFAIL = 75


def parse(argv: list[str]) -> dict:
    """The command as data, or ValueError naming what is wrong."""
    flags = {a for a in argv if a.startswith("--") and a not in ("--plan", "--namespace", "--holder")}
    words = [a for a in argv if not a.startswith("--")]
    if argv[:1] == ["init"]:
        opts, rest = {}, argv[1:]
        while rest:
            key = rest.pop(0)
            if key not in ("--plan", "--namespace", "--holder") or not rest:
                raise ValueError(f"init: unexpected {key!r}")
            opts[key[2:]] = rest.pop(0)
        if "plan" not in opts:
            raise ValueError("init needs --plan PLAN.json (the command driver's {plan})")
        return {"command": "init", **opts}
    known = {"--json", "--force", "--skip-checks", "--skip-reports"}
    if flags - known:
        raise ValueError(f"unknown option {sorted(flags - known)[0]}")
    js = "--json" in flags
    if len(words) == 6 and words[0] == "model" and words[2:4] == ["method", "run"]:
        return {"command": "run", "type": words[1], "method": words[4], "instance": words[5], "json": js}
    if len(words) == 3 and words[:2] == ["model", "delete"]:
        if "--force" not in flags:
            raise ValueError("model delete needs --force (nothing asks for confirmation here)")
        return {"command": "delete", "instance": words[2], "json": js}
    if words == ["data", "prune"]:
        if "--force" not in flags:
            raise ValueError("data prune needs --force (nothing asks for confirmation here)")
        return {"command": "prune", "json": js}
    raise ValueError(f"unknown command {' '.join(words) or '(none)'}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        cmd = parse(argv)
    except ValueError as e:
        print(f"harness-swamp: {e}\n{USAGE}", file=sys.stderr)
        return 2
    from harness.core.errors import HarnessError

    if cmd["command"] == "init":
        from harness.refcmd.repo import init

        try:
            init(cmd["plan"], cmd.get("namespace") or None, cmd.get("holder") or "harness-swamp")
        except HarnessError as e:
            print(f"harness-swamp: {e}", file=sys.stderr)
            return 2
        return 0
    from harness.refcmd.run import execute

    try:
        out = execute(cmd, STARTED_NS)
    except HarnessError as e:  # not a repository, a plan it cannot read: bad input
        print(f"harness-swamp: {e}", file=sys.stderr)
        return 2
    if out.error is not None:
        doc = {"error": str(out.error), "code": out.kind}
        print(json.dumps(doc) if cmd["json"] else f"harness-swamp: {out.kind}: {out.error}", file=sys.stderr)
        return EXIT_TEMPFAIL if out.kind == "lock_timeout" else 1
    if cmd["json"]:
        print(json.dumps(out.result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

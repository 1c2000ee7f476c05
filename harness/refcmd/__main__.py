"""``python -m harness.refcmd``: the same as ``harness-swamp``."""

from harness.refcmd.main import main

raise SystemExit(main())

"""``python -m harness.aws.front CONFIG.json``: the front's process (started by ``harness.aws.front.launch``)."""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import sys

from harness.aws.fidelity.model import FidelityModel
from harness.aws.front.config import FrontConfig
from harness.aws.front.server import Front

READY = "harness-front ready"


async def _main(cfg: FrontConfig) -> None:
    rng = random.Random(cfg.seed) if cfg.seed is not None else None
    front = Front(FidelityModel(cfg.fidelity, rng=rng), cfg.upstreams)
    port = await front.start(cfg.control_port)
    for user in cfg.users:
        await front.seat(user)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"{READY} control=http://127.0.0.1:{port}", flush=True)
    await stop.wait()
    await front.stop()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m harness.aws.front CONFIG.json", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(_main(FrontConfig.read(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

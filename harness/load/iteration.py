"""Where the model driver used to live: ``harness.drivers.model`` (kept so existing imports still work)."""

from harness.drivers.base import IterationOutcome
from harness.drivers.model import SwampWorker, classify, summarize

__all__ = ["IterationOutcome", "SwampWorker", "classify", "summarize"]

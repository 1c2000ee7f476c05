"""swamp's S3 sync-layer retry (``retryWithBackoff`` in the extension's cache sync): with the SDK at one attempt.

swamp sets the S3 SDK to ``maxAttempts: 1`` and retries at its own layer
instead: 3 tries in all, sleeping 500 ms x 3^n (n = 0, 1) with +-25 % jitter
between them, and only on what is transient (a throttle, a 5xx, a timeout,
a dropped connection; never a refused condition or a 404). Its lock's
requests go through no such wrapper, so they are never retried.
"""

from harness.datastore.backends.swamp_retry import TRIES, SwampRetry, delay_s

__all__ = ["TRIES", "SwampRetry", "delay_s"]  # S3 calls a throttle, a 5xx, a timeout or a dropped connection
# retryable (harness.aws_errors.is_transient, SwampRetry's default)

"""Endpoints resolved once, per service: a variable names it, the embedded stand-in serves it, or AWS (--aws).

For each service (DynamoDB, S3, CloudWatch), in this order:

1. ``--aws``: AWS itself (and no ``AWS_ENDPOINT_URL*`` variable may say otherwise);
2. ``AWS_ENDPOINT_URL_<SERVICE>``, else ``AWS_ENDPOINT_URL``: that URL;
3. otherwise, when the run needs the service (its backend's): the embedded
   stand-in;
4. otherwise the service is unused: no client is made for it and no server
   is started for it (a DynamoDB run starts no SeaweedFS), so nothing can be
   sent anywhere for it.

CloudWatch is never a run's backend, so the stand-in never serves it: it is
AWS's on ``--aws`` (what AWS measured, read after the load), the URL a
variable names (a moto server answers it), or unused.

Nothing reaches AWS without ``--aws``. Each service also says which
credentials sign its requests: the stand-in's fixed local keys for the
embedded stand-in (and for a loopback endpoint when no credentials are
configured), else boto3's own credential chain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from harness.aws.endpoints import endpoint_kind, is_loopback
from harness.core.errors import HarnessError

SERVICES = ("dynamodb", "s3", "cloudwatch")
EMBEDDED, AWS, OTHER, UNUSED = "embedded", "aws", "other", "unused"
DUMMY, CHAIN = "dummy", "chain"  # the stand-in's fixed local keys | boto3's credential chain


@dataclass(frozen=True)
class ServiceEndpoint:
    """Where one service's requests go, why, and what signs them."""

    url: str | None  # None: AWS itself (kind aws), a stand-in not started yet (embedded), or unused
    kind: str  # embedded | aws | other | unused
    source: str  # the variable that named it, "--aws", "stand-in" or "none"
    credentials: str = CHAIN  # dummy | chain

    @property
    def used(self) -> bool:
        return self.kind != UNUSED

    @property
    def where(self) -> str:
        return self.url or ("AWS" if self.kind == AWS else "the embedded stand-in" if self.kind == EMBEDDED
                            else "nowhere (unused)")


def variable_for(service: str, variables: Mapping[str, str]) -> tuple[str, str] | None:
    """(variable, URL) that names ``service``'s endpoint, the service's own variable first."""
    for var in (f"AWS_ENDPOINT_URL_{service.upper()}", "AWS_ENDPOINT_URL"):
        if variables.get(var):
            return var, variables[var]
    return None


def resolve(variables: Mapping[str, str], *, aws: bool, needed: Iterable[str]) -> dict[str, ServiceEndpoint]:
    """Every service's endpoint (see the module docstring); a one-line error when they cannot be resolved."""
    needed = set(needed)
    if aws:
        if variables:
            raise HarnessError(f"--aws and {', '.join(sorted(variables))} disagree: unset the variable or drop --aws")
        return {s: ServiceEndpoint(None, AWS, "--aws") for s in SERVICES}
    named = {s: variable_for(s, variables) for s in SERVICES}
    unnamed = sorted(s for s in needed if named[s] is None)
    out = {}
    for s in SERVICES:
        if named[s] is not None:
            var, url = named[s]
            out[s] = ServiceEndpoint(url, endpoint_kind(url), var)
        elif s in unnamed:
            out[s] = ServiceEndpoint(None, EMBEDDED, "stand-in", DUMMY)
        else:
            out[s] = ServiceEndpoint(None, UNUSED, "none")
    return out


def variables_for(services: Iterable[str]) -> str:
    """How to name these services' endpoints, for an error line."""
    return " / ".join(f"AWS_ENDPOINT_URL_{s.upper()}" for s in services) + " (or AWS_ENDPOINT_URL)"


def with_credentials(endpoints: dict[str, ServiceEndpoint], chain_found: bool) -> dict[str, ServiceEndpoint]:
    """Which credentials sign each service: the chain's when it has some, the local keys for loopback otherwise.

    The embedded stand-in always gets the local keys (never sign for it with real ones). An endpoint beyond
    this machine without credentials is a one-line error.
    """
    out = {}
    for s, e in endpoints.items():
        if e.kind in (EMBEDDED, UNUSED):
            out[s] = e
        elif chain_found:
            out[s] = replace(e, credentials=CHAIN)
        elif e.url and is_loopback(e.url):
            out[s] = replace(e, credentials=DUMMY)
        else:
            raise HarnessError(f"no AWS credentials found for {e.where}: set AWS_PROFILE or "
                               "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY")
    return out

"""Before the first iteration: can the plan's endpoint be reached, and does it take the credentials?

One quick call with no retries per service the run needs, so a dead endpoint
or refused credentials is one clear line, not a long hang or a traceback.
"""

from __future__ import annotations

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError

from harness.aws.clients import Sessions
from harness.config.endpoints import ServiceEndpoint
from harness.config.plan import Connection
from harness.core.errors import HarnessError

REFUSED = ("UnrecognizedClientException", "InvalidClientTokenId", "ExpiredToken", "ExpiredTokenException",
           "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "AccessDeniedException")


def check_reachable(connection: Connection, service: str, sessions: Sessions | None = None) -> None:
    """List one table (or the buckets) at ``service``'s endpoint; a one-line HarnessError if that fails."""
    e = connection.service(service)
    sessions = sessions or Sessions(connection.region)
    cfg = Config(connect_timeout=3, read_timeout=10, retries={"max_attempts": 1, "mode": "standard"},
                 ignore_configured_endpoint_urls=True)
    where = e.where
    try:
        client = sessions.get(e.credentials).client(service, endpoint_url=e.url, region_name=connection.region,
                                                    config=cfg)
        if service == "dynamodb":
            client.list_tables(Limit=1)
        else:
            client.list_buckets()
    except EndpointConnectionError:
        raise HarnessError(f"cannot reach {service} at {where}: {_what_to_check(e)}") from None
    except NoCredentialsError:
        raise HarnessError(f"no AWS credentials found for {where}: set AWS_PROFILE or AWS_ACCESS_KEY_ID") from None
    except ClientError as err:
        code = err.response.get("Error", {}).get("Code", "")
        if code in REFUSED:
            raise HarnessError(f"{service} at {where} refused the credentials ({code}): check them") from None
        raise HarnessError(f"{service} at {where} answered {code}: {err}") from None
    except BotoCoreError as err:
        raise HarnessError(f"cannot use {service} at {where}: {err}") from None


def _what_to_check(e: ServiceEndpoint) -> str:
    """What names this endpoint, so the line points at the variable (or option) to fix, not a neighbour's."""
    if e.source.startswith("AWS_ENDPOINT_URL"):
        return f"is the server running? check {e.source}"
    if e.source == "--aws":
        return "check the network and AWS_REGION (--aws)"
    return "the embedded stand-in did not answer; see its log in the run directory"

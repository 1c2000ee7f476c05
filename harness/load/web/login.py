"""A login page in front of Locust's web UI, for a UI published beyond this machine (compose, Kubernetes).

Locust 2.47's ``--web-login`` protects every route of its UI (and the
harness's own, wrapped with ``auth_required_if_enabled``) with Flask-Login,
and leaves checking the user to the locustfile. Here the one account comes
from the environment, so the password lives in a compose ``.env`` file or a
Kubernetes Secret, never in a manifest, on a command line or in the run plan:

- ``HARNESS_WEB_USERNAME`` (default ``harness``): read at the command line's
  edge into the plan;
- ``HARNESS_WEB_PASSWORD`` (required, at least ``MIN_PASSWORD`` characters):
  the plan names the variable, and the process that installs the login reads
  it there (``harness.core.environment.secret``).

Sessions are signed with a key made at start-up, so a restarted master asks
everyone to log in again. A failed login costs the caller a second.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from typing import Any

from harness.config.build import check_password
from harness.config.plan import WebPlan
from harness.core.environment import secret

__all__ = ["credentials", "install", "matches"]
FAILED_LOGIN_DELAY_S = 1.0
SUBMIT_PATH = "/harness/login"

log = logging.getLogger("harness")


def credentials(web: WebPlan) -> tuple[str, str]:
    """The account the UI accepts: the plan's user name, the password from the variable it names."""
    return web.username, check_password(secret(web.password_env))


def matches(given_user: str, given_password: str, username: str, password: str) -> bool:
    """Constant-time comparison of both fields (no early exit on the user name)."""
    user_ok = hmac.compare_digest(given_user.encode(), username.encode())
    password_ok = hmac.compare_digest(given_password.encode(), password.encode())
    return user_ok and password_ok


def install(environment: Any, web: WebPlan) -> None:
    """Give Locust's ``--web-login`` its user loader and a username/password form checked against the env."""
    import gevent
    from flask import redirect, request, session, url_for
    from flask_login import UserMixin, login_user

    username, password = credentials(web)
    web_ui = environment.web_ui
    app = web_ui.app
    app.config.update(SECRET_KEY=secrets.token_hex(32), SESSION_COOKIE_HTTPONLY=True,
                      SESSION_COOKIE_SAMESITE="Lax")

    class Account(UserMixin):
        def __init__(self, name: str) -> None:
            self.id = name

    def load(user_id: str) -> Account | None:
        return Account(user_id) if hmac.compare_digest(user_id.encode(), username.encode()) else None

    web_ui.login_manager.user_loader(load)
    base = getattr(environment.parsed_options, "web_base_path", "") or ""
    web_ui.auth_args = {"username_password_callback": base + SUBMIT_PATH}

    @app.route(base + SUBMIT_PATH, methods=["POST"])
    def submit() -> Any:
        given_user = request.form.get("username", "")
        if matches(given_user, request.form.get("password", ""), username, password):
            login_user(Account(username))
            return redirect(url_for("locust.index"))
        log.warning("harness: failed web login from %s", request.remote_addr)
        gevent.sleep(FAILED_LOGIN_DELAY_S)
        session["auth_error"] = "Invalid username or password"
        return redirect(url_for("locust.login"))

"""The Locust side: users (one driver each, drivers/), processes, the session, the web UI."""

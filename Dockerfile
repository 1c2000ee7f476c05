# The harness image: Locust master, Locust workers and (optionally) moto all run from it.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md locustfile.py ./
COPY harness ./harness
COPY reports ./reports
COPY scenarios ./scenarios
RUN pip install --no-cache-dir -e .
ENV HARNESS_SCENARIOS=/app/scenarios

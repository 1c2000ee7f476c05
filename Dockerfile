# The harness image: `harness run --master`, `harness worker` and `harness standin` all run from it
# (docker-compose.yml, deploy/k8s). The base is pinned to a Python patch release and a Debian release;
# move both on purpose (and re-run the tests), never by a rebuild.
FROM python:3.11.17-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib

WORKDIR /app
# constraints.tx[t] matches constraints.txt when the repository has one (the exact versions CI tested)
# and nothing otherwise; pyproject.toml keeps the COPY from matching nothing at all.
COPY pyproject.toml README.md constraints.tx[t] ./
COPY harness ./harness
COPY locustfile.py ./
RUN if [ -f constraints.txt ]; then pip install -c constraints.txt . ; else pip install . ; fi \
 && useradd --uid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin harness \
 && mkdir -p /app/runs \
 && chown harness:harness /app/runs

# Run directories (runs/<run id>) land here: a compose volume or a Kubernetes PersistentVolumeClaim.
VOLUME ["/app/runs"]
USER 10001:10001
EXPOSE 8089 5557
CMD ["harness", "--help"]

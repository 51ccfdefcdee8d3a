# syntax=docker/dockerfile:1
# Odradek images. `docker build --target broker .` gives the broker: `odradek serve` on 9092,
# data in the /var/lib/odradek volume. Target `spark` adds a Java runtime, PySpark and the
# examples, for the Spark job and the example producer of docker-compose.yml.

# The wheel, with the optional compiled accelerator (protocol/_fast_fetch.c) built by a compiler
# that stays in this stage.
FROM python:3.11-slim-bookworm AS wheel

RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY protocol ./protocol
COPY storage ./storage
COPY coordination ./coordination
COPY broker ./broker
COPY spark_connector ./spark_connector
COPY cli ./cli
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .


FROM python:3.11-slim-bookworm AS broker

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/odradek
COPY --from=wheel /wheels /wheels
RUN pip install /wheels/odradek-*.whl \
    && python -c "import protocol._fast_fetch, protocol._record_check"

RUN useradd --system --uid 1000 --home-dir /var/lib/odradek --shell /usr/sbin/nologin odradek \
    && mkdir -p /var/lib/odradek \
    && chown odradek:odradek /var/lib/odradek
USER odradek
VOLUME ["/var/lib/odradek"]
EXPOSE 9092 9404
# /ready on the metrics port: 200 once the logs are loaded and the broker is registered
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=12 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://localhost:9404/ready', timeout=2)"]
CMD ["odradek", "serve", \
     "--override", "listeners=PLAINTEXT://0.0.0.0:9092", \
     "--override", "advertised.listeners=PLAINTEXT://localhost:9092", \
     "--override", "log.dir=/var/lib/odradek", \
     "--override", "metrics.port=9404", \
     "--override", "metrics.host=0.0.0.0"]


FROM broker AS spark

USER root
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
RUN pip install "$(echo /wheels/odradek-*.whl)[spark]"
COPY examples ./examples
RUN mkdir -p /var/lib/spark && chown odradek:odradek /var/lib/spark
ENV PYSPARK_PYTHON=python \
    PYSPARK_DRIVER_PYTHON=python
USER odradek
CMD ["python", "examples/pageviews/job.py"]

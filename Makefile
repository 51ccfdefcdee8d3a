# Odradek: the habits of the project. Every target does its own set-up and is idempotent.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin

.PHONY: serve test check fmt bench fuzz venv dev-env system-deps js-clients reference-kafka clean bytecode

# A virtualenv with the runtime dependencies, re-installed when pyproject.toml changes or the
# optional compiled accelerator's source does (pip builds it where a C compiler is available).
$(VENV)/.runtime: pyproject.toml setup.py protocol/_fast_fetch.c protocol/_record_check.c
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "Python >= 3.11 is required (found $$($(PYTHON) --version))"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

# Everything the tests, checks and benchmarks need (clients, Spark, linters).
$(VENV)/.dev: $(VENV)/.runtime
	$(PY) -m pip install -q -e '.[dev,spark]'
	touch $@

venv: $(VENV)/.runtime
dev-env: $(VENV)/.dev

# The project's own modules compiled to bytecode (pip compiles what it installs, but not an
# editable install's sources). Where PYTHONDONTWRITEBYTECODE is set, as on CI, Python would
# otherwise compile them again in every process: half of a broker's 1.2 s start, paid by
# every broker, CLI and client process the suite starts. A stale file is ignored (its source
# is newer), so this runs before every suite and benchmark; up-to-date files are skipped.
BYTECODE_DIRS := broker cli coordination protocol spark_connector storage bench tests
bytecode: $(VENV)/.runtime
	$(PY) -m compileall -q -j 0 $(BYTECODE_DIRS) > /dev/null

# Debian packages the integration tests use: kcat, ZooKeeper (brings a JRE).
system-deps:
	@scripts/install-system-deps.sh

# KafkaJS and its codec plugins for tests/integration/test_other_clients.py (npm ci; again when the
# lock file changes). Needs npm, which system-deps installs.
JS_CLIENTS := tests/clients/js
$(JS_CLIENTS)/node_modules/.package-lock.json: $(JS_CLIENTS)/package-lock.json | system-deps
	cd $(JS_CLIENTS) && npm ci --no-audit --no-fund --loglevel=error
js-clients: $(JS_CLIENTS)/node_modules/.package-lock.json

# Apache Kafka itself, the reference (issue 15): its broker, tools and Java client of the releases in
# tests/reference/versions.mk, copied from Maven Central into tests/reference/.cache/<version>/ once
# (the cache is git-ignored; re-runs need no network). Needs mvn and a JDK, which system-deps installs.
include tests/reference/versions.mk
REFERENCE_CACHE := tests/reference/.cache
$(REFERENCE_CACHE)/$(KAFKA_ZK_VERSION)/.complete: tests/reference/pom.xml tests/reference/versions.mk | system-deps
	scripts/fetch-kafka.sh $(KAFKA_ZK_VERSION) 3
$(REFERENCE_CACHE)/$(KAFKA_KRAFT_VERSION)/.complete: tests/reference/pom.xml tests/reference/versions.mk | system-deps
	scripts/fetch-kafka.sh $(KAFKA_KRAFT_VERSION) 4
reference-kafka: $(REFERENCE_CACHE)/$(KAFKA_ZK_VERSION)/.complete $(REFERENCE_CACHE)/$(KAFKA_KRAFT_VERSION)/.complete

serve: $(VENV)/.runtime bytecode
	$(BIN)/odradek serve

# The suite on PYTEST_WORKERS pytest-xdist workers (0: in this process), spread as
# tests/conftest.py groups it: a test file per unit, Kafka's and Spark's tests on one worker
# each, the cluster tests one at a time. The 30 slowest tests are listed at the end (the suite
# must stay under 30 minutes on CI's machine).
PYTEST_WORKERS ?= 2
test: $(VENV)/.dev system-deps js-clients reference-kafka bytecode
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=30 $(PYTEST_ARGS)

check: $(VENV)/.dev
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(PY) scripts/gen_message_stubs.py --check
	$(BIN)/mypy protocol storage coordination broker spark_connector cli
	$(BIN)/lint-imports

fmt: $(VENV)/.dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

$(VENV)/.bench: $(VENV)/.dev
	$(PY) -m pip install -q -e '.[dev,spark,bench]'
	touch $@

bench: $(VENV)/.bench system-deps reference-kafka bytecode
	$(PY) -m bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build *.egg-info protocol/*.so

# A long fuzz run against a fresh broker (FRAMES frames, a new seed each run; the suite runs
# 50,000 with a fixed seed). Prints the counts and every problem, and fails on a hang, an
# unanswered frame, a failed connect, a traceback in the broker's log or a dead broker.
FRAMES ?= 1000000
fuzz: $(VENV)/.dev
	$(PY) -m tests.support.fuzzing --frames $(FRAMES)

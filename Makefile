# The two commands of the README: `make demo` and `make test`. Each sets up what it needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-dev
# The demo installs the embedded broker's extra only: no PySpark, pyarrow or test tools.
DEMO_STAMP := $(VENV)/.installed-broker
# What setup.py compiles with mypyc: changing one rebuilds (until then it runs as Python, slower).
COMPILED := $(shell sed -n '/^COMPILED = \[/,/^\]/p' setup.py | grep -o 'streamjoin/[a-z_/]*\.py')

.PHONY: demo demo-shop test lint format bench clean kafka-jars spark-kafka-jars kafka-streams-jars kafka-streams-app docker-e2e

# .venv/.installed-<extra>: streamjoin installed (editable) with that extra.
$(VENV)/.installed-%: pyproject.toml setup.py constraints.txt $(COMPILED)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "streamjoin needs Python 3.11 or newer (found: $$($(PYTHON) --version))"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[$*]'
	@touch $@

demo: $(DEMO_STAMP)
	$(BIN)/python apps/ads/demo.py

demo-shop: $(DEMO_STAMP)
	$(BIN)/python apps/shop/demo.py

# Apache Kafka's jars (the release pinned in streamjoin/broker/maven/pom.xml), fetched once by Maven
# into ~/.cache/streamjoin/; says in one line what to install when Java or Maven is missing.
kafka-jars: $(STAMP)
	@$(BIN)/python -c 'from streamjoin.broker.kafka_jars import main; main()'

# Spark's Kafka connector for the installed PySpark (streamjoin/spark/maven/pom.xml), fetched once
# by Maven into ~/.cache/streamjoin/ for `streamjoin spark-stream --kafka-source kafka`.
spark-kafka-jars: $(STAMP)
	@$(BIN)/python -c 'from streamjoin.spark.connector import main; main()'

# Kafka Streams and its TopologyTestDriver (tests/differential/maven/pom.xml, the same release),
# fetched once by Maven into ~/.cache/streamjoin/ for the differential join tests.
kafka-streams-jars: $(STAMP)
	@$(BIN)/python tests/differential/diff_kafka_streams.py

# The Kafka Streams side of bench/vs_kafka_streams.py, built by Maven (bench/java/pom.xml) into
# ~/.cache/streamjoin/ads-join-streams-VERSION/; Maven fetches its plugins once.
kafka-streams-app: $(STAMP) kafka-jars
	@$(BIN)/python bench/kafka_streams_app.py

# Two pytest-xdist workers (CI has 2 cores): while one waits on brokers, workers and rebalances,
# the other computes. Each takes a whole module at a time, the slow modules first (tests/conftest.py).
# `make test PYTEST_WORKERS=0` runs the suite in one process.
PYTEST_WORKERS ?= 2

test: $(STAMP) kafka-jars spark-kafka-jars kafka-streams-jars
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# docs/docker.md's commands, run for real (docker/e2e.py): a container engine started where one
# can be (Debian's docker.io with Compose v2), local stand-ins for the two base images where no
# image registry is reachable; the last line is the demo's `joined: expected=E present=P ...`.
docker-e2e: $(STAMP) kafka-jars
	$(BIN)/python docker/e2e.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache .grimp_cache .hypothesis build streamjoin/_compiled.json
	find . -path ./.venv -prune -o -name '*.so' -print -delete

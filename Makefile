# The README's commands. `make test` installs what the tests need on Debian/Ubuntu by itself.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: run test test-engine lint fmt deps-engine bench

run: deps-engine
	$(CARGO) run --quiet --bin ratelockr -- --embedded simulate --compare --requests 2000 --rps 400 --servers 4

test: deps-engine test-engine

test-engine:
	$(CARGO) test --workspace --all-targets

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

deps-engine:
	@scripts/deps.sh engine

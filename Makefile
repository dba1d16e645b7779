# Run `make` or `make help` for the list. Generated files (views/*_templ.go,
# static/css/app.css) are committed, so `go build` works without Node or templ.

GO       ?= go
BIN      := bin/clusterdeck
TAILWIND := node_modules/.bin/tailwindcss
PGURL    ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable
ADDR     ?= 127.0.0.1:8080

.DEFAULT_GOAL := help
.PHONY: help run walk build generate css templ apiclient check-generated lint test test-go test-pg abuse bench load clean

help: ## List targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -v pgurl='$(PGURL)' 'BEGIN {FS = ":.*## "}; \
		{ d = $$2; i = index(d, "$$(PGURL)"); if (i) d = substr(d, 1, i - 1) pgurl substr(d, i + 8); printf "  %-16s %s\n", $$1, d }'

build: ## Build bin/clusterdeck (no Node needed)
	@test -e $(BIN) || echo "Compiling bin/clusterdeck: the first build compiles every dependency and can take a few minutes (later builds take seconds)."
	CGO_ENABLED=0 $(GO) build -o $(BIN) .

run: build ## Serve with the demo log-in printed once listening (another port: ADDR=127.0.0.1:9090 make run)
	./$(BIN) serve --demo

walk: ## Move the fake clock one minute every two seconds, 30 times (a server started with CLUSTERDECK_FAKE_CLOCK=1 make run)
	@for i in $$(seq 30); do curl -fsS -X POST http://$(ADDR)/dev/clock -d minutes=1 >/dev/null || exit 1; printf '.'; sleep 2; done; echo " 30 minutes later"

generate: templ css apiclient ## Regenerate views/*_templ.go, static/css/app.css and the generated Go API client

apiclient: ## Regenerate internal/apiclient from static/openapi.json (oapi-codegen, go.mod's tool directive)
	$(GO) generate ./internal/apiclient/

templ: ## Regenerate views/*_templ.go
	$(GO) tool templ generate

$(TAILWIND): package.json
	npm install --no-audit --no-fund
	@touch $(TAILWIND)

css: $(TAILWIND) ## Build static/css/app.css from tailwind.config.js
	$(TAILWIND) -c tailwind.config.js -i static/css/input.css -o static/css/app.css --minify

check-generated: generate ## Fail if committed generated files are stale
	@git diff --exit-code --stat -- views static/css/app.css internal/apiclient || \
		(echo "generated files are stale: run 'make generate' and commit" >&2; exit 1)

lint: ## gofmt, go vet, templ fmt, go mod tidy
	@$(GO) mod tidy -diff >/dev/null || (echo "go.mod or go.sum is not tidy: run 'go mod tidy' and commit" >&2; exit 1)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed" >&2; exit 1)
	$(GO) vet ./...
	$(GO) tool templ fmt -fail views

test: check-generated lint test-go ## Every test, the abuse suite's included (PostgreSQL too when TEST_DATABASE_URL is set; about 16 minutes on 2 cores, it prints how long go test ran)

# testreport prints what go test prints, then one line counting skipped tests
# (no TEST_DATABASE_URL, no Chromium) and why.
#
# Every package of ours and every Go library runs under the race detector,
# except the SQLite engine: modernc.org/... is SQLite's C translated to Go, and
# instrumenting it made each SQL statement cost about 2.5 times the CPU
# (a C SQLite under cgo is never instrumented either). Races in our use of the
# database (connections, sessions, gorm, the driver) are still caught.
RACE := -race -gcflags=modernc.org/...=-race=false

# The test binaries are linked without DWARF (-w: a third less link time for
# each of the package test binaries); panics and race reports still name
# every function and line.
#
# The longest packages are named first: go test starts packages in the order
# given (two at a time on two cores), so they start at once and the short
# ones fill in beside them instead of the longest starting last.
SLOWEST := ./web/ ./jobs/ . ./models/ ./internal/mcpserver/

# -parallel 4: up to four parallel tests of a package at once (the default is
# one per core). The tests marked parallel mostly wait on servers, browsers
# and databases of their own; the smoke tests of the root package take half
# the time with four.
#
# GOGC=400: the test binaries collect garbage a quarter as often (the race
# detector makes every allocation dear); they use more memory, of which the
# machine has plenty, and a selection of the jobs tests took 23 % less CPU.
test-go:
	GOGC=400 $(GO) run ./internal/testreport $(RACE) -ldflags=-w -count=1 -parallel 4 -timeout 20m $(SLOWEST) ./...

test-pg: ## Every test with PostgreSQL at $(PGURL)
	TEST_DATABASE_URL='$(PGURL)' $(MAKE) test

# The abuse suite (X19): each tenant bound's test is named TestAbuse…, in
# these packages; they are ordinary tests, so `make test` runs them too.
ABUSE := . ./models/ ./models/publicip/ ./web/ ./jobs/ ./internal/cli/

abuse: ## Only the abuse suite, the TestAbuse… tests of every tenant bound (README, Security); PostgreSQL too when TEST_DATABASE_URL is set
	$(GO) test $(RACE) -count=1 -run 'TestAbuse' $(ABUSE)

bench: ## Benchmarks: the offers page at 2,000 offers (server time, bytes allocated, SQL statements per request); one billing pass and one health pass over 10,000 clusters × 8 machines, GPU telemetry's storage per machine-day and heartbeat cost at 1,000 machines, a webhook outbox drain of 10,000 deliveries, on PostgreSQL at $(PGURL); each benchmark has its own count, so it ends in minutes
	TEST_DATABASE_URL='$(PGURL)' $(GO) test -run '^$$' -bench BenchmarkOffersPage -benchmem -benchtime=500x -count=3 ./web/
	TEST_DATABASE_URL='$(PGURL)' $(GO) test -run '^$$' -bench BenchmarkAgentBinaryDownload -benchmem -benchtime=20x ./web/
	TEST_DATABASE_URL='$(PGURL)' $(GO) test -run '^$$' -bench BenchmarkWebhookDrain -benchtime=1x ./web/
	TEST_DATABASE_URL='$(PGURL)' $(GO) test -run '^$$' -bench . -benchmem ./models/
	TEST_DATABASE_URL='$(PGURL)' $(GO) test -run '^$$' -bench BenchmarkHealthPass -benchtime 3x ./jobs/

load: ## Load test on loopback: the offers page beside a bare handler, 32 clients; then one tenant's flood beside another, failing over 2× its p99 (stops by itself, about a minute)
	$(GO) run ./internal/loadtest -clients 32 -duration 3s -timeout 5m

clean: ## Remove build output
	rm -rf bin

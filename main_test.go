package main

import (
	"go/build"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/clusterdeck/clusterdeck/"

// TestImportRules keeps the dependency arrows pointing one way (DESIGN.md):
// models and providers import nothing of ours, web never imports jobs or a
// provider, views only the vocabulary (models/domain), never the store. The wire types (api, api/agentapi) import
// nothing of ours, so server and clients share them: the Go client only api,
// the CLI only the client and api, the agent only agentapi; models never
// sees them. The MCP tools speak the API through the client too;
// web mounts them at /mcp over its own router (API5). A package missing here fails the test, so a new
// package must declare what it may import.
func TestImportRules(t *testing.T) {
	allowed := map[string][]string{
		"models":                   {"models/domain", "models/nodespec", "models/publicip", "models/readiness", "models/software"},
		"models/domain":            {"models/nodespec", "models/publicip"}, // the vocabulary: the standard library, the node-spec parsers and the address registry only (TestVocabularyLayout)
		"models/publicip":          {},
		"models/software":          {"models/nodespec", "models/readiness"},
		"models/modelstest":        {"models"},
		"models/readiness":         {},
		"models/nodespec":          {},
		"api":                      {},
		"api/agentapi":             {},
		"client":                   {"api"},
		"internal/cli":             {"client", "api"},
		"internal/mcpserver":       {"client", "api"},
		"internal/stripemock":      {},
		"internal/apiclient":       {}, // generated from static/openapi.json, imports nothing of ours
		"internal/loadtest":        {"jobs", "models", "providers", "providers/sim", "static", "web"},
		"providers":                {},
		"providers/sim":            {"providers"},
		"providers/ssh":            {"providers"},
		"providers/lambda":         {"providers", "providers/providerstest", "providers/cloudkit", "providers/bootstrap"},
		"providers/httpx":          {},
		"providers/cloudkit":       {"providers", "providers/httpx"},
		"providers/fakekit":        {},
		"providers/runpod":         {"providers", "providers/providerstest", "providers/cloudkit", "providers/bootstrap"},
		"providers/runpod/fake":    {"providers/runpod", "providers/fakekit"},
		"providers/shadeform":      {"providers", "providers/providerstest", "providers/cloudkit", "providers/bootstrap"},
		"providers/shadeform/fake": {"providers/shadeform", "providers/fakekit"},
		"providers/bootstrap":      {"providers"},
		"providers/providerstest":  {"providers"},
		"providers/lambda/fake":    {"providers/lambda", "providers/fakekit"},
		"providers/agent":          {"providers", "api/agentapi"},
		"providers/mail":           {},
		"providers/webhookout":     {},
		"providers/payments":       {},
		"static":                   {},
		"views":                    {"models/domain"}, // never the store (TestVocabularyLayout)
		"web":                      {"models", "models/domain", "models/nodespec", "models/software", "views", "api", "api/agentapi", "internal/mcpserver"},
		"jobs":                     {"models", "models/domain", "models/readiness", "models/nodespec", "models/software", "providers"},
	}
	// Third-party imports: each listed package may use only these modules
	// (a package not named here: the standard library and ours only), so a
	// model cannot import echo, nor an adapter the database.
	external := map[string][]string{
		"models":                  {"gorm.io/", "github.com/glebarez/sqlite", "github.com/jackc/pgx/", "github.com/trustelem/zxcvbn", "golang.org/x/crypto/"},
		"models/modelstest":       {"gorm.io/"},
		"models/readiness":        {"gopkg.in/yaml.v3"},
		"providers/sim":           {"gopkg.in/yaml.v3", "gorm.io/"}, // its state lives in the product's database (sim_clouds, created by models' migrations)
		"providers/ssh":           {"golang.org/x/crypto/", "gopkg.in/yaml.v3"},
		"providers/payments":      {"github.com/stripe/stripe-go/v76"},
		"providers/mail":          {"github.com/emersion/"},
		"providers/providerstest": {"github.com/getkin/kin-openapi/"},
		"views":                   {"github.com/a-h/templ"},
		"jobs":                    {"github.com/prometheus/client_golang/", "github.com/robfig/cron/v3"},
		"web":                     {"github.com/a-h/templ", "github.com/gorilla/", "github.com/labstack/echo/v4", "github.com/prometheus/client_golang/", "golang.org/x/time/"},
		"internal/mcpserver":      {"github.com/google/jsonschema-go/", "github.com/modelcontextprotocol/go-sdk/"},
		"internal/loadtest":       {"github.com/labstack/echo/v4"},
		"internal/cli":            {"golang.org/x/term", "gopkg.in/yaml.v3"},               // top clears the screen only on a terminal; `run -f train.yaml` reads YAML (X17)
		"internal/apiclient":      {"github.com/oapi-codegen/runtime", "go.yaml.in/yaml/"}, // what oapi-codegen's output imports
	}
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(pkg, module)
		if !ok || rel == "" {
			continue // main may import anything
		}
		ok2, listed := allowed[rel]
		if !listed && strings.HasPrefix(rel, "internal/") {
			continue // main's helpers, unless listed above
		}
		if !listed {
			t.Errorf("package %s has no import rule: add it to TestImportRules", rel)
			continue
		}
		p, err := build.Import(pkg, ".", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			if dep, internal := strings.CutPrefix(imp, module); internal && !slices.Contains(ok2, dep) {
				t.Errorf("%s imports %s; allowed: %v", rel, dep, ok2)
			}
			first, _, _ := strings.Cut(imp, "/")
			if strings.HasPrefix(imp, module) || !strings.Contains(first, ".") {
				continue // ours, or the standard library
			}
			if !slices.ContainsFunc(external[rel], func(prefix string) bool { return strings.HasPrefix(imp, prefix) }) {
				t.Errorf("%s imports the third-party %s; allowed: %v", rel, imp, external[rel])
			}
		}
	}
}

package web

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
)

// API2, API1: a mistyped field's 422 names the API's
// field, its JSON name with a path for nested members (`storage.persistentGb`,
// `ports[0]`, `env.HF_TOKEN`), never a Go type (`QuoteBody.nodes`). The test
// walks every JSON request body of the OpenAPI document's customer API (the
// agent protocol answers one fixed 400 without fields): for each member,
// nested ones included, it sends a body with just that member of the wrong
// JSON type, over the real router, to a route whose ids exist.
func TestFieldErrorsNameTheAPIField(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		o := loadOpenAPI(t)
		acc := app.signupAccount("fields@example.com", "Fields")
		tok := apiKeyFor(t, app, acc)
		cl := launchFor(t, app, acc, "fields")
		app.store.Deposit(t.Context(), acc.org.ID, 500*models.Micro, "fields-more", "test")
		code, vol := apiJSON(t, app, "POST", "/v1/volumes", tok, `{"name":"data","location":"us-east","sizeGb":10}`)
		if code != http.StatusCreated && code != http.StatusOK {
			t.Fatalf("create volume: %d %v", code, vol)
		}
		params := strings.NewReplacer("{id}", cl.ID, "{rank}", "1", "{envId}", acc.env.ID)
		volParams := strings.NewReplacer("{id}", vol["id"].(string))
		code, hook := apiJSON(t, app, "POST", "/v1/webhooks", tok, `{"url":"https://hooks.example.com/clusterdeck","types":["cluster.ready"]}`)
		if code != http.StatusCreated {
			t.Fatalf("create webhook: %d %v", code, hook)
		}
		hookParams := strings.NewReplacer("{id}", hook["id"].(string))
		start := app.clock.Now().Add(10 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
		code, rsv := apiJSON(t, app, "POST", "/v1/reservations", tok, `{"offerId":"`+cl.OfferID+`","nodes":2,"startAt":"`+start+`","durationHours":24}`,
			"Idempotency-Key", "fields-reservation")
		if code != http.StatusCreated {
			t.Fatalf("book a reservation: %d %v", code, rsv)
		}
		rsvParams := strings.NewReplacer("{id}", rsv["id"].(string))

		walked, seen := 0, map[string]bool{}
		for key, op := range o.operations() {
			method, path, _ := strings.Cut(key, " ")
			if strings.HasPrefix(path, "/v1/agent/") {
				continue
			}
			rb, _ := op["requestBody"].(map[string]any)
			content, _ := rb["content"].(map[string]any)
			media, _ := content["application/json"].(map[string]any)
			if media == nil {
				continue
			}
			target := params.Replace(path)
			if strings.HasPrefix(path, "/v1/volumes/") {
				target = volParams.Replace(path)
			}
			if strings.HasPrefix(path, "/v1/webhooks/") {
				target = hookParams.Replace(path)
			}
			if strings.HasPrefix(path, "/v1/reservations/") {
				target = rsvParams.Replace(path)
			}
			for _, c := range o.mistypedMembers(media["schema"].(map[string]any), "", 0) {
				walked++
				seen[key+" "+c.path] = true
				code, body := apiJSON(t, app, method, target, tok, c.body, "Idempotency-Key", "fields-"+c.path)
				e, _ := body["error"].(map[string]any)
				fields, _ := e["fields"].(map[string]any)
				if code != http.StatusUnprocessableEntity || fields[c.path] == nil || len(fields) != 1 {
					keys := make([]string, 0, len(fields))
					for k := range fields {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					t.Errorf("%s %s %s: %d, fields %v; want 422 naming exactly %q", method, path, c.body, code, keys, c.path)
				}
				if msg := fmt.Sprint(fields[c.path]); strings.Contains(msg, "Body") || !strings.HasPrefix(msg, "must be ") {
					t.Errorf("%s %s: %q: %q", method, path, c.path, msg)
				}
			}
		}
		if walked < 40 {
			t.Errorf("walked %d members: the document's bodies were not found", walked)
		}
		for _, want := range []string{"POST /v1/gpu/clusters nodes", "POST /v1/gpu/clusters ports[0]",
			"POST /v1/gpu/clusters storage.persistentGb", "POST /v1/gpu/clusters env.KEY", "POST /v1/gpu/clusters/quote gpusPerNode",
			"PUT /v1/billing/budgets/{envId} amount", "POST /v1/volumes/{id}/grow sizeGb"} {
			if !seen[want] {
				t.Errorf("the walk did not try %s", want)
			}
		}
	})
}

// mistyped is one body with one member of the wrong JSON type, and the
// member's API path.
type mistyped struct{ path, body string }

// mistypedMembers lists, for every member of schema (nested objects, map
// values and array items included), a body whose only content is that
// member with a value of another JSON type.
func (o *openAPI) mistypedMembers(schema map[string]any, path string, depth int) []mistyped {
	if depth > 4 {
		return nil
	}
	var out []mistyped
	wrap := func(inner mistyped, member string) mistyped {
		return mistyped{path: inner.path, body: `{"` + member + `":` + inner.body + `}`}
	}
	for name, p := range o.properties(schema) {
		at := name
		if path != "" {
			at = path + "." + name
		}
		for _, m := range o.mistypedValue(p, at, depth) {
			out = append(out, wrap(m, name))
		}
	}
	return out
}

// mistypedValue lists wrong values for one value of schema at path: the
// value itself of another type, then its members' and items' own.
func (o *openAPI) mistypedValue(schema map[string]any, path string, depth int) []mistyped {
	typ := o.schemaType(schema)
	wrong := map[string]string{"string": "7", "integer": `"seven"`, "number": `"seven"`, "boolean": `"yes"`, "array": `"a list"`, "object": `"an object"`}[typ]
	if wrong == "" {
		return nil
	}
	out := []mistyped{{path: path, body: wrong}}
	s := o.resolve(schema)
	switch typ {
	case "object":
		out = append(out, func() []mistyped {
			var inner []mistyped
			for _, m := range o.mistypedMembers(schema, path, depth+1) {
				inner = append(inner, m)
			}
			if add, ok := s["additionalProperties"].(map[string]any); ok {
				for _, m := range o.mistypedValue(add, path+".KEY", depth+1) {
					inner = append(inner, mistyped{path: m.path, body: `{"KEY":` + m.body + `}`})
				}
			}
			return inner
		}()...)
	case "array":
		if items, ok := s["items"].(map[string]any); ok {
			for _, m := range o.mistypedValue(items, path+"[0]", depth+1) {
				out = append(out, mistyped{path: m.path, body: "[" + m.body + "]"})
			}
		}
	}
	return out
}

// schemaType is a schema's JSON type: its own, or its $ref's, allOf's or
// non-null oneOf member's.
func (o *openAPI) schemaType(schema map[string]any) string {
	s := o.resolve(schema)
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x != "null" {
				return fmt.Sprint(x)
			}
		}
	}
	for _, key := range []string{"allOf", "oneOf", "anyOf"} {
		for _, part := range anySlice(s[key]) {
			if part, ok := part.(map[string]any); ok {
				if t := o.schemaType(part); t != "" && t != "null" {
					return t
				}
			}
		}
	}
	if len(o.properties(s)) > 0 {
		return "object"
	}
	return ""
}

// apiPath, the net under checkJSON, turns encoding/json's Go paths into the
// API's.
func TestAPIPath(t *testing.T) {
	launch := reflect.TypeFor[*api.LaunchBody]()
	for in, want := range map[string]string{
		"QuoteBody.nodes": "nodes", "QuoteBody.storage.persistentGb": "storage.persistentGb",
		"ports.1": "ports[1]", "env.HF_TOKEN": "env.HF_TOKEN", "name": "name",
	} {
		if got := apiPath(launch, in); got != want {
			t.Errorf("apiPath(%q) = %q, want %q", in, got, want)
		}
	}
}

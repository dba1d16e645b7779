package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/labstack/echo/v4"
)

// The OpenAPI document (static/openapi.json, served at /v1/openapi.json)
// is written by hand; these tests keep it honest (API1): it covers exactly
// the registered /v1 routes, every $ref resolves, and real answers of the
// server carry exactly the fields its schemas declare. Besides,
// openapi_validate_test.go validates every /v1 exchange of every test with
// kin-openapi, and openapi_wire_test.go the wire types (api, api/agentapi).

// openAPI is the parsed document with a small schema-field checker: object
// fields declared and required, JSON types, enum/const and string patterns.
// Not a full JSON Schema validator.
type openAPI struct{ doc map[string]any }

func loadOpenAPI(t testing.TB) *openAPI {
	t.Helper()
	raw, err := fs.ReadFile(static.FS, "openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("static/openapi.json is not JSON: %v", err)
	}
	return &openAPI{doc: doc}
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operations lists the document's "METHOD /path" pairs.
func (o *openAPI) operations() map[string]map[string]any {
	out := map[string]map[string]any{}
	paths, _ := o.doc["paths"].(map[string]any)
	for p, item := range paths {
		item, _ := item.(map[string]any)
		for _, m := range httpMethods {
			if op, ok := item[m].(map[string]any); ok {
				out[strings.ToUpper(m)+" "+p] = op
			}
		}
	}
	return out
}

// pointer resolves a local JSON pointer ("#/components/schemas/Quote").
func (o *openAPI) pointer(ref string) (any, bool) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = o.doc
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// resolve follows $ref until an object without one.
func (o *openAPI) resolve(s map[string]any) map[string]any {
	for i := 0; i < 32; i++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		v, _ := o.pointer(ref)
		next, ok := v.(map[string]any)
		if !ok {
			return map[string]any{}
		}
		s = next
	}
	return s
}

var echoParamRE = regexp.MustCompile(`:([A-Za-z_]+)`)

// openAPIPath turns echo's "/v1/gpu/clusters/:id" into "/v1/gpu/clusters/{id}".
func openAPIPath(echoPath string) string { return echoParamRE.ReplaceAllString(echoPath, "{$1}") }

// openAPIDrift compares the /v1 routes registered on e with the document's
// operations and describes every difference.
func openAPIDrift(e *echo.Echo, o *openAPI) []string {
	registered := map[string]bool{}
	for _, r := range e.Routes() {
		// Groups with middleware register catch-all "not found" routes
		// ("/v1", "/v1/*"): those are no part of the API.
		if r.Method == echo.RouteNotFound || strings.HasSuffix(r.Path, "/*") || !strings.HasPrefix(r.Path, "/v1/") {
			continue
		}
		registered[r.Method+" "+openAPIPath(r.Path)] = true
	}
	ops := o.operations()
	var drift []string
	for k := range registered {
		if _, ok := ops[k]; !ok {
			drift = append(drift, k+" is registered but missing from static/openapi.json")
		}
	}
	for k := range ops {
		if !registered[k] {
			drift = append(drift, k+" is in static/openapi.json but no such route is registered")
		}
	}
	sort.Strings(drift)
	return drift
}

// (1) It is JSON, OpenAPI 3.1, says what the brief and SPEC §12 promise,
// and the server hands it out without a key.
func TestOpenAPIDocument(t *testing.T) {
	o := loadOpenAPI(t)
	if v, _ := o.doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi = %q, want 3.1.x", v)
	}
	ops := o.operations()
	for k, op := range ops {
		if id, _ := op["operationId"].(string); id == "" {
			t.Errorf("%s has no operationId", k)
		}
		if tags, _ := op["tags"].([]any); len(tags) == 0 {
			t.Errorf("%s has no tag", k)
		}
		if resp, _ := op["responses"].(map[string]any); len(resp) == 0 {
			t.Errorf("%s has no responses", k)
		}
		// Every {param} in the path is declared as a path parameter.
		path := strings.SplitN(k, " ", 2)[1]
		declared := map[string]bool{}
		params, _ := op["parameters"].([]any)
		for _, p := range params {
			p := o.resolve(p.(map[string]any))
			if p["in"] == "path" && p["required"] == true {
				declared[p["name"].(string)] = true
			}
		}
		for _, m := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1) {
			if !declared[m[1]] {
				t.Errorf("%s: path parameter %q is not declared (required, in: path)", k, m[1])
			}
		}
		// The agent protocol has its own tag and scheme (the claim takes
		// the cluster's bootstrap token, OP1); everything else is the
		// customer API under the API key (public routes opt out).
		sec, hasSec := op["security"].([]any)
		switch {
		case path == "/v1/agent/claim":
			if !slices.Contains(op["tags"].([]any), any("agent")) || len(sec) != 1 || sec[0].(map[string]any)["bootstrapToken"] == nil {
				t.Errorf("%s: want tag agent and security [bootstrapToken], got %v %v", k, op["tags"], sec)
			}
		case strings.HasPrefix(path, "/v1/agent/"):
			if !slices.Contains(op["tags"].([]any), any("agent")) || len(sec) != 1 || sec[0].(map[string]any)["nodeToken"] == nil {
				t.Errorf("%s: want tag agent and security [nodeToken], got %v %v", k, op["tags"], sec)
			}
		case walkPublic[regexp.MustCompile(`\{([^}]+)\}`).ReplaceAllString(path, ":$1")]:
			if !hasSec || (len(sec) > 0 && !slices.ContainsFunc(sec, func(s any) bool { return len(s.(map[string]any)) == 0 })) {
				t.Errorf("%s is public: its security must allow no credentials, got %v", k, sec)
			}
		case hasSec:
			t.Errorf("%s overrides security (%v) but needs an API key", k, sec)
		}
	}
	schemes, _ := o.pointer("#/components/securitySchemes")
	for name, format := range map[string]string{"apiKey": "cdk_…", "nodeToken": "cdn_…"} {
		s, _ := schemes.(map[string]any)[name].(map[string]any)
		if s["type"] != "http" || s["scheme"] != "bearer" || s["bearerFormat"] != format {
			t.Errorf("security scheme %s: %v", name, s)
		}
	}

	// Content types and headers the brief names.
	has := func(ptr string) {
		t.Helper()
		if _, ok := o.pointer(ptr); !ok {
			t.Errorf("the document lacks %s", ptr)
		}
	}
	has("#/paths/~1v1~1gpu~1clusters~1{id}~1logs/get/responses/200/content/text~1event-stream")
	has("#/paths/~1v1~1gpu~1clusters~1{id}~1kubeconfig/get/responses/200/content/application~1yaml")
	launch := ops["POST /v1/gpu/clusters"]
	hasIdem := false
	for _, p := range launch["parameters"].([]any) {
		p := o.resolve(p.(map[string]any))
		hasIdem = hasIdem || (p["name"] == "Idempotency-Key" && p["in"] == "header")
	}
	if !hasIdem {
		t.Error("launch does not declare the Idempotency-Key header")
	}
	status, _ := o.pointer("#/components/schemas/ClusterStatus/enum")
	if fmt.Sprint(status) != "[provisioning installing verifying ready degraded stopped failed terminated]" {
		t.Errorf("cluster statuses: %v", status)
	}
	reasons, _ := o.pointer("#/components/schemas/NoCapacityError/properties/error/properties/reason/enum")
	if fmt.Sprint(reasons) != "[no_location_with_n_nodes above_max_hourly_price gpus_per_node_unavailable offer_not_found not_in_stock private_offer_expired private_offer_shape catalog_stale]" {
		t.Errorf("no_capacity reasons: %v", reasons)
	}

	// Served as is, without a key.
	app := newTestApp(t, openSQLite(t))
	rec := app.get("/v1/openapi.json")
	raw, _ := fs.ReadFile(static.FS, "openapi.json")
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") || rec.Body.String() != string(raw) {
		t.Errorf("GET /v1/openapi.json: %d %q (%d bytes)", rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
	}
}

// (2) Every registered /v1 route is in the document and every documented
// operation is a registered route, so neither can drift from the other.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	o := loadOpenAPI(t)
	for _, d := range openAPIDrift(app.e, o) {
		t.Error(d)
	}
	// The comparison notices both directions.
	app.e.GET("/v1/gpu/volumes/:id", func(c echo.Context) error { return nil })
	o.doc["paths"].(map[string]any)["/v1/nowhere"] = map[string]any{"get": map[string]any{}}
	drift := strings.Join(openAPIDrift(app.e, o), "\n")
	for _, want := range []string{"GET /v1/gpu/volumes/{id} is registered but missing", "GET /v1/nowhere is in static/openapi.json but no such route"} {
		if !strings.Contains(drift, want) {
			t.Errorf("drift report lacks %q:\n%s", want, drift)
		}
	}
}

// (3) Every $ref points at something, and every component is used.
func TestOpenAPIRefsResolve(t *testing.T) {
	o := loadOpenAPI(t)
	used := map[string]bool{}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if _, found := o.pointer(ref); !found {
					t.Errorf("%s: $ref %q does not resolve", where, ref)
				}
				used[ref] = true
			}
			for k, x := range v {
				walk(where+"/"+k, x)
			}
		case []any:
			for i, x := range v {
				walk(where+"/"+strconv.Itoa(i), x)
			}
		}
	}
	walk("#", o.doc)
	if len(used) < 20 {
		t.Errorf("only %d distinct $refs", len(used))
	}
	comps, _ := o.doc["components"].(map[string]any)
	for _, kind := range []string{"schemas", "responses", "parameters"} {
		m, _ := comps[kind].(map[string]any)
		for name := range m {
			if ref := "#/components/" + kind + "/" + name; !used[ref] {
				t.Errorf("%s is never referenced", ref)
			}
		}
	}
}

// checkValue reports where v disagrees with schema s: undeclared or missing
// required object fields, JSON types, enum/const and string patterns,
// through $ref, allOf, oneOf/anyOf, items and additionalProperties.
func (o *openAPI) checkValue(where string, s map[string]any, v any) []string {
	var f flatSchema
	o.flatten(s, &f)
	var errs []string
	kind := jsonKind(v)
	for _, types := range f.types {
		if !slices.ContainsFunc(types, func(t string) bool { return t == kind || (t == "number" && kind == "integer") }) {
			return []string{fmt.Sprintf("%s: %s %v, want %v", where, kind, short(v), types)}
		}
	}
	for _, enum := range f.enums {
		if !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) && jsonKind(e) == kind }) {
			errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", where, short(v), enum))
		}
	}
	if str, ok := v.(string); ok {
		for _, p := range f.patterns {
			if !regexp.MustCompile(p).MatchString(str) {
				errs = append(errs, fmt.Sprintf("%s: %q does not match %s", where, str, p))
			}
		}
	}
	for _, branches := range f.oneOf {
		var first []string
		matched := false
		for i, b := range branches {
			e := o.checkValue(where, b, v)
			if len(e) == 0 {
				matched = true
				break
			}
			if i == 0 {
				first = e
			}
		}
		if !matched {
			errs = append(errs, fmt.Sprintf("%s matches no oneOf branch; the first says: %s", where, strings.Join(first, "; ")))
		}
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch {
			case len(f.props[k]) > 0:
				for _, ps := range f.props[k] {
					errs = append(errs, o.checkValue(where+"."+k, ps, v[k])...)
				}
			case f.additional != nil:
				errs = append(errs, o.checkValue(where+"."+k, f.additional, v[k])...)
			case len(f.props) > 0:
				errs = append(errs, fmt.Sprintf("%s.%s is not declared in the schema", where, k))
			}
		}
		for _, r := range f.required {
			if _, ok := v[r]; !ok {
				errs = append(errs, fmt.Sprintf("%s.%s is required by the schema but missing", where, r))
			}
		}
	case []any:
		for i, x := range v {
			for _, is := range f.items {
				errs = append(errs, o.checkValue(fmt.Sprintf("%s[%d]", where, i), is, x)...)
			}
		}
	}
	return errs
}

// flatSchema is a schema with its $refs and allOf merged.
type flatSchema struct {
	types      [][]string
	enums      [][]any
	patterns   []string
	oneOf      [][]map[string]any
	props      map[string][]map[string]any
	required   []string
	additional map[string]any
	items      []map[string]any
}

func (o *openAPI) flatten(s map[string]any, f *flatSchema) {
	s = o.resolve(s)
	if f.props == nil {
		f.props = map[string][]map[string]any{}
	}
	switch t := s["type"].(type) {
	case string:
		f.types = append(f.types, []string{t})
	case []any:
		var ts []string
		for _, x := range t {
			ts = append(ts, x.(string))
		}
		f.types = append(f.types, ts)
	}
	if e, ok := s["enum"].([]any); ok {
		f.enums = append(f.enums, e)
	}
	if c, ok := s["const"]; ok {
		f.enums = append(f.enums, []any{c})
	}
	if p, ok := s["pattern"].(string); ok {
		f.patterns = append(f.patterns, p)
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if bs, ok := s[key].([]any); ok {
			var branches []map[string]any
			for _, b := range bs {
				branches = append(branches, b.(map[string]any))
			}
			f.oneOf = append(f.oneOf, branches)
		}
	}
	if ps, ok := s["properties"].(map[string]any); ok {
		for k, p := range ps {
			f.props[k] = append(f.props[k], p.(map[string]any))
		}
	}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			f.required = append(f.required, r.(string))
		}
	}
	if a, ok := s["additionalProperties"].(map[string]any); ok {
		f.additional = a
	}
	if it, ok := s["items"].(map[string]any); ok {
		f.items = append(f.items, it)
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			o.flatten(sub.(map[string]any), f)
		}
	}
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}

// The checker itself: it reports an undeclared field, a missing required
// one, a wrong type and a money string that is not one.
func TestOpenAPIChecker(t *testing.T) {
	o := loadOpenAPI(t)
	item := map[string]any{"$ref": "#/components/schemas/LineItem"}
	if errs := o.checkValue("item", item, map[string]any{"name": "gpus", "quantity": "2 × 8", "usdPerHour": "39.84"}); len(errs) > 0 {
		t.Errorf("a good line item: %v", errs)
	}
	errs := strings.Join(o.checkValue("item", item, map[string]any{"name": 3.0, "usdPerHour": "39.8", "extra": true}), "\n")
	for _, want := range []string{"item.name: integer", "item.usdPerHour: \"39.8\" does not match", "item.extra is not declared", "item.quantity is required"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the checker missed %q:\n%s", want, errs)
		}
	}
	nc := map[string]any{"$ref": "#/components/responses/LaunchConflict/content/application~1json/schema"}
	body := map[string]any{"error": map[string]any{"code": "price_changed", "message": "m", "reason": "expired", "old": map[string]any{}}}
	if errs := o.checkValue("body", nc, body); len(errs) == 0 {
		t.Error("an empty old quote passed")
	}
}

// openAPICall makes a request and checks the answer against the document:
// the status is declared for the operation, so is the content type, and a
// JSON body has exactly the fields of its schema. A JSON request body the
// server accepted is checked against the request schema too.
func (o *openAPI) call(t *testing.T, app *testApp, method, target, token, body string, headers ...string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if strings.HasSuffix(req.URL.Path, "/logs") && req.URL.Query().Get("follow") != "false" {
		ctx, cancel := context.WithTimeout(req.Context(), 200*time.Millisecond) // a stream follows until the client leaves
		defer cancel()
		req = req.WithContext(ctx)
	}
	rec := app.do(req)

	tmpl, op := o.operationFor(method, req.URL.Path)
	if op == nil {
		t.Fatalf("%s %s: no operation in the document", method, req.URL.Path)
	}
	where := fmt.Sprintf("%s %s → %d", method, tmpl, rec.Code)
	if body != "" && rec.Code < 300 { // what the server accepted (refusals send bad bodies on purpose)
		if schema, ok := o.pointerIn(op, "requestBody", "content", "application/json", "schema"); ok {
			var sent any
			if err := json.Unmarshal([]byte(body), &sent); err != nil {
				t.Fatal(err)
			}
			for _, e := range o.checkValue("request", schema, sent) {
				t.Errorf("%s: %s", where, e)
			}
		} else {
			t.Errorf("%s: the document declares no JSON request body", where)
		}
	}
	responses, _ := op["responses"].(map[string]any)
	resp, ok := responses[strconv.Itoa(rec.Code)].(map[string]any)
	if !ok {
		t.Errorf("%s: status not declared (body %.300s)", where, rec.Body)
		return rec, nil
	}
	resp = o.resolve(resp)
	content, _ := resp["content"].(map[string]any)
	if rec.Body.Len() == 0 && len(content) == 0 {
		return rec, nil
	}
	ct, _, _ := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	media, ok := content[ct].(map[string]any)
	if !ok {
		t.Errorf("%s: content type %q not declared", where, ct)
		return rec, nil
	}
	if ct != "application/json" {
		return rec, nil
	}
	var got any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("%s: not JSON: %s", where, rec.Body)
	}
	schema, _ := media["schema"].(map[string]any)
	for _, e := range o.checkValue("response", schema, got) {
		t.Errorf("%s: %s", where, e)
	}
	out, _ := got.(map[string]any)
	return rec, out
}

func (o *openAPI) pointerIn(m map[string]any, keys ...string) (map[string]any, bool) {
	cur := m
	for _, k := range keys {
		next, ok := o.resolve(cur)[k].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// operationFor finds the documented operation a concrete path and method
// land on, preferring literal segments over {params}.
func (o *openAPI) operationFor(method, path string) (string, map[string]any) {
	best, bestParams := "", -1
	var bestOp map[string]any
	segs := strings.Split(path, "/")
	for k, op := range o.operations() {
		m, tmpl, _ := strings.Cut(k, " ")
		ts := strings.Split(tmpl, "/")
		if m != method || len(ts) != len(segs) {
			continue
		}
		params, ok := 0, true
		for i := range ts {
			if strings.HasPrefix(ts[i], "{") {
				params++
			} else if ts[i] != segs[i] {
				ok = false
			}
		}
		if ok && (bestParams < 0 || params < bestParams) {
			best, bestParams, bestOp = tmpl, params, op
		}
	}
	return best, bestOp
}

// (4) Real answers round-trip through the schemas: offers, quote, launch
// (and its refusals), get, list, connections, logs, terminate, me, quote
// requests and the agent protocol.
func TestOpenAPIResponsesMatchServer(t *testing.T) {
	o := loadOpenAPI(t)
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("oa@example.com", "Documenters")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		want := func(code int, method, target, token, body string, headers ...string) map[string]any {
			t.Helper()
			rec, out := o.call(t, app, method, target, token, body, headers...)
			if rec.Code != code {
				t.Errorf("%s %s = %d, want %d: %.300s", method, target, rec.Code, code, rec.Body)
			}
			return out
		}

		want(200, "GET", "/v1/openapi.json", "", "")
		if offers := want(200, "GET", "/v1/gpu/offers?accelerator=H100_80GB&nodes=2&include_community=true", "", ""); offers["count"] != 1.0 {
			t.Errorf("offers: %v", offers)
		}
		want(422, "GET", "/v1/gpu/offers?nodes=1", "", "")
		want(401, "GET", "/v1/gpu/offers", "cdk_not_a_key", "")

		q := want(201, "POST", "/v1/gpu/clusters/quote", tok,
			`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"storage":{"persistentGb":100},"maxHourlyPrice":"100","include_community":false}`)
		if q["id"] == nil || q["maxHourlyPrice"] != "100.00" {
			t.Fatalf("quote: %v", q)
		}
		if e := want(409, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":30,"gpusPerNode":8,"location":"us-east"}`); errCode(e) != "no_capacity" {
			t.Errorf("no_capacity: %v", e)
		}
		want(409, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"maxHourlyPrice":"5"}`)
		want(422, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"TPU","nodes":1,"gpusPerNode":8}`)
		want(422, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodez":2}`) // unknown fields: 422 naming them (A4)
		want(401, "POST", "/v1/gpu/clusters/quote", "", `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)

		launch := fmt.Sprintf(`{"quoteId":%q,"name":"doc-train","software":"none","env":{"HF_TOKEN":"x"},"ports":[8888],"startCommand":"sleep infinity"}`, q["id"])
		want(402, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", "doc-1")
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "doc-deposit", "test")
		cl := want(201, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", "doc-1")
		id, _ := cl["id"].(string)
		if id == "" {
			t.Fatalf("launch: %v", cl)
		}
		want(200, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", "doc-1")
		if e := want(409, "POST", "/v1/gpu/clusters", tok, strings.Replace(launch, "doc-train", "other", 1), "Idempotency-Key", "doc-1"); errCode(e) != "idempotency_key_reused" {
			t.Errorf("idempotency_key_reused: %v", e)
		}
		if e := want(409, "POST", "/v1/gpu/clusters", tok, launch, "Idempotency-Key", "doc-2"); errCode(e) != "quote_used" {
			t.Errorf("quote_used: %v", e)
		}
		q2 := want(201, "POST", "/v1/gpu/clusters/quote", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`)
		if e := want(409, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q,"nodes":3}`, q2["id"])); errCode(e) != "price_changed" {
			t.Errorf("price_changed: %v", e)
		}
		want(404, "POST", "/v1/gpu/clusters", tok, `{"quoteId":"qt_nope"}`)
		want(409, "POST", "/v1/gpu/clusters", tok, `{"offerId":"sim:h100x8","accelerator":"H100_80GB","nodes":30,"gpusPerNode":8}`)
		want(422, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q,"ports":[0]}`, q2["id"]))
		app.store.SetOrgQuota(ctx, acc.org.ID, 3, 512)
		want(403, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q}`, q2["id"]))
		app.store.SetOrgQuota(ctx, acc.org.ID, 64, 512)

		want(200, "GET", "/v1/gpu/clusters", tok, "")
		want(200, "GET", "/v1/gpu/clusters/"+id, tok, "")
		want(404, "GET", "/v1/gpu/clusters/cl_nope", tok, "")
		want(409, "GET", "/v1/gpu/clusters/"+id+"/connections", tok, "")
		want(404, "GET", "/v1/gpu/clusters/"+id+"/kubeconfig", tok, "")
		want(409, "POST", "/v1/gpu/clusters/"+id+"/retry-install", tok, "")

		model, err := app.store.ClusterForOrg(ctx, acc.org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		model = makeJoined(t, app, model, true)
		if conn := want(200, "GET", "/v1/gpu/clusters/"+id+"/connections", tok, ""); conn["hostfile"] == nil {
			t.Errorf("connections: %v", conn)
		}
		app.store.AppendNodeLogs(ctx, model, 1, []models.LogInput{{At: testNow, Text: "hello from node-1"}})
		if logs := want(200, "GET", "/v1/gpu/clusters/"+id+"/logs?node=1&follow=false", tok, ""); len(logs["lines"].([]any)) != 1 {
			t.Errorf("logs: %v", logs)
		}
		want(422, "GET", "/v1/gpu/clusters/"+id+"/logs?node=9&follow=false", tok, "")
		if rec, _ := o.call(t, app, "GET", "/v1/gpu/clusters/"+id+"/logs?node=1", tok, ""); rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" {
			t.Errorf("streamed logs: %d %q", rec.Code, rec.Header().Get("Content-Type"))
		}

		want(200, "GET", "/v1/me", tok, "")
		want(401, "GET", "/v1/me", "", "")
		want(201, "POST", "/v1/billing/top-ups", tok, `{"amount":"25.00"}`)
		want(422, "POST", "/v1/billing/top-ups", tok, `{"amount":"4.99"}`)
		qr := want(201, "POST", "/v1/quote-requests", tok,
			`{"accelerator":"H100_80GB","nodes":128,"gpusPerNode":8,"fabric":"infiniband","location":"us-east","startDate":"2027-01-04","durationDays":28,"budgetPerHour":"900","contact":{"name":"Ada","email":"ada@example.com","phone":"+1 555 0100"},"notes":"pre-training"}`)
		want(201, "POST", "/v1/quote-requests", tok, `{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"startDate":"2027-01-04","durationDays":7}`)
		want(422, "POST", "/v1/quote-requests", tok, `{"accelerator":"H100_80GB","nodes":1000,"startDate":"yesterday"}`)
		want(200, "GET", "/v1/quote-requests", tok, "")
		qrID, _ := qr["id"].(string)
		want(200, "GET", "/v1/quote-requests/"+qrID, tok, "")
		want(404, "GET", "/v1/quote-requests/qr_nope", tok, "")

		// The agent protocol, as node-1.
		nodes, _ := app.store.NodesFor(ctx, id)
		agent := models.AgentToken(model, nodes[1])
		want(200, "POST", "/v1/agent/checkin", agent, `{"hostname":"node-1","privateIp":"10.77.0.2","version":"1"}`)
		want(401, "POST", "/v1/agent/checkin", "cdn_nope", `{}`)
		want(200, "POST", "/v1/agent/peers", agent, `{"reached":["10.77.0.1"],"unreachable":[]}`)
		want(200, "POST", "/v1/agent/heartbeat", agent, `{}`)
		want(204, "POST", "/v1/agent/logs", agent, `{"lines":[{"at":"2026-11-30T12:00:00Z","text":"booted"}]}`)
		want(404, "POST", "/v1/agent/tasks/tk_nope", agent, `{"ok":true,"output":""}`)

		if body := want(202, "POST", "/v1/gpu/clusters/"+id+"/terminate", tok, ""); body["terminateRequestedAt"] == nil {
			t.Errorf("terminate: %v", body)
		}
		want(200, "GET", "/v1/gpu/clusters/"+id, tok, "")
		want(410, "POST", "/v1/agent/heartbeat", agent, `{}`)
	})
}

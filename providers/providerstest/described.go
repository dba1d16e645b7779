package providerstest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Description is a cloud's published API description (an OpenAPI
// document kept in the adapter's testdata with its source noted beside
// it), loaded once and routed without its servers' hosts, so that a fake
// on loopback answers its paths.
type Description struct {
	// UndocumentedErrors says the description lists no error answers (it
	// documents 200s only): an answer whose status the operation does not
	// list is then not checked, as nothing describes it.
	UndocumentedErrors bool
	// Strict closes every object schema of the document that does not say
	// otherwise (additionalProperties false, except inside allOf): a field
	// the description does not name is then refused too, not passed over.
	// An older copy of a description is checked this way, so that what
	// the newer version adds shows up, and is listed in Gaps.
	Strict bool
	// Gaps is what the kept document is known to lack against the version
	// the adapter follows (when only an older copy is public): the check
	// lets exactly these through. A gap the document does not have (the
	// property or value is there, or the operation is) fails the check,
	// so the list stays true when the copy is replaced by a newer one.
	Gaps []Gap

	path   string
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

// Gap is one thing the kept document lacks; set one of Operation, Status,
// Operation with Status, Schema with Property, or Schema with Value.
type Gap struct {
	// Operation is "METHOD /path" (the path as sent, no templates) of an
	// operation the document does not have: its exchanges are not checked.
	// With Status, it is an operation the document has, as templated there
	// ("POST /api/v1/instance-operations/restart"), that lists no such
	// answer (while other operations may).
	Operation string
	// Status is an answer status no operation of the document lists (e.g.
	// 429): such answers are not checked (their requests still are).
	Status int
	// Schema names a component schema; Property is a property it lacks
	// (allowed, with any value), or Value an enum value it lacks (added).
	Schema, Property, Value string
	// Why says what the newer version has, for the reader.
	Why string
}

// NewDescription names the document at path; it is read on first use.
func NewDescription(path string) *Description { return &Description{path: path} }

// Lacks loads the document (once) and is nil when it lacks g, else says
// what it has: the check Gaps pass when the document loads, so that a test
// can show, without loading it again, that a gap would fail the load. The
// document is read as loaded: a gap of Gaps reads as present.
func (d *Description) Lacks(g Gap) error {
	if err := d.load(); err != nil {
		return err
	}
	return lacks(d.doc, g)
}

func (d *Description) load() error {
	d.once.Do(func() {
		data, err := os.ReadFile(d.path)
		if err != nil {
			d.err = err
			return
		}
		doc, err := openapi3.NewLoader().LoadFromData(data)
		if err != nil {
			d.err = fmt.Errorf("%s: %w", d.path, err)
			return
		}
		if err := d.fill(doc); err != nil {
			d.err = fmt.Errorf("%s: %w", d.path, err)
			return
		}
		if d.Strict {
			closeObjects(doc)
		}
		// The description's own examples are not checked: Shadeform's has
		// an example that its schema refuses (ClusterTypesResponse).
		if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
			d.err = fmt.Errorf("%s: %w", d.path, err)
			return
		}
		// Route on the server's path alone (a fake serves it on loopback).
		base := "/"
		if len(doc.Servers) > 0 {
			if u, err := url.Parse(doc.Servers[0].URL); err == nil && u.Path != "" {
				base = u.Path
			}
		}
		doc.Servers = openapi3.Servers{{URL: base}}
		d.doc = doc
		d.router, d.err = gorillamux.NewRouter(doc)
	})
	return d.err
}

// Check wraps a cloud's fake: every request an adapter sends through it is
// validated against the description's request schema (path, query,
// headers, body), and every answer the fake gives against the response
// schema of its status. A field renamed in the adapter, or invented in the
// fake, fails the test that sent or got it. A request on a path the
// description does not have fails too. Answers whose body is not JSON are
// not the API's (a proxy's error page, which the fakes play on purpose)
// and are left alone.
func (d *Description) Check(t testing.TB, next http.Handler) http.Handler {
	if err := d.load(); err != nil {
		t.Fatalf("the published API description: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		d.check(t, r, body, rec)
	})
}

func (d *Description) check(t testing.TB, r *http.Request, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	what := fmt.Sprintf("%s %s → %d", r.Method, r.URL.RequestURI(), rec.Code)
	req := httptest.NewRequest(r.Method, r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	for _, g := range d.Gaps {
		if g.Operation != "" && g.Status == 0 && g.Operation == r.Method+" "+r.URL.Path {
			return // a known gap: the document lacks this operation
		}
	}
	route, params, err := d.router.FindRoute(req)
	if err != nil {
		t.Errorf("%s: the adapter called an operation the description does not have: %v", what, err)
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		t.Errorf("%s: the request disagrees with the description: %s\nbody: %.300s", what, brief(err), body)
	}
	if mt, _, _ := mime.ParseMediaType(rec.Header().Get("Content-Type")); rec.Body.Len() > 0 && !strings.Contains(mt, "json") {
		return
	}
	if route.Operation.Responses.Status(rec.Code) == nil && route.Operation.Responses.Default() == nil {
		if d.UndocumentedErrors {
			return
		}
		for _, g := range d.Gaps {
			if g.Status == rec.Code && (g.Operation == "" || g.Operation == r.Method+" "+route.Path) {
				return // a known gap: the document lists no such answer
			}
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
		Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s: the fake's answer disagrees with the description: %s\nbody: %.300s", what, brief(err), rec.Body.Bytes())
	}
}

// brief is a validation error without the schema dumps kin-openapi adds.
func brief(err error) string {
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "Schema:") {
			break
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, " ")
}

// lacks is nil when doc lacks g (the gap is one still), else says what
// doc has.
func lacks(doc *openapi3.T, g Gap) error {
	switch {
	case g.Operation != "" && g.Status != 0:
		method, path, _ := strings.Cut(g.Operation, " ")
		it := doc.Paths.Value(path)
		if it == nil || it.GetOperation(method) == nil {
			return fmt.Errorf("gap %q %d: the document has no such operation", g.Operation, g.Status)
		}
		if it.GetOperation(method).Responses.Status(g.Status) != nil {
			return fmt.Errorf("gap %q %d: the operation lists this status", g.Operation, g.Status)
		}
	case g.Operation != "":
		method, path, _ := strings.Cut(g.Operation, " ")
		if it := doc.Paths.Value(path); it != nil && it.GetOperation(method) != nil {
			return fmt.Errorf("gap %q: the document has this operation", g.Operation)
		}
	case g.Status != 0:
		for _, it := range doc.Paths.Map() {
			for _, op := range it.Operations() {
				if op.Responses.Status(g.Status) != nil {
					return fmt.Errorf("gap %d: the document lists this status", g.Status)
				}
			}
		}
	case g.Schema != "":
		c := doc.Components.Schemas[g.Schema]
		if c == nil || c.Value == nil {
			return fmt.Errorf("gap %s: no such schema", g.Schema)
		}
		if _, ok := c.Value.Properties[g.Property]; ok && g.Property != "" {
			return fmt.Errorf("gap %s.%s: the document has this property", g.Schema, g.Property)
		}
		if g.Value != "" && slices.Contains(c.Value.Enum, any(g.Value)) {
			return fmt.Errorf("gap %s %q: the document has this value", g.Schema, g.Value)
		}
	}
	return nil
}

// fill adds the Gaps' properties and enum values to the document's
// schemas (the component and every copy the loader made of it where it is
// referred to), and requires every gap to be one still.
func (d *Description) fill(doc *openapi3.T) error {
	for _, g := range d.Gaps {
		if err := lacks(doc, g); err != nil {
			return err
		}
		if g.Schema != "" {
			c := doc.Components.Schemas[g.Schema]
			done := map[*openapi3.Schema]bool{}
			eachSchema(doc, func(ref *openapi3.SchemaRef, _ bool) {
				s := ref.Value
				if done[s] || ref != c && ref.Ref != "#/components/schemas/"+g.Schema {
					return
				}
				done[s] = true
				if g.Property != "" {
					if s.Properties == nil {
						s.Properties = openapi3.Schemas{}
					}
					s.Properties[g.Property] = &openapi3.SchemaRef{Value: &openapi3.Schema{}}
				}
				if g.Value != "" {
					s.Enum = append(s.Enum, g.Value)
				}
			})
		}
	}
	return nil
}

// closeObjects sets additionalProperties false on every object schema with
// properties that says nothing of other properties, except the parts of
// an allOf (which add up to one object).
func closeObjects(doc *openapi3.T) {
	eachSchema(doc, func(ref *openapi3.SchemaRef, part bool) {
		s := ref.Value
		if !part && len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			no := false
			s.AdditionalProperties.Has = &no
		}
	})
}

// eachSchema calls f once for every schema reference of the document (the
// components and what the operations' bodies and answers hold), with
// whether it is a part of an allOf.
func eachSchema(doc *openapi3.T, f func(ref *openapi3.SchemaRef, part bool)) {
	seen := map[*openapi3.SchemaRef]bool{}
	var walk func(ref *openapi3.SchemaRef, part bool)
	walk = func(ref *openapi3.SchemaRef, part bool) {
		if ref == nil || ref.Value == nil || seen[ref] {
			return
		}
		seen[ref] = true
		f(ref, part)
		s := ref.Value
		for _, p := range s.Properties {
			walk(p, false)
		}
		walk(s.Items, false)
		walk(s.AdditionalProperties.Schema, false)
		for _, x := range s.AllOf {
			walk(x, true)
		}
		for _, x := range append(slices.Clone(s.AnyOf), s.OneOf...) {
			walk(x, false)
		}
	}
	for _, c := range doc.Components.Schemas {
		walk(c, false)
	}
	for _, it := range doc.Paths.Map() {
		for _, op := range it.Operations() {
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for _, mt := range op.RequestBody.Value.Content {
					walk(mt.Schema, false)
				}
			}
			for _, r := range op.Responses.Map() {
				if r.Value != nil {
					for _, mt := range r.Value.Content {
						walk(mt.Schema, false)
					}
				}
			}
		}
	}
}

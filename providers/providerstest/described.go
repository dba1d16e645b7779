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

	path   string
	once   sync.Once
	router routers.Router
	err    error
}

// NewDescription names the document at path; it is read on first use.
func NewDescription(path string) *Description { return &Description{path: path} }

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
	if d.UndocumentedErrors && route.Operation.Responses.Status(rec.Code) == nil && route.Operation.Responses.Default() == nil {
		return
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

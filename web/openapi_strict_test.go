package web

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/static"
	"github.com/getkin/kin-openapi/openapi3"
)

// API2, API1: the document validates under the strictest
// common checks, so outside tools generate clients from it: kin-openapi with
// every optional check on (formats, patterns, defaults and examples against
// their schemas), and the rules of the OpenAPI 3.1 schema that swagger-cli
// and openapi-typescript enforce and kin-openapi does not: info.license
// names a url or an SPDX identifier (exactly one), operationIds are unique,
// and a path's template parameters are declared once each, in: path,
// required.
func TestOpenAPIValidatesStrictly(t *testing.T) {
	raw, err := fs.ReadFile(static.FS, "openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background(),
		openapi3.EnableSchemaFormatValidation(), openapi3.EnableSchemaPatternValidation(),
		openapi3.EnableSchemaDefaultsValidation(), openapi3.EnableExamplesValidation(),
		openapi3.EnableMultiError()); err != nil {
		t.Errorf("kin-openapi, strict: %v", err)
	}

	for _, p := range openAPIStrictProblems(doc) {
		t.Error(p)
	}
}

// openAPIStrictProblems lists the document's breaches of the 3.1 schema's
// rules kin-openapi leaves out.
func openAPIStrictProblems(doc *openapi3.T) []string {
	var out []string
	switch l := doc.Info.License; {
	case l == nil:
		out = append(out, "info.license is missing")
	case l.Name == "":
		out = append(out, "info.license.name is empty")
	case (l.URL == "") == (l.Identifier == ""):
		out = append(out, "info.license needs exactly one of url and identifier (the 3.1 schema's oneOf)")
	case l.URL != "":
		if u, err := url.Parse(l.URL); err != nil || !u.IsAbs() {
			out = append(out, fmt.Sprintf("info.license.url %q is not an absolute URI", l.URL))
		}
	case !regexp.MustCompile(`^(LicenseRef-[A-Za-z0-9.-]+|[A-Za-z0-9.+-]+)$`).MatchString(l.Identifier):
		out = append(out, fmt.Sprintf("info.license.identifier %q is not an SPDX identifier", l.Identifier))
	}
	ids := map[string]string{}
	template := regexp.MustCompile(`\{([^}]+)\}`)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if prev, ok := ids[op.OperationID]; ok && op.OperationID != "" {
				out = append(out, fmt.Sprintf("%s repeats operationId %q of %s", where, op.OperationID, prev))
			}
			ids[op.OperationID] = where
			seen := map[string]int{}
			for _, ps := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				if p := ps.Value; p != nil {
					seen[p.In+" "+p.Name]++
					if p.In == "path" && (!p.Required || !strings.Contains(path, "{"+p.Name+"}")) {
						out = append(out, fmt.Sprintf("%s: path parameter %q must be required and in the path", where, p.Name))
					}
				}
			}
			for k, n := range seen {
				if n > 1 && len(op.Parameters) > 0 && len(item.Parameters) == 0 {
					out = append(out, fmt.Sprintf("%s declares %s %d times", where, k, n))
				}
			}
			for _, m := range template.FindAllStringSubmatch(path, -1) {
				if seen["path "+m[1]] == 0 {
					out = append(out, fmt.Sprintf("%s: {%s} is not declared", where, m[1]))
				}
			}
		}
	}
	return out
}

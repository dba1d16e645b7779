package web

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docEndpoint is a method and path the README or a docs/ page says the
// server answers, and where it says so.
type docEndpoint struct{ where, method, path string }

var (
	httpMethod   = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE|HEAD)$`)
	methodPath   = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE|HEAD) (/\S*|…/\S*)`)
	backticked   = regexp.MustCompile("`([^`]+)`")
	routeRowCell = regexp.MustCompile("(?m)^\\| (`(?:GET|POST|PUT|PATCH|DELETE|HEAD)[^|]*) \\|")
)

// tableEndpoints reads a route table's first cell: "`GET /v1/x`",
// "`GET`, `PUT /v1/x`" (both methods on /v1/x), "`GET /v1/x/{id}/a`, `POST
// …/b`" (b beside a) and groups separated by ";".
func tableEndpoints(where, cell string) []docEndpoint {
	var out []docEndpoint
	prev := ""
	for _, group := range strings.Split(cell, ";") {
		var pending []string
		for _, m := range backticked.FindAllStringSubmatch(group, -1) {
			tok := m[1]
			if httpMethod.MatchString(tok) {
				pending = append(pending, tok)
				continue
			}
			mp := methodPath.FindStringSubmatch(tok)
			if mp == nil {
				continue
			}
			path, _, _ := strings.Cut(mp[2], "?")
			if rest, ok := strings.CutPrefix(path, "…/"); ok {
				path = prev[:strings.LastIndex(prev, "/")+1] + rest
			}
			prev = path
			for _, method := range append(pending, mp[1]) {
				out = append(out, docEndpoint{where, method, path})
			}
			pending = nil
		}
	}
	return out
}

// curlEndpoint reads a curl command of a sh block: -X's method (POST with
// -d and no -X, else GET) and its URL's path.
func curlEndpoint(where, line string) (docEndpoint, bool) {
	words := strings.Fields(line)
	method, url := "", ""
	for i, w := range words {
		w = strings.Trim(w, `'"`)
		switch {
		case w == "-X" && i+1 < len(words):
			method = words[i+1]
		case (w == "-d" || w == "--data") && method == "":
			method = "POST"
		case strings.Contains(w, "://") || strings.HasPrefix(w, "localhost:") || strings.HasPrefix(w, "127.0.0.1:"):
			url = w
		}
	}
	if url == "" {
		return docEndpoint{}, false
	}
	if method == "" {
		method = "GET"
	}
	_, rest, _ := strings.Cut(url, "://")
	if rest == "" {
		rest = url
	}
	_, path, _ := strings.Cut(rest, "/")
	path, _, _ = strings.Cut("/"+path, "?")
	return docEndpoint{where, method, path}, true
}

// docEndpoints are the curl commands of every sh block and the route
// tables (a first cell starting with a method) of the README and docs/.
func docEndpoints(t *testing.T) []docEndpoint {
	t.Helper()
	pages, _ := filepath.Glob("../docs/*.md")
	pages = append(pages, "../README.md")
	var out []docEndpoint
	for _, page := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(page, "../")
		in, pending := false, ""
		for i, line := range strings.Split(string(src), "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				in = trimmed == "```sh"
				continue
			}
			if !in {
				continue
			}
			if strings.HasSuffix(trimmed, "\\") {
				pending += strings.TrimSuffix(trimmed, "\\") + " "
				continue
			}
			full := pending + trimmed
			pending = ""
			if strings.HasPrefix(full, "curl ") {
				e, ok := curlEndpoint(name+":"+strconv.Itoa(i+1), full)
				if !ok {
					t.Errorf("%s:%d: a curl command without a URL", name, i+1)
					continue
				}
				out = append(out, e)
			}
		}
		for _, m := range routeRowCell.FindAllStringSubmatch(string(src), -1) {
			out = append(out, tableEndpoints(name, m[1])...)
		}
	}
	return out
}

var routeParam = regexp.MustCompile(`^(:\w+|\{\w+\})$`)

// routeMatches says whether the registered path answers the documented one:
// segment by segment, a parameter (:id, {id}) matching any segment and a
// trailing * the rest.
func routeMatches(registered, documented string) bool {
	r := strings.Split(strings.Trim(registered, "/"), "/")
	d := strings.Split(strings.Trim(documented, "/"), "/")
	for i, seg := range r {
		if seg == "*" {
			return true
		}
		if i >= len(d) {
			return false
		}
		if seg != d[i] && !routeParam.MatchString(seg) {
			return false
		}
	}
	return len(r) == len(d)
}

func TestTableEndpoints(t *testing.T) {
	got := tableEndpoints("x", "`GET`, `POST /v1/volumes`; `GET`, `DELETE /v1/volumes/{id}`; `GET /v1/gpu/clusters/{id}/kubeconfig`, `POST …/retry-install`")
	want := []docEndpoint{{"x", "GET", "/v1/volumes"}, {"x", "POST", "/v1/volumes"}, {"x", "GET", "/v1/volumes/{id}"},
		{"x", "DELETE", "/v1/volumes/{id}"}, {"x", "GET", "/v1/gpu/clusters/{id}/kubeconfig"}, {"x", "POST", "/v1/gpu/clusters/{id}/retry-install"}}
	if len(got) != len(want) {
		t.Fatalf("tableEndpoints = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("tableEndpoints[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if e, _ := curlEndpoint("x", `curl -s -X POST -H 'A: b' http://127.0.0.1:8080/v1/gpu/clusters/quote -d '{}'`); e.method != "POST" || e.path != "/v1/gpu/clusters/quote" {
		t.Errorf("curlEndpoint = %v", e)
	}
	if e, _ := curlEndpoint("x", `curl -X POST localhost:8080/dev/clock -d minutes=5`); e.path != "/dev/clock" {
		t.Errorf("curlEndpoint = %v", e)
	}
	if !routeMatches("/v1/gpu/clusters/:id", "/v1/gpu/clusters/{id}") || routeMatches("/v1/gpu/clusters/:id", "/v1/gpu/clusters") {
		t.Error("routeMatches is wrong")
	}
}

// Every curl command of the README's and docs/' sh blocks and every row of
// their route tables (the REST API's, the development routes') names a
// method and path the router answers, so a route renamed or removed fails
// here until the page says so.
func TestDocsEndpointsExist(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	routes := app.e.Routes()
	docs := docEndpoints(t)
	curls := 0
	for _, d := range docs {
		if strings.Contains(d.where, ":") {
			curls++
		}
		found := false
		for _, r := range routes {
			if r.Method == d.method && routeMatches(r.Path, d.path) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: %s %s is not a route of the server", d.where, d.method, d.path)
		}
	}
	if len(docs) < 40 || curls < 5 {
		t.Fatalf("found %d documented endpoints, %d of them curl commands: the scan is broken", len(docs), curls)
	}
}

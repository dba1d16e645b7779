package mcpserver

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler is the Streamable HTTP endpoint (/mcp), to be mounted behind a
// check of the caller's API key. Each POST is a whole exchange (stateless:
// no session is kept in one process's memory, so any instance of a
// deployment answers any request, OP4), served by a server whose client
// calls api, the same server's router, in process with keyOf(request): the
// tools then see exactly what the REST API shows that key (its
// organisation and environment, another organisation's ids as not found).
//
// The SDK's DNS-rebinding guard is off: it refuses a loopback connection
// whose Host is not loopback, which is every request through a reverse
// proxy on the same machine, and it protects servers that trust the
// network; this endpoint trusts only the bearer key, which a rebound page
// does not have.
//
// Answers are JSON, except for a call that asked for progress (a
// progressToken, e.g. wait_for_cluster's) from a client that accepts an
// event stream: its answer is a stream that carries the progress
// notifications before the result. A call may block up to MaxWait, past
// the server's WriteTimeout.
func Handler(api http.Handler, keyOf func(*http.Request) string) http.Handler {
	server := func(r *http.Request) *mcp.Server {
		c := client.New("http://in-process", keyOf(r)) // the host is the caller's (inProcess)
		c.HTTP, c.UserAgent = &http.Client{Transport: inProcess{api: api, from: r}}, "clusterdeck-mcp"
		return New(c)
	}
	plain := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true})
	streamed := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(MaxWait + time.Minute))
		if r.Method != http.MethodPost || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			plain.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "could not read the request", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"progressToken"`)) {
			streamed.ServeHTTP(w, r)
			return
		}
		plain.ServeHTTP(w, r)
	})
}

// inProcess is an http.RoundTripper that serves each request with api
// directly: the full middleware stack and handlers, no socket. The request
// keeps the /mcp caller's address, so audit entries and throttles see the
// agent, not the server.
type inProcess struct {
	api  http.Handler
	from *http.Request
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.RemoteAddr, r.Host, r.RequestURI = t.from.RemoteAddr, t.from.Host, req.URL.RequestURI()
	for _, h := range []string{"X-Forwarded-For", "X-Real-Ip"} {
		if v := t.from.Header.Values(h); len(v) > 0 {
			r.Header[h] = v
		}
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	w := &recorder{header: http.Header{}}
	t.api.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: req,
	}, nil
}

// recorder is the in-process answer: headers, status and body.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

func (w *recorder) Flush() {}

// BearerKey is the API key of an `Authorization: Bearer …` header ("" when
// there is none).
func BearerKey(r *http.Request) string {
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(key)
}

package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
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
// notifications before the result.
//
// One POST is one JSON-RPC message: a batch (a JSON array, which the SDK
// still accepts from clients of protocol versions before 2025-06-18) is
// refused before any tool runs, so one request is bounded work (API5: one 109 KB batch ran 1,000 tool calls).
func Handler(api http.Handler, keyOf func(*http.Request) string) http.Handler {
	server := func(r *http.Request) *mcp.Server {
		c := client.New("http://in-process", keyOf(r)) // the host is the caller's (inProcess)
		c.HTTP, c.UserAgent = &http.Client{Transport: inProcess{api: api, from: r}}, "clusterdeck-mcp"
		return New(c)
	}
	sdk := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true,
		DisableLocalhostProtection: true, MaxRequestBodyBytes: MaxMessageBytes})
	streamed := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true,
		DisableLocalhostProtection: true, MaxRequestBodyBytes: MaxMessageBytes})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			sdk.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxMessageBytes))
		if err != nil {
			WriteError(w, http.StatusRequestEntityTooLarge, InvalidRequest,
				"The message is larger than "+strconv.Itoa(MaxMessageBytes>>10)+" KB.")
			return
		}
		if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
			WriteError(w, http.StatusBadRequest, InvalidRequest,
				"Batches are not accepted: send one JSON-RPC message per request.")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		// The message is read: a call (wait_for_cluster) may now block up to
		// MaxWait, past the server's read and write timeouts (a read deadline
		// passing would cancel it).
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Now().Add(MaxWait + time.Minute))
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") && bytes.Contains(body, []byte(`"progressToken"`)) {
			streamed.ServeHTTP(w, r)
			return
		}
		sdk.ServeHTTP(w, r)
	})
}

// MaxMessageBytes is the largest JSON-RPC message /mcp reads: a tool's
// arguments are a few KB (a launch's env and ports included).
const MaxMessageBytes = 256 << 10

// InvalidRequest is JSON-RPC's code for a message that is not a request.
const InvalidRequest = -32600

// WriteError answers a JSON-RPC error without an id (the message was not
// read as a request), as the MCP specification allows for refused HTTP
// requests, with the HTTP status.
func WriteError(w http.ResponseWriter, status, code int, message string) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
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
	// The call ends when the /mcp caller leaves (A4, X16): a wait's long
	// poll is cancelled with it, instead of running on to MaxWait.
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	defer context.AfterFunc(t.from.Context(), cancel)()
	r := req.Clone(ctx)
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

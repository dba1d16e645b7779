// Package client is a Go client for Clusterdeck's REST API v1: offers,
// quotes, launches (with an Idempotency-Key), the clusters' state,
// connections and logs, and terminate. Its bodies are package api's types,
// the ones the server writes; its errors carry the API's error shape.
//
//	c := client.New("https://deck.example.com", os.Getenv("CLUSTERDECK_API_KEY"))
//	q, err := c.Quote(ctx, client.QuoteFor("H100_80GB", 4, 8))
//	cl, created, err := c.Launch(ctx, api.LaunchBody{QuoteID: q.ID}, client.NewIdempotencyKey())
//
// It uses only the standard library and api.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
)

// Client calls one Clusterdeck. Its fields may be changed before first use.
type Client struct {
	BaseURL   string        // e.g. https://deck.example.com
	APIKey    string        // cdk_…; sent as a bearer token when not empty
	HTTP      *http.Client  // no overall timeout: log streams last
	Timeout   time.Duration // each request but a log stream; 0 = none
	UserAgent string
}

// New is a client for the Clusterdeck at baseURL, acting with apiKey.
func New(baseURL, apiKey string) *Client {
	return &Client{BaseURL: baseURL, APIKey: apiKey, HTTP: &http.Client{}, Timeout: 60 * time.Second, UserAgent: "clusterdeck-go"}
}

// Error is an answer that is not 2xx. When the body has the API's error
// shape, ErrorBody is it; otherwise Code is "http_<status>" and Message
// says what came back instead (NotAPI).
type Error struct {
	Status int
	api.ErrorBody
	NotAPI bool   // the body was not the API's error shape
	Body   []byte // as it came
}

func (e *Error) Error() string { return e.Message }

// Refused reports a refusal the caller may act on rather than a failure:
// no capacity, a changed price, a quota or the balance (API2).
func (e *Error) Refused() bool {
	switch e.Code {
	case api.CodeNoCapacity, api.CodePriceChanged, api.CodeQuotaExceeded, api.CodeInsufficientBalance:
		return true
	}
	return false
}

// Extra decodes the error's member name (e.g. "shape", "old", "advice")
// into v; false when it is absent or not of v's type.
func (e *Error) Extra(name string, v any) bool {
	raw, ok := e.ErrorBody.Extra[name]
	return ok && json.Unmarshal(raw, v) == nil
}

// ErrNotJSON is a 2xx answer that is not JSON (or a log stream that is not
// an event stream): the base URL is likely not Clusterdeck's.
var ErrNotJSON = errors.New("the answer is not the API's")

// Option changes one call.
type Option func(*call)

type call struct {
	raw    *[]byte
	status *int
}

// Raw stores the answer's body, as it came, in *dst.
func Raw(dst *[]byte) Option { return func(c *call) { c.raw = dst } }

// NewIdempotencyKey is a fresh key for Launch. Keep it to retry a launch
// safely: the same key and body give the same cluster (L1).
func NewIdempotencyKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "cli-" + hex.EncodeToString(b[:])
}

func (c *Client) endpoint(path string, q url.Values) string {
	u := strings.TrimRight(c.BaseURL, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, body any) (*http.Request, error) {
	if u, err := url.ParseRequestURI(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%q is not an http(s) URL", c.BaseURL)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint(path, q), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	if k := strings.TrimSpace(c.APIKey); k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	return req, nil
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP == nil {
		return http.DefaultClient
	}
	return c.HTTP
}

// do sends one request and decodes a 2xx JSON answer into out (when not
// nil); anything else is an *Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any, header http.Header, opts []Option) error {
	var o call
	for _, opt := range opts {
		opt(&o)
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	req, err := c.newRequest(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return c.transportError(ctx, err)
	}
	if o.status != nil {
		*o.status = resp.StatusCode
	}
	if resp.StatusCode/100 != 2 {
		return decodeError(resp, raw, req.URL.Redacted())
	}
	if resp.StatusCode == http.StatusNoContent && out == nil {
		return nil // DELETE /v1/volumes/{id}
	}
	if !json.Valid(raw) {
		return fmt.Errorf("%s answered HTTP %d with something that is not JSON (%s): %w",
			req.URL.Redacted(), resp.StatusCode, contentType(resp), ErrNotJSON)
	}
	if o.raw != nil {
		*o.raw = raw
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("could not read the API's answer: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

func (c *Client) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach the API at %s: %w", c.BaseURL, err)
}

func contentType(resp *http.Response) string {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		return ct
	}
	return "no content type"
}

// decodeError reads the API's {"error":{…}}, or says what came back instead.
func decodeError(resp *http.Response, raw []byte, where string) *Error {
	e := &Error{Status: resp.StatusCode, Body: raw}
	var env api.Error
	if json.Unmarshal(raw, &env) == nil {
		e.ErrorBody = env.Error
	}
	if e.Code == "" {
		e.Code, e.NotAPI = "http_"+strconv.Itoa(resp.StatusCode), true
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("%s answered HTTP %d %s (%s)", where, resp.StatusCode, http.StatusText(resp.StatusCode), contentType(resp))
	}
	return e
}

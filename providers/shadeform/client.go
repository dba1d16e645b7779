package shadeform

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/cloudkit"
)

// newClient configures the shared request loop for Shadeform: the
// X-API-KEY header, its error body, and a create never resent after a
// transient failure (the caller reconciles by name). Shadeform documents
// no rate limit; a 429 is honoured with its Retry-After.
func newClient(cfg Config) *cloudkit.Client {
	c := cloudkit.NewClient(Name, cfg.BaseURL, cfg.HTTPClient, cfg.Now, cfg.Sleep, cfg.Retries, cfg.Backoff)
	c.Auth = func(h http.Header) { h.Set("X-API-KEY", cfg.APIKey) }
	c.Decode = func(status int, body []byte, out any) error {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil // delete and restart answer an empty 200
		}
		return cloudkit.JSON(status, body, out)
	}
	c.Refusal = func(op string, status int, body []byte) *providers.Error {
		var ae APIError
		_ = json.Unmarshal(body, &ae)
		return &providers.Error{Class: classify(op, status, ae), Code: ae.ErrorCode, Message: ae.Error}
	}
	c.Once = func(_, path string) bool { return path == pathCreate }
	return c
}

// capacityRe: Shadeform documents no capacity code; its quickstart says to
// move on when an error "implies that the selected instance is out of capacity".
var capacityRe = regexp.MustCompile(`(?i)capacity|out of stock|not available|unavailable|no (instances|machines) available|sold out`)

// classify maps an error onto the provider-neutral classes. The published
// description documents no error statuses: this follows the observed
// INSUFFICIENT_FUNDS body and HTTP's meanings.
func classify(op string, status int, ae APIError) error {
	code := strings.ToUpper(ae.ErrorCode)
	switch {
	case strings.Contains(code, "FUNDS") || strings.Contains(code, "BALANCE") || strings.Contains(code, "QUOTA") || strings.Contains(code, "LIMIT_EXCEEDED"):
		return providers.ErrQuota
	case status == http.StatusTooManyRequests:
		return providers.ErrRateLimited
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return providers.ErrAuth
	case status == http.StatusRequestTimeout, status >= 500:
		return providers.ErrTransient
	case op == opPlace && (capacityRe.MatchString(code) || capacityRe.MatchString(ae.Error)):
		return providers.ErrNoCapacity
	case status == http.StatusPaymentRequired:
		return providers.ErrQuota
	case status == http.StatusConflict && op != opPlace:
		return providers.ErrTransient // e.g. a restart while the machine changes state: later it may work
	case status == http.StatusNotFound && op != opPlace:
		return providers.ErrNotFound
	}
	return providers.ErrValidation
}

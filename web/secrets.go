package web

import (
	"strings"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/labstack/echo/v4"
)

// Answers that carry secrets (issue 11): every signed-in page and every /v1
// answer is sent with Cache-Control: no-store (requireUser, requireAPI), so
// no browser or proxy cache keeps an environment block, a connection sheet,
// a new API key or a kubeconfig. On the cluster page the customer's
// environment values are masked until the reader reveals them.

// noStore marks the response as not to be stored by any cache.
func noStore(c echo.Context) { c.Response().Header().Set("Cache-Control", "no-store") }

// maskedEnvText is what a masked value shows.
const maskedEnvText = "••••••••"

// maskedEnvBlock is node-0's environment block with the values the customer
// gave (tokens, passwords) masked; Clusterdeck's own variables stay readable.
// It is "" when the customer gave none (nothing to hide).
func maskedEnvBlock(s nodespec.Cluster, user map[string]string) string {
	var b strings.Builder
	masked := false
	for _, e := range s.Env(0) {
		v := nodespec.ShellQuote(e.Value)
		if _, mine := user[e.Name]; mine {
			v, masked = maskedEnvText, true
		}
		b.WriteString("export " + e.Name + "=" + v + "\n")
	}
	if !masked {
		return ""
	}
	return b.String()
}

package web

import (
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// Answers that carry secrets (A3): every signed-in page and every /v1
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

// envViews lists node-0's environment for the connect section: the
// customer's values masked (revealed with the shell block), NODE_RANK
// marked as the one variable that differs per node (N2, N3).
func envViews(s nodespec.Cluster, user map[string]string) []views.EnvView {
	var out []views.EnvView
	for _, e := range s.Env(0) {
		v := views.EnvView{Name: e.Name, Value: nodespec.ShellQuote(e.Value), Scope: views.EnvEveryNode}
		switch _, mine := user[e.Name]; {
		case mine:
			v.Value, v.Masked, v.Scope = maskedEnvText, true, views.EnvYours
		case e.Name == nodespec.EnvNodeRank:
			v.Scope, v.Note = views.EnvPerNode, fmt.Sprintf("node-i has i (0 to %d); node-0 shown", len(s.Nodes)-1)
		}
		out = append(out, v)
	}
	return out
}

package mcpserver

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Usage is `clusterdeck mcp --help`.
const Usage = `clusterdeck mcp — Clusterdeck's tools for an AI agent, over stdio (API5).

Usage:
  clusterdeck mcp [--api URL] [--key KEY]

An MCP client starts it and speaks MCP on its stdin and stdout; the tools
call the REST API of the Clusterdeck at --api (env CLUSTERDECK_API; default
http://127.0.0.1:8080) with the API key --key (env CLUSTERDECK_API_KEY; create
one under Settings → API keys). Messages for people go to stderr.

A Clusterdeck server also serves the same tools at /mcp (Streamable HTTP,
Authorization: Bearer cdk_…).
`

// Command is `clusterdeck mcp args…`: the tools over stdin and stdout,
// until the agent closes stdin or ctx ends.
func Command(ctx context.Context, args []string, getenv func(string) string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, Usage) }
	base := fs.String("api", getenv("CLUSTERDECK_API"), "Clusterdeck's URL")
	key := fs.String("key", getenv("CLUSTERDECK_API_KEY"), "an API key, cdk_…")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("mcp takes no arguments (got %q)", fs.Arg(0))
	}
	if *base == "" {
		*base = "http://127.0.0.1:8080"
	}
	if u, err := url.ParseRequestURI(*base); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("--api %q is not an http(s) URL", *base)
	}
	if strings.TrimSpace(*key) == "" {
		return fmt.Errorf("no API key: pass --key cdk_… or set CLUSTERDECK_API_KEY (create one under Settings → API keys)")
	}
	c := client.New(*base, *key)
	c.UserAgent, c.Timeout = "clusterdeck-mcp", 60*time.Second
	return New(c).Run(ctx, &mcp.IOTransport{Reader: stdin, Writer: stdout})
}

// version is the module version this binary was built from.
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

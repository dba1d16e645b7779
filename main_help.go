package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// commandHelp is each server-side command's `--help` text.
var commandHelp = map[string]string{
	"serve": `Usage: clusterdeck serve [--demo]

Serve the dashboard, the REST API and the jobs on $ADDR (default 127.0.0.1:8080),
applying pending database migrations first. Configuration comes from environment
variables (ADDR, DATABASE_URL, DATA_DIR, BASE_URL, ...; see docs/operating.md). SIGINT or
SIGTERM shuts it down gracefully.

--demo (development only; make run uses it) makes the demo organisation ready first,
as "clusterdeck demo" does, and prints its log-in once the server listens.
`,
	"migrate": `Usage: clusterdeck migrate

Apply pending database migrations to $DATABASE_URL (or the SQLite file in
$DATA_DIR) and exit. "serve" migrates too; this command lets a deployment migrate
before it starts new instances.
`,
	"demo": `Usage: clusterdeck demo

Development only: create (idempotently) a demo organisation, its owner, an API key
and a test balance in the configured database, and print the credentials as
email:, password: and api_key: lines. Refuses to run with CLUSTERDECK_ENV=production.
`,
	"admin": `Usage:
  clusterdeck admin grant EMAIL    make a user an operator (the /admin area)
  clusterdeck admin revoke EMAIL   take the operator flag away

The user must have signed up. Uses the configured database (DATABASE_URL or DATA_DIR).
`,
}

// wantsHelp reports whether a command's arguments ask for its help.
func wantsHelp(args []string) bool {
	if len(args) > 0 && args[0] == "help" {
		return true
	}
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
}

// printHelp prints cmd's help and reports whether cmd has one.
func printHelp(w io.Writer, cmd string) bool {
	if cmd == "agent" {
		fs, _ := agentFlags()
		fmt.Fprint(w, agentUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		return true
	}
	text, ok := commandHelp[cmd]
	fmt.Fprint(w, text)
	return ok
}

const agentUsage = `Usage: clusterdeck agent --server URL --token T [flags]

Run the cluster agent on a node: check in with the server, heartbeat, report the
peers it reaches on the private network, and run the software's install and check
steps; once the cluster is ready, mount /shared and the volume (beside its loop),
then open the workload's ports and start its start command once per boot. A machine's start-up script runs it; the token
authenticates one node.

Flags:
`

// agentFlagValues are the agent's command-line settings.
type agentFlagValues struct {
	server, token, machineID, privateIP, workload, dryRun *string
	every                                                 *time.Duration
	meshPort                                              *int
}

// agentFlags declares the agent's flags, for parsing and for its help.
func agentFlags() (*flag.FlagSet, agentFlagValues) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	return fs, agentFlagValues{
		server:    fs.String("server", "", "Clusterdeck's URL, e.g. https://deck.example.com"),
		token:     fs.String("token", "", "this node's agent token (cdn_…), or the cluster's bootstrap token (cdb_…) to claim this machine's rank"),
		machineID: fs.String("machine-id", os.Getenv("CLUSTERDECK_MACHINE_ID"), "with a bootstrap token: the provider's id of this machine (default $CLUSTERDECK_MACHINE_ID)"),
		every:     fs.Duration("every", 10*time.Second, "how often to check in for work"),
		privateIP: fs.String("private-ip", "", "this node's address on the private network (default: the address of its route to the server when private, else its first private IPv4 address, else the route's)"),
		meshPort:  fs.Int("mesh-port", 0, "TCP port the agent listens on for its peers' reach check (default 0: any free port, reported at check-in)"),
		workload:  fs.String("workload", "", "JSON file of what the placement asked this machine to run: {image, env, ports, sshKeys, startCommand}"),
		dryRun:    fs.String("dry-run", "", "for tests on a host that is not a cluster machine: write every step's script (mounts, SSH keys, ports, installs, start command) into this directory instead of running it, and dial no peer off loopback; only the GPU query runs"),
	}
}

// versionText is `clusterdeck version`: the module version and the commit
// the binary was built from, as the Go toolchain stamped them.
func versionText(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "clusterdeck (no build information)\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "clusterdeck %s\n", info.Main.Version)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "commit %s", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " (%s)", t)
		}
		if settings["vcs.modified"] == "true" {
			b.WriteString(" with uncommitted changes")
		}
		b.WriteString("\n")
	} else {
		b.WriteString("commit unknown (not built inside a git checkout, or built with -buildvcs=false)\n")
	}
	fmt.Fprintf(&b, "%s %s/%s\n", info.GoVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

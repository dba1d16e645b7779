// Package cli is `clusterdeck gpu …`: the REST API from the command line
// (API3). It speaks the API through package client only, never the
// database, so it works against any Clusterdeck from anywhere.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/client"
)

const gpuUsage = `clusterdeck gpu — Clusterdeck's REST API from the command line (API3).

Usage:
  clusterdeck gpu offers --accelerator H100_80GB --nodes 4 [--include-community]
        [--interconnect I] [--machine-kind K] [--gpus-per-node G] [--max-price USD]
  clusterdeck gpu clusters quote --accelerator A --nodes N --gpus-per-node G
        [--persistent-gb GB | --volume-id ID] [--max-hourly-price USD] [--location L]
        [--offer-id ID] [--include-community]
  clusterdeck gpu clusters quote --private-offer-id ID
  clusterdeck gpu clusters launch (--quote-id ID | --offer-id ID --nodes N --gpus-per-node G
        | --private-offer-id ID)
        [--name NAME] [--software none|slurm|kubernetes|ray] [--env K=V]... [--env-file FILE]
        [--port N]... [--ssh-key-id ID]... [--image IMAGE] [--start-command CMD]
        [--no-verify] [--idempotency-key K] [--wait [--timeout 30m]]
  clusterdeck gpu clusters list
  clusterdeck gpu clusters get ID
  clusterdeck gpu clusters connections ID
  clusterdeck gpu clusters logs ID [--node N] [--follow=false]
  clusterdeck gpu clusters terminate ID [--wait [--timeout 30m]]
  clusterdeck gpu clusters recovery ID --mode restart|off [--max-attempts 3] [--cooldown-minutes 5]
  clusterdeck gpu clusters top ID [--interval 5s] [--window 1h|24h|30d] [--once]
  clusterdeck gpu clusters gpu-watch ID [--stall on|off] [--stall-minutes N] [--idle on|off] [--idle-hours N]
        [--idle-threshold PCT] [--idle-action mail|stop|terminate] [--idle-grace-minutes N]
  clusterdeck gpu clusters recover ID [--wait [--timeout 30m]]
  clusterdeck gpu clusters verification ID
  clusterdeck gpu clusters verify ID --confirm-disruption [--wait [--timeout 30m]]
  clusterdeck gpu clusters keep ID
  clusterdeck gpu clusters add-worker ID [--wait [--timeout 30m]]
  clusterdeck gpu clusters replace ID --node N [--yes] [--wait [--timeout 30m]]
  clusterdeck gpu volumes list
  clusterdeck gpu volumes create --name NAME --location L --size-gb GB
  clusterdeck gpu volumes get ID
  clusterdeck gpu volumes grow ID --size-gb GB
  clusterdeck gpu volumes delete ID
  clusterdeck gpu reservations availability OFFER_ID [--nodes N] [--days D]
  clusterdeck gpu reservations book --offer-id ID --nodes N --start-at RFC3339 --hours H [--preview]
  clusterdeck gpu reservations list | get ID | cancel ID
  clusterdeck gpu clusters stop ID [--wait [--timeout 30m]]
  clusterdeck gpu clusters resume ID [--wait [--timeout 30m]]
  clusterdeck gpu events [--after N] [--cluster ID] [--follow]
  clusterdeck gpu billing balance
  clusterdeck gpu billing usage [--month YYYY-MM]
  clusterdeck gpu billing budgets [set ENV_ID AMOUNT | remove ENV_ID]
  clusterdeck gpu webhooks list
  clusterdeck gpu webhooks create --url URL --types T1,T2 [--description D] [--paused]
  clusterdeck gpu webhooks get ID
  clusterdeck gpu webhooks update ID [--url URL] [--types T1,T2] [--description D] [--enable | --pause]
  clusterdeck gpu webhooks delete ID
  clusterdeck gpu webhooks rotate-secret ID [--overlap-hours 24]
  clusterdeck gpu webhooks test ID
  clusterdeck gpu webhooks deliveries ID
  clusterdeck gpu webhooks redeliver ID DELIVERY_ID

Every command takes:
  --api URL   Clusterdeck's URL (env CLUSTERDECK_API; default http://127.0.0.1:8080)
  --key KEY   an API key, cdk_… (env CLUSTERDECK_API_KEY; create one under Settings → API keys)
  --json      print the API's JSON as it came instead of tables

Exit status: 0 done; 1 error (the API's message and field errors on stderr); 2 usage
error; 3 refused: no_capacity, price_changed, quota_exceeded, insufficient_balance.
A launch without --idempotency-key gets a fresh one, printed on stderr: repeat the
launch with it to retry safely (the same key and body give the same cluster, L1).

"offers" also lists your organisation's private offers (agreed on a quote request,
X9): quote or launch one with --private-offer-id at its locked price.

"clusters recovery" sets the automatic recovery policy (R3); "clusters recover" makes
one recovery attempt at once (R5). "clusters stop" stops every machine of a ready
cluster (B6): compute billing ends once all are, disks and the volume are kept (a volume
keeps billing); refused (stop_unsupported) where the provider cannot stop machines.
"clusters resume" starts a stopped cluster again: every machine, all or nothing; it
needs the balance a launch needs. With --wait it exits 0 once the cluster runs again,
1 if the resume failed.

"clusters add-worker" adds one more machine of the same offer to a ready cluster (L10):
admitted like a launch, billed from when it has joined. "clusters replace --node N"
shows what a new machine in place of node-N (which is down) costs; with --yes it
replaces it, same name and address, on the same billing line (X5).

"volumes" are persistent volumes of the key's environment (V1–V5): one location, one
cluster at a time (mounted at /shared/volume), billed by the GB-hour until deleted,
attached or not. Mount one with "clusters quote/launch --volume-id"; grow and delete
are refused (volume_attached) while a cluster that has not ended holds it.

"webhooks" are the signed endpoints of the key's environment (X8): owners' and admins'
keys only. create and rotate-secret print the signing secret (whsec_…) once; "webhooks
list" names every event type.

"billing balance" is the organisation's balance, burn rate, hours it lasts and spend this
month (B1); "billing usage" a month's cost per machine (B3); "billing budgets" the key's
environment's monthly budget, its spend and when it is reached at the current burn, and
when the balance and each running cluster run out (B5, X6). Owners' and admins' keys only.

"events" lists the key's environment's cluster events after a cursor (--after, the id in the
first column), with their type (cluster.ready, node.down, …); --follow stays and prints each
new one as it is written; --json prints one JSON object per line. "--wait" follows a cluster
through the same stream.

"clusterdeck gpu clusters launch --help" (and so on) lists every flag.
`

// Exit statuses of `clusterdeck gpu`.
const (
	exitFailed      = 1
	exitUsage       = 2
	exitRefused     = 3 // no_capacity, price_changed, quota_exceeded, insufficient_balance
	exitInterrupted = 130
)

// Exit is an exit status whose message the CLI has already printed: the
// caller exits with it and prints nothing more.
type Exit int

func (e Exit) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// usageError is a mistake in the command line (exit 2).
type usageError string

func (e usageError) Error() string { return string(e) }

// gpuCLI is one invocation's settings and outputs.
type gpuCLI struct {
	ctx            context.Context
	stdout, stderr io.Writer
	api, key       string
	json           bool
	requestTimeout time.Duration
}

// Run is `clusterdeck gpu args…`, with the environment read through getenv.
// A returned Exit has been reported on stderr already.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c := &gpuCLI{ctx: ctx, stdout: stdout, stderr: stderr, api: getenv("CLUSTERDECK_API"), key: getenv("CLUSTERDECK_API_KEY"),
		requestTimeout: 60 * time.Second}
	if c.api == "" {
		c.api = "http://127.0.0.1:8080"
	}
	// Common flags may come before the command too: `gpu --api URL clusters list`.
	fs := c.flagSet("gpu", "")
	fs.Usage = func() { fmt.Fprint(stderr, gpuUsage) }
	rest, err := parseFlags(fs, args, 0)
	if err != nil {
		return c.fail(err)
	}
	if len(rest) == 0 {
		fmt.Fprint(stderr, gpuUsage)
		return Exit(exitUsage)
	}
	switch cmd, rest := rest[0], rest[1:]; cmd {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, gpuUsage)
		return nil
	case "offers":
		return c.fail(c.offers(rest))
	case "clusters", "cluster":
		return c.fail(c.clusters(rest))
	case "billing":
		return c.fail(c.billing(rest))
	case "volumes", "volume":
		return c.fail(c.volumes(rest))
	case "reservations", "reservation": // X18
		return c.fail(c.reservations(rest))
	case "webhooks", "webhook":
		return c.fail(c.webhooks(rest))
	case "events":
		return c.fail(c.events(rest))
	case "runs", "run":
		return c.fail(c.runs(rest)) // X17
	default:
		return c.fail(usageError(fmt.Sprintf("unknown command %q", cmd)))
	}
}

// clusters dispatches `gpu clusters SUB …`.
func (c *gpuCLI) clusters(args []string) error {
	if len(args) == 0 {
		return usageError("name a clusters command: quote, launch, list, get, connections, logs, terminate, recovery, recover, stop, resume, add-worker, replace, top, gpu-watch, verification, verify or keep")
	}
	commands := map[string]func([]string) error{
		"quote": c.quote, "launch": c.launch, "list": c.list, "ls": c.list, "get": c.get, "show": c.get,
		"connections": c.connections, "logs": c.logs, "terminate": c.terminate,
		"add-worker": c.addWorker, "replace": c.replaceNode,
		"recovery": c.recoveryPolicy, "recover": c.recoverNow, "stop": c.stop, "resume": c.resume,
		"top": c.top, "gpu-watch": c.gpuWatch, "verification": c.verification, "verify": c.verifyAgain, "keep": c.keepUnverified,
	}
	sub, rest := args[0], args[1:]
	if run, ok := commands[sub]; ok {
		return run(rest)
	}
	switch sub {
	case "help", "-h", "--help":
		fmt.Fprint(c.stdout, gpuUsage)
		return nil
	}
	return usageError(fmt.Sprintf("unknown command \"clusters %s\"", sub))
}

// fail prints err for a person (and, with --json, the API's error body on
// stdout) and turns it into the exit status.
func (c *gpuCLI) fail(err error) error {
	if err == nil {
		return nil
	}
	var exit Exit
	var ue usageError
	var ae *client.Error
	switch {
	case errors.As(err, &exit):
		if exit == 0 {
			return nil
		}
		return exit
	case errors.Is(err, flag.ErrHelp):
		return nil
	case errors.As(err, &ue):
		fmt.Fprintf(c.stderr, "clusterdeck: %s\nRun \"clusterdeck gpu help\" for usage.\n", ue)
		return Exit(exitUsage)
	case errors.As(err, &ae):
		if c.json && json.Valid(ae.Body) {
			c.stdout.Write(withNewline(ae.Body))
		}
		c.printAPIError(ae)
		if ae.Refused() {
			return Exit(exitRefused)
		}
		return Exit(exitFailed)
	case c.ctx.Err() != nil:
		fmt.Fprintln(c.stderr, "clusterdeck: interrupted")
		return Exit(exitInterrupted)
	case errors.Is(err, client.ErrNotJSON):
		fmt.Fprintf(c.stderr, "clusterdeck: %v; is --api Clusterdeck's URL?\n", err)
		return Exit(exitFailed)
	}
	fmt.Fprintln(c.stderr, "clusterdeck:", err)
	return Exit(exitFailed)
}

// sdk is the API client for the flags given; needKey refuses to go on
// without an API key (every call but the public offers).
func (c *gpuCLI) sdk(needKey bool) (*client.Client, error) {
	if u, err := url.ParseRequestURI(c.api); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, usageError(fmt.Sprintf("--api %q is not an http(s) URL", c.api))
	}
	if needKey && strings.TrimSpace(c.key) == "" {
		return nil, usageError("no API key: pass --key cdk_… or set CLUSTERDECK_API_KEY (create one under Settings → API keys)")
	}
	api := client.New(c.api, c.key)
	api.UserAgent, api.Timeout = "clusterdeck-cli", c.requestTimeout
	return api, nil
}

func withNewline(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return append(b[:len(b):len(b)], '\n')
	}
	return b
}

// printRaw is --json's output: the body as the API sent it.
func (c *gpuCLI) printRaw(raw []byte) { c.stdout.Write(withNewline(raw)) }

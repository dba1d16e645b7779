package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// launchArgs is a parsed `gpu clusters launch`.
type launchArgs struct {
	body  api.LaunchBody
	shape shapeFlags
	key   string // the Idempotency-Key; empty = a fresh one
	wait  waitFlags
}

// parseLaunch reads the command line into a launch body (L1, N3).
func (c *gpuCLI) parseLaunch(args []string) (launchArgs, error) {
	fs := c.flagSet("launch", "clusters launch (--quote-id ID | --offer-id ID --nodes N --gpus-per-node G | --private-offer-id ID) [flags]")
	var a launchArgs
	b := &a.body
	a.shape.register(fs)
	fs.StringVar(&b.QuoteID, "quote-id", "", "launch from this quote (qt_…); priced flags repeated with another value answer price_changed")
	fs.StringVar(&b.Name, "name", "", "the cluster's name (default: from the shape)")
	fs.StringVar(&b.Software, "software", "", "none (default), slurm, kubernetes or ray")
	var envs, ports, keys listFlag
	fs.Var(&envs, "env", "`KEY=VALUE` on every node (repeatable; wins over --env-file)")
	envFile := fs.String("env-file", "", "a `file` of KEY=VALUE lines (# comments, blank lines and \"export \" allowed)")
	fs.Var(&ports, "port", "a `port` to open (repeatable)")
	fs.Var(&keys, "ssh-key-id", "an SSH key `id` to install on every node (repeatable; see Settings → SSH keys)")
	fs.StringVar(&b.Image, "image", "", "the image every node runs")
	fs.StringVar(&b.StartCommand, "start-command", "", "the command every node starts")
	noVerify := fs.Bool("no-verify", false, "hand the cluster over without verifying its machines and fabric first (verify: false)")
	fs.StringVar(&a.key, "idempotency-key", "", "the launch's Idempotency-Key (default: a fresh one, printed so a retry can reuse it)")
	a.wait.register(fs, "ready (exit 0), or failed, degraded, stopped or terminated (exit 1)")
	var watch watchFlags
	watch.register(fs, true)
	if err := noArgs(fs, args, "use --quote-id or --offer-id"); err != nil {
		return a, err
	}
	set := setFlags(fs)
	gw, err := watch.body(set, true)
	if err != nil {
		return a, err
	}
	b.GPUWatch = gw
	b.QuoteID, b.QuoteBody, b.SSHKeyIDs = strings.TrimSpace(b.QuoteID), a.shape.body(set), keys
	if *noVerify {
		off := false
		b.Verify = &off // X13: on unless asked
	}
	a.key = strings.TrimSpace(a.key)
	switch {
	case b.QuoteID == "" && a.shape.offerID == "" && a.shape.privateOfferID == "":
		return a, usageError("launch needs --quote-id ID (from \"clusters quote\"), --offer-id ID with --nodes N and --gpus-per-node G, or --private-offer-id ID")
	case b.QuoteID == "" && a.shape.privateOfferID == "" && !set["nodes"]:
		return a, usageError("launch --offer-id needs --nodes N (and --gpus-per-node G)")
	case b.Software != "" && !slices.Contains([]string{"none", "slurm", "kubernetes", "ray"}, b.Software):
		return a, usageError("--software is none, slurm, kubernetes or ray")
	}
	env, err := launchEnv(*envFile, envs)
	if err != nil {
		return a, err
	}
	if len(env) > 0 {
		b.Env = env
	}
	for _, p := range ports {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return a, usageError(fmt.Sprintf("--port %q: a port number", p))
		}
		b.Ports = append(b.Ports, n)
	}
	return a, nil
}

// launchEnv is --env-file's pairs with every --env on top.
func launchEnv(file string, envs []string) (map[string]string, error) {
	env := map[string]string{}
	if file != "" {
		fileEnv, err := readEnvFile(file)
		if err != nil {
			return nil, err
		}
		env = fileEnv
	}
	for _, kv := range envs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageError(fmt.Sprintf("--env %q: write KEY=VALUE", kv))
		}
		env[strings.TrimSpace(k)] = v
	}
	return env, nil
}

// launch is `gpu clusters launch` (L1): the launch, then with --wait the
// cluster followed until it is ready or can no longer become ready.
func (c *gpuCLI) launch(args []string) error {
	a, err := c.parseLaunch(args)
	if err != nil {
		return err
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	switch {
	case a.body.QuoteID == "" && a.shape.privateOfferID != "" && (a.body.Accelerator == nil || a.body.Nodes == nil || a.body.GPUsPerNode == nil):
		if err := c.completeFromPrivateOffer(sdk, &a.body.QuoteBody, a.shape.privateOfferID); err != nil {
			return err
		}
	case a.body.QuoteID == "" && a.shape.privateOfferID == "" && (a.body.Accelerator == nil || a.body.GPUsPerNode == nil):
		if err := c.completeFromOffer(sdk, &a.body.QuoteBody, a.shape); err != nil {
			return err
		}
	}
	if a.key == "" {
		a.key = client.NewIdempotencyKey()
		fmt.Fprintf(c.stderr, "Idempotency-Key: %s (to retry this launch safely, repeat it with --idempotency-key %s)\n", a.key, a.key)
	}
	var raw []byte
	cl, created, err := sdk.Launch(c.ctx, a.body, a.key, client.Raw(&raw))
	if err != nil {
		return err
	}
	progress := c.progress(a.wait.wait, raw)
	if progress == nil {
		return nil
	}
	if created {
		fmt.Fprintf(progress, "Launched %s %q: %s, %s (%s).\n", cl.ID, cl.Name, clusterShape(cl), perHour(cl.USDPerHour), cl.Status)
	} else {
		fmt.Fprintf(progress, "Already launched as %s %q with this Idempotency-Key (%s); nothing new was started.\n", cl.ID, cl.Name, cl.Status)
	}
	if !a.wait.wait {
		fmt.Fprintf(progress, "Follow it: clusterdeck gpu clusters get %s (or launch with --wait)\n", cl.ID)
		return nil
	}
	final, err := c.watchAndPrint(sdk, cl, raw, a.wait, progress, false, launchDone)
	if err != nil {
		return err
	}
	return c.launchOutcome(final, progress)
}

// progress is where a command that may --wait writes for people: stdout,
// or stderr with --json (whose stdout is the API's JSON). Nil means --json
// without --wait: the answer is printed and there is nothing more to say.
func (c *gpuCLI) progress(wait bool, raw []byte) io.Writer {
	switch {
	case !c.json:
		return c.stdout
	case !wait:
		c.printRaw(raw)
		return nil
	}
	return c.stderr
}

// launchOutcome says how a followed launch ended: exit 0 only when ready.
func (c *gpuCLI) launchOutcome(final api.Cluster, progress io.Writer) error {
	if isReady(final.Status) {
		fmt.Fprintf(progress, "Cluster %s is %s (billing since %s). Ready is infrastructure readiness only: run your own\n"+
			"application check before sending traffic (\"connections\" shows one).\n", final.ID, final.Status, fmtTimePtr(final.ReadyAt))
		fmt.Fprintf(progress, "Connect: clusterdeck gpu clusters connections %s\n", final.ID)
		return nil
	}
	msg := fmt.Sprintf("cluster %s is %s", final.ID, final.Status)
	if final.LastError != nil && *final.LastError != "" {
		msg += ": " + *final.LastError
	}
	switch final.Status {
	case "failed":
		msg += " (every machine was released; nothing was billed)"
	case "degraded":
		msg += " (machines stay up and billing runs: retry the install from the dashboard, or terminate)"
	}
	fmt.Fprintln(c.stderr, "clusterdeck:", msg)
	return Exit(exitFailed)
}

// completeFromOffer fills the accelerator and GPUs per machine a launch
// straight from an offer needs, from the public catalog.
func (c *gpuCLI) completeFromOffer(sdk *client.Client, b *api.QuoteBody, shape shapeFlags) error {
	out, err := sdk.Offers(c.ctx, client.OffersQuery{Nodes: shape.nodes, IncludeCommunity: true})
	if err != nil {
		return err
	}
	for _, g := range out.Groups {
		for _, o := range g.Offers {
			if o.ID != shape.offerID {
				continue
			}
			if b.Accelerator == nil {
				b.Accelerator = &o.Accelerator
			}
			if b.GPUsPerNode == nil {
				b.GPUsPerNode = &o.GPUsPerNode
			}
			return nil
		}
	}
	return fmt.Errorf("offer %s is not in the catalog now (\"clusterdeck gpu offers\" lists what can start); or pass --accelerator and --gpus-per-node", shape.offerID)
}

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// readEnvFile reads KEY=VALUE lines; blank lines and # comments are
// skipped, "export " is allowed, and one pair of surrounding quotes is
// taken off a value.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError("--env-file: " + err.Error())
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "export "))
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !envKeyRE.MatchString(k) {
			return nil, usageError(fmt.Sprintf("%s:%d: write KEY=VALUE (a name of letters, digits and _)", path, n))
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, usageError(fmt.Sprintf("--env-file %s: %v", path, err))
	}
	return env, nil
}

package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// printRecovery is the recovery part of "clusters get" and of the recovery commands.
func printRecovery(w io.Writer, r api.Recovery) {
	policy := "off (nothing happens when a machine goes down but the degraded status and a mail)"
	if r.Mode == "restart" {
		policy = fmt.Sprintf("restart, %d attempts per episode, %d minutes apart", r.MaxAttempts, r.CooldownMinutes)
	}
	fmt.Fprintf(w, "Recovery: %s\n", policy)
	if r.EpisodeStartedAt == nil {
		fmt.Fprintln(w, "  every machine is healthy")
		return
	}
	attempts := fmt.Sprint(r.AttemptsUsed)
	if r.Mode == "restart" {
		attempts += fmt.Sprintf(" of %d", r.MaxAttempts)
	}
	fmt.Fprintf(w, "  unhealthy since %s, attempts %s", fmtTimePtr(r.EpisodeStartedAt), attempts)
	if r.NextAttemptAt != nil {
		fmt.Fprintf(w, ", next not before %s", fmtTimePtr(r.NextAttemptAt))
	}
	fmt.Fprintln(w)
	for _, o := range r.Outcomes {
		line := "  " + o.Node + " " + o.Outcome
		if o.Message != "" {
			line += " (" + o.Message + ")"
		}
		fmt.Fprintln(w, line)
	}
	if r.Exhausted {
		fmt.Fprintln(w, "  every attempt is spent (recovery_exhausted): terminate is the way out")
	}
}

// recoveryPolicy is `gpu clusters recovery ID --mode restart --max-attempts 3
// --cooldown-minutes 5` (R3).
func (c *gpuCLI) recoveryPolicy(args []string) error {
	fs := c.flagSet("recovery", "clusters recovery ID --mode restart|off [--max-attempts 3] [--cooldown-minutes 5]")
	mode := fs.String("mode", "", "restart: bring machines that go down back one by one; off: only report (required)")
	maxAttempts := fs.Int("max-attempts", 3, "attempts per unhealthy episode (1–10)")
	cooldown := fs.Int("cooldown-minutes", 5, "minutes between attempts (1–120)")
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	if *mode == "" {
		return usageError("--mode is required: restart or off")
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	var raw []byte
	cl, err := sdk.SetRecovery(c.ctx, id, client.RecoveryPolicyOf(*mode, *maxAttempts, *cooldown), client.Raw(&raw))
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	fmt.Fprintf(c.stdout, "Recovery policy of %s %q saved.\n", cl.ID, cl.Name)
	printRecovery(c.stdout, cl.Recovery)
	return nil
}

// recoverNow is `gpu clusters recover ID [--wait]` (R5): one attempt at once.
func (c *gpuCLI) recoverNow(args []string) error {
	a, err := c.clusterAction(args, "recover", "through its recovery attempt", (*client.Client).Recover)
	if err != nil || a.progress == nil {
		return err
	}
	sdk, cl, raw, w, progress := a.sdk, a.cl, a.raw, a.w, a.progress
	fmt.Fprintf(progress, "Recover now accepted for %s %q: the machines that are down are restarted one by one.\n", cl.ID, cl.Name)
	if !w.wait {
		return nil
	}
	before := cl.Recovery.AttemptsUsed
	final, err := c.watchAndPrint(sdk, cl, raw, w, progress, true, func(cl api.Cluster) bool { return recoverDone(cl, before) })
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "Cluster %s is %s.\n", final.ID, statusText(final))
	printRecovery(progress, final.Recovery)
	return nil
}

// recoverDone: the cluster left degraded, or the attempt was made and no
// machine is still coming back.
func recoverDone(cl api.Cluster, attemptsBefore int) bool {
	if cl.Status != "degraded" {
		return true
	}
	if cl.Recovery.Requested || cl.Recovery.AttemptsUsed <= attemptsBefore {
		return false
	}
	for _, n := range cl.Nodes {
		if strings.EqualFold(n.Status, "restarting") {
			return false
		}
	}
	return true
}

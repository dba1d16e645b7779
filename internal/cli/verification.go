package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// Verification before hand-over (X13): the report, run again, keep.

// printVerification is the hand-over report as "clusters get" and
// "clusters verification" print it.
func printVerification(w io.Writer, v api.Verification) {
	title := "Verification before hand-over"
	if v.Rerun {
		title = fmt.Sprintf("Verification run %d (nothing swapped)", v.Run)
	}
	fmt.Fprintf(w, "\n%s: %s\n  %s\n", title, v.Status, v.Summary)
	if r := v.Ring; r != nil && r.Status != "pending" {
		fmt.Fprintf(w, "  ring all-reduce (NCCL_ALGO=Ring): %.1f GB/s, %d %% of %.1f GB/s (at least %d %%): %s\n",
			r.BusBwGBps, r.Percent, r.ExpectedBusBwGBps, r.ThresholdPercent, r.Status)
	}
	tw := table(w)
	fmt.Fprintln(tw, "  MACHINE\tSTATUS\tGPUS\tSTRESS\tERRORS")
	for _, m := range v.Machines {
		stress := m.Stress
		if m.Stress != "" && m.Stress != "skipped" && m.Stress != "not run" {
			stress += map[bool]string{true: " passed", false: " failed"}[m.StressPassed]
		}
		errs := strings.Join(m.Errors, "; ")
		if errs == "" {
			errs = "—"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", m.Node, m.Status, m.GPUs, stress, errs)
	}
	tw.Flush()
	if len(v.Pairs) > 0 {
		fmt.Fprintf(w, "  pairs (median %.1f GB/s; slow below %d %% of what a pair allows or more than %d %% below the median):",
			v.MedianPairBusBwGBps, v.Thresholds.RingPercent, v.Thresholds.PairBelowMedianPercent)
		for _, p := range v.Pairs {
			fmt.Fprintf(w, " %s–%s %.1f %s;", p.A, p.B, p.BusBwGBps, p.Status)
		}
		fmt.Fprintln(w)
	}
	if len(v.Swaps) == 0 {
		fmt.Fprintln(w, "  no machine was swapped")
	}
	for _, s := range v.Swaps {
		fmt.Fprintf(w, "  swapped %s (%s): %s\n", s.Node, s.Outcome, s.Reason)
	}
}

// verification is `gpu clusters verification ID`: the hand-over report.
func (c *gpuCLI) verification(args []string) error {
	fs := c.flagSet("verification", "clusters verification ID")
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	var raw []byte
	cl, err := sdk.Cluster(c.ctx, id, client.Raw(&raw))
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	if cl.Verification == nil {
		fmt.Fprintf(c.stdout, "%s %q was launched without verification (--no-verify); run it with \"clusters verify %s\" once it is ready.\n", cl.ID, cl.Name, cl.ID)
		return nil
	}
	printVerification(c.stdout, *cl.Verification)
	return nil
}

// verifyAgain is `gpu clusters verify ID --confirm-disruption [--wait]`:
// the same checks again on a ready cluster, nothing swapped. The cluster
// is the customer's: without --confirm-disruption the server refuses and
// names what the checks do to its jobs (X13).
func (c *gpuCLI) verifyAgain(args []string) error {
	var confirm bool
	a, err := c.clusterActionWith(args, "verify", "clusters verify ID --confirm-disruption [--wait]", "until the verification has its verdict",
		func(fs *flag.FlagSet) {
			fs.BoolVar(&confirm, "confirm-disruption", false,
				"run it although the checks take every GPU for minutes: a job running on the cluster slows down or fails")
		},
		func(sdk *client.Client, ctx context.Context, id string, opts ...client.Option) (api.Cluster, error) {
			return sdk.VerifyAgain(ctx, id, confirm, opts...)
		})
	if err != nil || a.progress == nil {
		return err
	}
	fmt.Fprintf(a.progress, "Verification of %s %q runs again: every machine and the fabric are checked; nothing is swapped.\n", a.cl.ID, a.cl.Name)
	if !a.w.wait {
		return nil
	}
	final, err := c.watchAndPrint(a.sdk, a.cl, a.raw, a.w, a.progress, true, func(cl api.Cluster) bool {
		return cl.Verification == nil || cl.Verification.Status != "running"
	})
	if err != nil {
		return err
	}
	if final.Verification != nil {
		printVerification(a.progress, *final.Verification)
	}
	return nil
}

// keepUnverified is `gpu clusters keep ID`: keep a cluster that failed
// verification as it is.
func (c *gpuCLI) keepUnverified(args []string) error {
	a, err := c.clusterAction(args, "keep", "(returns at once)", (*client.Client).KeepUnverified)
	if err != nil || a.progress == nil {
		return err
	}
	fmt.Fprintf(a.progress, "%s %q is kept as it is: %s.\n", a.cl.ID, a.cl.Name, a.cl.Status)
	return nil
}

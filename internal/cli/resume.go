package cli

import (
	"fmt"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// resume is `gpu clusters resume ID [--wait]` (B6): a stopped cluster's
// machines start again, all or nothing. With --wait it follows the resume
// and exits 0 once the cluster runs again, 1 when the resume failed.
func (c *gpuCLI) resume(args []string) error {
	a, err := c.clusterAction(args, "resume", "every machine joined again (exit 0), or the resume failed (exit 1)", (*client.Client).Resume)
	if err != nil || a.progress == nil {
		return err
	}
	sdk, cl, raw, w, progress := a.sdk, a.cl, a.raw, a.w, a.progress
	fmt.Fprintf(progress, "Resume accepted for %s %q: every machine starts again, all or nothing; billing restarts when all have joined.\n", cl.ID, cl.Name)
	if !w.wait {
		return nil
	}
	final, err := c.watchAndPrint(sdk, cl, raw, w, progress, true, resumeDone)
	if err != nil {
		return err
	}
	if final.Status == "stopped" || final.Status == "terminated" {
		msg := fmt.Sprintf("cluster %s is %s", final.ID, final.Status)
		if final.LastError != nil && *final.LastError != "" {
			msg += ": " + *final.LastError
		}
		fmt.Fprintln(c.stderr, "clusterdeck:", msg+" (the resume did not bring every machine back; they are stopped again and nothing was billed for it)")
		return Exit(exitFailed)
	}
	fmt.Fprintf(progress, "Cluster %s is %s again (billing restarted now).\n", final.ID, statusText(final))
	return nil
}

// resumeDone: the resume ended, one way or the other.
func resumeDone(cl api.Cluster) bool {
	return cl.ResumeRequestedAt == nil || cl.Status == "terminated" || cl.Status == "failed"
}

// stop is `gpu clusters stop ID [--wait]` (B6): every machine of a ready
// cluster is stopped, disks and the volume kept; compute billing ends once
// all are. With --wait it exits 0 once the cluster is stopped, 1 when it
// ended otherwise (terminated, or the stop was not carried out).
func (c *gpuCLI) stop(args []string) error {
	a, err := c.clusterAction(args, "stop", "every machine stopped (exit 0), or the stop was not carried out (exit 1)", (*client.Client).Stop)
	if err != nil || a.progress == nil {
		return err
	}
	sdk, cl, raw, w, progress := a.sdk, a.cl, a.raw, a.w, a.progress
	fmt.Fprintf(progress, "Stop accepted for %s %q: every machine is stopped at the provider; compute billing ends when all are. "+
		"Disks and the volume are kept (a volume keeps billing). Resume with: clusterdeck gpu clusters resume %s\n", cl.ID, cl.Name, cl.ID)
	if !w.wait {
		return nil
	}
	final, err := c.watchAndPrint(sdk, cl, raw, w, progress, true, stopDone)
	if err != nil {
		return err
	}
	if final.Status != "stopped" {
		fmt.Fprintf(c.stderr, "clusterdeck: cluster %s is %s: the stop was not carried out (its events say why)\n", final.ID, statusText(final))
		return Exit(exitFailed)
	}
	fmt.Fprintf(progress, "Cluster %s is stopped; compute billing ended.\n", final.ID)
	return nil
}

// stopDone: the stop ended, one way or the other.
func stopDone(cl api.Cluster) bool {
	return cl.StopRequestedAt == nil || cl.Status == "terminated" || cl.Status == "failed"
}

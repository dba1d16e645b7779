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

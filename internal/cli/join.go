package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// addWorker is `gpu clusters add-worker ID [--wait]` (L10): one more
// machine joins the cluster.
func (c *gpuCLI) addWorker(args []string) error {
	a, err := c.clusterAction(args, "add-worker", "until the worker has joined or failed", (*client.Client).AddWorker)
	if err != nil || a.progress == nil {
		return err
	}
	node := joiningNode(a.cl)
	fmt.Fprintf(a.progress, "Worker %s admitted for %s %q at $%s/h: it bills from when it has joined.\n", node, a.cl.ID, a.cl.Name, a.cl.USDPerMachineHour)
	return c.followJoin(a.sdk, a.cl, a.raw, a.w, a.progress, node)
}

// replaceNode is `gpu clusters replace ID --node N [--yes] [--wait]` (X5):
// without --yes it shows what the replacement costs and changes nothing.
func (c *gpuCLI) replaceNode(args []string) error {
	fs := c.flagSet("replace", "clusters replace ID --node N [--yes] [--wait]")
	rank := fs.Int("node", -1, "the rank of the machine that is down (node-N has rank N; required)")
	yes := fs.Bool("yes", false, "replace at the price shown without --yes")
	var w waitFlags
	w.register(fs, "until the new machine has joined or failed")
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	if *rank < 0 {
		return usageError("--node is required: the rank of the machine that is down")
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	var raw []byte
	if !*yes {
		p, err := sdk.ReplacePreview(c.ctx, id, *rank, client.Raw(&raw))
		if err != nil {
			return err
		}
		if c.json {
			c.printRaw(raw)
			return nil
		}
		fmt.Fprintf(c.stdout, "%s\nRun again with --yes to replace %s at $%s per machine-hour.\n", p.Message, p.Node, p.USDPerMachineHour)
		return nil
	}
	cl, err := sdk.ReplaceNode(c.ctx, id, *rank, client.Raw(&raw))
	if err != nil {
		return err
	}
	progress := c.progress(w.wait, raw)
	if progress == nil {
		return nil
	}
	node := fmt.Sprintf("node-%d", *rank)
	fmt.Fprintf(progress, "Replacement of %s accepted for %s %q at $%s/h on the same billing line.\n", node, cl.ID, cl.Name, cl.USDPerMachineHour)
	return c.followJoin(sdk, cl, raw, w, progress, node)
}

// followJoin waits, with --wait, until node is no longer joining, and says
// how it ended: exit 0 only when it joined.
func (c *gpuCLI) followJoin(sdk *client.Client, cl api.Cluster, raw []byte, w waitFlags, progress io.Writer, node string) error {
	if !w.wait {
		return nil
	}
	final, err := c.watchAndPrint(sdk, cl, raw, w, progress, true, func(cl api.Cluster) bool { return joiningNode(cl) == "" })
	if err != nil {
		return err
	}
	for _, n := range final.Nodes {
		if n.Name == node && strings.EqualFold(n.Status, "ready") {
			fmt.Fprintf(progress, "%s joined %s: %d machines.\n", node, final.ID, final.NodeCount)
			return nil
		}
	}
	return fmt.Errorf("%s did not join %s (only that machine was released): see the cluster's events", node, final.ID)
}

// joiningNode names the node joining the cluster, "" for none.
func joiningNode(cl api.Cluster) string {
	for _, n := range cl.Nodes {
		if strings.EqualFold(n.Status, "joining") {
			return n.Name
		}
	}
	return ""
}

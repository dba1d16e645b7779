package cli

import (
	"fmt"
	"io"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// list is `gpu clusters list`.
func (c *gpuCLI) list(args []string) error {
	if err := noArgs(c.flagSet("list", "clusters list"), args, ""); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) ([]api.Cluster, error) {
		return sdk.Clusters(c.ctx, raw)
	}, printClusterList)
}

// get is `gpu clusters get ID`.
func (c *gpuCLI) get(args []string) error {
	id, err := oneID(c.flagSet("get", "clusters get ID"), args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Cluster, error) {
		return sdk.Cluster(c.ctx, id, raw)
	}, printCluster)
}

// connections is `gpu clusters connections ID` (N2–N5).
func (c *gpuCLI) connections(args []string) error {
	id, err := oneID(c.flagSet("connections", "clusters connections ID"), args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Connections, error) {
		return sdk.Connections(c.ctx, id, raw)
	}, printConnections)
}

// terminate is `gpu clusters terminate ID` (L7), with --wait until every
// machine is released.
func (c *gpuCLI) terminate(args []string) error {
	fs := c.flagSet("terminate", "clusters terminate ID [--wait]")
	var w waitFlags
	w.register(fs, "terminated (every machine released)")
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	var raw []byte
	cl, err := sdk.Terminate(c.ctx, id, client.Raw(&raw))
	if err != nil {
		return err
	}
	progress := c.progress(w.wait, raw)
	if progress == nil {
		return nil
	}
	switch cl.Status {
	case "terminated":
		fmt.Fprintf(progress, "%s %q is already terminated.\n", cl.ID, cl.Name)
	case "failed":
		fmt.Fprintf(progress, "%s %q had failed: every machine was already released and nothing was billed.\n", cl.ID, cl.Name)
	default:
		fmt.Fprintf(progress, "Terminate accepted for %s %q: every machine is released together and billing ends.\n", cl.ID, cl.Name)
	}
	if !w.wait {
		return nil
	}
	final, err := c.watchAndPrint(sdk, cl, raw, w, progress, true, terminateDone)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "Cluster %s is %s.\n", final.ID, final.Status)
	return nil
}

// show makes one read call and prints its answer: the API's JSON as it
// came with --json, else print's view of it.
func show[T any](c *gpuCLI, call func(*client.Client, client.Option) (T, error), print func(io.Writer, T)) error {
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	var raw []byte
	v, err := call(sdk, client.Raw(&raw))
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	print(c.stdout, v)
	return nil
}

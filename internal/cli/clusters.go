package cli

import (
	"context"
	"flag"
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

// clusterAction is what `clusters NAME ID [--wait]` commands share: it
// parses the ID and the wait flags, makes the call and says where progress
// goes. progress is nil when there is nothing more to do (--json without
// --wait: the answer is printed).
type clusterAction struct {
	sdk      *client.Client
	cl       api.Cluster
	raw      []byte
	w        waitFlags
	progress io.Writer
}

func (c *gpuCLI) clusterAction(args []string, name, waitHelp string,
	call func(*client.Client, context.Context, string, ...client.Option) (api.Cluster, error)) (*clusterAction, error) {
	return c.clusterActionWith(args, name, "clusters "+name+" ID [--wait]", waitHelp, nil, call)
}

// clusterActionWith is clusterAction with flags of the command's own
// (registered by flags before parsing).
func (c *gpuCLI) clusterActionWith(args []string, name, synopsis, waitHelp string, flags func(*flag.FlagSet),
	call func(*client.Client, context.Context, string, ...client.Option) (api.Cluster, error)) (*clusterAction, error) {
	fs := c.flagSet(name, synopsis)
	a := &clusterAction{}
	a.w.register(fs, waitHelp)
	if flags != nil {
		flags(fs)
	}
	id, err := oneID(fs, args)
	if err != nil {
		return nil, err
	}
	if a.sdk, err = c.sdk(true); err != nil {
		return nil, err
	}
	if a.cl, err = call(a.sdk, c.ctx, id, client.Raw(&a.raw)); err != nil {
		return nil, err
	}
	a.progress = c.progress(a.w.wait, a.raw)
	return a, nil
}

// terminate is `gpu clusters terminate ID` (L7), with --wait until every
// machine is released.
func (c *gpuCLI) terminate(args []string) error {
	a, err := c.clusterAction(args, "terminate", "terminated (every machine released)", (*client.Client).Terminate)
	if err != nil || a.progress == nil {
		return err
	}
	sdk, cl, raw, w, progress := a.sdk, a.cl, a.raw, a.w, a.progress
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

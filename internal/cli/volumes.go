package cli

import (
	"fmt"
	"io"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// volumes dispatches `gpu volumes SUB …` (V1–V3).
func (c *gpuCLI) volumes(args []string) error {
	if len(args) == 0 {
		return usageError("name a volumes command: list, create, get, grow or delete")
	}
	commands := map[string]func([]string) error{
		"list": c.volumeList, "ls": c.volumeList, "create": c.volumeCreate, "get": c.volumeGet, "show": c.volumeGet,
		"grow": c.volumeGrow, "delete": c.volumeDelete, "rm": c.volumeDelete,
	}
	sub, rest := args[0], args[1:]
	if run, ok := commands[sub]; ok {
		return run(rest)
	}
	if sub == "help" || sub == "-h" || sub == "--help" {
		fmt.Fprint(c.stdout, gpuUsage)
		return nil
	}
	return usageError(fmt.Sprintf("unknown command \"volumes %s\"", sub))
}

func (c *gpuCLI) volumeList(args []string) error {
	if err := noArgs(c.flagSet("list", "volumes list"), args, ""); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.VolumeList, error) {
		return sdk.Volumes(c.ctx, raw)
	}, printVolumes)
}

func (c *gpuCLI) volumeCreate(args []string) error {
	fs := c.flagSet("create", "volumes create --name NAME --location L --size-gb GB")
	var b api.VolumeBody
	fs.StringVar(&b.Name, "name", "", "lower-case letters, digits and dashes (required)")
	fs.StringVar(&b.Location, "location", "", "a location id where datacenter offers are sold, e.g. from \"clusterdeck gpu offers\" (required)")
	fs.IntVar(&b.SizeGB, "size-gb", 0, "size in GB (required)")
	if err := noArgs(fs, args, "use --name, --location and --size-gb"); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Volume, error) {
		return sdk.CreateVolume(c.ctx, b, raw)
	}, func(w io.Writer, v api.Volume) {
		fmt.Fprintf(w, "Volume %s created: billed %s until deleted, attached or not.\n", v.ID, perHour(v.USDPerHour))
		printVolume(w, v)
	})
}

func (c *gpuCLI) volumeGet(args []string) error {
	id, err := oneID(c.flagSet("get", "volumes get ID"), args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Volume, error) {
		return sdk.Volume(c.ctx, id, raw)
	}, printVolume)
}

func (c *gpuCLI) volumeGrow(args []string) error {
	fs := c.flagSet("grow", "volumes grow ID --size-gb GB")
	size := fs.Int("size-gb", 0, "the new size in GB, more than the current one (required)")
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Volume, error) {
		return sdk.GrowVolume(c.ctx, id, *size, raw)
	}, func(w io.Writer, v api.Volume) {
		fmt.Fprintf(w, "Volume %s is now %d GB, billed %s from now.\n", v.ID, v.SizeGB, perHour(v.USDPerHour))
	})
}

func (c *gpuCLI) volumeDelete(args []string) error {
	id, err := oneID(c.flagSet("delete", "volumes delete ID"), args)
	if err != nil {
		return err
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	if err := sdk.DeleteVolume(c.ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Volume %s deleted; its billing stopped.\n", id)
	return nil
}

func printVolumes(w io.Writer, l api.VolumeList) {
	if len(l.Volumes) == 0 {
		fmt.Fprintln(w, "No volumes in this environment. Create one with \"clusterdeck gpu volumes create\".")
		return
	}
	tw := table(w)
	row(tw, "ID", "NAME", "LOCATION", "SIZE", "$/H", "CLUSTER")
	for _, v := range l.Volumes {
		row(tw, v.ID, v.Name, v.Location, fmt.Sprintf("%d GB", v.SizeGB), "$"+v.USDPerHour, attachedTo(v))
	}
	tw.Flush()
}

func printVolume(w io.Writer, v api.Volume) {
	tw := table(w)
	fmt.Fprintf(tw, "Volume\t%s %s\n", v.ID, v.Name)
	fmt.Fprintf(tw, "Location\t%s (%s)\n", v.Location, v.LocationName)
	fmt.Fprintf(tw, "Size\t%d GB at $%s/GB-h = %s\n", v.SizeGB, v.GBHourRate, perHour(v.USDPerHour))
	fmt.Fprintf(tw, "Cluster\t%s\n", attachedTo(v))
	tw.Flush()
}

func attachedTo(v api.Volume) string {
	if v.ClusterID == nil {
		return "— (detached, still billing)"
	}
	return *v.ClusterID
}

package cli

import (
	"fmt"
	"io"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// billing dispatches `gpu billing SUB …` (B1, B3): owners' and admins' keys.
func (c *gpuCLI) billing(args []string) error {
	if len(args) == 0 {
		return usageError("name a billing command: balance or usage")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "balance":
		return c.balance(rest)
	case "usage":
		return c.usage(rest)
	case "help", "-h", "--help":
		fmt.Fprint(c.stdout, gpuUsage)
		return nil
	default:
		return usageError(fmt.Sprintf("unknown command \"billing %s\"", sub))
	}
}

// balance is `gpu billing balance` (B1).
func (c *gpuCLI) balance(args []string) error {
	if err := noArgs(c.flagSet("balance", "billing balance"), args, ""); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.BillingBalance, error) {
		return sdk.Balance(c.ctx, raw)
	}, printBalance)
}

// usage is `gpu billing usage [--month YYYY-MM]` (B3).
func (c *gpuCLI) usage(args []string) error {
	fs := c.flagSet("usage", "billing usage [--month YYYY-MM]")
	month := fs.String("month", "", "the month, YYYY-MM (UTC); this month when empty")
	if err := noArgs(fs, args, "the month goes in --month"); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.BillingUsage, error) {
		return sdk.Usage(c.ctx, *month, raw)
	}, printUsage)
}

func printBalance(w io.Writer, b api.BillingBalance) {
	tw := table(w)
	fmt.Fprintf(tw, "Balance\t$%s\n", b.Balance)
	fmt.Fprintf(tw, "Burn rate\t$%s/h\n", b.BurnRate)
	if b.HoursRemaining != nil {
		fmt.Fprintf(tw, "Lasts\t%.1f hours at this burn\n", *b.HoursRemaining)
	} else {
		fmt.Fprintf(tw, "Lasts\tnothing is running\n")
	}
	fmt.Fprintf(tw, "Spent in %s\t$%s\n", b.Month, b.SpendThisMonth)
	if b.TestMode {
		fmt.Fprintf(tw, "Mode\ttest (no card payments)\n")
	}
	tw.Flush()
}

func printUsage(w io.Writer, u api.BillingUsage) {
	if len(u.Clusters) == 0 {
		fmt.Fprintf(w, "No usage in %s.\n", u.Month)
		return
	}
	tw := table(w)
	row(tw, "CLUSTER", "NAME", "MACHINE", "$/H", "MINUTES", "AMOUNT", "STATUS")
	for _, cl := range u.Clusters {
		for _, m := range cl.Machines {
			row(tw, cl.ClusterID, cl.Name, m.Node, "$"+m.MachinePrice, fmt.Sprint(m.Minutes), "$"+m.Amount, m.Status)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "Total for %s: $%s\n", u.Month, u.Total)
}

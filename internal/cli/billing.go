package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// billing dispatches `gpu billing SUB …` (B1, B3): owners' and admins' keys.
func (c *gpuCLI) billing(args []string) error {
	if len(args) == 0 {
		return usageError("name a billing command: balance, usage or budgets")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "balance":
		return c.balance(rest)
	case "usage":
		return c.usage(rest)
	case "budgets":
		return c.budgets(rest)
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

// budgets is `gpu billing budgets [set ENV_ID AMOUNT | remove ENV_ID]`
// (B5, X6): the budgets and forecasts, or one environment's change.
func (c *gpuCLI) budgets(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "set":
			return c.setBudget(args[1:])
		case "remove":
			return c.removeBudget(args[1:])
		}
	}
	if err := noArgs(c.flagSet("budgets", "billing budgets [set ENV_ID AMOUNT | remove ENV_ID]"), args,
		"\"budgets set ENV_ID AMOUNT\" sets one"); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Budgets, error) {
		return sdk.Budgets(c.ctx, raw)
	}, printBudgets)
}

// setBudget is `gpu billing budgets set ENV_ID AMOUNT`.
func (c *gpuCLI) setBudget(args []string) error {
	fs := c.flagSet("set", "billing budgets set ENV_ID AMOUNT")
	pos, err := parseFlags(fs, args, 2)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError("budgets set: give the environment's id (env_…, see \"billing budgets\") and dollars a month, like 500.00")
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Budget, error) {
		return sdk.SetBudget(c.ctx, strings.TrimSpace(pos[0]), strings.TrimSpace(pos[1]), raw)
	}, func(w io.Writer, b api.Budget) {
		fmt.Fprintf(w, "Budget of %s (%s): $%s a month; $%s spent this month (%d %%).\n", b.Environment, b.EnvironmentID,
			deref(b.Amount), b.SpendThisMonth, b.Percent)
	})
}

// removeBudget is `gpu billing budgets remove ENV_ID`.
func (c *gpuCLI) removeBudget(args []string) error {
	fs := c.flagSet("remove", "billing budgets remove ENV_ID")
	pos, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("budgets remove: give the environment's id (env_…, see \"billing budgets\")")
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Budget, error) {
		return sdk.RemoveBudget(c.ctx, strings.TrimSpace(pos[0]), raw)
	}, func(w io.Writer, b api.Budget) {
		fmt.Fprintf(w, "No budget for %s (%s) any more.\n", b.Environment, b.EnvironmentID)
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

const cliTime = "2006-01-02 15:04 UTC"

func printBudgets(w io.Writer, b api.Budgets) {
	tw := table(w)
	row(tw, "ENVIRONMENT", "ID", "BUDGET", "SPENT", "USED", "BURN", "REACHED AT")
	for _, e := range b.Environments {
		budget, used, at := "none", "", ""
		if e.Amount != nil {
			budget, used = "$"+*e.Amount, fmt.Sprintf("%d %%", e.Percent)
			switch {
			case e.Reached && e.EnforceAt != nil:
				at = "reached; clusters stop " + e.EnforceAt.UTC().Format(cliTime)
			case e.Reached:
				at = "reached"
			case e.ForecastAt != nil:
				at = e.ForecastAt.UTC().Format(cliTime)
			default:
				at = "not this month"
			}
		}
		row(tw, e.Environment, e.EnvironmentID, budget, "$"+e.SpendThisMonth, used, "$"+e.BurnRate+"/h", at)
	}
	tw.Flush()
	if b.BalanceRunOutAt != nil {
		fmt.Fprintf(w, "At $%s/h the balance of $%s runs out at %s.\n", b.BurnRate, b.Balance, b.BalanceRunOutAt.UTC().Format(cliTime))
	} else {
		fmt.Fprintf(w, "Nothing is running: the balance of $%s stays.\n", b.Balance)
	}
	if len(b.Clusters) == 0 {
		return
	}
	tw = table(w)
	row(tw, "CLUSTER", "NAME", "ENVIRONMENT", "RUNS UNTIL", "FIRST TO RUN OUT")
	for _, cl := range b.Clusters {
		at := "—"
		if cl.RunOutAt != nil {
			at = cl.RunOutAt.UTC().Format(cliTime)
		}
		row(tw, cl.ClusterID, cl.Name, cl.Environment, at, cl.By)
	}
	tw.Flush()
}

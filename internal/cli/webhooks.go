package cli

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// webhooks dispatches `gpu webhooks SUB …` (X8).
func (c *gpuCLI) webhooks(args []string) error {
	if len(args) == 0 {
		return usageError("name a webhooks command: list, create, get, update, delete, rotate-secret, test, deliveries or redeliver")
	}
	commands := map[string]func([]string) error{
		"list": c.webhookList, "ls": c.webhookList, "create": c.webhookCreate, "get": c.webhookGet, "show": c.webhookGet,
		"update": c.webhookUpdate, "delete": c.webhookDelete, "rm": c.webhookDelete, "rotate-secret": c.webhookRotate,
		"test": c.webhookTest, "deliveries": c.webhookDeliveries, "log": c.webhookDeliveries, "redeliver": c.webhookRedeliver,
	}
	sub, rest := args[0], args[1:]
	if run, ok := commands[sub]; ok {
		return run(rest)
	}
	if sub == "help" || sub == "-h" || sub == "--help" {
		fmt.Fprint(c.stdout, gpuUsage)
		return nil
	}
	return usageError(fmt.Sprintf("unknown command \"webhooks %s\"", sub))
}

func splitTypes(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func (c *gpuCLI) webhookList(args []string) error {
	if err := noArgs(c.flagSet("list", "webhooks list"), args, ""); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.WebhookList, error) {
		return sdk.Webhooks(c.ctx, raw)
	}, printWebhooks)
}

func (c *gpuCLI) webhookCreate(args []string) error {
	fs := c.flagSet("create", "webhooks create --url URL --types T1,T2 [--description D] [--paused]")
	u := fs.String("url", "", "the https URL to POST events to (required)")
	types := fs.String("types", "", "comma-separated event types, e.g. cluster.ready,cluster.failed (required; \"webhooks list\" names them)")
	desc := fs.String("description", "", "what the endpoint is for")
	paused := fs.Bool("paused", false, "add it paused: events wait until it is enabled")
	if err := noArgs(fs, args, "use --url and --types"); err != nil {
		return err
	}
	enabled := !*paused
	b := api.WebhookBody{URL: u, Types: splitTypes(*types), Enabled: &enabled}
	if *desc != "" {
		b.Description = desc
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Webhook, error) {
		return sdk.CreateWebhook(c.ctx, b, raw)
	}, func(w io.Writer, h api.Webhook) {
		fmt.Fprintf(w, "Endpoint %s added. Its signing secret, shown once:\n\n  %s\n\n", h.ID, h.Secret)
		printWebhook(w, h)
	})
}

func (c *gpuCLI) webhookGet(args []string) error {
	id, err := webhookID(c.flagSet("get", "webhooks get ID"), args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Webhook, error) {
		return sdk.Webhook(c.ctx, id, raw)
	}, printWebhook)
}

func (c *gpuCLI) webhookUpdate(args []string) error {
	fs := c.flagSet("update", "webhooks update ID [--url URL] [--types T1,T2] [--description D] [--enable | --pause]")
	u := fs.String("url", "", "a new URL")
	types := fs.String("types", "", "the new comma-separated event types")
	desc := fs.String("description", "", "a new description")
	enable := fs.Bool("enable", false, "enable it (also after Clusterdeck paused it)")
	pause := fs.Bool("pause", false, "pause it: events wait")
	id, err := webhookID(fs, args)
	if err != nil {
		return err
	}
	if *enable && *pause {
		return usageError("give --enable or --pause, not both")
	}
	var b api.WebhookBody
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "url":
			b.URL = u
		case "description":
			b.Description = desc
		case "types":
			b.Types = splitTypes(*types)
		}
	})
	if *enable || *pause {
		on := *enable
		b.Enabled = &on
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Webhook, error) {
		return sdk.UpdateWebhook(c.ctx, id, b, raw)
	}, printWebhook)
}

func (c *gpuCLI) webhookDelete(args []string) error {
	id, err := webhookID(c.flagSet("delete", "webhooks delete ID"), args)
	if err != nil {
		return err
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	if err := sdk.DeleteWebhook(c.ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Endpoint %s deleted; nothing more is sent to it.\n", id)
	return nil
}

func (c *gpuCLI) webhookRotate(args []string) error {
	fs := c.flagSet("rotate-secret", "webhooks rotate-secret ID [--overlap-hours 24]")
	overlap := fs.Int("overlap-hours", 24, "hours the old secret keeps signing too (0 = stop at once, at most 168)")
	id, err := webhookID(fs, args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Webhook, error) {
		return sdk.RotateWebhookSecret(c.ctx, id, overlap, raw)
	}, func(w io.Writer, h api.Webhook) {
		fmt.Fprintf(w, "New signing secret of %s, shown once:\n\n  %s\n\n", h.ID, h.Secret)
		if h.PreviousSecretUntil != nil {
			fmt.Fprintf(w, "The old secret also signs until %s.\n", h.PreviousSecretUntil.UTC().Format("2006-01-02 15:04 MST"))
		}
	})
}

func (c *gpuCLI) webhookTest(args []string) error {
	id, err := webhookID(c.flagSet("test", "webhooks test ID"), args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.WebhookDelivery, error) {
		return sdk.TestWebhook(c.ctx, id, raw)
	}, func(w io.Writer, d api.WebhookDelivery) {
		fmt.Fprintf(w, "Test event %s queued (delivery %d); \"webhooks deliveries %s\" shows the answer.\n", d.EventID, d.ID, id)
	})
}

func (c *gpuCLI) webhookDeliveries(args []string) error {
	id, err := webhookID(c.flagSet("deliveries", "webhooks deliveries ID"), args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.WebhookAttempts, error) {
		return sdk.WebhookDeliveries(c.ctx, id, raw)
	}, printWebhookAttempts)
}

func (c *gpuCLI) webhookRedeliver(args []string) error {
	fs := c.flagSet("redeliver", "webhooks redeliver ID DELIVERY_ID")
	pos, err := parseFlags(fs, args, 2)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError("give the endpoint's id and the delivery's id (\"webhooks deliveries ID\" lists them)")
	}
	id := strings.TrimSpace(pos[0])
	delivery, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil || delivery <= 0 {
		return usageError("the delivery id is a number, as \"webhooks deliveries ID\" lists it")
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.WebhookDelivery, error) {
		return sdk.RedeliverWebhook(c.ctx, id, delivery, raw)
	}, func(w io.Writer, d api.WebhookDelivery) {
		fmt.Fprintf(w, "Event %s queued again (delivery %d).\n", d.EventID, d.ID)
	})
}

func webhookState(h api.Webhook) string {
	if h.Enabled {
		return "enabled"
	}
	if h.PausedReason != "" {
		return "paused: " + h.PausedReason
	}
	return "paused"
}

func printWebhooks(w io.Writer, l api.WebhookList) {
	if len(l.Webhooks) == 0 {
		fmt.Fprintln(w, "No webhook endpoints in this environment. Add one with \"clusterdeck gpu webhooks create\".")
	} else {
		tw := table(w)
		row(tw, "ID", "URL", "STATE", "WAITING", "TYPES")
		for _, h := range l.Webhooks {
			row(tw, h.ID, h.URL, webhookState(h), strconv.FormatInt(h.Pending, 10), strings.Join(h.Types, ","))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nEvent types: %s\n", strings.Join(l.EventTypes, ", "))
}

func printWebhook(w io.Writer, h api.Webhook) {
	tw := table(w)
	fmt.Fprintf(tw, "Endpoint\t%s\n", h.ID)
	fmt.Fprintf(tw, "URL\t%s\n", h.URL)
	if h.Description != "" {
		fmt.Fprintf(tw, "Description\t%s\n", h.Description)
	}
	fmt.Fprintf(tw, "State\t%s\n", webhookState(h))
	fmt.Fprintf(tw, "Types\t%s\n", strings.Join(h.Types, ", "))
	fmt.Fprintf(tw, "Waiting\t%d\n", h.Pending)
	tw.Flush()
}

func printWebhookAttempts(w io.Writer, l api.WebhookAttempts) {
	if len(l.Attempts) == 0 {
		fmt.Fprintln(w, "Nothing sent in the last 30 days.")
		return
	}
	tw := table(w)
	row(tw, "DELIVERY", "EVENT", "TYPE", "ATTEMPT", "AT", "STATUS", "MS", "ANSWER")
	for _, a := range l.Attempts {
		status := strconv.Itoa(a.Status)
		if a.Status == 0 {
			status = "none"
		}
		answer := a.Answer
		if a.Error != "" {
			answer = a.Error
		}
		answer = strings.Join(strings.Fields(answer), " ")
		if len(answer) > 60 {
			answer = answer[:60] + "…"
		}
		row(tw, strconv.FormatInt(a.DeliveryID, 10), a.EventID, a.Type, strconv.Itoa(a.Attempt),
			a.At.UTC().Format("2006-01-02 15:04:05"), status, strconv.FormatInt(a.DurationMS, 10), answer)
	}
	tw.Flush()
}

// webhookID reads `webhooks COMMAND ID [flags]`.
func webhookID(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseFlags(fs, args, 1)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return "", usageError(fs.Name() + ": give the endpoint's id (we_…); \"clusterdeck gpu webhooks list\" lists them")
	}
	return strings.TrimSpace(pos[0]), nil
}

package cli

// What `clusterdeck gpu …` prints for people: tables and short blocks.
// --json bypasses all of it.

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// row writes one tab-separated row; empty cells read "—".
func row(tw io.Writer, cells ...string) {
	for i, c := range cells {
		if c == "" {
			cells[i] = "—"
		}
		cells[i] = strings.ReplaceAll(strings.ReplaceAll(cells[i], "\t", " "), "\n", " ")
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
}

func perHour(usd string) string {
	if usd == "" {
		return ""
	}
	return "$" + usd + "/h"
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return fmtTime(*t)
}

// until says how far ahead t is, for "locked until".
func until(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d <= 0:
		return " (expired)"
	case d > 48*time.Hour:
		return ""
	case d < time.Minute:
		return fmt.Sprintf(" (in %ds)", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf(" (in %dm)", int(d.Round(time.Minute).Minutes()))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf(" (in %dh%02dm)", int(d.Hours()), int(d.Minutes())%60)
}

func clusterShape(cl api.Cluster) string {
	s := fmt.Sprintf("%d × %d GPUs %s", cl.NodeCount, cl.GPUsPerNode, cl.Accelerator)
	if cl.Location != "" {
		s += " at " + cl.Location
	}
	return s
}

func statusText(cl api.Cluster) string {
	s := cl.Status
	if cl.TerminateRequestedAt != nil && cl.Status != "terminated" && cl.Status != "failed" {
		s += " (terminating)"
	}
	return s
}

func eventLine(e api.ClusterEvent) string {
	var b strings.Builder
	b.WriteString(fmtTime(e.At))
	if e.Node != "" || e.Step != "" {
		b.WriteString("  " + strings.TrimSpace(e.Node+" "+e.Step) + ":")
	}
	b.WriteString("  " + e.Message)
	return b.String()
}

// stepLabel names a node's current step as the cluster page does (L11):
// the API's "running" step is the machine booting.
func stepLabel(step string) string {
	if step == "running" {
		return "booting"
	}
	return step
}

func nodeProgress(n api.ClusterNode) string {
	s := n.Name + " " + stepLabel(n.Step)
	if n.Status != "provisioning" && n.Status != "ready" {
		s += " (" + n.Status + ")"
	}
	return s
}

// ---- offers ----

var sellText = map[string]string{
	"available":      "can start now",
	"reserved_ahead": "reserved ahead: request a quote",
	"not_in_stock":   "not in stock: request a quote",
}

func printOffers(w io.Writer, out api.OffersResponse) {
	printPrivateOffers(w, out.PrivateOffers)
	what := out.Accelerator
	if what == "" {
		what = "every accelerator"
	}
	if out.Count == 0 || len(out.Groups) == 0 {
		fmt.Fprintf(w, "No offers for %s at %d machines right now. Try fewer machines or another accelerator", what, out.Nodes)
		if !out.IncludeCommunity {
			fmt.Fprint(w, "; community hosts show with --include-community")
		}
		fmt.Fprintln(w, ".")
		return
	}
	fmt.Fprintf(w, "%s, %d machines: %d offers (price per hour for the whole cluster, per machine and per GPU)\n\n", what, out.Nodes, out.Count)
	tw := table(w)
	row(tw, "OFFER", "LOCATION", "INTERCONNECT", "KIND", "GPUS/MACHINE", "$/H CLUSTER", "$/H MACHINE", "$/GPU-H", "FREE", "AVAILABILITY")
	community := false
	for _, g := range out.Groups {
		for _, o := range g.Offers {
			kind := o.MachineKind
			if o.Community {
				kind += " (community)"
				community = true
			}
			free := "not counted"
			if o.NodesAvailable != nil {
				free = fmt.Sprint(*o.NodesAvailable)
			}
			sell := sellText[o.Availability]
			if sell == "" {
				sell = o.Availability
			}
			loc := o.Location
			if loc == "" {
				loc = g.Location
			}
			row(tw, o.ID, loc, o.Interconnect, kind, fmt.Sprintf("%d × %s", o.GPUsPerNode, o.Accelerator),
				perHour(o.USDPerHour), perHour(o.USDPerMachineHour), perHour(o.PerGPUUSDPerHour), free, sell)
		}
	}
	tw.Flush()
	if community {
		fmt.Fprintln(w, "\nCommunity hosts are other people's machines: keep secrets off them.")
	}
	fmt.Fprintln(w, "\nPrice one: clusterdeck gpu clusters quote --accelerator A --nodes N --gpus-per-node G [--offer-id OFFER]")
}

// printPrivateOffers lists the organisation's private offers (X9) above
// the public ones, marked as its own: each has one size and a locked price.
func printPrivateOffers(w io.Writer, ps []api.PrivateOffer) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(w, "Your organisation's private offers (%d): reserved for you at a locked price, one size each\n\n", len(ps))
	tw := table(w)
	row(tw, "PRIVATE OFFER", "OFFER", "LOCATION", "INTERCONNECT", "KIND", "SIZE", "$/H CLUSTER", "$/H MACHINE", "VALID UNTIL")
	for _, p := range ps {
		row(tw, p.ID+" (yours)", p.OfferID, p.Location, p.Interconnect, p.MachineKind,
			fmt.Sprintf("%d × %d GPUs %s", p.Nodes, p.GPUsPerNode, p.Accelerator), perHour(p.USDPerHour), perHour(p.USDPerMachineHour), fmtTime(p.ValidUntil))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nLaunch one: clusterdeck gpu clusters launch --private-offer-id ID (or price it first: clusters quote --private-offer-id ID)")
	fmt.Fprintln(w)
}

// ---- quotes ----

func printQuote(w io.Writer, q api.Quote, now time.Time) {
	fmt.Fprintf(w, "Quote %s: %d × %d GPUs %s at %s (%s, %s, offer %s)\n\n", q.ID, q.Nodes, q.GPUsPerNode, q.Accelerator,
		q.Location, q.Interconnect, q.MachineKind, q.OfferID)
	tw := table(w)
	fmt.Fprintf(tw, "Price\t%s for the whole cluster (%s per machine)\n", perHour(q.USDPerHour), perHour(q.USDPerMachineHour))
	fmt.Fprintf(tw, "Locked until\t%s%s\n", fmtTime(q.ExpiresAt), until(q.ExpiresAt, now))
	fmt.Fprintf(tw, "Availability\t%s (stock for one machine of this shape; placing every machine together is confirmed at launch)\n", q.Availability)
	if q.MaxHourlyPrice != nil {
		fmt.Fprintf(tw, "Ceiling\t%s\n", perHour(*q.MaxHourlyPrice))
	}
	if gb := q.Storage["persistentGb"]; gb > 0 && q.VolumeID != "" {
		fmt.Fprintf(tw, "Volume\t%s, %d GB, mounted on every node (the cluster runs in its location)\n", q.VolumeID, gb)
	} else if gb > 0 {
		fmt.Fprintf(tw, "Volume\t%d GB, created with the cluster, shared by every node, kept after terminate\n", gb)
	}
	if q.IncludeCommunity {
		fmt.Fprintf(tw, "Community hosts\tallowed (keep secrets off them)\n")
	}
	if q.PrivateOfferID != "" {
		fmt.Fprintf(tw, "Private offer\t%s (your organisation's, at its locked price)\n", q.PrivateOfferID)
	}
	tw.Flush()
	printLineItems(w, q.LineItems, q.USDPerHour)
}

func printLineItems(w io.Writer, items []api.LineItem, total string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := table(w)
	row(tw, "ITEM", "QUANTITY", "$/H")
	for _, li := range items {
		row(tw, li.Name, li.Quantity, "$"+li.USDPerHour)
	}
	row(tw, "total", "whole cluster", "$"+total)
	tw.Flush()
}

// ---- errors ----

// shapeText is no_capacity's shape for people.
func shapeText(s api.Shape) string {
	parts := []string{fmt.Sprintf("%d × %d GPUs %s", s.Nodes, s.GPUsPerNode, s.Accelerator)}
	if s.Storage.PersistentGB > 0 {
		parts = append(parts, fmt.Sprintf("volume %d GB", s.Storage.PersistentGB))
	}
	if s.MaxHourlyPrice != "" {
		parts = append(parts, "ceiling "+perHour(s.MaxHourlyPrice))
	}
	if s.Location != "" {
		parts = append(parts, "location "+s.Location)
	}
	if s.OfferID != "" {
		parts = append(parts, "offer "+s.OfferID)
	}
	if s.IncludeCommunity {
		parts = append(parts, "community hosts allowed")
	}
	return strings.Join(parts, ", ")
}

// printAPIError is the API's message, its field errors and what the code
// carries (Q4's reason, shape and advice; X1's old and new price).
func (c *gpuCLI) printAPIError(e *client.Error) {
	w := c.stderr
	msg := e.Message
	if e.NotAPI && e.Status == http.StatusNotFound {
		msg += "; is --api Clusterdeck's URL?"
	}
	fmt.Fprintf(w, "clusterdeck: %s (%s, HTTP %d)\n", msg, e.Code, e.Status)
	names := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		fmt.Fprintf(w, "  %s: %s\n", k, e.Fields[k])
	}
	var reason string
	e.Extra("reason", &reason)
	switch e.Code {
	case "no_capacity":
		if reason != "" {
			fmt.Fprintf(w, "  reason: %s\n", reason)
		}
		var shape api.Shape
		if e.Extra("shape", &shape) {
			fmt.Fprintf(w, "  shape:  %s\n", shapeText(shape))
		}
		var advice []string
		if e.Extra("advice", &advice) && len(advice) > 0 {
			fmt.Fprintln(w, "  what to do:")
			for _, a := range advice {
				fmt.Fprintf(w, "    - %s\n", a)
			}
		}
	case "price_changed":
		if reason != "" {
			fmt.Fprintf(w, "  reason: %s\n", reason)
		}
		var old, nq api.Quote
		if e.Extra("old", &old) {
			fmt.Fprintf(w, "\nQuoted before (%s): %s\n", old.ID, perHour(old.USDPerHour))
			printLineItems(w, old.LineItems, old.USDPerHour)
		}
		if e.Extra("new", &nq) && nq.ID != "" {
			fmt.Fprintf(w, "\nThe price now (%s, locked until %s): %s\n", nq.ID, fmtTime(nq.ExpiresAt), perHour(nq.USDPerHour))
			printLineItems(w, nq.LineItems, nq.USDPerHour)
			fmt.Fprintf(w, "\nLaunch at the new price with --quote-id %s, or request a fresh quote.\n", nq.ID)
		} else {
			fmt.Fprintln(w, "  Request a fresh quote: clusterdeck gpu clusters quote …")
		}
	case "insufficient_balance":
		var bal, committed, req, short string
		if e.Extra("balance", &bal) && e.Extra("required", &req) && e.Extra("shortfall", &short) {
			if e.Extra("committed", &committed) && committed != "0.00" {
				bal += ", less $" + committed + "/h already running or starting"
			}
			fmt.Fprintf(w, "  balance $%s, required $%s, add $%s (Billing in the dashboard)\n", bal, req, short)
		}
	case "unauthorized", "invalid_api_key":
		fmt.Fprintln(w, "  Check --key or CLUSTERDECK_API_KEY (API keys are under Settings → API keys).")
	case "not_connectable":
		fmt.Fprintln(w, "  \"clusterdeck gpu clusters get ID\" shows where it is; launch --wait follows it until ready.")
	}
}

// ---- clusters ----

func printClusterList(w io.Writer, clusters []api.Cluster) {
	if len(clusters) == 0 {
		fmt.Fprintln(w, "No clusters yet. See what can start: clusterdeck gpu offers --accelerator H100_80GB --nodes 2")
		return
	}
	tw := table(w)
	row(tw, "ID", "NAME", "STATUS", "SHAPE", "$/H", "READY AT", "CREATED")
	for _, cl := range clusters {
		row(tw, cl.ID, cl.Name, statusText(cl), clusterShape(cl), perHour(cl.USDPerHour), fmtTimePtr(cl.ReadyAt), fmtTime(cl.CreatedAt))
	}
	tw.Flush()
}

func printCluster(w io.Writer, cl api.Cluster) {
	tw := table(w)
	fmt.Fprintf(tw, "Cluster\t%s %q\n", cl.ID, cl.Name)
	fmt.Fprintf(tw, "Status\t%s\n", statusText(cl))
	fmt.Fprintf(tw, "Shape\t%s (%s, %s, provider %s)\n", clusterShape(cl), cl.MachineKind, cl.Interconnect, cl.Provider)
	if cl.Software != "" {
		fmt.Fprintf(tw, "Software\t%s\n", cl.Software)
	}
	fmt.Fprintf(tw, "Price\t%s for the whole cluster (%s per machine), locked by quote %s\n", perHour(cl.USDPerHour), perHour(cl.USDPerMachineHour), cl.QuoteID)
	fmt.Fprintf(tw, "Created\t%s\n", fmtTime(cl.CreatedAt))
	if cl.ReadyAt != nil {
		fmt.Fprintf(tw, "Ready at\t%s (billing since)\n", fmtTimePtr(cl.ReadyAt))
	} else {
		fmt.Fprintf(tw, "Ready at\t— (not billed)\n")
	}
	if cl.TerminateRequestedAt != nil {
		fmt.Fprintf(tw, "Terminate requested\t%s\n", fmtTimePtr(cl.TerminateRequestedAt))
	}
	if cl.EndedAt != nil {
		fmt.Fprintf(tw, "Ended\t%s\n", fmtTimePtr(cl.EndedAt))
	}
	if le := lastError(cl); le != "" {
		fmt.Fprintf(tw, "Last error\t%s\n", le)
	}
	tw.Flush()
	if cl.ReadyAt != nil && cl.EndedAt == nil {
		printRecovery(w, cl.Recovery)
	}
	if cl.Verification != nil {
		printVerification(w, *cl.Verification)
	}
	if len(cl.Nodes) > 0 {
		fmt.Fprintln(w)
		tw = table(w)
		starts := slices.ContainsFunc(cl.Nodes, func(n api.ClusterNode) bool { return n.StartCommand != nil })
		head := []string{"NODE", "RANK", "STATUS", "STEP", "ADDRESS", "PUBLIC HOST"}
		if starts {
			head = append(head, "START COMMAND")
		}
		row(tw, head...)
		for _, n := range cl.Nodes {
			cells := []string{n.Name, fmt.Sprint(n.Rank), n.Status, stepLabel(n.Step), n.Address, n.PublicHost}
			if starts {
				cells = append(cells, startText(n.StartCommand))
			}
			row(tw, cells...)
		}
		tw.Flush()
	}
	if len(cl.Events) > 0 {
		fmt.Fprintln(w, "\nEvents:")
		for _, e := range cl.Events {
			fmt.Fprintln(w, "  "+eventLine(e))
		}
	}
}

// startText is a node's start command state in one cell (N3).
func startText(s *api.NodeStartCommand) string {
	switch {
	case s == nil:
		return ""
	case s.State == "running":
		return "running since " + fmtTimePtr(s.StartedAt)
	case s.State == "exited" && s.ExitCode != nil:
		return fmt.Sprintf("exited %d at %s", *s.ExitCode, fmtTimePtr(s.EndedAt))
	case s.State == "failed":
		return "failed: " + s.Error
	}
	return s.State
}

func printConnections(w io.Writer, c api.Connections) {
	fmt.Fprintf(w, "Cluster %s (%s)\n", c.Cluster, c.Status)
	if c.Primary != nil {
		fmt.Fprintf(w, "Primary (%s):  %s\n", c.Primary.Name, c.Primary.SSH)
	}
	if c.Gateway != nil && *c.Gateway != "" {
		fmt.Fprintf(w, "Gateway:  %s (nodes without public addresses are reached through it with -J)\n", *c.Gateway)
	}
	if len(c.Nodes) > 0 {
		fmt.Fprintln(w)
		tw := table(w)
		row(tw, "NODE", "RANK", "ADDRESS", "SSH")
		for _, n := range c.Nodes {
			row(tw, n.Name, fmt.Sprint(n.Rank), n.Address, n.SSH)
		}
		tw.Flush()
	}
	if c.EnvBlock != "" {
		fmt.Fprintf(w, "\nEnvironment on node-0 (%s):\n", strings.TrimSuffix(c.EnvNote, "."))
		fmt.Fprint(w, indent(c.EnvBlock, "  "))
	}
	if len(c.Ports) > 0 {
		fmt.Fprintln(w, "\nPorts:")
		for _, p := range c.Ports {
			fmt.Fprintf(w, "  %d  %s\n", p.Port, p.Note)
			for _, a := range p.Addresses {
				fmt.Fprintf(w, "      %s\n", a)
			}
			if p.Tunnel != "" {
				fmt.Fprintf(w, "      %s\n", p.Tunnel)
			}
		}
	}
	if c.Hostfile != "" {
		fmt.Fprintf(w, "\nHostfile (%s):\n", c.HostfilePath)
		fmt.Fprint(w, indent(c.Hostfile, "  "))
	}
	if len(c.Commands) > 0 {
		fmt.Fprintln(w, "\nCommands:")
		for _, cmd := range c.Commands {
			fmt.Fprintf(w, "  # %s (run on %s)\n", cmd.Name, cmd.RunOn)
			fmt.Fprint(w, indent(cmd.Command, "  "))
			if cmd.Note != "" {
				fmt.Fprint(w, indent(cmd.Note, "  # "))
			}
		}
	}
	for _, note := range []string{c.MallocHint, c.Readiness} {
		if note != "" {
			fmt.Fprintln(w)
			fmt.Fprint(w, indent(note, ""))
		}
	}
	if c.ReadinessScript != "" {
		fmt.Fprintln(w)
		fmt.Fprint(w, indent(c.ReadinessScript, "  "))
	}
}

// indent prefixes every line and ends with a newline.
func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

func lastError(cl api.Cluster) string {
	if cl.LastError == nil {
		return ""
	}
	return *cl.LastError
}

package cli

import (
	"fmt"
	"io"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// reservations dispatches `gpu reservations SUB …` (X18).
func (c *gpuCLI) reservations(args []string) error {
	if len(args) == 0 {
		return usageError("name a reservations command: availability, book, list, get or cancel")
	}
	commands := map[string]func([]string) error{
		"availability": c.reservationAvailability, "calendar": c.reservationAvailability, "book": c.reservationBook,
		"list": c.reservationList, "ls": c.reservationList, "get": c.reservationGet, "show": c.reservationGet, "cancel": c.reservationCancel,
	}
	sub, rest := args[0], args[1:]
	if run, ok := commands[sub]; ok {
		return run(rest)
	}
	if sub == "help" || sub == "-h" || sub == "--help" {
		fmt.Fprint(c.stdout, gpuUsage)
		return nil
	}
	return usageError(fmt.Sprintf("unknown command \"reservations %s\"", sub))
}

func (c *gpuCLI) reservationAvailability(args []string) error {
	fs := c.flagSet("availability", "reservations availability OFFER_ID [--nodes N] [--days D]")
	nodes := fs.Int("nodes", 2, "machines wanted (2 to 512)")
	days := fs.Int("days", 30, "days ahead (1 to 120)")
	id, err := oneID(fs, args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Availability, error) {
		return sdk.Availability(c.ctx, id, *nodes, *days, raw)
	}, func(w io.Writer, a api.Availability) {
		fmt.Fprintf(w, "%s — source %s; launched %d minutes ahead; %s per machine-hour\n%s\n", a.OfferID, a.Source, a.LeadMinutes, "$"+a.USDPerMachineHour, a.SourceText)
		for _, d := range a.Days {
			mark := "  "
			if d.Bookable {
				mark = "ok"
			}
			fmt.Fprintf(w, "%s  %s  %d free\n", d.Date, mark, d.Free)
		}
	})
}

func (c *gpuCLI) reservationBook(args []string) error {
	fs := c.flagSet("book", "reservations book --offer-id ID --nodes N --start-at RFC3339 --hours H [--preview]")
	var b api.ReservationBody
	fs.StringVar(&b.OfferID, "offer-id", "", "the offer to book")
	fs.StringVar(&b.PrivateOfferID, "private-offer-id", "", "or your organisation's private offer")
	fs.StringVar(&b.FromClusterID, "from-cluster-id", "", "or reserve this cluster's shape again")
	fs.IntVar(&b.Nodes, "nodes", 0, "machines")
	fs.StringVar(&b.StartAt, "start-at", "", "the start, on a whole hour, like 2027-01-04T09:00:00Z (required)")
	fs.IntVar(&b.DurationHours, "hours", 0, "the term in hours (required)")
	fs.BoolVar(&b.Preview, "preview", false, "price it and state the terms without booking")
	key := fs.String("idempotency-key", client.NewIdempotencyKey(), "retry with the same key to book once")
	if err := noArgs(fs, args, "use --offer-id, --nodes, --start-at and --hours"); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Reservation, error) {
		r, _, err := sdk.Reserve(c.ctx, b, *key, raw)
		return r, err
	}, printReservation)
}

func (c *gpuCLI) reservationList(args []string) error {
	if err := noArgs(c.flagSet("list", "reservations list"), args, ""); err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.ReservationList, error) {
		return sdk.Reservations(c.ctx, raw)
	}, func(w io.Writer, l api.ReservationList) {
		if len(l.Reservations) == 0 {
			fmt.Fprintln(w, "No reservations.")
		}
		for _, r := range l.Reservations {
			fmt.Fprintf(w, "%s  %-11s  %d × %d × %s  %s  %d h  $%s/h\n", r.ID, r.Status, r.Nodes, r.GPUsPerNode, r.Accelerator,
				r.StartAt.Format("2006-01-02 15:04Z"), r.DurationHours, r.USDPerHour)
		}
	})
}

func (c *gpuCLI) reservationGet(args []string) error {
	id, err := oneID(c.flagSet("get", "reservations get ID"), args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Reservation, error) {
		return sdk.Reservation(c.ctx, id, raw)
	}, printReservation)
}

func (c *gpuCLI) reservationCancel(args []string) error {
	id, err := oneID(c.flagSet("cancel", "reservations cancel ID"), args)
	if err != nil {
		return err
	}
	return show(c, func(sdk *client.Client, raw client.Option) (api.Reservation, error) {
		return sdk.CancelReservation(c.ctx, id, raw)
	}, func(w io.Writer, r api.Reservation) {
		fmt.Fprintf(w, "Reservation %s cancelled; $%s of the $%s deposit refunded.\n", r.ID, r.Refund, r.Terms.Deposit)
	})
}

func printReservation(w io.Writer, r api.Reservation) {
	fmt.Fprintf(w, "Reservation %s (%s): %d × %d × %s on %s\n", r.ID, r.Status, r.Nodes, r.GPUsPerNode, r.Accelerator, r.OfferID)
	fmt.Fprintf(w, "  From %s for %d hours at $%s/h ($%s per machine-hour): $%s for the term\n",
		r.StartAt.Format("2006-01-02 15:04Z"), r.DurationHours, r.USDPerHour, r.USDPerMachineHour, r.Terms.Total)
	fmt.Fprintf(w, "  Deposit $%s; full refund until %s, half until %s; launched at %s\n", r.Terms.Deposit,
		r.Terms.FullRefundUntil.Format("2006-01-02 15:04Z"), r.Terms.HalfRefundUntil.Format("2006-01-02 15:04Z"), r.Terms.LaunchAt.Format("2006-01-02 15:04Z"))
	fmt.Fprintf(w, "  Source: %s\n", r.Terms.SourceText)
	if r.ClusterID != "" {
		fmt.Fprintf(w, "  Cluster: %s\n", r.ClusterID)
	}
	for _, e := range r.Events {
		fmt.Fprintf(w, "  %s  %s  %s\n", e.CreatedAt.Format("2006-01-02 15:04Z"), e.Type, e.Message)
	}
}

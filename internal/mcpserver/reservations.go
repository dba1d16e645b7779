package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Reserved capacity (X18): the calendar, booking, listing and cancelling.

// AvailabilityArgs are offer_availability's arguments.
type AvailabilityArgs struct {
	OfferID string `json:"offer_id" jsonschema:"an offer id from list_offers"`
	Nodes   int    `json:"nodes,omitempty" jsonschema:"machines wanted, 2 to 512 (default 2)"`
	Days    int    `json:"days,omitempty" jsonschema:"days ahead, 1 to 120 (default 120)"`
}

// ReserveArgs are reserve_capacity's arguments.
type ReserveArgs struct {
	OfferID        string `json:"offer_id,omitempty" jsonschema:"the offer to book (or private_offer_id)"`
	PrivateOfferID string `json:"private_offer_id,omitempty" jsonschema:"your organisation's private offer"`
	Nodes          int    `json:"nodes,omitempty" jsonschema:"machines, 2 to 64 (a private offer's own size)"`
	StartAt        string `json:"start_at" jsonschema:"RFC 3339 on a whole hour, like 2027-01-04T09:00:00Z"`
	DurationHours  int    `json:"duration_hours" jsonschema:"the term in hours, 1 to 2160"`
	FromClusterID  string `json:"from_cluster_id,omitempty" jsonschema:"reserve this finished cluster's shape again"`
	Preview        bool   `json:"preview,omitempty" jsonschema:"price it and state the cancellation terms without booking"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a key of yours to make retries book once"`
}

// ReservationIDArgs name one reservation.
type ReservationIDArgs struct {
	ReservationID string `json:"reservation_id" jsonschema:"a reservation id from list_reservations"`
}

func reservationSummary(r api.Reservation) string {
	s := fmt.Sprintf("Reservation %s (%s): %d × %d × %s on %s from %s for %d h at $%s/h, deposit $%s; full refund until %s, half until %s. Source: %s.",
		r.ID, r.Status, r.Nodes, r.GPUsPerNode, r.Accelerator, r.OfferID, r.StartAt.Format("2006-01-02T15:04Z"), r.DurationHours,
		r.USDPerHour, r.Terms.Deposit, r.Terms.FullRefundUntil.Format("2006-01-02T15:04Z"), r.Terms.HalfRefundUntil.Format("2006-01-02T15:04Z"), r.Terms.Source)
	if r.ClusterID != "" {
		s += " Cluster " + r.ClusterID + "."
	}
	return s
}

func (t *tools) reservationTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "offer_availability", InputSchema: inputSchema[AvailabilityArgs](nil), Annotations: readOnly("An offer's calendar"),
		Description: "How many machines of an offer can be reserved on each day up to 120 days ahead, whether `nodes` can, where the capacity comes from (held machines, an upstream reservation, best effort with a credit) and how long before the start the cluster is launched."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in AvailabilityArgs) (*mcp.CallToolResult, any, error) {
			var a api.Availability
			return call(ctx, func(o client.Option) (err error) {
				a, err = t.api.Availability(ctx, in.OfferID, in.Nodes, in.Days, o)
				return err
			},
				func() string {
					var free []string
					for _, d := range a.Days {
						if d.Bookable {
							free = append(free, d.Date)
						}
					}
					first := "none"
					if len(free) > 0 {
						first = free[0]
					}
					return fmt.Sprintf("%s: %d of %d days bookable for %d machines (first %s); source %s; launched %d minutes ahead.",
						a.OfferID, len(free), len(a.Days), a.Nodes, first, a.Source, a.LeadMinutes)
				})
		})
	mcp.AddTool(s, &mcp.Tool{Name: "reserve_capacity", InputSchema: inputSchema[ReserveArgs](nil), Annotations: writes("Reserve capacity", false, false),
		Description: "Book an offer at a size from a start for a term: the price is locked now and a deposit (10 % of the term, at least one cluster-hour) is taken from the balance. The cluster is launched ahead, verified and handed over at the start; each started hour late is credited. preview: true states price and cancellation terms without booking."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ReserveArgs) (*mcp.CallToolResult, any, error) {
			var r api.Reservation
			return call(ctx, func(o client.Option) (err error) {
				r, _, err = t.api.Reserve(ctx, api.ReservationBody{OfferID: in.OfferID, PrivateOfferID: in.PrivateOfferID, Nodes: in.Nodes,
					StartAt: in.StartAt, DurationHours: in.DurationHours, FromClusterID: in.FromClusterID, Preview: in.Preview}, strings.TrimSpace(in.IdempotencyKey), o)
				return err
			}, func() string { return reservationSummary(r) })
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list_reservations", InputSchema: inputSchema[NoArgs](nil), Annotations: readOnly("List reservations"),
		Description: "The organisation's reservations: status, start, term, price, terms and cluster."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ NoArgs) (*mcp.CallToolResult, any, error) {
			var l api.ReservationList
			return call(ctx, func(o client.Option) (err error) { l, err = t.api.Reservations(ctx, o); return err },
				func() string { return fmt.Sprintf("%d reservations.", len(l.Reservations)) })
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get_reservation", InputSchema: inputSchema[ReservationIDArgs](nil), Annotations: readOnly("Get a reservation"),
		Description: "One reservation with its terms and its trail (booked, launched, handed over, credits, warnings, end)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ReservationIDArgs) (*mcp.CallToolResult, any, error) {
			var r api.Reservation
			return call(ctx, func(o client.Option) (err error) { r, err = t.api.Reservation(ctx, in.ReservationID, o); return err },
				func() string { return reservationSummary(r) })
		})
	mcp.AddTool(s, &mcp.Tool{Name: "cancel_reservation", InputSchema: inputSchema[ReservationIDArgs](nil), Annotations: writes("Cancel a reservation", true, false),
		Description: "Cancel a reservation before its start; the deposit is refunded by the terms stated at booking (whole, half or none)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ReservationIDArgs) (*mcp.CallToolResult, any, error) {
			var r api.Reservation
			return call(ctx, func(o client.Option) (err error) {
				r, err = t.api.CancelReservation(ctx, in.ReservationID, o)
				return err
			},
				func() string { return fmt.Sprintf("Reservation %s cancelled; $%s refunded.", r.ID, r.Refund) })
		})
}

package web

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// Reserved capacity in the API (X18): book, list, read, change, cancel,
// and each offer's availability calendar.

func (h *handler) reservationNotify() *models.ClusterNotify {
	return &models.ClusterNotify{BaseURL: h.Config.BaseURL}
}

func toReservationJSON(r models.Reservation, trail []models.ReservationEvent) api.Reservation {
	t := r.Terms()
	j := api.Reservation{ID: r.ID, Status: r.Status, OfferID: r.OfferID, PrivateOfferID: r.PrivateOfferID, QuoteRequestID: r.RequestID,
		Provider: r.Provider, Location: r.Location, Accelerator: r.Accelerator, Nodes: r.Nodes, GPUsPerNode: r.GPUsPerNode,
		StartAt: r.StartAt.UTC(), EndAt: r.EndAt.UTC(), DurationHours: r.Hours(),
		USDPerMachineHour: models.DecimalUSD(r.MachineHour), USDPerHour: models.DecimalUSD(r.ClusterHour()),
		Terms: api.ReservationTerms{FullRefundUntil: t.FullRefundUntil.UTC(), HalfRefundUntil: t.HalfRefundUntil.UTC(),
			ChangeUntil: t.ChangeUntil.UTC(), LaunchAt: t.LaunchAt.UTC(), Deposit: models.DecimalUSD(t.Deposit),
			Total: models.DecimalUSD(t.Total), Source: t.Source, SourceText: t.SourceText},
		ClusterID: r.ClusterID, LateCredit: models.DecimalUSD(r.LateCredit), Refund: models.DecimalUSD(r.Refund),
		LastError: r.LastError, Events: []api.ReservationEvent{}, CreatedAt: r.CreatedAt.UTC()}
	if r.HandedOverAt != nil {
		at := r.HandedOverAt.UTC()
		j.HandedOverAt = &at
	}
	for _, e := range trail {
		j.Events = append(j.Events, api.ReservationEvent{Type: e.Type, Message: e.Message, CreatedAt: e.CreatedAt.UTC()})
	}
	return j
}

// reservationError maps reservation refusals onto API codes.
func reservationError(err error) error {
	var se *models.ReservationStateError
	var be *models.ReservationBoundsError
	switch {
	case errors.As(err, &se):
		return &APIError{Status: http.StatusConflict, Code: "reservation_state", Message: se.Message}
	case errors.As(err, &be):
		return &APIError{Status: http.StatusTooManyRequests, Code: "too_many_reservations", Message: be.Message}
	}
	return launchError(err)
}

// apiCreateReservation is POST /v1/reservations: 201 with the booking (its
// deposit taken), 200 with a preview or the same Idempotency-Key's first
// booking, 409 no_capacity when the source cannot back it.
func (h *handler) apiCreateReservation(c echo.Context) error {
	ctx := c.Request().Context()
	var b api.ReservationBody
	raw, err := decodeJSON(c, &b)
	if err != nil {
		return err
	}
	key := strings.TrimSpace(c.Request().Header.Get("Idempotency-Key"))
	if len(key) > 191 {
		return invalid(models.FieldErrors{"Idempotency-Key": "at most 191 characters"})
	}
	sum := sha256.Sum256(raw)
	in := models.ReservationInput{OfferID: b.OfferID, PrivateOfferID: b.PrivateOfferID, Nodes: b.Nodes, StartAt: b.StartAt,
		DurationHours: b.DurationHours, Preview: b.Preview, IdemKey: key, RequestHash: hex.EncodeToString(sum[:])}
	if b.FromClusterID != "" { // reserve the same shape again: the cluster's offer and size unless sent
		cl, err := h.Store.ClusterForOrg(ctx, principal(c).Org.ID, b.FromClusterID)
		if err != nil {
			return invalid(models.FieldErrors{"fromClusterId": "unknown cluster of your organisation"})
		}
		in.FromClusterID = cl.ID
		if in.OfferID == "" && in.PrivateOfferID == "" {
			in.OfferID = cl.OfferID
		}
		if in.Nodes == 0 {
			in.Nodes = cl.Nodes
		}
	}
	if in.OfferID == "" && in.PrivateOfferID == "" {
		return invalid(models.FieldErrors{"offerId": "send an offerId (or a privateOfferId, or a fromClusterId)"})
	}
	r, created, err := h.act(c).Book(ctx, in, h.reservationNotify())
	if err != nil {
		return reservationError(err)
	}
	trail, err := h.Store.ReservationTrail(ctx, principal(c).Org.ID, r.ID)
	if err != nil {
		return err
	}
	if b.Preview {
		r.Status = "preview"
	}
	if created {
		return c.JSON(http.StatusCreated, toReservationJSON(r, trail))
	}
	return c.JSON(http.StatusOK, toReservationJSON(r, trail))
}

// apiListReservations is GET /v1/reservations: the organisation's, by start.
func (h *handler) apiListReservations(c echo.Context) error {
	rs, err := h.Store.ReservationsForOrg(c.Request().Context(), principal(c).Org.ID)
	if err != nil {
		return err
	}
	rs = inKeyEnv(principal(c), rs, func(r models.Reservation) string { return r.EnvID })
	out := make([]api.Reservation, 0, len(rs))
	for _, r := range rs {
		out = append(out, toReservationJSON(r, nil))
	}
	return c.JSON(http.StatusOK, api.ReservationList{Reservations: out})
}

// apiGetReservation is GET /v1/reservations/{id}, with its trail.
func (h *handler) apiGetReservation(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := h.Store.ReservationForOrg(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	trail, err := h.Store.ReservationTrail(ctx, r.OrgID, r.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toReservationJSON(r, trail))
}

// apiCancelReservation is POST /v1/reservations/{id}/cancel.
func (h *handler) apiCancelReservation(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := h.act(c).CancelReservation(ctx, c.Param("id"), h.reservationNotify())
	if err != nil {
		return reservationError(err)
	}
	trail, err := h.Store.ReservationTrail(ctx, r.OrgID, r.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toReservationJSON(r, trail))
}

// apiChangeReservation is PATCH /v1/reservations/{id}: a new start and term.
func (h *handler) apiChangeReservation(c echo.Context) error {
	ctx := c.Request().Context()
	var b api.ReservationChangeBody
	if _, err := decodeJSON(c, &b); err != nil {
		return err
	}
	r, err := h.act(c).ChangeReservation(ctx, c.Param("id"), b.StartAt, b.DurationHours, h.reservationNotify())
	if err != nil {
		return reservationError(err)
	}
	trail, err := h.Store.ReservationTrail(ctx, r.OrgID, r.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toReservationJSON(r, trail))
}

// calendarQuery reads ?nodes= (default 2) and ?days= (default and most 120).
func calendarQuery(c echo.Context) (nodes, days int, fe models.FieldErrors) {
	fe = models.FieldErrors{}
	nodes, days = models.MinNodes, models.ReservationHorizonDays
	if v := c.QueryParam("nodes"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < models.MinNodes || n > models.CapacityMaxNodes {
			fe["nodes"] = "2 to 512 machines"
		}
		nodes = n
	}
	if v := c.QueryParam("days"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > models.ReservationHorizonDays {
			fe["days"] = "1 to 120 days"
		}
		days = n
	}
	return nodes, days, fe
}

func toAvailabilityJSON(cal models.Calendar, nodes int) api.Availability {
	a := api.Availability{OfferID: cal.Offer.ID, Nodes: nodes, Source: cal.Source, SourceText: cal.SourceText,
		LeadMinutes: int((cal.Lead + time.Minute - 1) / time.Minute), USDPerMachineHour: models.DecimalUSD(cal.Offer.MachineHour()),
		Days: make([]api.AvailabilityDay, len(cal.Days))}
	for i, d := range cal.Days {
		a.Days[i] = api.AvailabilityDay{Date: d.Date.Format(time.DateOnly), Free: d.Free, Bookable: d.Free >= nodes}
	}
	return a
}

// apiOfferAvailability is GET /v1/gpu/offers/{id}/availability: how many
// machines can be booked on each day up to 120 days ahead, and whether the
// asked size can (X18).
func (h *handler) apiOfferAvailability(c echo.Context) error {
	nodes, days, fe := calendarQuery(c)
	if len(fe) > 0 {
		return invalid(fe)
	}
	cal, err := h.Store.AvailabilityCalendar(c.Request().Context(), c.Param("id"), days)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toAvailabilityJSON(cal, nodes))
}

// reservationRow is the views' plain row of a reservation.
func reservationRow(r models.Reservation) views.ReservationRow {
	const at = "2006-01-02 15:04 UTC"
	t := r.Terms()
	row := views.ReservationRow{ID: r.ID, Status: strings.ReplaceAll(r.Status, "_", " "), Shape: r.Shape(), Offer: r.OfferID,
		Start: r.StartAt.UTC().Format(at), End: r.EndAt.UTC().Format(at), Term: models.Count(r.Hours(), "hour"),
		Price: models.PriceUSD(r.ClusterHour()) + "/h (" + models.USD(r.MachineHour) + " per machine-hour)", Total: models.USD(r.Total()),
		Deposit: models.USD(r.Deposit), FullRefundUntil: t.FullRefundUntil.UTC().Format(at), HalfRefundUntil: t.HalfRefundUntil.UTC().Format(at),
		LaunchAt: t.LaunchAt.UTC().Format(at), ChangeUntil: t.ChangeUntil.UTC().Format(at), Source: t.Source, SourceText: t.SourceText, Cluster: r.ClusterID}
	if r.HandedOverAt != nil {
		row.HandedOver, row.LateCredit = r.HandedOverAt.UTC().Format(at), models.USD(r.LateCredit)
	}
	if r.Status == models.ReservationCancelled || r.Status == models.ReservationFailed {
		row.Refund = models.USD(r.Refund)
	}
	return row
}

// listReservations is GET /reservations: the organisation's bookings.
func (h *handler) listReservations(c echo.Context) error {
	rs, err := h.Store.ReservationsForOrg(c.Request().Context(), principal(c).Org.ID)
	if err != nil {
		return err
	}
	p := views.ReservationsPage{Meta: h.meta(c, "Reservations")}
	for _, r := range rs {
		p.Rows = append(p.Rows, reservationRow(r))
	}
	return render(c, http.StatusOK, views.ReservationsView(p))
}

// showReservation is GET /reservations/{id}: terms and trail.
func (h *handler) showReservation(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := h.Store.ReservationForOrg(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	trail, err := h.Store.ReservationTrail(ctx, r.OrgID, r.ID)
	if err != nil {
		return err
	}
	p := views.ReservationPage{Meta: h.meta(c, "Reservation "+r.ID), R: reservationRow(r)}
	for _, e := range trail {
		p.Trail = append(p.Trail, views.ReservationEventRow{At: e.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"), Type: e.Type, Message: e.Message})
	}
	return render(c, http.StatusOK, views.ReservationView(p))
}

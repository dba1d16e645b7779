package web

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// The dashboard's self-serve booking (X18): an offer's availability
// calendar at one size, the form, the preview (the API's preview: true)
// and the booking behind a confirm that names the deposit. The calendar,
// the preview and the booking are the same model calls the API makes, with
// the same bounds.

// reserveFormFields maps the model's field names onto the form's.
var reserveFormFields = map[string]string{"offerId": "offer", "privateOfferId": "offer", "fromClusterId": "from",
	"nodes": "nodes", "startAt": "date", "durationHours": "hours"}

func readReserveForm(c echo.Context) views.ReserveForm {
	v := func(k string) string {
		s := strings.TrimSpace(c.FormValue(k))
		if len(s) > 200 { // bounded: nothing the form sends is longer
			s = s[:200]
		}
		return s
	}
	return views.ReserveForm{Offer: v("offer"), From: v("from"), Nodes: v("nodes"), Date: v("date"), Hour: v("hour"), Hours: v("hours")}
}

// reserveInput turns the form into the booking the API would send: the
// start is the date at the whole UTC hour.
func reserveInput(f views.ReserveForm) (models.ReservationInput, models.FieldErrors) {
	fe := models.FieldErrors{}
	in := models.ReservationInput{OfferID: f.Offer, FromClusterID: f.From}
	var err error
	if in.Nodes, err = strconv.Atoi(f.Nodes); err != nil {
		fe["nodes"] = "a whole number of machines"
	}
	if in.DurationHours, err = strconv.Atoi(f.Hours); err != nil {
		fe["hours"] = "a whole number of hours"
	}
	day, derr := time.Parse(time.DateOnly, f.Date)
	hour, herr := strconv.Atoi(f.Hour)
	switch {
	case derr != nil:
		fe["date"] = "a start date, like 2027-01-04"
	case herr != nil || hour < 0 || hour > 23:
		fe["date"] = "a start hour from 00:00 to 23:00 UTC"
	default:
		in.StartAt = day.Add(time.Duration(hour) * time.Hour).UTC().Format(time.RFC3339)
	}
	return in, fe
}

// reserveProblems turns a refusal into the form's problems: field errors
// under their fields, anything else (no capacity, balance, bounds) as the
// form's own line.
func reserveProblems(err error) (map[string]string, bool) {
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		out := map[string]string{}
		for k, msg := range fe {
			if f, ok := reserveFormFields[k]; ok {
				k = f
			}
			out[k] = msg
		}
		return out, true
	}
	var ae *APIError
	if errors.As(reservationError(err), &ae) && ae.Status < 500 {
		return map[string]string{"form": ae.Message}, true
	}
	return nil, false
}

// reservePage builds the page for form f: the calendar of f's offer at f's
// size (the cluster's offer and size when reserving its shape again).
func (h *handler) reservePage(c echo.Context, f *views.ReserveForm) (views.ReservePage, error) {
	ctx := c.Request().Context()
	p := views.ReservePage{Problems: map[string]string{}}
	if f.From != "" {
		cl, err := h.Store.ClusterForOrg(ctx, principal(c).Org.ID, f.From)
		if err != nil {
			return p, err // another organisation's cluster is a 404
		}
		p.FromName = cl.Name
		if f.Offer == "" {
			f.Offer = cl.OfferID
		}
		if f.Nodes == "" {
			f.Nodes = strconv.Itoa(cl.Nodes)
		}
	}
	if f.Nodes == "" {
		f.Nodes = strconv.Itoa(models.MinNodes)
	}
	if f.Hours == "" {
		f.Hours = "168"
	}
	if f.Hour == "" {
		f.Hour = "9"
	}
	nodes, err := strconv.Atoi(f.Nodes)
	if err != nil || nodes < models.MinNodes || nodes > models.CapacityMaxNodes {
		p.Problems["nodes"] = fmt.Sprintf("%d to %d machines", models.MinNodes, models.CapacityMaxNodes)
		nodes = models.MinNodes
	}
	cal, err := h.Store.AvailabilityCalendar(ctx, f.Offer, models.ReservationHorizonDays)
	if errors.Is(err, models.ErrNotFound) {
		p.Meta = h.meta(c, "Reserve")
		p.Problems["offer"] = "unknown offer; pick one on the offers page"
		return p, nil
	} else if err != nil {
		return p, err
	}
	o := cal.Offer
	p.Meta = h.meta(c, "Reserve "+o.ID)
	p.Shape = views.Shape(nodes, o.GPUsPerNode, o.Accelerator)
	p.Location = o.LocationName
	if p.Location == "" {
		p.Location = o.Location
	}
	p.MachineHour = models.PriceUSD(o.MachineHour()) + " per machine-hour"
	p.Source, p.SourceText = cal.Source, cal.SourceText
	p.Lead = "Each cluster is launched " + strconv.Itoa(int((cal.Lead+time.Minute-1)/time.Minute)) + " minutes before its start, to be verified by then"
	a := toAvailabilityJSON(cal, nodes) // the API's own days and bookable test
	for i, d := range a.Days {
		dv := views.CalendarDayView{Date: d.Date, Label: cal.Days[i].Date.Format("Jan 2"), Free: d.Free, Bookable: d.Bookable}
		if d.Bookable {
			q := url.Values{"offer": {f.Offer}, "nodes": {f.Nodes}, "date": {d.Date}, "hour": {f.Hour}, "hours": {f.Hours}}
			if f.From != "" {
				q.Set("from", f.From)
			}
			dv.URL = "/reservations/new?" + q.Encode()
		}
		p.Days = append(p.Days, dv)
	}
	return p, nil
}

// newReservationForm is GET /reservations/new?offer=…[&from=cluster]: the
// calendar and the form; with preview=1, the price, deposit and windows
// the booking would have, from the API's preview (nothing is written).
func (h *handler) newReservationForm(c echo.Context) error {
	f := readReserveForm(c)
	if f.Offer == "" && f.From == "" {
		return c.Redirect(http.StatusSeeOther, "/offers")
	}
	p, err := h.reservePage(c, &f)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if c.QueryParam("preview") != "" && len(p.Problems) == 0 {
		in, fe := reserveInput(f)
		in.Preview = true
		if len(fe) > 0 {
			p.Problems = map[string]string(fe)
		} else if r, _, err := h.act(c).Book(c.Request().Context(), in, nil); err != nil {
			pr, ok := reserveProblems(err)
			if !ok {
				return err
			}
			p.Problems = pr
		} else {
			row := reservationRow(r)
			p.Preview = &row
			p.BookLine = "The deposit of " + row.Deposit + " is taken from your prepaid balance now and credited back at hand-over; the machines then bill at " +
				row.Price + " from " + row.Start + ". Full refund until " + row.FullRefundUntil + "."
		}
		if len(p.Problems) > 0 {
			status = http.StatusUnprocessableEntity
		}
	}
	p.Form = f
	return render(c, status, views.ReserveView(p))
}

// createReservationForm is POST /reservations (CSRF checked by the page
// group): the booking, with the deposit taken, then a 303 to its page; a
// refusal re-renders the form with its problems and changes nothing. The
// form's content is its idempotency key, so a double submit books once.
func (h *handler) createReservationForm(c echo.Context) error {
	f := readReserveForm(c)
	in, fe := reserveInput(f)
	var err error
	var r models.Reservation
	if len(fe) == 0 {
		sum := sha256.Sum256([]byte(strings.Join([]string{f.Offer, f.From, f.Nodes, f.Date, f.Hour, f.Hours}, "\x00")))
		in.RequestHash = hex.EncodeToString(sum[:])
		in.IdemKey = "form:" + in.RequestHash[:32]
		if in.FromClusterID != "" { // the cluster must be the caller's
			if _, cerr := h.Store.ClusterForOrg(c.Request().Context(), principal(c).Org.ID, in.FromClusterID); cerr != nil {
				fe["from"] = "unknown cluster of your organisation"
			}
		}
		if len(fe) == 0 {
			r, _, err = h.act(c).Book(c.Request().Context(), in, h.reservationNotify())
		}
	}
	if len(fe) > 0 || err != nil {
		problems := map[string]string(fe)
		if err != nil {
			var ok bool
			if problems, ok = reserveProblems(err); !ok {
				return err
			}
		}
		if _, bad := problems["from"]; bad {
			f.From = ""
		}
		p, perr := h.reservePage(c, &f)
		if perr != nil {
			return perr
		}
		p.Form, p.Problems = f, problems
		return render(c, http.StatusUnprocessableEntity, views.ReserveView(p))
	}
	_ = h.flash(c, views.FlashSuccess, "Reserved "+r.Shape()+" from "+r.StartAt.UTC().Format("2006-01-02 15:04 UTC")+"; deposit "+models.USD(r.Deposit)+" taken.")
	return redirect(c, "/reservations/"+r.ID)
}

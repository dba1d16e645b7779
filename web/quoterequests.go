package web

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// Request a quote (RQ1, RQ2): the customer's form, list and page, the API,
// and the operators' inbox. The models call them capacity requests.

// quoteRequestForm is the form of POST /quote-requests; numbers stay text so
// that what was typed comes back on a 422.
type quoteRequestForm struct {
	Accelerator  string `form:"accelerator"`
	Nodes        string `form:"nodes"`
	GPUsPerNode  string `form:"gpus_per_node"`
	Fabric       string `form:"fabric"`
	Location     string `form:"location"`
	StartDate    string `form:"start_date"`
	Duration     string `form:"duration"`
	DurationUnit string `form:"duration_unit"`
	Budget       string `form:"budget"`
	ContactName  string `form:"contact_name"`
	ContactEmail string `form:"contact_email"`
	ContactPhone string `form:"contact_phone"`
	Notes        string `form:"notes"`
}

func (f quoteRequestForm) view() views.QuoteRequestForm {
	return views.QuoteRequestForm{Accelerator: f.Accelerator, Nodes: f.Nodes, GPUsPerNode: f.GPUsPerNode,
		Fabric: f.Fabric, Location: f.Location, StartDate: f.StartDate, Duration: f.Duration,
		DurationUnit: f.DurationUnit, Budget: f.Budget, ContactName: f.ContactName,
		ContactEmail: f.ContactEmail, ContactPhone: f.ContactPhone, Notes: f.Notes}
}

// atoi reads a typed number; anything else is 0, which validation refuses
// with the field's range.
func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0
	}
	return n
}

func (h *handler) capacityNotify() models.CapacityNotify {
	return models.CapacityNotify{BaseURL: h.Config.BaseURL, SalesEmail: h.Config.SalesEmail}
}

// newQuoteRequestPage is the form's page around what was typed.
func (h *handler) newQuoteRequestPage(c echo.Context, form views.QuoteRequestForm, problems map[string]string) views.QuoteRequestNewPage {
	return views.QuoteRequestNewPage{
		Meta: h.meta(c, "Request a quote"), Form: form, Problems: problems,
		Accelerators: models.Accelerators, GPUCounts: models.GPUCounts, Fabrics: models.Fabrics,
		MinDate: h.Store.Now().Format(time.DateOnly), MaxNotes: models.CapacityMaxNotes,
	}
}

// newQuoteRequest is GET /quote-requests/new: the form, prefilled from the
// offers page's links (accelerator, nodes, gpus_per_node, interconnect,
// location) and with the signed-in user as the contact.
func (h *handler) newQuoteRequest(c echo.Context) error {
	p := principal(c)
	q := c.QueryParams()
	form := views.QuoteRequestForm{Accelerator: q.Get("accelerator"), Nodes: q.Get("nodes"),
		GPUsPerNode: q.Get("gpus_per_node"), Fabric: q.Get("fabric"), Location: q.Get("location"),
		DurationUnit: "weeks", ContactName: p.User.Name, ContactEmail: p.User.Email}
	if ic := q.Get("interconnect"); form.Fabric == "" && ic != "" {
		form.Fabric = ic
	}
	if !slices.Contains(models.Fabrics, form.Fabric) {
		form.Fabric = "any"
	}
	if form.GPUsPerNode == "" {
		form.GPUsPerNode = "8"
	}
	pg := h.newQuoteRequestPage(c, form, nil)
	nodes, gpus := atoi(q.Get("nodes")), atoi(q.Get("gpus_per_node")) // a whole size from an offer row
	if slices.Contains(models.Accelerators, form.Accelerator) && nodes > 0 && gpus > 0 {
		pg.FromOffer = views.Shape(nodes, gpus, form.Accelerator)
		// Say so when the size can start now somewhere (RQ1): the link that
		// brought the person here was one location's.
		groups, err := h.Store.PickOffers(c.Request().Context(), models.OfferFilter{Accelerator: form.Accelerator, Nodes: nodes, GPUsPerNode: gpus})
		if err != nil {
			return err
		}
		for _, g := range groups {
			if g.Cheapest > 0 {
				pg.StartableIn++
			}
		}
		pg.OffersURL = fmt.Sprintf("/offers?accelerator=%s&nodes=%d&gpus_per_node=%d", url.QueryEscape(form.Accelerator), nodes, gpus)
	}
	return render(c, http.StatusOK, views.QuoteRequestNewView(pg))
}

// createQuoteRequest is POST /quote-requests: 422 with field problems and
// the input kept, or the request (its mails and audit entry with it) and a
// 303 to its page.
func (h *handler) createQuoteRequest(c echo.Context) error {
	var f quoteRequestForm
	if err := c.Bind(&f); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	var in models.QuoteRequestInput
	in.Accelerator, in.Nodes, in.GPUsPerNode, in.Fabric, in.Location = f.Accelerator, atoi(f.Nodes), atoi(f.GPUsPerNode), f.Fabric, f.Location
	in.StartDate, in.Duration, in.DurationUnit, in.Budget = f.StartDate, atoi(f.Duration), f.DurationUnit, f.Budget
	in.ContactName, in.ContactEmail, in.ContactPhone, in.Notes = f.ContactName, f.ContactEmail, f.ContactPhone, f.Notes
	r, err := h.act(c).RequestCapacity(c.Request().Context(), in, h.capacityNotify())
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		pg := h.newQuoteRequestPage(c, f.view(), fe)
		return page(c, http.StatusUnprocessableEntity, views.QuoteRequestNewView(pg), views.QuoteRequestFormView(pg))
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Quote request sent. Sales answers within one business day, by email to "+r.ContactEmail+".")
	return redirect(c, "/quote-requests/"+r.ID)
}

func quoteRequestView(r models.QuoteRequest) views.QuoteRequestView {
	v := views.QuoteRequestView{
		ID: r.ID, Created: views.FormatTime(r.CreatedAt), Updated: views.FormatTime(r.UpdatedAt),
		Shape: r.Shape(), Fabric: models.FabricText(r.Fabric), Location: r.Location,
		Start: r.StartDay(), Duration: r.DurationText(), Budget: "—",
		ContactName: r.ContactName, ContactEmail: r.ContactEmail, ContactPhone: r.ContactPhone,
		Notes: r.Notes, Status: string(r.Status), StatusText: models.CapacityStatusText(r.Status),
	}
	if v.Location == "" {
		v.Location = "Anywhere"
	}
	if r.BudgetPerHour > 0 {
		v.Budget = models.PriceUSD(r.BudgetPerHour) + "/h"
	}
	return v
}

// listQuoteRequests is GET /quote-requests: the org's requests and their status.
func (h *handler) listQuoteRequests(c echo.Context) error {
	rs, err := h.Store.QuoteRequests(c.Request().Context(), principal(c).Org.ID)
	if err != nil {
		return err
	}
	pg := views.QuoteRequestsPage{Meta: h.meta(c, "Quote requests")}
	for _, r := range rs {
		pg.Rows = append(pg.Rows, quoteRequestView(r))
	}
	return render(c, http.StatusOK, views.QuoteRequestsView(pg))
}

// showQuoteRequest is GET /quote-requests/{id}.
func (h *handler) showQuoteRequest(c echo.Context) error {
	r, err := h.Store.QuoteRequestForOrg(c.Request().Context(), principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	made, err := h.Store.PrivateOffersForRequest(c.Request().Context(), r.ID)
	if err != nil {
		return err
	}
	pg := views.QuoteRequestPage{Meta: h.meta(c, "Quote request "+r.ID), R: quoteRequestView(r)}
	now := h.Store.Now()
	for _, po := range made {
		if po.OrgID != r.OrgID {
			continue
		}
		pg.Offers = append(pg.Offers, views.QuoteRequestOffer{ID: po.ID, Shape: views.Shape(po.Nodes, po.GPUsPerNode, po.Accelerator),
			Where: po.LocationName, Price: models.PriceUSD(po.ClusterHour()) + "/h", ValidThrough: po.ValidThrough(),
			LaunchURL: po.LaunchPath(), Live: po.Live(now)})
	}
	return render(c, http.StatusOK, views.QuoteRequestDetailView(pg))
}

// apiFieldNames maps the models' form-named problems onto the body's names.
var apiFieldNames = map[string]string{
	"gpus_per_node": "gpusPerNode", "start_date": "startDate", "duration": "durationDays",
	"budget": "budgetPerHour", "contact_name": "contact.name", "contact_email": "contact.email",
	"contact_phone": "contact.phone",
}

func toQuoteRequestJSON(r models.QuoteRequest) api.QuoteRequest {
	j := api.QuoteRequest{ID: r.ID, Status: string(r.Status), Accelerator: r.Accelerator, Nodes: r.Nodes,
		GPUsPerNode: r.GPUsPerNode, Fabric: r.Fabric, Location: r.Location, StartDate: r.StartDay(),
		DurationDays: r.DurationDays, Notes: r.Notes, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Contact: api.Contact{Name: r.ContactName, Email: r.ContactEmail, Phone: r.ContactPhone}}
	if r.BudgetPerHour > 0 {
		s := models.DecimalUSD(r.BudgetPerHour)
		j.BudgetPerHour = &s
	}
	return j
}

// apiCreateQuoteRequest is POST /v1/quote-requests: 201 with the request, or
// 422 with problems under the body's names. Without a contact, the key's
// creator is the contact.
func (h *handler) apiCreateQuoteRequest(c echo.Context) error {
	ctx := c.Request().Context()
	var b api.QuoteRequestBody
	raw, err := decodeJSON(c, &b)
	if err != nil {
		return err
	}
	key := strings.TrimSpace(c.Request().Header.Get("Idempotency-Key"))
	if len(key) > 191 {
		return invalid(models.FieldErrors{"Idempotency-Key": "at most 191 characters"})
	}
	sum := sha256.Sum256(raw)
	var in models.QuoteRequestInput
	in.Accelerator, in.Nodes, in.GPUsPerNode, in.Fabric, in.Location = b.Accelerator, b.Nodes, b.GPUsPerNode, b.Fabric, b.Location
	in.StartDate, in.Duration, in.DurationUnit, in.Budget, in.Notes = b.StartDate, b.DurationDays, "days", b.BudgetPerHour, b.Notes
	if b.Contact != nil {
		in.ContactName, in.ContactEmail, in.ContactPhone = b.Contact.Name, b.Contact.Email, b.Contact.Phone
	} else if uid := principal(c).UserID; uid != "" {
		if u, err := h.Store.UserByID(ctx, uid); err == nil {
			in.ContactName, in.ContactEmail = u.Name, u.Email
		}
	}
	in.IdemKey, in.RequestHash = key, hex.EncodeToString(sum[:])
	r, created, err := h.act(c).RequestCapacityOnce(ctx, in, h.capacityNotify())
	var fe models.FieldErrors
	if errors.Is(err, models.ErrIdempotencyMismatch) {
		return launchError(err)
	}
	if errors.As(err, &fe) {
		out := models.FieldErrors{}
		for k, v := range fe {
			if n, ok := apiFieldNames[k]; ok {
				k = n
			}
			out[k] = v
		}
		return invalid(out)
	}
	if err != nil {
		return err
	}
	if !created {
		return c.JSON(http.StatusOK, toQuoteRequestJSON(r))
	}
	return c.JSON(http.StatusCreated, toQuoteRequestJSON(r))
}

// apiListQuoteRequests is GET /v1/quote-requests: the org's, newest first.
func (h *handler) apiListQuoteRequests(c echo.Context) error {
	rs, err := h.Store.QuoteRequests(c.Request().Context(), principal(c).Org.ID)
	if err != nil {
		return err
	}
	rs = inKeyEnv(principal(c), rs, func(r models.QuoteRequest) string { return r.EnvID })
	out := make([]api.QuoteRequest, 0, len(rs))
	for _, r := range rs {
		out = append(out, toQuoteRequestJSON(r))
	}
	return c.JSON(http.StatusOK, api.QuoteRequestList{QuoteRequests: out})
}

// apiGetQuoteRequest is GET /v1/quote-requests/{id}.
func (h *handler) apiGetQuoteRequest(c echo.Context) error {
	r, err := h.Store.QuoteRequestForOrg(c.Request().Context(), principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toQuoteRequestJSON(r))
}

func statusStrings() []string {
	out := make([]string, len(models.CapacityStatuses))
	for i, s := range models.CapacityStatuses {
		out[i] = string(s)
	}
	return out
}

func adminQuoteRequestRow(r models.QuoteRequestRow) views.AdminQuoteRequestRow {
	return views.AdminQuoteRequestRow{R: quoteRequestView(r.QuoteRequest), OrgName: r.OrgName, OrgID: r.OrgID,
		Requester: r.Requester, OperatorNote: r.OperatorNote, Statuses: statusStrings()}
}

// adminQuoteRequests is GET /admin/quote-requests[?status=…]: every org's
// requests, newest first, with a filter by status (RQ2, OP2).
func (h *handler) adminQuoteRequests(c echo.Context) error {
	ctx := c.Request().Context()
	status := c.QueryParam("status")
	if status != "" && !models.ValidCapacityStatus(status) {
		return echo.NewHTTPError(http.StatusBadRequest, "Filter by new, contacted, quoted, won or lost.")
	}
	rows, err := h.Store.AdminQuoteRequests(ctx, status)
	if err != nil {
		return err
	}
	pg := views.AdminQuoteRequestsPage{Meta: h.meta(c, "Quote requests"), Filter: status}
	if pg.Filters, err = h.quoteFilters(c, status); err != nil {
		return err
	}
	for _, r := range rows {
		pg.Rows = append(pg.Rows, adminQuoteRequestRow(r))
	}
	return render(c, http.StatusOK, views.AdminQuoteRequestsView(pg))
}

// quoteFilters are the inbox's status links with each status's count.
func (h *handler) quoteFilters(c echo.Context, status string) ([]views.StatusFilter, error) {
	counts, err := h.Store.QuoteRequestCounts(c.Request().Context())
	if err != nil {
		return nil, err
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	out := []views.StatusFilter{{Label: "All", Href: "/admin/quote-requests", Count: total, Active: status == ""}}
	for _, s := range models.CapacityStatuses {
		out = append(out, views.StatusFilter{Label: titleCase(string(s)), Count: counts[s], Active: status == string(s),
			Href: "/admin/quote-requests?" + url.Values{"status": {string(s)}}.Encode()})
	}
	return out, nil
}

// setQuoteRequestStatus is POST /admin/quote-requests/{id}/status: the
// status and the internal note. A changed status mails the customer and is
// audited in their org's log. htmx gets the row back; a plain form, a 303.
func (h *handler) setQuoteRequestStatus(c echo.Context) error {
	ctx := c.Request().Context()
	status, note := trimForm(c, "status"), c.FormValue("operator_note")
	r, changed, err := h.act(c).SetQuoteRequestStatus(ctx, c.Param("id"), status, note, h.capacityNotify())
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		before, lerr := h.Store.QuoteRequestByID(ctx, c.Param("id"))
		if lerr != nil {
			return lerr
		}
		org, lerr := h.Store.OrgByID(ctx, before.OrgID)
		if lerr != nil {
			return lerr
		}
		row := adminQuoteRequestRow(models.QuoteRequestRow{QuoteRequest: before, OrgName: org.Name})
		row.OperatorNote, row.Problems = note, fe
		pg := views.AdminQuoteRequestsPage{Meta: h.meta(c, "Quote requests"), Rows: []views.AdminQuoteRequestRow{row}}
		return page(c, http.StatusUnprocessableEntity, views.AdminQuoteRequestsView(pg), views.AdminQuoteRequestRowView(pg.Meta.CSRF, row))
	}
	if err != nil {
		return err
	}
	if isPartial(c) {
		org, err := h.Store.OrgByID(ctx, r.OrgID)
		if err != nil {
			return err
		}
		row := adminQuoteRequestRow(models.QuoteRequestRow{QuoteRequest: r, OrgName: org.Name})
		row.Saved = true
		// The counts beside the filters follow the save (out of band),
		// on the filter the page shows (htmx sends its address).
		shown := ""
		if u, err := url.Parse(c.Request().Header.Get("HX-Current-URL")); err == nil {
			shown = u.Query().Get("status")
		}
		filters, err := h.quoteFilters(c, shown)
		if err != nil {
			return err
		}
		return render(c, http.StatusOK, templ.Join(views.AdminQuoteRequestRowView(csrfToken(c), row), views.QuoteStatusFilters(filters, true)))
	}
	msg := "Note on " + r.ID + " saved."
	if changed {
		msg = r.ID + " is now " + string(r.Status) + "; the customer was emailed."
	}
	_ = h.flash(c, views.FlashSuccess, msg)
	return redirect(c, "/admin/quote-requests")
}

// csrfToken is the request's CSRF token, for fragments rendered without the layout.
func csrfToken(c echo.Context) string {
	t, _ := c.Get(csrfContextKey).(string)
	return t
}

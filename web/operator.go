package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// The operator's pages (OP2): providers and their markup, jobs with "run
// now", the audit log across organisations and balance adjustments. Each
// change is one use case in models; /admin's group requires an operator.

// JobSchedules is what the jobs page reads beside JobRunner when the
// scheduler offers it: a job's cron spec.
type JobSchedules interface {
	Schedule(name string) string
}

// adminProviders is GET /admin/providers.
func (h *handler) adminProviders(c echo.Context) error {
	rows, err := h.providerRows(c)
	if err != nil {
		return err
	}
	p := views.AdminProvidersPage{Meta: h.meta(c, "Providers"), Rows: rows, DefaultMarkup: models.PercentText(h.Store.Settings().DefaultMarkup)}
	return render(c, http.StatusOK, views.AdminProvidersView(p))
}

// adminPayments is GET /admin/payments (B4, B9): how payments run, the
// webhook endpoint's API version (and, when it is not ours, the fields read
// from its events), and the latest payment events that credited nothing.
func (h *handler) adminPayments(c echo.Context) error {
	ctx := c.Request().Context()
	p := views.AdminPaymentsPage{Meta: h.meta(c, "Payments"), TestMode: h.Payments == nil, TopUpsOff: h.topUpsOff()}
	if h.Payments != nil {
		p.Pinned, p.Fields = h.Payments.APIVersion(), h.Payments.WebhookFields()
		v, err := h.Store.LatestWebhookVersion(ctx)
		if err != nil {
			return err
		}
		if !v.ReceivedAt.IsZero() {
			p.Version, p.VersionAt = v.APIVersion, views.FormatTime(v.ReceivedAt)
		}
	}
	ms, err := h.Store.PaymentMismatches(ctx, 100)
	if err != nil {
		return err
	}
	for _, m := range ms {
		target := m.TopUpID
		if m.ChargeID != "" {
			target = m.ChargeID
		}
		p.Mismatches = append(p.Mismatches, views.AdminMismatchRow{When: views.FormatTime(m.CreatedAt), OrgID: m.OrgID, OrgName: m.OrgName,
			Target: target, Event: m.EventID, EventType: m.EventType, Object: m.ObjectID, Reason: m.Reason})
	}
	return render(c, http.StatusOK, views.AdminPaymentsView(p))
}

// providerRows joins the enabled providers, the stored catalog's health,
// the catalog job's last error and each provider's markup.
func (h *handler) providerRows(c echo.Context) ([]views.AdminProviderRow, error) {
	ctx := c.Request().Context()
	catalogs, err := h.Store.CatalogHealthByProvider(ctx)
	if err != nil {
		return nil, err
	}
	markups, err := h.Store.Markups(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := h.Store.JobRuns(ctx)
	if err != nil {
		return nil, err
	}
	var catalogErr string
	for _, r := range runs {
		if r.Name == "catalog" {
			catalogErr = r.Error
		}
	}
	health := map[string]models.CatalogHealth{}
	names := slices.Clone(h.Config.Providers)
	for name := range markups.Env {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, ch := range catalogs {
		health[ch.Provider] = ch
		if !slices.Contains(names, ch.Provider) {
			names = append(names, ch.Provider)
		}
	}
	now := h.Store.Now()
	out := make([]views.AdminProviderRow, 0, len(names))
	for _, name := range names {
		ch, seen := health[name]
		set := h.Config.ProviderSettings[name]
		row := views.AdminProviderRow{Name: name, Offers: ch.Offers, Enabled: slices.Contains(h.Config.Providers, name),
			Markup: strings.TrimSuffix(models.PercentText(markups.For(name)), "%"), LastError: providerError(catalogErr, name),
			MarkupSource: markups.Source(name), MarkupVar: set.MarkupVar, KeyVar: set.KeyVar, KeySet: set.KeySet,
			RegionsVar: set.RegionsVar, Regions: strings.Join(set.Regions, ", ")}
		if row.MarkupVar == "" {
			row.MarkupVar = strings.ToUpper(name) + "_MARKUP_PERCENT"
		}
		if seen {
			row.Refreshed, row.Stale = views.FormatTime(ch.RefreshedAt), now.Sub(ch.RefreshedAt) > models.OfferFreshness
		}
		out = append(out, row)
	}
	return out, nil
}

// providerError picks name's lines out of the catalog job's joined error
// ("name: list offers: …").
func providerError(joined, name string) string {
	var lines []string
	for _, l := range strings.Split(joined, "\n") {
		if strings.HasPrefix(l, name+": ") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// setProviderMarkup is POST /admin/providers/{name}/markup.
func (h *handler) setProviderMarkup(c echo.Context) error {
	rows, err := h.providerRows(c)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(rows, func(r views.AdminProviderRow) bool { return r.Name == c.Param("name") })
	if i < 0 {
		return echo.NewHTTPError(http.StatusNotFound, "No provider is called "+strconv.Quote(c.Param("name"))+".")
	}
	row := rows[i]
	if row.MarkupSource == models.MarkupFromEnv {
		return echo.NewHTTPError(http.StatusConflict, "The markup of "+row.Name+" is set by "+row.MarkupVar+
			" in the environment; change it there and restart.")
	}
	row.Markup = trimForm(c, "markup")
	_, err = h.act(c).SetProviderMarkup(c.Request().Context(), row.Name, row.Markup)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		row.Problems = fe
		p := views.AdminProvidersPage{Meta: h.meta(c, "Providers"), Rows: []views.AdminProviderRow{row},
			DefaultMarkup: models.PercentText(h.Store.Settings().DefaultMarkup)}
		return page(c, http.StatusUnprocessableEntity, views.AdminProvidersView(p), views.AdminProviderRowView(p.Meta.CSRF, row))
	}
	if err != nil {
		return err
	}
	row.MarkupSource = models.MarkupFromOperator
	if isPartial(c) {
		row.Saved = true
		return render(c, http.StatusOK, views.AdminProviderRowView(csrfToken(c), row))
	}
	_ = h.flash(c, views.FlashSuccess, "Markup of "+row.Name+" is now "+row.Markup+"%.")
	return redirect(c, "/admin/providers")
}

// adminJobs is GET /admin/jobs: every job this process schedules and every
// job that ever ran, with schedule, last run, duration and outcome.
func (h *handler) adminJobs(c echo.Context) error {
	runs, err := h.Store.JobRuns(c.Request().Context())
	if err != nil {
		return err
	}
	p := views.AdminJobsPage{Meta: h.meta(c, "Jobs")}
	byName := map[string]models.JobRun{}
	var names []string
	for _, r := range runs {
		byName[r.Name] = r
		names = append(names, r.Name)
	}
	if h.Jobs == nil {
		p.Note = "Jobs do not run in this process, so they cannot be run from here."
	} else {
		for _, n := range h.Jobs.Names() {
			if _, ok := byName[n]; !ok {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	sched, _ := h.Jobs.(JobSchedules)
	for _, n := range names {
		r := byName[n]
		row := views.AdminJobRow{Name: n, Runs: r.Runs, Failures: r.Failures, LastError: r.Error,
			CanRun: h.Jobs != nil && slices.Contains(h.Jobs.Names(), n)}
		if !r.StartedAt.IsZero() {
			row.LastRun = views.FormatTime(r.StartedAt)
			row.Duration = r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
		}
		if sched != nil {
			row.Schedule = sched.Schedule(n)
		}
		p.Rows = append(p.Rows, row)
	}
	return render(c, http.StatusOK, views.AdminJobsView(p))
}

// runJobNow is POST /admin/jobs/{name}/run: one tick now, under the same
// lease as the schedule's (it runs once across instances).
func (h *handler) runJobNow(c echo.Context) error {
	name := c.Param("name")
	if h.Jobs == nil || !slices.Contains(h.Jobs.Names(), name) {
		return echo.NewHTTPError(http.StatusNotFound, "No job called "+strconv.Quote(name)+" runs in this process.")
	}
	if err := h.Jobs.RunNow(c.Request().Context(), name); err != nil {
		_ = h.flash(c, views.FlashError, "The "+name+" job failed: "+err.Error())
	} else {
		_ = h.flash(c, views.FlashSuccess, "The "+name+" job ran.")
	}
	return redirect(c, "/admin/jobs")
}

// adminAudit is GET /admin/audit[?org=ID][&before=SEQ]: every
// organisation's audit log, newest first.
func (h *handler) adminAudit(c echo.Context) error {
	before, _ := strconv.ParseInt(c.QueryParam("before"), 10, 64)
	org := c.QueryParam("org")
	recs, more, err := h.Store.AllAuditRecords(c.Request().Context(), org, before)
	if err != nil {
		return err
	}
	p := views.AdminAuditPage{Meta: h.meta(c, "Audit log"), Org: org}
	for _, r := range recs {
		p.Rows = append(p.Rows, views.AdminAuditRow{When: views.FormatTime(r.CreatedAt), OrgID: r.OrgID, OrgName: r.OrgName,
			Actor: r.Actor, Action: r.Action, Target: r.Target, IP: r.IP, Detail: r.Detail})
	}
	if more {
		q := url.Values{"before": {strconv.FormatInt(recs[len(recs)-1].Seq, 10)}}
		if org != "" {
			q.Set("org", org)
		}
		p.Older = "/admin/audit?" + q.Encode()
	}
	return render(c, http.StatusOK, views.AdminAuditView(p))
}

// adminBalance is GET /admin/orgs/{id}/balance.
func (h *handler) adminBalance(c echo.Context) error {
	p, err := h.balancePage(c, views.AdminBalancePage{Token: newToken(18)})
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AdminBalanceView(p))
}

func (h *handler) balancePage(c echo.Context, p views.AdminBalancePage) (views.AdminBalancePage, error) {
	ctx := c.Request().Context()
	org, err := h.Store.OrgByID(ctx, c.Param("id"))
	if err != nil {
		return p, err
	}
	f, err := h.Store.CurrentBalance(ctx, org.ID)
	if err != nil {
		return p, err
	}
	bal := f.Balance()
	entries, err := h.Store.LedgerEntries(ctx, org.ID, 50)
	if err != nil {
		return p, err
	}
	p.Meta, p.OrgID, p.OrgName, p.Balance = h.meta(c, org.Name+": balance"), org.ID, org.Name, models.USD(bal)
	for _, e := range entries {
		p.Entries = append(p.Entries, views.AdminLedgerRow{When: views.FormatTime(e.CreatedAt), Kind: e.Kind, Status: e.Status,
			Amount: models.USD(e.Amount), Description: e.Description})
	}
	tops, err := h.Store.CreditedTopUps(ctx, org.ID, 50)
	if err != nil {
		return p, err
	}
	for _, t := range tops {
		row := views.AdminTopUpRow{ID: t.ID, Amount: models.USD(t.Amount), Confirm: reversalConfirm(bal, t.Amount)}
		if t.CompletedAt != nil {
			row.When = views.FormatTime(*t.CompletedAt)
		}
		if t.ReversedAt != nil {
			row.Reversed = models.USD(t.Reversed) + " on " + t.ReversedAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		p.TopUps = append(p.TopUps, row)
	}
	return p, nil
}

// reversalConfirm is what the Reverse dialog says before taking amount
// back from a balance of bal: the ledger entry, and when the balance would
// go negative, what then happens to the organisation's clusters (B6).
func reversalConfirm(bal, amount models.Money) string {
	msg := "A refund entry of -" + models.USD(amount) + " (or the amount typed) is written to the organisation's ledger and audit log; the top-up stays listed. "
	if after := bal - amount; after < 0 {
		return msg + "The balance becomes " + models.USD(after) + ": launches, resumes and volume growth are refused until it is topped up; " +
			"the owners are mailed, running clusters are stopped after the balance grace period and terminated if it stays unpaid " +
			"(volumes are kept and keep billing), as for any exhausted balance."
	}
	return msg + "The balance becomes " + models.USD(bal-amount) + "."
}

// reverseTopUp is POST /admin/orgs/{id}/top-ups/{topUp}/reverse (B9): a reversing ledger entry for a credited top-up, audited; refused
// beside the top-up (twice, more than credited, no reason) with what was
// typed kept. A balance made negative is then enforced as usual (B6): the
// balance job runs at once.
func (h *handler) reverseTopUp(c echo.Context) error {
	ctx := c.Request().Context()
	org, err := h.Store.OrgByID(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	amount, reason := trimForm(c, "amount"), trimForm(c, "reason")
	e, err := h.act(c).ReverseTopUp(ctx, org.ID, c.Param("topUp"), amount, reason)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		p, perr := h.balancePage(c, views.AdminBalancePage{Token: newToken(18)})
		if perr != nil {
			return perr
		}
		for i := range p.TopUps {
			if p.TopUps[i].ID == c.Param("topUp") {
				p.TopUps[i].Typed, p.TopUps[i].Reason, p.TopUps[i].Problems = amount, reason, fe
			}
		}
		return render(c, http.StatusUnprocessableEntity, views.AdminBalanceView(p))
	}
	if err != nil {
		return err
	}
	h.kick(c, "balance")
	msg := "Reversed " + models.USD(-e.Amount) + " of top-up " + c.Param("topUp") + "."
	if f, err := h.Store.CurrentBalance(ctx, org.ID); err == nil && f.Balance() < 0 {
		msg += " " + org.Name + "'s balance is now " + models.USD(f.Balance()) + ": its clusters follow the balance rules (mail, stop after the grace, terminate if unpaid)."
	}
	_ = h.flash(c, views.FlashSuccess, msg)
	return redirect(c, "/admin/orgs/"+org.ID+"/balance")
}

// adjustBalance is POST /admin/orgs/{id}/adjustments: a ledger entry with a
// reason, audited in the organisation's log; the form's token makes a
// double submit one entry.
func (h *handler) adjustBalance(c echo.Context) error {
	ctx := c.Request().Context()
	org, err := h.Store.OrgByID(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	amount, reason, token := trimForm(c, "amount"), trimForm(c, "reason"), trimForm(c, "token")
	e, _, err := h.act(c).AdjustBalance(ctx, org.ID, amount, reason, token)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		if token == "" {
			token = newToken(18)
		}
		p, perr := h.balancePage(c, views.AdminBalancePage{Amount: amount, Reason: reason, Token: token, Problems: fe})
		if perr != nil {
			return perr
		}
		return render(c, http.StatusUnprocessableEntity, views.AdminBalanceView(p))
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Adjusted "+org.Name+"'s balance by "+models.USD(e.Amount)+".")
	return redirect(c, "/admin/orgs/"+org.ID+"/balance")
}

// privateOfferPage builds /admin/quote-requests/{id}/private-offer's view.
func (h *handler) privateOfferPage(c echo.Context, form views.PrivateOfferForm, problems map[string]string) (views.AdminPrivateOfferPage, error) {
	ctx := c.Request().Context()
	r, err := h.Store.QuoteRequestByID(ctx, c.Param("id"))
	if err != nil {
		return views.AdminPrivateOfferPage{}, err
	}
	org, err := h.Store.OrgByID(ctx, r.OrgID)
	if err != nil {
		return views.AdminPrivateOfferPage{}, err
	}
	offers, err := h.Store.CatalogOffers(ctx, r.Accelerator)
	if err != nil {
		return views.AdminPrivateOfferPage{}, err
	}
	made, err := h.Store.PrivateOffersForRequest(ctx, r.ID)
	if err != nil {
		return views.AdminPrivateOfferPage{}, err
	}
	p := views.AdminPrivateOfferPage{Meta: h.meta(c, "Private offer"), R: quoteRequestView(r), OrgName: org.Name,
		Quoted: r.Status == models.CapacityQuoted, Form: form, Problems: problems}
	for _, o := range offers {
		// U*: people's words first (where, what, the price); the id last.
		p.Offers = append(p.Offers, views.CatalogChoice{ID: o.ID, Label: o.LocationName + " · " + models.Count(o.GPUsPerNode, "GPU") + " " +
			views.AcceleratorLabel(o.Accelerator) + ", " + o.Interconnect + " · provider price " + models.USD(o.MachineHour()) + "/machine-h · " + o.ID})
	}
	for _, po := range made {
		p.Made = append(p.Made, privateOfferRow(po, po.MachineHour))
	}
	bookings, err := h.Store.ReservationsForRequest(ctx, r.ID)
	if err != nil {
		return views.AdminPrivateOfferPage{}, err
	}
	for _, b := range bookings { // X18: the request's trail, as the customer sees it
		trail, err := h.Store.ReservationTrail(ctx, b.OrgID, b.ID)
		if err != nil {
			return views.AdminPrivateOfferPage{}, err
		}
		last := ""
		if len(trail) > 0 {
			last = trail[len(trail)-1].Message
		}
		p.Bookings = append(p.Bookings, views.AdminBookingRow{ID: b.ID, Status: b.Status, Shape: b.Shape(),
			Start: b.StartAt.UTC().Format("2006-01-02 15:04 UTC"), Term: models.Count(b.Hours(), "hour"), Total: models.USD(b.Total()), Trail: last})
	}
	return p, nil
}

// privateOfferRow is a private offer as the picker and the admin show it.
func privateOfferRow(po models.PrivateOffer, machineHour models.Money) views.PrivateOfferRow {
	return views.PrivateOfferRow{ID: po.ID, Shape: views.Shape(po.Nodes, po.GPUsPerNode, po.Accelerator),
		Location: po.LocationName, Interconnect: po.Interconnect, Kind: po.MachineKind,
		ClusterPrice: models.PriceUSD(machineHour*models.Money(po.Nodes)) + "/h", MachinePrice: models.PriceUSD(machineHour) + "/h",
		ValidThrough: po.ValidThrough(), LaunchURL: "/clusters/new?" + url.Values{"private": {po.ID}}.Encode()}
}

// showPrivateOfferForm is GET /admin/quote-requests/{id}/private-offer (X9).
func (h *handler) showPrivateOfferForm(c echo.Context) error {
	r, err := h.Store.QuoteRequestByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	form := views.PrivateOfferForm{Nodes: strconv.Itoa(min(r.Nodes, models.MaxNodes)),
		ValidUntil: h.Store.Now().AddDate(0, 0, 14).Format(time.DateOnly)}
	p, err := h.privateOfferPage(c, form, nil)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AdminPrivateOfferView(p))
}

// createPrivateOffer is POST /admin/quote-requests/{id}/private-offers: the
// offer, the customer's mail and the audit entry in one use case (X9).
func (h *handler) createPrivateOffer(c echo.Context) error {
	form := views.PrivateOfferForm{OfferID: trimForm(c, "offer_id"), Nodes: trimForm(c, "nodes"),
		Price: trimForm(c, "price"), ValidUntil: trimForm(c, "valid_until"), StartAt: trimForm(c, "start_at"), TermDays: trimForm(c, "term_days")}
	nodes, _ := strconv.Atoi(form.Nodes)
	termDays, _ := strconv.Atoi(form.TermDays)
	po, err := h.act(c).CreatePrivateOffer(c.Request().Context(), models.PrivateOfferInput{RequestID: c.Param("id"),
		OfferID: form.OfferID, Nodes: nodes, Price: form.Price, ValidUntil: form.ValidUntil, StartAt: form.StartAt, TermDays: termDays}, h.capacityNotify())
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		p, perr := h.privateOfferPage(c, form, fe)
		if perr != nil {
			return perr
		}
		return render(c, http.StatusUnprocessableEntity, views.AdminPrivateOfferView(p))
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Private offer "+po.ID+" made; the customer was emailed.")
	return redirect(c, "/admin/quote-requests/"+po.RequestID+"/private-offer")
}

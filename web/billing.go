package web

import (
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

// statement is what the billing page, its CSVs and the billing API read:
// the balance, what runs, and the window's usage lines (B1, B3).
type statement struct {
	window  models.UsageWindow
	balance models.BalanceFigure // the one balance (B8)
	burn    models.Money
	spend   models.Money // this month, written and open
	lines   []models.ClusterUsage
	volumes []models.VolumeUsage // V3, X11: every volume that billed in the window
}

// volumeSpend is what the volumes ran up: written and open.
func volumeSpend(vs []models.VolumeUsage) models.Money {
	var sum models.Money
	for _, v := range vs {
		sum += v.Total()
	}
	return sum
}

// monthParam reads ?month=YYYY-MM (default: this month).
func (h *handler) monthParam(c echo.Context) (models.UsageWindow, error) {
	m := strings.TrimSpace(c.QueryParam("month"))
	if m == "" {
		return models.MonthOf(h.Store.Now()), nil
	}
	w, err := models.ParseMonth(m)
	var fe models.FieldErrors
	if errors.As(err, &fe) {
		return w, invalid(fe)
	}
	return w, err
}

// statementOf reads the organisation's statement for window w.
func (h *handler) statementOf(c echo.Context, w models.UsageWindow) (statement, error) {
	p, ctx := principal(c), c.Request().Context()
	st := statement{window: w}
	var err error
	if st.balance, err = h.Store.CurrentBalance(ctx, p.Org.ID); err != nil {
		return st, err
	}
	if st.burn, err = h.Store.BurnRate(ctx, p.Org.ID); err != nil {
		return st, err
	}
	if st.lines, err = h.Store.UsageForMonth(ctx, p.Org.ID, w); err != nil {
		return st, err
	}
	if st.volumes, err = h.Store.VolumeUsageForMonth(ctx, p.Org.ID, w); err != nil {
		return st, err
	}
	st.spend = models.Spend(st.lines) + volumeSpend(st.volumes)
	if current := models.MonthOf(h.Store.Now()); current != w {
		this, err := h.Store.UsageForMonth(ctx, p.Org.ID, current)
		if err != nil {
			return st, err
		}
		vols, err := h.Store.VolumeUsageForMonth(ctx, p.Org.ID, current)
		if err != nil {
			return st, err
		}
		st.spend = models.Spend(this) + volumeSpend(vols)
	}
	return st, nil
}

// showBilling is GET /billing (owners and admins, B1, B3, X11). A month
// that is not one keeps the person on the page: this month is shown, with
// what was wrong said above it (422).
func (h *handler) showBilling(c echo.Context) error {
	bp, err := h.billingPage(c)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnprocessableEntity {
		asked := c.QueryParam("month")
		c.QueryParams().Del("month")
		if bp, err = h.billingPage(c); err != nil {
			return err
		}
		bp.MonthProblem = strconv.Quote(asked) + " is not a month: give it as YYYY-MM, like " + bp.Month + ". This month is shown."
		return render(c, http.StatusUnprocessableEntity, views.BillingPageView(bp))
	}
	if err != nil {
		return err
	}
	bp.TopUp.Back = safeNext(c.QueryParam("back")) // L2: a quote's "Add funds" comes back to it
	return render(c, http.StatusOK, views.BillingPageView(bp))
}

// billingPage builds /billing for ?month= with ?open=<cluster> opened.
func (h *handler) billingPage(c echo.Context) (views.BillingPage, error) {
	w, err := h.monthParam(c)
	if err != nil {
		return views.BillingPage{}, err
	}
	st, err := h.statementOf(c, w)
	if err != nil {
		return views.BillingPage{}, err
	}
	p, ctx := principal(c), c.Request().Context()
	tx, err := h.transactions(c, st)
	if err != nil {
		return views.BillingPage{}, err
	}
	var open models.Money
	for _, l := range st.lines {
		open += l.Accumulating
	}
	for _, v := range st.volumes {
		open += v.Accumulating
	}
	if w != models.MonthOf(h.Store.Now()) {
		open = 0 // the open period is this month's
	}
	days, err := h.Store.DailySpend(ctx, p.Org.ID, chartDays, open)
	if err != nil {
		return views.BillingPage{}, err
	}
	bp := views.BillingPage{Meta: h.meta(c, "Billing"), Balance: models.USD(st.balance.Balance()), BurnRate: models.PriceUSD(st.burn) + "/h",
		HoursRemaining: hoursRemaining(st.balance.Balance(), st.burn), SpendThisMonth: models.USD(st.spend),
		TestMode: h.Payments == nil && !h.topUpsOff(), TopUpsOff: h.topUpsOff(), MaxTopUp: models.USD(h.Store.TopUpLimit()),
		Month: w.Month(), PrevMonth: w.From.AddDate(0, -1, 0).Format("2006-01"),
		Chart: spendChart(days, h.Store.Now()), Entries: ledgerRows(tx.rows), Carried: models.USD(tx.carried), Closing: models.USD(tx.closing),
		CarriedFrom: w.From.Format("2006-01-02 15:04"), Current: w == models.MonthOf(h.Store.Now())}
	if st.balance.Accruing > 0 {
		bp.Accruing = models.USD(st.balance.Accruing)
	}
	if w.To.Before(models.MonthOf(h.Store.Now()).To) {
		bp.NextMonth = w.To.Format("2006-01")
	}
	for _, l := range st.lines {
		bp.Usage = append(bp.Usage, usageLine(l, w, l.Cluster.ID == c.QueryParam("open")))
	}
	for _, v := range st.volumes {
		bp.Volumes = append(bp.Volumes, volumeLine(v))
	}
	form, err := h.autoRechargeForm(ctx, p.Org.ID, bp.Meta.CSRF)
	if err != nil {
		return views.BillingPage{}, err
	}
	if !h.topUpsOff() { // no payment provider: no card to recharge
		bp.AutoRecharge = views.AutoRechargeSettings(form)
	}
	budgets, err := h.budgetsForm(ctx, p.Org.ID, bp.Meta.CSRF)
	if err != nil {
		return views.BillingPage{}, err
	}
	// A4: a refusal's way forward lands here with the amount
	// typed in (?amount= for Add funds, with ?budget= for that budget), and
	// a refused budget form comes back with what was typed.
	if amount := strings.TrimSpace(c.QueryParam("amount")); amount != "" {
		if _, perr := models.ParseTypedUSD(amount); perr == nil {
			if env := c.QueryParam("budget"); env != "" {
				budgetDraftOf(&budgets, env, amount, nil)
			} else {
				bp.TopUp.Amount = amount
			}
		}
	}
	if d, ok := c.Get(budgetDraftKey).(budgetDraft); ok {
		budgetDraftOf(&budgets, d.envID, d.typed, d.problems)
	}
	bp.Budgets = views.BudgetsSettings(budgets)
	return bp, nil
}

// budgetDraftKey holds a refused budget form's budgetDraft for the page.
const budgetDraftKey = "budget-draft"

// budgetDraft is one environment's budget as typed, with its problems.
type budgetDraft struct {
	envID, typed string
	problems     models.FieldErrors
}

// budgetDraftOf puts typed (and its problems) in envID's budget field.
func budgetDraftOf(f *views.BudgetsForm, envID, typed string, problems models.FieldErrors) {
	for i := range f.Rows {
		if f.Rows[i].EnvID == envID {
			f.Rows[i].Amount = typed
			if problems != nil {
				f.Rows[i].Problems = problems
			}
		}
	}
}

// showUsageLine is GET /billing/usage/{id}?month=: a cluster's machines
// under its usage line (the htmx fragment; the page with ?open= without JS).
func (h *handler) showUsageLine(c echo.Context) error {
	w, err := h.monthParam(c)
	if err != nil {
		return err
	}
	l, err := h.Store.UsageForClusterIn(c.Request().Context(), principal(c).Org.ID, c.Param("id"), w)
	if err != nil {
		return err
	}
	if c.Request().Header.Get("HX-Request") != "true" {
		return c.Redirect(http.StatusSeeOther, usageLine(l, w, true).Href)
	}
	return render(c, http.StatusOK, views.MachineRowsView(machineRows(l)))
}

// addFunds is POST /billing/top-ups (B4, B7): test mode credits at once;
// with Stripe the buyer goes to Checkout and the webhook credits.
func (h *handler) addFunds(c echo.Context) error {
	if h.topUpsOff() {
		return errTopUpsOff()
	}
	form := views.TopUpForm{Amount: trimForm(c, "amount"), Back: safeNext(c.FormValue("back"))}
	amount, err := models.ParseTypedUSD(form.Amount)
	if err == nil {
		var t models.TopUp
		t, err = h.act(c).RequestTopUp(c.Request().Context(), amount, h.Payments == nil)
		if err == nil {
			return h.afterTopUp(c, t)
		}
	} else {
		err = models.FieldErrors{"amount": err.Error()}
	}
	var fe models.FieldErrors
	if !errors.As(err, &fe) {
		return err
	}
	bp, err := h.billingPage(c)
	if err != nil {
		return err
	}
	form.Problems = fe
	bp.TopUp = form
	return render(c, http.StatusUnprocessableEntity, views.BillingPageView(bp))
}

// afterTopUp sends the buyer on: back to /billing in test mode, to Stripe's
// Checkout otherwise.
func (h *handler) afterTopUp(c echo.Context, t models.TopUp) error {
	if h.Payments == nil {
		_ = h.flash(c, views.FlashSuccess, "Test mode: "+models.USD(t.Amount)+" added to the balance. No real money moved.")
		return redirect(c, orDefault(safeNext(c.FormValue("back")), "/billing")) // L2: back to the quote that sent the buyer
	}
	payURL, err := h.checkout(c, t)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, payURL)
}

// checkout is the one Checkout sequence of a top-up, for the page and the
// API (B4): a Checkout Session paying exactly t, for the buyer's email,
// coming back to /billing, recorded on the top-up so that only its verified
// webhook credits it. It returns where the buyer pays.
func (h *handler) checkout(c echo.Context, t models.TopUp) (string, error) {
	p := principal(c)
	email := ""
	if p.User != nil {
		email = p.User.Email
	}
	back := h.Config.BaseURL + "/billing"
	sessionID, payURL, err := h.Payments.StartCheckout(c.Request().Context(), t, email, back+"?top_up="+t.ID, back)
	if err != nil {
		return "", err
	}
	if err := h.Store.AttachCheckout(c.Request().Context(), p.Org.ID, t.ID, sessionID); err != nil {
		return "", err
	}
	return payURL, nil
}

// chartDays is how many days the spend chart shows.
const chartDays = 30

func usageLine(l models.ClusterUsage, w models.UsageWindow, open bool) views.UsageLine {
	q := url.Values{"month": {w.Month()}}
	status := titleCase(usageStatus(l.Accumulating))
	u := views.UsageLine{ClusterID: l.Cluster.ID, Name: l.Cluster.Name, Amount: models.USD(l.Completed + l.Accumulating), Status: status,
		FragmentURL: "/billing/usage/" + l.Cluster.ID + "?" + q.Encode(), Open: open}
	q.Set("open", l.Cluster.ID)
	u.Href = "/billing?" + q.Encode() + "#usage-" + l.Cluster.ID
	if open {
		u.Machines = machineRows(l)
	}
	return u
}

// machineRows are a cluster's machines as the page and the usage CSV show
// them. Their amounts add up to the line's to the cent (B3): each is
// rounded to the cent, and the cents the line's own rounding has more or
// fewer go to the rows that rounding moved least.
func machineRows(l models.ClusterUsage) []views.MachineRow {
	amounts := make([]models.Money, len(l.Machines))
	for i, m := range l.Machines {
		amounts[i] = m.Completed + m.Accumulating
	}
	cents := centsSummingTo(amounts)
	out := make([]views.MachineRow, 0, len(l.Machines))
	for i, m := range l.Machines {
		out = append(out, views.MachineRow{Node: m.Name, MachineHour: models.PriceUSD(m.MachineHour) + "/h",
			Hours: hours(m.Minutes + m.AccumulatingMinutes), Minutes: m.Minutes + m.AccumulatingMinutes,
			Amount: models.USD(models.Money(cents[i] * centMicros)),
			Status: titleCase(usageStatus(m.Accumulating)), Intervals: intervalsText(m.Intervals)})
	}
	return out
}

const centMicros = 10_000 // micro-dollars in a cent

// centsSummingTo rounds each amount to cents (half up, as models.USD does)
// so that they add up to their sum's rounding: the largest-remainder rule,
// moving a cent at a time on the rows whose rounding it changes least.
func centsSummingTo(amounts []models.Money) []int64 {
	round := func(m models.Money) int64 {
		if m < 0 {
			return -int64((-m + centMicros/2) / centMicros)
		}
		return int64((m + centMicros/2) / centMicros)
	}
	var sum models.Money
	var got int64
	cents := make([]int64, len(amounts))
	for i, m := range amounts {
		sum += m
		cents[i] = round(m)
		got += cents[i]
	}
	for diff := round(sum) - got; diff != 0; {
		step := int64(1)
		if diff < 0 {
			step = -1
		}
		best, bestErr := -1, int64(0)
		for i, m := range amounts {
			// how far the row would be from its exact amount after the step
			e := (cents[i]+step)*centMicros - int64(m)
			if e < 0 {
				e = -e
			}
			if best < 0 || e <= bestErr { // ties: the later row, so the first keeps its own rounding
				best, bestErr = i, e
			}
		}
		cents[best] += step
		diff -= step
	}
	return cents
}

// hours shows whole minutes as hours with two decimals (display only).
func hours(minutes int64) string { return fmt.Sprintf("%d.%02d", minutes/60, minutes%60*100/60) }

// preciseHours is whole minutes as hours with six decimals, for the usage
// CSV: hours × the hourly price gives the row's amount to the cent (B3).
func preciseHours(minutes int64) string {
	return fmt.Sprintf("%d.%06d", minutes/60, (minutes%60*1_000_000+30)/60)
}

func intervalsText(ivs []models.MachineInterval) string {
	parts := make([]string, 0, len(ivs))
	for _, iv := range ivs {
		end := "now"
		if iv.EndedAt != nil {
			end = iv.EndedAt.UTC().Format("Jan 2 15:04")
		}
		parts = append(parts, iv.State+" "+iv.StartedAt.UTC().Format("Jan 2 15:04")+" – "+end)
	}
	return strings.Join(parts, "; ")
}

// shownTransactions is a month's transactions as the page and its CSV show
// them (B8): each amount in cents by the one rounding rule, with the
// balance carried into the month and the balance they add up to.
type shownTransactions struct {
	rows             []models.Transaction
	carried, closing models.Money // rounded to the cent
}

// transactions reads the statement's month of transactions and rounds them
// (models.ShowInCents): the rows shown add up exactly to the balance shown.
func (h *handler) transactions(c echo.Context, st statement) (shownTransactions, error) {
	ctx, org := c.Request().Context(), principal(c).Org.ID
	tx, err := h.Store.Transactions(ctx, org, st.window, st.lines, st.volumes)
	if err != nil {
		return shownTransactions{}, err
	}
	before, err := h.Store.BalanceBefore(ctx, org, st.window.From)
	if err != nil {
		return shownTransactions{}, err
	}
	out := shownTransactions{rows: tx}
	out.carried, out.closing = models.ShowInCents(before, tx)
	return out, nil
}

func ledgerRows(tx []models.Transaction) []views.LedgerRow {
	out := make([]views.LedgerRow, 0, len(tx))
	for _, t := range tx {
		out = append(out, views.LedgerRow{At: t.At.UTC().Format("2006-01-02 15:04"), Kind: t.Kind, Description: t.Description,
			Status: titleCase(t.Status), Amount: models.USD(t.Shown), Negative: t.Amount < 0, Counted: t.InBalance()})
	}
	return out
}

// spendChart draws days (oldest first, ending today) as bars.
func spendChart(days []models.Money, now time.Time) views.SpendChart {
	const width, height, slot = 600, 120, 20
	ch := views.SpendChart{Width: width, Height: height}
	var peak, total models.Money
	for _, d := range days {
		peak, total = max(peak, d), total+d
	}
	first := now.UTC().AddDate(0, 0, 1-len(days))
	for i, d := range days {
		h := 0
		if peak > 0 && d > 0 {
			h = max(int(int64(d)*(height-4)/int64(peak)), 1)
		}
		day := first.AddDate(0, 0, i)
		ch.Bars = append(ch.Bars, views.ChartBar{X: i*slot + 2, Y: height - 1 - h, W: slot - 4, H: h,
			Label: day.Format("Jan 2") + ": " + models.USD(d)})
	}
	ch.Max, ch.Total = models.USD(peak), models.USD(total)
	ch.First, ch.Last = first.Format("Jan 2"), now.UTC().Format("Jan 2")
	return ch
}

func hoursRemaining(balance, burn models.Money) string {
	switch {
	case burn <= 0:
		return "—"
	case balance <= 0:
		return "0 h"
	}
	return fmt.Sprintf("%.1f h", float64(balance)/float64(burn)) // display only; money stays integer
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// endedView is an ended cluster's total cost (written usage and the tail
// the next pass writes), when it ended and how long it was billed (B1).
func (h *handler) endedView(c echo.Context, cl models.Cluster) (*views.EndedView, error) {
	if !cl.Status.Terminal() {
		return nil, nil
	}
	u, err := h.Store.UsageForCluster(c.Request().Context(), cl.OrgID, cl.ID)
	if err != nil {
		return nil, err
	}
	end := cl.UpdatedAt
	if cl.ReleasedAt != nil {
		end = *cl.ReleasedAt
	}
	ran := "never billed: not every machine came up"
	if cl.ReadyAt != nil {
		minutes := minutesBetween(*cl.ReadyAt, end)
		if (cl.StoppedAt != nil || cl.BillFrom != nil) && len(u.Machines) > 0 {
			// stopped on the way (B6): only the billed runs count
			minutes = u.Machines[0].Minutes + u.Machines[0].AccumulatingMinutes
		}
		ran = "billed for " + hours(minutes) + " h"
	}
	return &views.EndedView{At: end.UTC().Format("2006-01-02 15:04 UTC"), RanFor: ran, TotalCost: models.USD(u.Completed + u.Accumulating),
		ReserveAgain: "/reservations/new?from=" + url.QueryEscape(cl.ID)}, nil
}

func minutesBetween(a, b time.Time) int64 { return max(int64(b.Sub(a)/time.Minute), 0) }

// volumeLine is a volume's own line on the billing page (B3, X11): its
// size and rate, where it is attached, and what it accrued in the month.
func volumeLine(u models.VolumeUsage) views.VolumeLine {
	v := u.Volume
	l := views.VolumeLine{ID: v.ID, Name: v.Name, Amount: models.USD(u.Total()), Status: titleCase(usageStatus(u.Accumulating)),
		Detail: fmt.Sprintf("%d GB in %s at %s/h · %s h", v.SizeGB, v.Location, models.PriceUSD(v.HourRate()), hours(u.Minutes))}
	switch {
	case v.DeletedAt != nil:
		l.State = "deleted " + views.FormatTime(*v.DeletedAt)
	case u.Attached != nil:
		l.State, l.ClusterID = "attached to "+u.Attached.Name, u.Attached.ID
	default:
		l.State, l.Detached = "detached, still billing until deleted", true
	}
	return l
}

package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// Budgets (B5, X6) are set per environment by owners and admins, on the
// billing page and through the API; like the rest of billing they are the
// organisation's, whatever an API key's environment.

const budgetTimeLayout = "2006-01-02 15:04 UTC"

// parseBudget reads a budget typed in dollars.
func parseBudget(s string) (models.Money, models.FieldErrors) {
	m, err := models.ParseTypedUSD(s)
	if err != nil {
		return 0, models.FieldErrors{"amount": err.Error()}
	}
	return m, nil
}

// budgetsForm is the billing page's budgets section for the organisation.
func (h *handler) budgetsForm(ctx context.Context, orgID, csrf string) (views.BudgetsForm, error) {
	o, err := h.Store.BudgetOverviewFor(ctx, orgID)
	if err != nil {
		return views.BudgetsForm{}, err
	}
	now := h.Store.Now()
	f := views.BudgetsForm{CSRF: csrf, Month: o.Month, BalanceRunOut: "—"}
	if o.BalanceRunOut != nil {
		f.BalanceRunOut = o.BalanceRunOut.UTC().Format(budgetTimeLayout)
	}
	for _, l := range o.Lines {
		r := views.BudgetRow{EnvID: l.Env.ID, Env: l.Env.Name, Spend: models.USD(l.Spend), Burn: models.PriceUSD(l.Burn) + "/h",
			Forecast: "—", Reached: l.Reached}
		if b := l.Budget; b != nil {
			r.Set, r.Amount = true, models.DecimalUSD(b.Amount)
			r.Percent = fmt.Sprintf("%d %%", budgetPercent(l.Spend, b.Amount))
			r.Forecast = forecastText(l)
			r.State = budgetState(l, now)
		}
		f.Rows = append(f.Rows, r)
	}
	for _, c := range o.Clusters {
		r := views.RunOutRow{ClusterID: c.Cluster.ID, Cluster: c.Cluster.Name, Env: c.EnvName, At: "—", By: "balance"}
		if c.At != nil {
			r.At = c.At.UTC().Format(budgetTimeLayout)
		}
		if c.By == models.RunOutBudget {
			r.By = "budget of " + c.EnvName
		}
		f.Clusters = append(f.Clusters, r)
	}
	return f, nil
}

// budgetPercent is spend of amount in whole percent, rounded down.
func budgetPercent(spend, amount models.Money) int {
	if amount <= 0 {
		return 0
	}
	return int(spend * 100 / amount)
}

func forecastText(l models.BudgetLine) string {
	switch {
	case l.Reached:
		return "reached"
	case l.Burn <= 0:
		return "nothing runs"
	case l.ForecastAt == nil:
		return "not this month"
	}
	return l.ForecastAt.UTC().Format(budgetTimeLayout)
}

// budgetState says what the budget did this month: the last warning, or
// when a reached budget stops (stopped) the clusters.
func budgetState(l models.BudgetLine, now time.Time) string {
	switch {
	case l.Reached && l.EnforceAt != nil && !l.EnforceAt.After(now):
		return "Reached: clusters stopped at " + l.EnforceAt.UTC().Format(budgetTimeLayout)
	case l.Reached && l.EnforceAt != nil:
		return "Reached: clusters stop at " + l.EnforceAt.UTC().Format(budgetTimeLayout)
	case l.Reached:
		return "Reached"
	case len(l.Alerts) > 0:
		return fmt.Sprintf("%d %% warning sent", l.Alerts[len(l.Alerts)-1])
	}
	return ""
}

// saveBudget is POST /billing/budgets/{env} (owners and admins): an htmx
// post gets the section back (422 with the problem beside the field); a
// plain one is redirected to the billing page with a flash.
func (h *handler) saveBudget(c echo.Context) error {
	ctx, p := c.Request().Context(), principal(c)
	env, err := h.Store.EnvironmentForOrg(ctx, p.Org.ID, c.Param("envId"))
	if err != nil {
		return err
	}
	typed := trimForm(c, "amount")
	amount, fe := parseBudget(typed)
	if fe == nil {
		_, err = h.act(c).SetBudget(ctx, env.ID, amount)
		if !errors.As(err, &fe) && err != nil {
			return err
		}
	}
	if fe != nil {
		return h.budgetProblem(c, env, typed, fe)
	}
	return h.afterBudget(c, "Budget of "+env.Name+" saved: "+models.USD(amount)+" a month.")
}

// removeBudget is POST /billing/budgets/{env}/delete (owners and admins).
func (h *handler) removeBudget(c echo.Context) error {
	ctx, p := c.Request().Context(), principal(c)
	env, err := h.Store.EnvironmentForOrg(ctx, p.Org.ID, c.Param("envId"))
	if err != nil {
		return err
	}
	if err := h.act(c).RemoveBudget(ctx, env.ID); err != nil {
		return err
	}
	return h.afterBudget(c, "Budget of "+env.Name+" removed.")
}

// afterBudget answers a saved change: the fresh section for htmx, the
// billing page with a flash otherwise.
func (h *handler) afterBudget(c echo.Context, msg string) error {
	if !isPartial(c) {
		_ = h.flash(c, views.FlashSuccess, msg)
		return redirect(c, "/billing#budgets")
	}
	csrf, _ := c.Get(csrfContextKey).(string)
	f, err := h.budgetsForm(c.Request().Context(), principal(c).Org.ID, csrf)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.BudgetsSettings(f))
}

// budgetProblem answers a refused budget: the section with the problem
// beside the environment's field (htmx, 422), or a flash.
func (h *handler) budgetProblem(c echo.Context, env models.Environment, typed string, fe models.FieldErrors) error {
	if !isPartial(c) { // the billing page with the amount kept beside its problem (A4)
		c.Set(budgetDraftKey, budgetDraft{envID: env.ID, typed: typed, problems: fe})
		bp, err := h.billingPage(c)
		if err != nil {
			return err
		}
		return render(c, http.StatusUnprocessableEntity, views.BillingPageView(bp))
	}
	csrf, _ := c.Get(csrfContextKey).(string)
	f, err := h.budgetsForm(c.Request().Context(), principal(c).Org.ID, csrf)
	if err != nil {
		return err
	}
	for i := range f.Rows {
		if f.Rows[i].EnvID == env.ID {
			f.Rows[i].Amount, f.Rows[i].Problems = typed, fe
		}
	}
	return render(c, http.StatusUnprocessableEntity, views.BudgetsSettings(f))
}

// apiBudgets is GET /v1/billing/budgets (B5, X6).
func (h *handler) apiBudgets(c echo.Context) error {
	o, err := h.Store.BudgetOverviewFor(c.Request().Context(), principal(c).Org.ID)
	if err != nil {
		return err
	}
	out := api.Budgets{Month: o.Month, Balance: models.DecimalUSD(o.Balance.Balance()), BurnRate: models.DecimalUSD(o.Burn),
		BalanceRunOutAt: utcPtr(o.BalanceRunOut), Environments: []api.Budget{}, Clusters: []api.ClusterRunOut{}}
	p := principal(c)
	for _, l := range inKeyEnv(p, o.Lines, func(l models.BudgetLine) string { return l.Env.ID }) {
		out.Environments = append(out.Environments, budgetJSON(l))
	}
	for _, r := range inKeyEnv(p, o.Clusters, func(r models.ClusterRunOut) string { return r.Cluster.EnvID }) {
		out.Clusters = append(out.Clusters, api.ClusterRunOut{ClusterID: r.Cluster.ID, Name: r.Cluster.Name, Environment: r.EnvName,
			RunOutAt: utcPtr(r.At), By: r.By})
	}
	return c.JSON(http.StatusOK, out)
}

func budgetJSON(l models.BudgetLine) api.Budget {
	b := api.Budget{EnvironmentID: l.Env.ID, Environment: l.Env.Name, SpendThisMonth: models.DecimalUSD(l.Spend),
		BurnRate: models.DecimalUSD(l.Burn), Reached: l.Reached, ForecastAt: utcPtr(l.ForecastAt), Alerts: []int{},
		EnforceAt: utcPtr(l.EnforceAt)}
	if l.Budget != nil {
		amount := models.DecimalUSD(l.Budget.Amount)
		b.Amount, b.Percent = &amount, budgetPercent(l.Spend, l.Budget.Amount)
		b.Alerts = append(b.Alerts, l.Alerts...)
	}
	return b
}

// apiPutBudget is PUT /v1/billing/budgets/{envId}: the environment's
// monthly budget, audited.
func (h *handler) apiPutBudget(c echo.Context) error {
	ctx := c.Request().Context()
	env, err := h.apiEnvironment(c)
	if err != nil {
		return err
	}
	var body api.BudgetBody
	if _, err := decodeJSON(c, &body); err != nil {
		return err
	}
	amount, fe := parseBudget(body.Amount)
	if fe != nil {
		return invalid(fe)
	}
	if _, err := h.act(c).SetBudget(ctx, env.ID, amount); err != nil {
		return err
	}
	return h.apiBudgetOf(c, env.ID)
}

// apiDeleteBudget is DELETE /v1/billing/budgets/{envId}: no budget any
// more (repeating it changes nothing); the answer is the environment's line,
// its amount null.
func (h *handler) apiDeleteBudget(c echo.Context) error {
	env, err := h.apiEnvironment(c)
	if err != nil {
		return err
	}
	if err := h.act(c).RemoveBudget(c.Request().Context(), env.ID); err != nil {
		return err
	}
	return h.apiBudgetOf(c, env.ID)
}

// apiEnvironment loads the route's environment through the organisation;
// an API key reaches its own environment's budget only (A3): another's
// answers 404 like another organisation's.
func (h *handler) apiEnvironment(c echo.Context) (models.Environment, error) {
	p := principal(c)
	env, err := h.Store.EnvironmentForOrg(c.Request().Context(), p.Org.ID, c.Param("envId"))
	if err != nil {
		return env, err
	}
	return env, checkKeyEnv(p, env.ID, env.ID)
}

// apiBudgetOf answers one environment's line of the overview.
func (h *handler) apiBudgetOf(c echo.Context, envID string) error {
	o, err := h.Store.BudgetOverviewFor(c.Request().Context(), principal(c).Org.ID)
	if err != nil {
		return err
	}
	for _, l := range o.Lines {
		if l.Env.ID == envID {
			return c.JSON(http.StatusOK, budgetJSON(l))
		}
	}
	return models.ErrNotFound
}

package models

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// budgetPageSize is how many budgets one step of a pass reads.
var budgetPageSize = 500

// BudgetPass says what one budgets pass did.
type BudgetPass struct {
	Alerts   int // thresholds newly reached
	Mailed   int // of those, mailed
	Enforced int // environments whose clusters were stopped
}

// CheckBudgets is one budgets pass (B5, X6): for every budget it computes
// the environment's spend this month from the ledger's usage and the open
// period, records each threshold (50, 80, 100 %) newly reached and mails
// the organisation's owners and admins about the highest one, with the
// forecast of when the budget is reached at the current burn; at 100 %,
// once the warning window has passed, it stops the environment's clusters.
// Alert rows are unique per environment, month, threshold and budget, and
// the mails commit with them, so a rerun or two passes at once mail once.
// baseURL is where the mails link to.
func (s *Store) CheckBudgets(ctx context.Context, baseURL string) (BudgetPass, error) {
	var res BudgetPass
	now := s.Now()
	w := MonthOf(now)
	after := ""
	for {
		var page []Budget
		err := s.db.WithContext(ctx).Where("env_id > ?", after).Order("env_id").Limit(budgetPageSize).Find(&page).Error
		if err != nil {
			return res, fmt.Errorf("models: budgets: %w", err)
		}
		if len(page) == 0 {
			return res, nil
		}
		after = page[len(page)-1].EnvID
		if err := s.checkBudgetPage(ctx, page, w, now, baseURL, &res); err != nil {
			return res, err
		}
		if len(page) < budgetPageSize {
			return res, nil
		}
	}
}

func (s *Store) checkBudgetPage(ctx context.Context, page []Budget, w UsageWindow, now time.Time, baseURL string, res *BudgetPass) error {
	envIDs := make([]string, len(page))
	for i, b := range page {
		envIDs[i] = b.EnvID
	}
	money, err := s.envMoneyOf(ctx, envIDs, w, now)
	if err != nil {
		return err
	}
	var alerts []BudgetAlert
	if err := s.db.WithContext(ctx).Where("env_id IN ? AND month = ?", envIDs, w.Month()).Find(&alerts).Error; err != nil {
		return fmt.Errorf("models: budget alerts: %w", err)
	}
	var errs []error
	for _, b := range page {
		var mine []BudgetAlert
		for _, a := range alerts {
			if a.EnvID == b.EnvID && a.Budget == b.Amount {
				mine = append(mine, a)
			}
		}
		if err := s.checkBudget(ctx, b, *money[b.EnvID], mine, w, now, baseURL, res); err != nil {
			errs = append(errs, fmt.Errorf("budget of %s: %w", b.EnvID, err))
		}
	}
	return joinErrs(errs)
}

func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("models: %s", strings.Join(msgs, "; "))
}

// checkBudget records and mails one budget's newly reached thresholds, and
// enforces it when due, each in one transaction.
func (s *Store) checkBudget(ctx context.Context, b Budget, m envMoney, seen []BudgetAlert, w UsageWindow, now time.Time, baseURL string, res *BudgetPass) error {
	done := map[int]BudgetAlert{}
	for _, a := range seen {
		done[a.Percent] = a
	}
	var fresh []int
	for _, p := range reached(m.spend, b.Amount) {
		if _, ok := done[p]; !ok {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) > 0 {
		err := s.Tx(ctx, func(tx *Store) error {
			n, mailed, err := tx.recordAlerts(ctx, b, m, fresh, seen, w, now, baseURL)
			res.Alerts += n
			if mailed {
				res.Mailed++
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return s.enforceBudget(ctx, b, m, w, now, baseURL, res)
}

// recordAlerts writes the fresh thresholds' rows and mails the highest:
// only the transaction whose insert of that row wrote it queues the mail.
func (s *Store) recordAlerts(ctx context.Context, b Budget, m envMoney, fresh []int, seen []BudgetAlert, w UsageWindow, now time.Time, baseURL string) (int, bool, error) {
	top := fresh[len(fresh)-1]
	var forecast *time.Time
	if at, ok := Forecast(now, b.Amount, m.spend, m.burn); ok && at.Before(w.To) {
		forecast = &at
	}
	n, mailed := 0, false
	for _, p := range fresh {
		a := BudgetAlert{ID: NewID("ba"), OrgID: b.OrgID, EnvID: b.EnvID, Month: w.Month(), Percent: p, Budget: b.Amount,
			Spend: m.spend, Burn: m.burn, ForecastAt: forecast, Mailed: p == top, CreatedAt: now}
		if p == 100 {
			at := enforceAt(seen, now)
			a.EnforceAt = &at
		}
		r := s.db.WithContext(ctx).Exec(`INSERT INTO budget_alerts (id, org_id, env_id, month, percent, budget, spend, burn,
			forecast_at, mailed, created_at, enforce_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`,
			a.ID, a.OrgID, a.EnvID, a.Month, a.Percent, a.Budget, a.Spend, a.Burn, a.ForecastAt, a.Mailed, a.CreatedAt, a.EnforceAt)
		if r.Error != nil {
			return n, false, fmt.Errorf("models: budget alert: %w", r.Error)
		}
		if r.RowsAffected == 0 {
			continue // another pass recorded it (and mailed it) first
		}
		n++
		if err := s.queueOrgWebhooks(ctx, b.OrgID, b.EnvID, TypeBudgetThreshold, a.ID, map[string]any{ // X8
			"budget": map[string]any{"environmentId": a.EnvID, "month": a.Month, "percent": a.Percent,
				"amount": DecimalUSD(a.Budget), "spend": DecimalUSD(a.Spend), "burnPerHour": DecimalUSD(a.Burn),
				"forecastAt": a.ForecastAt, "enforceAt": a.EnforceAt}}); err != nil {
			return n, false, err
		}
		if a.Mailed {
			if err := s.mailBudgetAlert(ctx, b, a, m, baseURL); err != nil {
				return n, false, err
			}
			mailed = true
		}
	}
	return n, mailed, nil
}

// enforceAt is when a budget reached now is enforced (X6): the warning
// window after its first mailed warning this month, or after now when
// there was none.
func enforceAt(seen []BudgetAlert, now time.Time) time.Time {
	first := now
	for _, a := range seen {
		if a.Percent < 100 && a.Mailed && a.CreatedAt.Before(first) {
			first = a.CreatedAt
		}
	}
	return maxTime(now, first.Add(BudgetWarningWindow))
}

// enforceBudget stops the environment's billed clusters (B5, B6) once its
// 100 % alert for the current budget is due (X6's warning window passed),
// on every pass while the budget is still reached, so a cluster started
// in the environment afterwards is stopped too. A raise lifts it: the
// alert belongs to the old amount. RequestStop leaves a cluster already
// stopping or stopped as it is; the stop job stops the machines.
func (s *Store) enforceBudget(ctx context.Context, b Budget, m envMoney, w UsageWindow, now time.Time, baseURL string, res *BudgetPass) error {
	if m.spend < b.Amount {
		return nil
	}
	var live []Cluster
	for _, c := range m.live {
		if c.StopRequestedAt == nil && c.TerminateRequestedAt == nil {
			live = append(live, c)
		}
	}
	var a BudgetAlert
	err := s.db.WithContext(ctx).Where("env_id = ? AND month = ? AND percent = 100 AND budget = ? AND enforce_at <= ?",
		b.EnvID, w.Month(), b.Amount, now).Limit(1).Find(&a).Error
	if err != nil || a.ID == "" || (a.EnforcedAt != nil && len(live) == 0) {
		return err
	}
	return s.Tx(ctx, func(tx *Store) error {
		if a.EnforcedAt == nil {
			r := tx.db.WithContext(ctx).Model(&BudgetAlert{}).Where("id = ? AND enforced_at IS NULL", a.ID).Update("enforced_at", now)
			if r.Error != nil {
				return r.Error
			}
			if r.RowsAffected == 1 {
				res.Enforced++
			}
		}
		detail := fmt.Sprintf("the environment's budget of %s for %s is reached (%s spent).", USD(b.Amount), w.Month(), USD(m.spend))
		var stopped []Cluster
		for _, c := range live {
			sc, err := tx.RequestStop(ctx, c.OrgID, c.ID, StopByBudget, detail)
			if err != nil {
				return err
			}
			if sc.StopRequestedAt != nil && sc.StopReason == string(StopByBudget) {
				stopped = append(stopped, sc)
			}
		}
		return tx.mailBudgetStopped(ctx, b, m, w, stopped, now, baseURL)
	})
}

// mailBudgetStopped announces a budget's enforcement when it happens (B5,
// X6; B6): the owners and admins are told which clusters were
// just stopped and how to go on, once per pass that stopped any.
func (s *Store) mailBudgetStopped(ctx context.Context, b Budget, m envMoney, w UsageWindow, stopped []Cluster, now time.Time, baseURL string) error {
	if len(stopped) == 0 {
		return nil
	}
	env, err := s.EnvironmentForOrg(ctx, b.OrgID, b.EnvID)
	if err != nil {
		return err
	}
	to, err := s.managers(ctx, b.OrgID)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(stopped))
	for _, c := range stopped {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	mail := BudgetStoppedMail{EnvName: env.Name, Month: w.Month(), Budget: b.Amount, Spend: m.spend, Stopped: names,
		At: now.UTC(), Link: strings.TrimRight(baseURL, "/") + "/billing#budgets"}
	return s.notifyEach(ctx, fmt.Sprintf("budget-stopped:%s:%s:%d:%d", b.EnvID, w.Month(), b.Amount, now.Unix()), to, mail)
}

// mailBudgetAlert queues the alert's mail to the organisation's owners and
// admins (E1), keyed by environment, month, threshold, budget and
// recipient.
func (s *Store) mailBudgetAlert(ctx context.Context, b Budget, a BudgetAlert, m envMoney, baseURL string) error {
	env, err := s.EnvironmentForOrg(ctx, b.OrgID, b.EnvID)
	if err != nil {
		return err
	}
	to, err := s.managers(ctx, b.OrgID)
	if err != nil {
		return err
	}
	return s.notifyEach(ctx, fmt.Sprintf("budget:%s:%s:%d:%d", a.EnvID, a.Month, a.Percent, a.Budget), to,
		budgetAlertMail(env.Name, a, m.live, baseURL))
}

// budgetAlertMail is an alert's data: the spend against the budget, the
// forecast at the current burn (X6) and, at 100 %, which clusters are
// stopped and when.
func budgetAlertMail(envName string, a BudgetAlert, live []Cluster, baseURL string) BudgetAlertMail {
	m := BudgetAlertMail{EnvName: envName, Month: a.Month, Percent: a.Percent, Spend: a.Spend, Budget: a.Budget, Burn: a.Burn,
		ForecastAt: a.ForecastAt, Link: strings.TrimRight(baseURL, "/") + "/billing#budgets"}
	if a.Percent >= 100 {
		for _, c := range live {
			m.Running = append(m.Running, c.Name)
		}
		slices.Sort(m.Running)
		if a.EnforceAt != nil && a.EnforceAt.After(a.CreatedAt) {
			at := a.EnforceAt.UTC()
			m.StopAt = &at
		}
	}
	return m
}

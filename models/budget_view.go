package models

import (
	"context"
	"fmt"
	"time"
)

// BudgetLine is one environment as the billing page's budgets section and
// GET /v1/billing/budgets show it (B5, X6).
type BudgetLine struct {
	Env        Environment
	Budget     *Budget // nil: none set
	Spend      Money   // this month, written and open
	Burn       Money   // per hour, the environment's clusters billed now
	ForecastAt *time.Time
	Reached    bool
	Alerts     []int      // thresholds reached this month for this budget
	EnforceAt  *time.Time // reached: when its clusters are (were) stopped
}

// ClusterRunOut is a billed cluster's projected run-out (X6): the first of
// its environment's budget and the organisation's balance to run out at
// the current burn.
type ClusterRunOut struct {
	Cluster Cluster
	EnvName string
	At      *time.Time // nil: neither runs out this month at the current burn
	By      string     // "budget" or "balance"
}

// BudgetOverview is the organisation's budgets and forecasts (X6).
type BudgetOverview struct {
	Month         string
	Lines         []BudgetLine
	Balance       BalanceFigure // the one balance (B8)
	Burn          Money
	BalanceRunOut *time.Time // the balance (less what accrues, B8) runs out; nil while nothing burns
	Clusters      []ClusterRunOut
}

// Run-out causes.
const (
	RunOutBudget  = "budget"
	RunOutBalance = "balance"
)

// BudgetOverviewFor reads every environment of the organisation with its
// budget, spend this month, burn and forecast, the balance's run-out and
// each billed cluster's, in a fixed number of queries.
func (s *Store) BudgetOverviewFor(ctx context.Context, orgID string) (BudgetOverview, error) {
	now := s.Now()
	w := MonthOf(now)
	out := BudgetOverview{Month: w.Month()}
	envs, err := s.Environments(ctx, orgID)
	if err != nil {
		return out, fmt.Errorf("models: environments of %s: %w", orgID, err)
	}
	var budgets []Budget
	if err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Find(&budgets).Error; err != nil {
		return out, fmt.Errorf("models: budgets of %s: %w", orgID, err)
	}
	budgetOf := map[string]*Budget{}
	for i := range budgets {
		budgetOf[budgets[i].EnvID] = &budgets[i]
	}
	var alerts []BudgetAlert
	if err := s.db.WithContext(ctx).Where("org_id = ? AND month = ?", orgID, w.Month()).Order("percent").Find(&alerts).Error; err != nil {
		return out, fmt.Errorf("models: budget alerts of %s: %w", orgID, err)
	}
	ids := make([]string, len(envs))
	for i, e := range envs {
		ids[i] = e.ID
	}
	money, err := s.envMoneyOf(ctx, ids, w, now)
	if err != nil {
		return out, err
	}
	if out.Balance, err = s.CurrentBalance(ctx, orgID); err != nil {
		return out, err
	}
	for _, e := range envs {
		out.Burn += money[e.ID].burn
	}
	if at, ok := Forecast(now, out.Balance.Balance(), 0, out.Burn); ok && out.Burn > 0 {
		out.BalanceRunOut = &at
	}
	balanceStop, err := s.balanceStopAt(ctx, orgID, out, now)
	if err != nil {
		return out, err
	}
	for _, e := range envs {
		m := money[e.ID]
		l := BudgetLine{Env: e, Budget: budgetOf[e.ID], Spend: m.spend, Burn: m.burn}
		if b := l.Budget; b != nil {
			l.Reached = m.spend >= b.Amount
			if at, ok := Forecast(now, b.Amount, m.spend, m.burn); ok && at.Before(w.To) {
				l.ForecastAt = &at
			}
			for _, a := range alerts {
				if a.EnvID == e.ID && a.Budget == b.Amount {
					l.Alerts = append(l.Alerts, a.Percent)
					if a.Percent == 100 && l.Reached {
						l.EnforceAt = a.EnforceAt
					}
				}
			}
		}
		out.Lines = append(out.Lines, l)
		budgetStop := budgetStopAt(l, alerts, m, now)
		for _, c := range m.live {
			r := ClusterRunOut{Cluster: c, EnvName: e.Name, At: balanceStop, By: RunOutBalance}
			if budgetStop != nil && (r.At == nil || budgetStop.Before(*r.At)) {
				r.At, r.By = budgetStop, RunOutBudget
			}
			out.Clusters = append(out.Clusters, r)
		}
	}
	return out, nil
}

// balanceStopAt is when the balance stops the organisation's clusters at
// the current burn (B6): the moment it is exhausted (or
// was, for an episode under way) plus the grace. nil: nothing burns.
func (s *Store) balanceStopAt(ctx context.Context, orgID string, o BudgetOverview, now time.Time) (*time.Time, error) {
	grace := s.settings.BalanceGrace
	if grace <= 0 {
		grace = DefaultBalanceGrace
	}
	exhausted := o.BalanceRunOut
	if o.Balance.Balance() <= 0 {
		var eps []BalanceEpisode
		if err := s.db.WithContext(ctx).Where("org_id = ?", orgID).Limit(1).Find(&eps).Error; err != nil {
			return nil, fmt.Errorf("models: balance episode of %s: %w", orgID, err)
		}
		at := now
		if len(eps) == 1 && eps[0].ExhaustedAt != nil {
			at = *eps[0].ExhaustedAt
		}
		exhausted = &at
	}
	if exhausted == nil || o.Burn <= 0 {
		return nil, nil
	}
	stop := maxTime(now, exhausted.Add(grace))
	return &stop, nil
}

// budgetStopAt is when a budget stops its environment's clusters (B5, X6;
// B6): the enforcement time of its 100 % alert once reached,
// else the forecast of reaching it pushed back to a warning window after
// the first warning (mailed, or to be mailed when 50 % is crossed), as
// CheckBudgets will enforce it. nil: not reached this month at the
// current burn.
func budgetStopAt(l BudgetLine, alerts []BudgetAlert, m *envMoney, now time.Time) *time.Time {
	if l.EnforceAt != nil {
		return l.EnforceAt
	}
	if l.Budget == nil || l.ForecastAt == nil {
		return nil
	}
	var first *time.Time
	for _, a := range alerts {
		if a.EnvID == l.Env.ID && a.Budget == l.Budget.Amount && a.Percent < 100 && a.Mailed && (first == nil || a.CreatedAt.Before(*first)) {
			at := a.CreatedAt
			first = &at
		}
	}
	if first == nil {
		half := l.Budget.Amount * 50 / 100
		at := now
		if m.spend < half {
			if f, ok := Forecast(now, half, m.spend, m.burn); ok {
				at = f
			}
		}
		first = &at
	}
	stop := maxTime(*l.ForecastAt, first.Add(BudgetWarningWindow))
	return &stop
}

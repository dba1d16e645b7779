package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Budget is an environment's monthly budget (B5): what its clusters may
// spend in a calendar month (UTC). Owners and admins set it; the budgets
// job warns at 50 % and 80 % and at 100 % stops the environment's clusters.
type Budget struct {
	EnvID     string `gorm:"primaryKey"`
	OrgID     string
	Amount    Money     // per calendar month, whole cents
	UpdatedBy string    // who set it (the audit log's actor name)
	UpdatedAt time.Time `gorm:"autoUpdateTime:false"` // the store clock, not GORM's
}

// BudgetThresholds are the staged alerts (X6): each is mailed once per
// month per budget.
var BudgetThresholds = []int{50, 80, 100}

// MaxBudget is the largest monthly budget accepted.
const MaxBudget Money = 10_000_000 * Micro

// BudgetWarningWindow is X6's warning window: the clusters of an
// environment are stopped at 100 % only once its first warning of the
// month went out at least this long ago. A budget reached with no earlier
// warning (spend jumped, or the budget was lowered below it) is enforced
// this long after the 100 % mail, which is then the warning.
const BudgetWarningWindow = time.Hour

// BudgetAlert records that an environment's spend reached Percent of its
// budget in Month (B5, X6). One row per environment, month, threshold and
// budget amount (unique): the row is the "once per month per budget", so a
// rerun or a second instance mails nothing twice, and a raised budget is a
// new budget that warns again. A threshold passed together with a higher
// one is recorded without a mail of its own (Mailed false).
type BudgetAlert struct {
	ID         string `gorm:"primaryKey"`
	OrgID      string
	EnvID      string
	Month      string // YYYY-MM
	Percent    int
	Budget     Money // the budget it was reached against
	Spend      Money // spend this month when it was reached
	Burn       Money // the environment's burn per hour then
	ForecastAt *time.Time
	Mailed     bool
	CreatedAt  time.Time
	EnforceAt  *time.Time // 100 % only: when the clusters are stopped
	EnforcedAt *time.Time // 100 % only: when that was done
}

func up0720Budgets(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	for _, q := range []string{
		"CREATE TABLE budgets (env_id varchar(32) PRIMARY KEY, org_id varchar(32) NOT NULL, amount bigint NOT NULL, " +
			"updated_by varchar(191) NOT NULL DEFAULT '', updated_at " + ts + " NOT NULL)",
		"CREATE INDEX idx_budgets_org ON budgets (org_id)",
		"CREATE TABLE budget_alerts (id varchar(32) PRIMARY KEY, org_id varchar(32) NOT NULL, env_id varchar(32) NOT NULL, " +
			"month varchar(7) NOT NULL, percent integer NOT NULL, budget bigint NOT NULL, spend bigint NOT NULL, " +
			"burn bigint NOT NULL, forecast_at " + ts + ", mailed boolean NOT NULL DEFAULT false, created_at " + ts + " NOT NULL, " +
			"enforce_at " + ts + ", enforced_at " + ts + ")",
		// Once per month per budget, whatever runs the job.
		"CREATE UNIQUE INDEX idx_budget_alerts_once ON budget_alerts (env_id, month, percent, budget)",
		"CREATE INDEX idx_budget_alerts_org ON budget_alerts (org_id, month)",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// BudgetProblems validates a monthly budget: more than zero, in whole
// cents, at most MaxBudget.
func BudgetProblems(amount Money) FieldErrors {
	switch {
	case amount <= 0:
		return FieldErrors{"amount": "Enter a budget of more than $0.00."}
	case amount%10_000 != 0:
		return FieldErrors{"amount": "Enter a budget in whole cents, like 250 or 250.50."}
	case amount > MaxBudget:
		return FieldErrors{"amount": "Enter a budget of at most " + USD(MaxBudget) + " a month."}
	}
	return nil
}

// SetBudget is an owner's or admin's monthly budget for one environment of
// their organisation (B5), audited; members are refused, another
// organisation's environment is ErrNotFound. Raising it above this month's
// spend lifts its enforcement: alerts belong to the amount they were
// reached against.
func (x Actions) SetBudget(ctx context.Context, envID string, amount Money) (Budget, error) {
	if !x.a.Role.CanManage() {
		return Budget{}, &ForbiddenError{Message: "Only owners and admins set budgets."}
	}
	var b Budget
	err := x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		env, err := tx.EnvironmentForOrg(ctx, x.a.OrgID, envID)
		if err != nil {
			return nil, err
		}
		if fe := BudgetProblems(amount); fe != nil {
			return nil, fe
		}
		b = Budget{EnvID: env.ID, OrgID: x.a.OrgID, Amount: amount, UpdatedBy: x.a.Name, UpdatedAt: tx.Now()}
		if err := tx.db.WithContext(ctx).Save(&b).Error; err != nil {
			return nil, err
		}
		return x.audit("billing.budget", env.ID, env.Name+": "+USD(amount)+" a month"), nil
	})
	return b, err
}

// RemoveBudget removes an environment's budget (owners and admins,
// audited): nothing is warned about or stopped for it any more.
func (x Actions) RemoveBudget(ctx context.Context, envID string) error {
	if !x.a.Role.CanManage() {
		return &ForbiddenError{Message: "Only owners and admins remove budgets."}
	}
	return x.do(ctx, func(tx *Store) (*AuditEntry, error) {
		env, err := tx.EnvironmentForOrg(ctx, x.a.OrgID, envID)
		if err != nil {
			return nil, err
		}
		res := tx.db.WithContext(ctx).Where("org_id = ? AND env_id = ?", x.a.OrgID, env.ID).Delete(&Budget{})
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected == 0 {
			return nil, nil // nothing to remove: nothing to audit
		}
		return x.audit("billing.budget", env.ID, env.Name+": removed"), nil
	})
}

// BudgetFor is an environment's budget through its organisation; ok false
// when none is set.
func (s *Store) BudgetFor(ctx context.Context, orgID, envID string) (Budget, bool, error) {
	var b Budget
	err := s.db.WithContext(ctx).Where("org_id = ? AND env_id = ?", orgID, envID).Take(&b).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Budget{}, false, nil
	}
	return b, err == nil, err
}

// forecastHorizon bounds a forecast: further than this is "not at this
// burn" (and a time.Duration would overflow long before a tiny burn's).
const forecastHorizon = 10 * 366 * 24 * 60 // minutes

// Forecast is when spend reaches limit at burn per hour, counting from
// now (X6): the first whole minute m at which burn·m/60 covers what is
// left, in integer micro-dollars. ok is false when nothing burns or it
// would take more than ten years. Already reached is now.
func Forecast(now time.Time, limit, spend, burn Money) (time.Time, bool) {
	left := limit - spend
	if left <= 0 {
		return now, true
	}
	if burn <= 0 {
		return time.Time{}, false
	}
	minutes := (left*60 + burn - 1) / burn // ceil(left·60 / burn)
	if minutes > forecastHorizon {
		return time.Time{}, false
	}
	return now.Add(time.Duration(minutes) * time.Minute), true
}

// reached lists the thresholds spend has reached of amount.
func reached(spend, amount Money) []int {
	var out []int
	for _, p := range BudgetThresholds {
		if amount > 0 && spend*100 >= amount*Money(p) {
			out = append(out, p)
		}
	}
	return out
}

// envMoney is what an environment's clusters and volumes spent in a month
// and burn now.
type envMoney struct {
	spend Money     // written usage of periods starting in the month, plus the open period
	open  Money     // the open period alone: owed, not yet in the ledger
	burn  Money     // per hour: clusters billed now and volumes not deleted (as BurnRate)
	live  []Cluster // clusters billed now
}

// envMoneyOf reads the month's spend and the burn of every environment in
// envIDs, in three queries whatever their number of clusters.
func (s *Store) envMoneyOf(ctx context.Context, envIDs []string, w UsageWindow, now time.Time) (map[string]*envMoney, error) {
	out := make(map[string]*envMoney, len(envIDs))
	for _, id := range envIDs {
		out[id] = &envMoney{}
	}
	if len(envIDs) == 0 {
		return out, nil
	}
	db := s.db.WithContext(ctx)
	var sums []struct {
		EnvID  string
		Amount Money
	}
	err := db.Table("ledger_entries AS l").Select("c.env_id AS env_id, COALESCE(SUM(l.amount), 0) AS amount").
		Joins("JOIN clusters c ON c.id = l.cluster_id AND c.org_id = l.org_id").
		Where("l.kind = ? AND l.period_start >= ? AND l.period_start < ? AND c.env_id IN ?", LedgerUsage, w.From, w.To, envIDs).
		Group("c.env_id").Scan(&sums).Error
	if err != nil {
		return nil, fmt.Errorf("models: budget spend: %w", err)
	}
	for _, r := range sums {
		out[r.EnvID].spend -= r.Amount
	}
	if err := s.volumeMoneyOf(ctx, out, envIDs, w, now); err != nil {
		return nil, err
	}
	var cs []Cluster
	err = db.Where("env_id IN ? AND ready_at IS NOT NULL AND ready_at < ? AND (released_at IS NULL OR released_at >= ?)", envIDs, w.To, w.From).
		Order("id").Find(&cs).Error
	if err != nil {
		return nil, fmt.Errorf("models: budget clusters: %w", err)
	}
	if len(cs) == 0 {
		return out, nil
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	var marks []UsageMark
	if err := db.Where("cluster_id IN ?", ids).Find(&marks).Error; err != nil {
		return nil, fmt.Errorf("models: budget marks: %w", err)
	}
	markOf := map[string]*time.Time{}
	for i := range marks {
		markOf[marks[i].ClusterID] = &marks[i].BilledUntil
	}
	machines, err := s.machinesOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		m := out[c.EnvID]
		if w.contains(now) {
			for _, n := range machines[c.ID] { // each machine its own minutes, as the pass writes them (L10, X5)
				_, acc := accumulating(c, n.Gaps, markOf[c.ID], now)
				m.spend += acc
				m.open += acc
			}
		}
		if c.ReleasedAt == nil && billing(c.Status) {
			// Its machines: a volume it mounts burns as a volume, above,
			// so it is counted once (as BurnRate).
			m.burn += c.MachineHour * Money(c.Nodes)
			m.live = append(m.live, c)
		}
	}
	return out, nil
}

// billing is true for the statuses BurnRate counts (a cluster past readyAt).
func billing(st ClusterStatus) bool {
	return st == StatusInstalling || st == StatusVerifying || st == StatusReady || st == StatusDegraded
}

// BudgetReachedError refuses to launch or resume a cluster while its
// environment's budget for the month is reached (B5): a raise above the
// spend, or the next month, lifts it.
type BudgetReachedError struct {
	Env           string // the environment's name
	EnvID         string // the environment, for the way forward (its budget's field)
	Month         string // YYYY-MM
	Budget, Spend Money
}

func (e *BudgetReachedError) Error() string {
	return fmt.Sprintf("The budget of environment %s is reached: %s of %s spent in %s. Raise the budget on the billing page to launch or resume clusters, or create or grow volumes, there.",
		e.Env, USD(e.Spend), USD(e.Budget), e.Month)
}

// budgetReachedFor is a *BudgetReachedError when the environment of c has
// a budget its spend this month has reached, else nil.
func (s *Store) budgetReachedFor(ctx context.Context, c Cluster) error {
	b, ok, err := s.BudgetFor(ctx, c.OrgID, c.EnvID)
	if err != nil || !ok {
		return err
	}
	now := s.Now()
	w := MonthOf(now)
	money, err := s.envMoneyOf(ctx, []string{c.EnvID}, w, now)
	if err != nil {
		return err
	}
	if spend := money[c.EnvID].spend; spend >= b.Amount {
		env, err := s.EnvironmentForOrg(ctx, c.OrgID, c.EnvID)
		if err != nil {
			return err
		}
		return &BudgetReachedError{Env: env.Name, EnvID: env.ID, Month: w.Month(), Budget: b.Amount, Spend: spend}
	}
	return nil
}

// BudgetReached is the *BudgetReachedError resuming c would meet now (nil
// when its environment's budget is not reached): the cluster page disables
// Resume with it (A4).
func (s *Store) BudgetReached(ctx context.Context, c Cluster) (*BudgetReachedError, error) {
	err := s.budgetReachedFor(ctx, c)
	var br *BudgetReachedError
	if errors.As(err, &br) {
		return br, nil
	}
	return nil, err
}

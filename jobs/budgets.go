package jobs

import (
	"context"

	"github.com/clusterdeck/clusterdeck/models"
)

// Budgets enforces monthly budgets per environment (B5, X6, E1): each
// minute it computes every budgeted environment's spend this month from
// the ledger's usage, mails the owners and admins once per month per
// budget at 50 %, 80 % and 100 % with a forecast of when the budget is
// reached at the current burn, and at 100 %, after the warning window,
// stops the environment's clusters. The alert rows are unique and the
// mails commit with them, so a rerun mails nothing twice; the scheduler's
// lease keeps it to one instance anyway.
type Budgets struct {
	Store   *models.Store
	BaseURL string // mails link to its billing page
}

// Name implements Job.
func (*Budgets) Name() string { return "budgets" }

// Run implements Job.
func (j *Budgets) Run(ctx context.Context) error {
	_, err := j.Store.CheckBudgets(ctx, j.BaseURL)
	return err
}

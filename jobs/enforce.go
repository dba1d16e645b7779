package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// BalanceEnforcement is B6 and E1: each minute, for every organisation
// with a billed cluster running or a balance episode open, it warns once
// when the balance will not cover the next hour, stops every running
// cluster once the balance has been exhausted for the grace, and
// terminates the clusters it stopped once they stayed unpaid for the
// second grace. The stop job carries out the stops, the terminate job the
// terminates.
type BalanceEnforcement struct {
	Store          *models.Store
	Grace          time.Duration // BALANCE_GRACE; 0 = 1 h
	TerminateGrace time.Duration // BALANCE_TERMINATE_GRACE; 0 = 72 h
	BaseURL        string        // links in the mails
}

// Name implements Job.
func (j *BalanceEnforcement) Name() string { return "balance" }

// Run implements Job. One organisation's trouble does not stop the others.
func (j *BalanceEnforcement) Run(ctx context.Context) error {
	orgs, err := j.Store.OrgsToEnforce(ctx)
	if err != nil {
		return err
	}
	p := models.EnforcePolicy{Grace: j.Grace, TerminateGrace: j.TerminateGrace, BaseURL: j.BaseURL}
	var errs []error
	for _, org := range orgs {
		if _, err := j.Store.EnforceBalance(ctx, org, p); err != nil {
			errs = append(errs, fmt.Errorf("org %s: %w", org, err))
		}
	}
	return errors.Join(errs...)
}

package main

import (
	"context"

	"github.com/clusterdeck/clusterdeck/models"
)

// seedDemoBalance gives the demo organisation its $1,000 test-mode deposit,
// idempotently.
//
// TODO(issue 4): deposit $1,000 in test mode through the ledger
// (models.(*Store).Deposit or similar) with a fixed idempotency key such as
// "demo-deposit:<org id>". Until the ledger exists this does nothing.
func seedDemoBalance(ctx context.Context, store *models.Store, org models.Org) error {
	return nil
}

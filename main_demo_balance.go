package main

import (
	"context"

	"github.com/clusterdeck/clusterdeck/models"
)

// demoDeposit is the demo organisation's test-mode balance, so a newcomer can
// launch at once.
const demoDeposit = 1000 * models.Micro

// seedDemoBalance gives the demo organisation its $1,000 test-mode deposit,
// once: the fixed idempotency key makes every later run a no-op.
func seedDemoBalance(ctx context.Context, store *models.Store, org models.Org) error {
	_, err := store.Deposit(ctx, org.ID, demoDeposit, "demo-deposit:"+org.ID, "Test-mode deposit for the demo organisation")
	return err
}

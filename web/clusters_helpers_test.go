package web

import (
	"context"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// launchFor gives acc's organisation a deposit and a provisioning cluster
// named name (2 × 8 H100 on a seeded offer), through the real models.
func launchFor(t testing.TB, app *testApp, acc account, name string) models.Cluster {
	t.Helper()
	ctx := context.Background()
	app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
	if _, err := app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "test-deposit:"+acc.org.ID+name, "test"); err != nil {
		t.Fatal(err)
	}
	q, err := app.store.CreateQuote(ctx, acc.org.ID, acc.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
	if err != nil {
		t.Fatal(err)
	}
	cl, _, err := app.store.LaunchCluster(ctx, models.LaunchParams{OrgID: acc.org.ID, EnvID: acc.env.ID, QuoteID: q.ID, Actor: acc.user.Email, Workload: models.Workload{Name: name, Software: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

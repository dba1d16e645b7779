package models_test

import (
	"context"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// E1, E2: the outcome mails commit with the status change that causes them.
// Each degradation of a new install attempt mails again; a retried change
// mails nothing more; keys stay short however long the address; and a
// recipient the outbox refuses is skipped without stopping the others.
func TestClusterMailsCommitWithTheirTransition(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1_000*models.Micro)
		long := strings.Repeat("a", 60) + "@" + strings.Repeat("b", 180) + ".example"
		addMember(t, e, "Broken <broken@acme.example>", models.RoleOwner) // not a plain address
		addMember(t, e, "owner@acme.example", models.RoleOwner)
		addMember(t, e, long, models.RoleAdmin)
		addMember(t, e, "member@acme.example", models.RoleMember) // mailed as the launcher
		addMember(t, e, "bystander@acme.example", models.RoleMember)

		q := e.quote(t, models.QuoteRequest{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		c, _, err := e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID,
			Actor: "member@acme.example", Workload: models.Workload{Name: "train", Software: "slurm"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.MarkJoined(ctx, c.ID, notifyAll); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.SoftwareRunFor(ctx, c); err != nil {
			t.Fatal(err)
		}
		degrade := func(attempt int) {
			t.Helper()
			if _, err := e.s.DegradeSoftware(ctx, c.ID, attempt, "install_failed:node-1", "node-1", "node-1 failed.", notifyAll); err != nil {
				t.Fatal(err)
			}
		}
		degrade(1)
		if _, err := e.s.DegradeSoftware(ctx, c.ID, 1, "install_failed:node-1", "node-1", "again", notifyAll); err == nil {
			t.Error("a second degradation of one attempt was accepted")
		}
		if _, err := e.s.RetryInstall(ctx, e.org.ID, c.ID, "owner@acme.example"); err != nil {
			t.Fatal(err)
		}
		degrade(2)

		mails, err := e.s.OutboxMails(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, m := range mails {
			got[m.To+" "+m.Subject]++
			if len(m.Key) > 100 {
				t.Errorf("key of %d bytes: %s", len(m.Key), m.Key)
			}
		}
		want := map[string]int{
			"owner@acme.example Cluster train is degraded":  2,
			"member@acme.example Cluster train is degraded": 2, // the launcher
			long + " Cluster train is degraded":             2,
		}
		if len(mails) != 6 || len(got) != len(want) {
			t.Fatalf("mails %v, want %v", got, want)
		}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("%s: %d mails, want %d", k, got[k], n)
			}
		}
	})
}

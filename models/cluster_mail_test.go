package models_test

import (
	"context"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
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

		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
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
			if _, err := e.s.DegradeSoftware(ctx, c.ID, attempt, models.ParseLastError("install_failed:node-1"), "node-1", "node-1 failed.", notifyAll); err != nil {
				t.Fatal(err)
			}
		}
		degrade(1)
		if _, err := e.s.DegradeSoftware(ctx, c.ID, 1, models.ParseLastError("install_failed:node-1"), "node-1", "again", notifyAll); err == nil {
			t.Error("a second degradation of one attempt was accepted")
		}
		if _, err := e.s.RetryInstall(ctx, e.org.ID, c.ID, "owner@acme.example"); err != nil {
			t.Fatal(err)
		}
		degrade(2)

		mails, err := views.RenderedMails(e.s.OutboxMails(ctx, 100))
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

// The ready mail carries node-0's SSH command and, in its HTML part, a
// button to the cluster page; it and the cluster's events name the GPU and
// the place as people read them ("H100 80GB", the location's name), never
// the raw ids (E1, L6).
func TestReadyMailAndEventsUseDisplayNames(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1_000*models.Micro)
		addMember(t, e, "owner@acme.example", models.RoleOwner)
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		c, _, err := e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID,
			Actor: "owner@acme.example", Workload: models.Workload{Name: "train", Software: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		q2 := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		slurm, _, err := e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q2.ID,
			Actor: "owner@acme.example", Workload: models.Workload{Name: "slurm-one", Software: "slurm"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.MarkPlaced(ctx, c.ID, []models.PlacedNode{
			{Rank: 0, ProviderNodeID: "p0", PublicHost: "203.0.113.7", User: "ubuntu", SSHPort: 2222},
			{Rank: 1, ProviderNodeID: "p1", PublicHost: "203.0.113.8", User: "ubuntu", SSHPort: 22}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.MarkJoined(ctx, c.ID, notifyAll); err != nil {
			t.Fatal(err)
		}
		mails, err := views.RenderedMails(e.s.OutboxMails(ctx, 10))
		if err != nil || len(mails) != 1 {
			t.Fatalf("mails %d %v", len(mails), err)
		}
		m := mails[0]
		const ssh = "ssh -p 2222 ubuntu@203.0.113.7"
		for _, want := range []string{ssh, "2 × 8 × H100 80GB in " + c.LocationName, "https://deck.example/clusters/" + c.ID} {
			if !strings.Contains(m.Text, want) {
				t.Errorf("the ready mail's text lacks %q:\n%s", want, m.Text)
			}
		}
		for _, want := range []string{ssh, `<a href="https://deck.example/clusters/` + c.ID + `"`, "H100 80GB", "Open train</a>"} {
			if !strings.Contains(m.HTML, want) {
				t.Errorf("the ready mail's HTML lacks %q:\n%s", want, m.HTML)
			}
		}
		if strings.Contains(m.Text+m.HTML, "H100_80GB") {
			t.Errorf("the ready mail leaks a raw id:\n%s\n%s", m.Text, m.HTML)
		}
		var all []string
		for _, id := range []string{c.ID, slurm.ID} {
			events, err := e.s.EventsFor(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range events {
				all = append(all, ev.Message)
			}
		}
		text := strings.Join(all, "\n")
		for _, want := range []string{"2 × 8 × H100 80GB in " + c.LocationName, "software: Slurm", "reserved in " + c.LocationName} {
			if !strings.Contains(text, want) {
				t.Errorf("events lack %q:\n%s", want, text)
			}
		}
		// The test catalog names a location "<id> DC": the id alone is a leak.
		if strings.Contains(text, "H100_80GB") || strings.Count(text, c.Location) != strings.Count(text, c.Location+" DC") {
			t.Errorf("events leak raw ids:\n%s", text)
		}
	})
}

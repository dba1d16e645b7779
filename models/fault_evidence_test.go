package models_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// X19 (a tenant's own reports quarantine a shared machine for everyone):
// a customer's own reports about its machine (a GPU error its agent
// reported, its agent's silence) decide its cluster's health — the node
// goes down, the cluster degraded — but alone they neither quarantine the
// machine nor mark the public track record, however often. The provider's
// view does; so do the same reports from a second organisation, and then
// every report of both counts. Each quarantine says which evidence it used.
func TestAbuseTenantReportsAloneNeverQuarantine(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		a := newLaunchEnv(t, db, 100_000*models.Micro)
		b := newLaunchEnvIn(t, db, a.s, 100_000*models.Micro)
		b.clock = a.clock
		if err := db.Model(&models.Org{}).Where("id IN ?", []string{a.org.ID, b.org.ID}).
			Updates(map[string]any{"max_machines": 100, "max_gpus": 800}).Error; err != nil {
			t.Fatal(err)
		}
		onHost := func(e *launchEnv, hosts ...string) models.Cluster {
			t.Helper()
			c, err := e.s.ClusterByID(ctx, clusterIn(t, e, models.StatusReady, ""))
			if err != nil {
				t.Fatal(err)
			}
			for rank, h := range hosts {
				if err := db.Model(&models.ClusterNode{}).Where("cluster_id = ? AND rank = ?", c.ID, rank).
					Update("machine_host", h).Error; err != nil {
					t.Fatal(err)
				}
			}
			return c
		}
		down := func(c models.Cluster, rank int, seen, evidence string) models.Cluster {
			t.Helper()
			a.clock.Advance(time.Minute)
			c, err := a.s.MarkMachinesDown(ctx, c, []models.DownMachine{{Rank: rank, Name: "node-" + string(rune('0'+rank)), Seen: seen, Evidence: evidence}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		quarantined := func() map[string]string {
			t.Helper()
			var qs []models.MachineQuarantine
			if err := db.Where("released_at IS NULL").Find(&qs).Error; err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, q := range qs {
				out[q.Machine] = q.Reason
			}
			return out
		}
		failures := func(c models.Cluster) int {
			t.Helper()
			var r models.LaunchRecord
			if err := db.Where("cluster_id = ?", c.ID).Take(&r).Error; err != nil {
				t.Fatal(err)
			}
			return r.MachineFailures
		}
		xid := "GPU hardware error: XID 79 (GPU has fallen off the bus): NVRM: Xid (PCI:0000:3b:00): 79"

		// Organisation A reports XID 79 from host-x twice, on two clusters.
		a1 := onHost(a, "host-x", "host-y")
		a1 = down(a1, 0, xid, models.EvidenceTenant)
		if a1.Status != models.StatusDegraded {
			t.Fatalf("A's cluster after its own report: %s, want degraded (its reports decide its health)", a1.Status)
		}
		a2 := onHost(a, "host-x", "host-z")
		down(a2, 0, "agent silent: last heartbeat 5m0s ago", models.EvidenceTenant)
		if q := quarantined(); len(q) != 0 {
			t.Fatalf("one organisation's own reports quarantined %v", q)
		}
		if f1, f2 := failures(a1), failures(a2); f1 != 0 || f2 != 0 {
			t.Fatalf("one organisation's own reports marked the track record: %d, %d machine failures", f1, f2)
		}
		book, err := a.s.OfferTrack(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := book.For(a1.OfferID, 2); r != nil && r.MachineFailures != 0 {
			t.Fatalf("public record %+v", r)
		}

		// The provider's view counts at once: host-y stops twice.
		down(a1, 1, "stopped at the provider (host hardware fault)", models.EvidenceProvider)
		if failures(a1) != 1 {
			t.Fatalf("the provider's view did not count: %d", failures(a1))
		}
		a3 := onHost(a, "host-w", "host-y")
		down(a3, 1, "failed at the provider", "") // the zero value is the provider's view
		q := quarantined()
		if !strings.Contains(q["host-y"], "evidence: the provider's view") || len(q) != 1 {
			t.Fatalf("quarantines %v, want host-y on the provider's view", q)
		}

		// A second organisation reports the same host: now both count.
		b1 := onHost(b, "host-x", "host-v")
		down(b1, 0, xid, models.EvidenceTenant)
		q = quarantined()
		if !strings.Contains(q["host-x"], "evidence: the customers' own reports from 2 organisations") {
			t.Fatalf("quarantines %v, want host-x on reports from two organisations", q)
		}
		if f1, f2, fb := failures(a1), failures(a2), failures(b1); f1 != 2 || f2 != 1 || fb != 1 {
			t.Fatalf("machine failures after corroboration: A1 %d, A2 %d, B1 %d; want 2, 1, 1", f1, f2, fb)
		}
	})
}

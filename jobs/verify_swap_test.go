package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// X5, R1, L6: a verification swap forgets what the machine it replaced
// reported (its GPUs, ECC baseline, XID lines and hardware fault), as
// Replace does. After hand-over, with the agents reporting their GPUs and
// the health job running well past ten minutes, the healthy replacement
// is never declared down, nobody is mailed, and the replacement's host is
// never quarantined; the one machine blamed is the one that failed.
func TestVerifySwapForgetsTheOldMachine(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultECCErrors, Node: 2, Count: 1}); err != nil {
			t.Fatal(err)
		}
		c := w.launchVerified("H100_80GB", 3, 8, "none")
		c = w.untilSettled(c.ID, 40*time.Minute)
		if c.Status != models.StatusReady {
			t.Fatalf("status %s (%s), want ready\n%s", c.Status, c.LastError, w.events(c.ID))
		}
		_, rep := w.report(c.ID)
		if len(rep.Swaps) != 1 || rep.Swaps[0].Node != "node-2" || rep.Swaps[0].Outcome != "joined" {
			t.Fatalf("swaps %+v", rep.Swaps)
		}
		var faults []models.MachineFault
		db.Where("cluster_id = ?", c.ID).Find(&faults)
		if len(faults) != 1 || faults[0].Kind != models.FaultVerification || faults[0].Node != "node-2" {
			t.Fatalf("faults after the swap %+v, want node-2's old machine's verification failure alone", faults)
		}
		oldHost := faults[0].Machine
		nodes, err := w.store.NodesFor(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		newHost := nodes[2].MachineKey()
		if newHost == "" || newHost == oldHost {
			t.Fatalf("the replacement runs on %q, the failed machine was %q", newHost, oldHost)
		}

		notify := &models.ClusterNotify{BaseURL: "https://deck.example"}
		health := &jobs.Health{Store: w.store, Providers: providers.Registry{"sim": w.cloud}, Mail: notify}
		for range 40 { // 20 minutes, the agents sampling every 30 s
			w.clock.Advance(30 * time.Second)
			w.tick()
			if err := health.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if c = w.cluster(c.ID); c.Status != models.StatusReady || c.LastError != "" {
			t.Fatalf("after hand-over: %s (%s)\n%s", c.Status, c.LastError, w.events(c.ID))
		}
		nodes, _ = w.store.NodesFor(ctx, c.ID)
		for _, n := range nodes {
			if n.Status != models.NodeReady || n.HWFault != "" || n.DownSince != nil {
				t.Errorf("%s: %s fault %q down since %v", n.Name, n.Status, n.HWFault, n.DownSince)
			}
		}
		if ev := w.events(c.ID); strings.Contains(ev, "vanished") || strings.Contains(ev, "GPU hardware error") {
			t.Errorf("a phantom GPU fault after the swap:\n%s", ev)
		}
		mails, err := w.store.OutboxMails(ctx, 200)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mails {
			if strings.Contains(m.Subject, "degraded") || strings.Contains(m.Subject, "down") {
				t.Errorf("mailed %q", m.Subject)
			}
		}
		db.Where("cluster_id = ?", c.ID).Find(&faults)
		for _, f := range faults {
			if f.Machine == newHost {
				t.Errorf("the healthy replacement %s is blamed: %+v", newHost, f)
			}
		}
		if q, _ := w.store.QuarantinedMachines(ctx, "sim"); len(q) != 0 {
			t.Errorf("quarantined %v", q)
		}
	})
}

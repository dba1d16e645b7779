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
	"github.com/clusterdeck/clusterdeck/views"
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
		mails, err := views.RenderedMails(w.store.OutboxMails(ctx, 200))
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

// metalCloud sells one bare-metal offer that boots in 18 minutes, the top
// of the 14–18 minutes bare metal takes.
const metalCloud = `{
  "locations": [{
    "id": "test-1", "name": "Testville",
    "offers": [
      {"id": "h100.8x.metal", "accelerator": "H100_80GB", "machine_kind": "bare_metal", "interconnect": "infiniband", "nics": 8, "nic_gbps": 400,
       "gpus_per_node": 8, "vcpus": 192, "memory_gb": 2000, "per_gpu_hour_usd": 2490000,
       "root_disk_gb": 2000, "disk_gb_hour_usd": 100, "nodes_available": 10, "boot_time": "18m"}
    ]}]}`

// L4, X5: a swap on bare metal gets the replacement's join deadline plus
// the checks, not what is left of the first 25 minutes: the replacement
// boots, every check passes, and the cluster is handed over ready, not
// degraded by the clock. The page states when it gives up and why.
func TestVerifySwapOnBareMetalGetsItsWindow(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorldOn(t, db, metalCloud)
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultStressFails, Node: 1, Count: 1}); err != nil {
			t.Fatal(err)
		}
		c := w.launchVerified("H100_80GB", 2, 8, "none")
		c = w.untilSettled(c.ID, 120*time.Minute)
		run, rep := w.report(c.ID)
		if c.Status != models.StatusReady || run.Status != models.VerifyPassed {
			t.Fatalf("status %s (%s), run %s, want ready\n%s", c.Status, c.LastError, run.Status, w.events(c.ID))
		}
		if len(rep.Swaps) != 1 || rep.Swaps[0].Outcome != "joined" {
			t.Fatalf("swaps %+v", rep.Swaps)
		}
		want := rep.Swaps[0].At.Add(c.SwapWindow())
		if !run.Deadline.Equal(want) || !run.Deadline.After(run.StartedAt.Add(models.DefaultVerifyThresholds.Window)) {
			t.Errorf("deadline %s, want the swap's time plus its window, %s", run.Deadline, want)
		}
	})
}

// L6, X13, X5: on three bare-metal machines a slow link on node-2 is found
// by the pairs against what a pair allows (with three pairs the slow one is
// the median, so "below the median" alone never finds it): node-2 is
// swapped, the replacement gets its window, and the cluster is ready —
// not "the fabric as a whole is slow".
func TestVerifySlowLinkOnThreeMachinesSwapsIt(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorldOn(t, db, metalCloud)
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultSlowLink, Node: 2, Count: 1}); err != nil {
			t.Fatal(err)
		}
		c := w.launchVerified("H100_80GB", 3, 8, "none")
		c = w.untilSettled(c.ID, 120*time.Minute)
		run, rep := w.report(c.ID)
		if c.Status != models.StatusReady || run.Status != models.VerifyPassed {
			t.Fatalf("status %s (%s), run %s, want ready\n%s", c.Status, c.LastError, run.Status, w.events(c.ID))
		}
		if len(rep.Swaps) != 1 || rep.Swaps[0].Node != "node-2" || !strings.Contains(rep.Swaps[0].Reason, "link of node-2 is slow: node-1–node-2") ||
			!strings.Contains(rep.Swaps[0].Reason, "a pair allows") {
			t.Fatalf("swaps %+v", rep.Swaps)
		}
		if failed := w.typedEvents(c.ID, models.TypeNodeVerificationFailed); len(failed) != 1 || failed[0].Node != "node-2" {
			t.Errorf("node.verification_failed events %+v", failed)
		}
		if ev := w.events(c.ID); strings.Contains(ev, "fabric as a whole") {
			t.Errorf("blamed on the fabric:\n%s", ev)
		}
	})
}

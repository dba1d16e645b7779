package jobs_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// hosts lists the cluster's machines' hosts in rank order.
func (h *healthWorld) hosts(id string) []string {
	h.t.Helper()
	nodes, err := h.store.NodesFor(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.MachineHost
	}
	return out
}

// X2 on the simulated cloud: a host that dies after
// ready twice in 30 days (in two clusters) is quarantined with an event;
// the simulated cloud never places on it again until an operator releases
// it (audited). Replacing the first dead machine is a repair whose time
// (declared down → replacement joined) is measured.
func TestLemonQuarantinedAvoidedAndReleased(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		h := newHealthWorldWith(t, db, 2, "none")
		a := h.cluster(h.c.ID)
		if a.Status != models.StatusReady {
			t.Fatalf("setup: %s", a.Status)
		}
		first := h.hosts(a.ID)
		if first[0] == "" || first[0] == first[1] {
			t.Fatalf("hosts %v", first)
		}
		lemon := first[1]
		h.inject(sim.FaultUnrecoverable, 1)
		h.pass(30 * time.Second)
		down := h.clock.Now()
		if c := h.pass(time.Minute); c.Status != models.StatusDegraded {
			t.Fatalf("first death: %s\n%s", c.Status, h.events(a.ID))
		}
		down = down.Add(time.Minute) // declared on the second pass
		if _, _, err := h.store.As(h.actor).ReplaceNode(ctx, a.ID, 1); err != nil {
			t.Fatal(err)
		}
		for range 12 {
			h.pass(time.Minute)
		}
		if n := h.node(1); n.Status != models.NodeReady || n.MachineHost == lemon {
			t.Fatalf("replacement: %s on %s\n%s", n.Status, n.MachineHost, h.events(a.ID))
		}
		joined := h.clock.Now()
		rep, err := h.store.RepairTimes(ctx)
		if err != nil || rep.Count != 1 || rep.Sum <= 0 || rep.Sum > joined.Sub(down).Seconds() || rep.Buckets[900] != 1 {
			t.Fatalf("repair times %+v %v (down %s, joined by %s)", rep, err, down, joined)
		}
		if q, _ := h.store.QuarantinedMachines(ctx, "sim"); len(q) != 0 {
			t.Fatalf("quarantined after one fault: %v", q)
		}

		// A second cluster lands on the freed host, which dies again.
		b := h.launch("H100_80GB", 2, 8)
		h.run(6*time.Minute, time.Minute)
		if b = h.cluster(b.ID); b.Status != models.StatusReady || !slices.Contains(h.hosts(b.ID), lemon) {
			t.Fatalf("second cluster %s on %v, want it on %s", b.Status, h.hosts(b.ID), lemon)
		}
		rank := slices.Index(h.hosts(b.ID), lemon)
		if err := h.cloud.Inject(sim.Fault{Kind: sim.FaultUnrecoverable, Group: b.ID, Node: rank}); err != nil {
			t.Fatal(err)
		}
		h.pass(30 * time.Second)
		h.pass(time.Minute)
		q, err := h.store.QuarantinedMachines(ctx, "sim")
		if err != nil || len(q) != 1 || q[0] != lemon {
			t.Fatalf("quarantined %v %v, want %s\n%s", q, err, lemon, h.events(b.ID))
		}
		if !strings.Contains(h.events(b.ID), "Machine "+lemon+" is quarantined (2 faults in 30 days") {
			t.Errorf("no quarantine event:\n%s", h.events(b.ID))
		}
		lemons, err := h.store.Lemons(ctx)
		if err != nil || len(lemons) != 1 || len(lemons[0].Faults) != 2 || lemons[0].Faults[0].ClusterID != b.ID ||
			lemons[0].Faults[1].ClusterID != a.ID || lemons[0].Faults[1].RepairSeconds == nil {
			t.Fatalf("lemons %+v %v", lemons, err)
		}

		// Its cluster ends: the host is free, and still never placed.
		if _, err := h.store.RequestTerminate(ctx, h.org.ID, b.ID, "test"); err != nil {
			t.Fatal(err)
		}
		h.run(3*time.Minute, time.Minute)
		c := h.launch("H100_80GB", 2, 8)
		h.run(6*time.Minute, time.Minute)
		if got := h.hosts(c.ID); slices.Contains(got, lemon) || h.cluster(c.ID).Status != models.StatusReady {
			t.Fatalf("a launch was placed on the quarantined %s: %v (%s)", lemon, got, h.cluster(c.ID).Status)
		}

		// Released (audited): placed again.
		op := models.Actor{OrgID: h.org.ID, UserID: h.actor.UserID, Name: "ops@example.com"}
		if _, err := h.store.As(op).ReleaseMachine(ctx, lemons[0].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := h.store.As(op).ReleaseMachine(ctx, lemons[0].ID); err == nil {
			t.Error("a second release was accepted")
		}
		if q, _ := h.store.QuarantinedMachines(ctx, "sim"); len(q) != 0 {
			t.Fatalf("still quarantined after release: %v", q)
		}
		audit, _, err := h.store.AuditRecords(ctx, h.org.ID, 0, 100)
		if err != nil || !slices.ContainsFunc(audit, func(r models.AuditRecord) bool {
			return r.Action == "machine.release" && r.Target == "sim:"+lemon
		}) {
			t.Errorf("no audit entry of the release: %v", err)
		}
		d := h.launch("H100_80GB", 2, 8)
		h.run(6*time.Minute, time.Minute)
		if got := h.hosts(d.ID); !slices.Contains(got, lemon) {
			t.Errorf("after release the lowest free host %s is placed again: got %v", lemon, got)
		}
	})
}

// X2 on the simulated cloud: launches of an offer at a size
// are counted from their own history: tried (answered) and started
// (every machine came up), time to ready, machine failures after ready.
// A launch the provider refuses is tried and not started; another size or
// offer has a record of its own.
func TestOfferTrackRecordFromLaunches(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		h := newHealthWorldWith(t, db, 2, "none")
		offer := h.cluster(h.c.ID).OfferID
		b := h.launch("H100_80GB", 2, 8)
		h.run(8*time.Minute, time.Minute)
		if err := h.cloud.Inject(sim.Fault{Kind: sim.FaultRefuseCapacity, Offer: "h100.8x.vm"}); err != nil {
			t.Fatal(err)
		}
		refused := h.launch("H100_80GB", 2, 8)
		h.run(2*time.Minute, time.Minute)
		if got := h.cluster(refused.ID); got.Status != models.StatusFailed {
			t.Fatalf("refused launch: %s", got.Status)
		}
		h.cloud.ClearFaults()
		other := h.launch("H100_80GB", 3, 8)
		h.run(8*time.Minute, time.Minute)
		h.inject(sim.FaultGoesDown, 0)
		h.pass(30 * time.Second)
		h.pass(time.Minute)
		h.clock.Advance(2 * time.Hour)

		book, err := h.store.OfferTrack(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := book.For(offer, 2)
		if r == nil || r.Tried != 3 || r.Started != 2 || r.ReadySamples != 2 || r.MachineFailures != 1 {
			t.Fatalf("record at 2: %+v", r)
		}
		a := h.cluster(h.c.ID)
		wantMin := int((a.ReadyAt.Sub(a.CreatedAt) + time.Minute - time.Second).Minutes())
		if r.ReadyP50 < 4 || r.ReadyP50 > r.ReadyP90 || r.ReadyP90 > 10 || (r.ReadyP50 != wantMin && r.ReadyP90 != wantMin) {
			t.Errorf("ready minutes %d–%d, want around %d", r.ReadyP50, r.ReadyP90, wantMin)
		}
		if per, ok := r.FailuresPer1000h(); !ok || r.MachineHours < 4 || per <= 0 {
			t.Errorf("machine-hours %.2f, failures per 1,000 h %.1f %v", r.MachineHours, per, ok)
		}
		if got := r.Summary(); !strings.HasPrefix(got, "2 of 3 recent launches succeeded · ready in ") {
			t.Errorf("summary %q", got)
		}
		if r3 := book.For(offer, 3); r3 == nil || r3.Tried != 1 || r3.Started != 1 {
			t.Errorf("record at 3: %+v (%s)\n%s", r3, h.cluster(other.ID).Status, h.events(other.ID))
		}
		if book.For(offer, 4).Summary() != "no launches yet" {
			t.Errorf("an untried size: %q", book.For(offer, 4).Summary())
		}
		_ = b
		// The window: 31 days on, nothing is recent.
		h.clock.Advance(31 * 24 * time.Hour)
		if book, _ = h.store.OfferTrack(ctx); book.For(offer, 2) != nil {
			t.Errorf("a month-old launch still counts: %+v", book.For(offer, 2))
		}
	})
}

// X2, X13 on the simulated cloud: a
// clean verified launch is recorded ready with its time from the launch
// to its hand-over (the verified transition, not the join) and the ring
// its verification measured; a launch whose fabric is slow is recorded
// failed verifying with its reading; the offer's record counts both and
// names the slow ring as its worst.
func TestTrackRecordFromVerifiedLaunches(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		// The offer's cards: 8 × 400G (a 400 GB/s line rate).
		w := newWorldOn(t, db, strings.Replace(testCloud, `"boot_time": "4m"}`, `"boot_time": "4m", "nics": 8, "nic_gbps": 400}`, 1))
		clean := w.untilSettled(w.launchVerified("H100_80GB", 2, 8, "none").ID, 25*time.Minute)
		if clean.Status != models.StatusReady {
			t.Fatalf("clean launch %s (%s)\n%s", clean.Status, clean.LastError, w.events(clean.ID))
		}
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultFabricSlow, Count: 1}); err != nil {
			t.Fatal(err)
		}
		slow := w.untilSettled(w.launchVerified("H100_80GB", 2, 8, "none").ID, 25*time.Minute)
		if slow.Status != models.StatusDegraded {
			t.Fatalf("slow fabric %s (%s)\n%s", slow.Status, slow.LastError, w.events(slow.ID))
		}
		ring := map[string]int{}
		for _, c := range []models.Cluster{clean, slow} {
			_, rep := w.report(c.ID)
			if rep.Ring == nil || rep.Ring.BusBW <= 0 {
				t.Fatalf("%s: no ring reading %+v", c.ID, rep.Ring)
			}
			ring[c.ID] = int(rep.Ring.BusBW*1000 + 0.5)
		}
		records := map[string]models.LaunchRecord{}
		var rows []models.LaunchRecord
		if err := db.Find(&rows).Error; err != nil || len(rows) != 2 {
			t.Fatalf("%d launch records %v", len(rows), err)
		}
		for _, r := range rows {
			records[r.ClusterID] = r
		}
		var handOver time.Time
		for _, e := range w.typedEvents(clean.ID, models.TypeClusterReady) {
			handOver = e.At
		}
		r := records[clean.ID]
		if r.Outcome != models.OutcomeReady || r.ReadySeconds == nil || *r.ReadySeconds != int(handOver.Sub(clean.CreatedAt).Seconds()) ||
			!handOver.After(*clean.ReadyAt) {
			t.Errorf("clean launch %+v, handed over at %s (joined %s, launched %s)", r, handOver, clean.ReadyAt, clean.CreatedAt)
		}
		if r.RingMBps == nil || *r.RingMBps != ring[clean.ID] || r.LineRateMBps <= 0 {
			t.Errorf("clean launch's ring %v (report %d), line rate %d", r.RingMBps, ring[clean.ID], r.LineRateMBps)
		}
		if s := records[slow.ID]; s.Outcome != models.OutcomeFailedVerifying || s.ReadySeconds != nil || s.RingMBps == nil || *s.RingMBps != ring[slow.ID] {
			t.Errorf("slow launch %+v", s)
		}
		book, err := w.store.OfferTrack(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tr := book.For(clean.OfferID, 2)
		if tr == nil || tr.Tried != 2 || tr.Ready != 1 || tr.Outcomes.FailedVerifying != 1 || tr.Ring.Samples != 2 ||
			int(tr.Ring.Worst.GBps*1000+0.5) != ring[slow.ID] || !strings.HasPrefix(tr.Summary(), "1 of 2 recent launches succeeded · ready in ") {
			t.Errorf("record %+v %q", tr, tr.Summary())
		}
		if p, ok := tr.Ring.Worst.Percent(); !ok || p <= 0 || p >= 100 {
			t.Errorf("worst ring at %d %% of the line rate (%v)", p, ok)
		}
	})
}

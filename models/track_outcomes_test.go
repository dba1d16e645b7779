package models_test

import (
	"context"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// trackEnv is a launch environment with room for many launches of one
// InfiniBand offer (8 × 400G NICs: a 400 GB/s line rate) and one encrypted
// Ethernet overlay offer (no NICs).
type trackEnv struct {
	*launchEnv
	t *testing.T
}

func newTrackEnv(t *testing.T, db *gorm.DB) *trackEnv {
	e := newLaunchEnv(t, db, 20_000*models.Micro)
	if err := db.Model(&models.Org{}).Where("id = ?", e.org.ID).Updates(map[string]any{"max_machines": 64, "max_gpus": 512}).Error; err != nil {
		t.Fatal(err)
	}
	return &trackEnv{launchEnv: e, t: t}
}

// launchOn seeds the catalog afresh (the clock moves on) and launches
// 2 × 8 GPUs of offer with software and verification as asked.
func (e *trackEnv) launchOn(offerID, software string, verify bool) models.Cluster {
	t := e.t
	t.Helper()
	ib := offer("ib", "us-east", 8, 2_490_000, intp(40))
	ib.NICs, ib.NICGbps = 8, 400
	eth := offer("eth", "us-west", 8, 2_000_000, intp(40))
	eth.Interconnect = "ethernet"
	seedCatalog(t, e.s, ib, eth)
	q, err := e.s.CreateQuote(context.Background(), e.org.ID, e.env.ID,
		models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, OfferID: "sim:" + offerID})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := e.s.LaunchCluster(context.Background(), models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID,
		Actor: "owner@acme.example", Workload: models.Workload{Name: "train", Software: software}, Verify: verify})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// do drives ev through its owner (cluster_states_test.go's fire).
func (e *trackEnv) do(ev models.Event, id string) {
	e.t.Helper()
	if err := fire(context.Background(), e.launchEnv, ev, id); err != nil {
		e.t.Fatalf("%s on %s: %v", ev, id, err)
	}
}

// verify ends the cluster's verification with a ring reading of gbps
// (0: none measured), failed on the fabric when fail is set.
func (e *trackEnv) verify(id string, gbps float64, fail bool) {
	t := e.t
	t.Helper()
	ctx := context.Background()
	c, err := e.s.ClusterByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.s.VerifyRunFor(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	rep, what := run.ReportOf(), ""
	if gbps > 0 {
		rep.Ring = &models.RingVerdict{Status: "passed", BusBW: gbps}
	}
	if fail {
		what = "fabric"
		if rep.Ring != nil {
			rep.Ring.Status = "failed"
		}
	}
	if _, err := e.s.FinishVerification(ctx, c, run, rep, what, "", "Verification ended.", nil, notifyAll); err != nil {
		t.Fatal(err)
	}
}

// swap swaps node-1 for verification and lets its replacement join.
func (e *trackEnv) swap(id string) {
	t := e.t
	t.Helper()
	ctx := context.Background()
	c, err := e.s.ClusterByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.s.VerifyRunFor(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.SwapForVerification(ctx, c, run, 1, run.ReportOf(), nil); err != nil {
		t.Fatal(err)
	}
	nodes, err := e.s.NodesFor(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = e.s.ClusterByID(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.MarkNodeJoined(ctx, c, nodes[1], "node-1 joined."); err != nil {
		t.Fatal(err)
	}
}

func (e *trackEnv) record(id string) models.LaunchRecord {
	e.t.Helper()
	var r []models.LaunchRecord
	if err := e.db.Where("cluster_id = ?", id).Find(&r).Error; err != nil || len(r) != 1 {
		e.t.Fatalf("cluster %s has %d launch records (%v), want exactly one", id, len(r), err)
	}
	return r[0]
}

// X2, X13: every accepted launch is
// recorded once, from the moment it is accepted, and the transition that
// ends it writes its outcome once: ready, ready after a swap, failed
// placing, failed installing, failed verifying (a launch failing at each
// stage is counted), or cancelled; the first end wins (a retried install
// and a cluster kept after failing verification stay failures; a
// terminate after hand-over changes nothing). The record's median time to
// ready runs from the launch to its hand-over, verified or not; the ring
// readings of its verifications give a median and a worst, each beside the
// offer's line rate.
func TestEveryLaunchRecordedOnceWithItsOutcome(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newTrackEnv(t, db)
		want := map[string]string{}
		readyIn := map[string]int{}

		plain := e.launchOn("ib", "none", false) // ready in 5 min, no verification
		if r := e.record(plain.ID); r.Outcome != "" || r.LineRateMBps != 400_000 || r.ReadySeconds != nil {
			t.Fatalf("the record at launch: %+v", r)
		}
		e.do(models.EventPlaced, plain.ID)
		e.clock.Advance(5 * time.Minute)
		e.do(models.EventJoined, plain.ID)
		want[plain.ID], readyIn[plain.ID] = models.OutcomeReady, 5*60

		verified := e.launchOn("ib", "none", true) // verified in 12 min, ring 368 GB/s
		e.do(models.EventPlaced, verified.ID)
		e.clock.Advance(4 * time.Minute)
		e.do(models.EventJoinedVerify, verified.ID)
		if r := e.record(verified.ID); r.Outcome != "" || r.ReadySeconds != nil {
			t.Fatalf("verifying: %+v", r)
		}
		e.clock.Advance(8 * time.Minute)
		e.verify(verified.ID, 368, false)
		want[verified.ID], readyIn[verified.ID] = models.OutcomeReady, 12*60

		swapped := e.launchOn("ib", "none", true) // a swap, then verified in 20 min at 352 GB/s
		e.do(models.EventPlaced, swapped.ID)
		e.clock.Advance(4 * time.Minute)
		e.do(models.EventJoinedVerify, swapped.ID)
		e.swap(swapped.ID)
		e.clock.Advance(16 * time.Minute)
		e.verify(swapped.ID, 352, false)
		want[swapped.ID], readyIn[swapped.ID] = models.OutcomeReadyAfterSwap, 20*60

		placing := e.launchOn("ib", "none", true) // a machine late: failed placing
		e.do(models.EventPlaced, placing.ID)
		e.clock.Advance(9 * time.Minute)
		e.do(models.EventFail, placing.ID)
		want[placing.ID] = models.OutcomeFailedPlacing

		installing := e.launchOn("ib", "slurm", false) // the install fails; a retry that succeeds changes nothing
		e.do(models.EventPlaced, installing.ID)
		e.do(models.EventJoinedInstall, installing.ID)
		if _, err := e.s.SoftwareRunFor(ctx, e.cluster(installing.ID)); err != nil {
			t.Fatal(err)
		}
		e.do(models.EventDegrade, installing.ID)
		e.do(models.EventRetryInstall, installing.ID)
		if _, err := e.s.MarkSoftwareReady(ctx, installing.ID, 2, "Slurm passed its check.", notifyAll); err != nil {
			t.Fatal(err)
		}
		if got := e.cluster(installing.ID).Status; got != models.StatusReady {
			t.Fatalf("the retried install: %s", got)
		}
		want[installing.ID] = models.OutcomeFailedInstalling

		verifying := e.launchOn("ib", "none", true) // the ring reads 200 GB/s: failed verifying; kept as it is
		e.do(models.EventPlaced, verifying.ID)
		e.do(models.EventJoinedVerify, verifying.ID)
		e.verify(verifying.ID, 200, true)
		e.do(models.EventKeepUnverified, verifying.ID)
		want[verifying.ID] = models.OutcomeFailedVerifying

		cancelled := e.launchOn("ib", "none", false) // terminated before hand-over
		e.do(models.EventPlaced, cancelled.ID)
		e.do(models.EventTerminateRequested, cancelled.ID)
		e.do(models.EventTerminated, cancelled.ID)
		want[cancelled.ID] = models.OutcomeCancelled

		stopped := e.launchOn("ib", "none", true) // the balance stops it while verifying
		e.do(models.EventPlaced, stopped.ID)
		e.do(models.EventJoinedVerify, stopped.ID)
		e.do(models.EventStopRequested, stopped.ID)
		e.do(models.EventStopped, stopped.ID)
		want[stopped.ID] = models.OutcomeCancelled

		underWay := e.launchOn("ib", "none", true)
		want[underWay.ID] = ""

		later := e.launchOn("ib", "none", false) // ready in 7 min, terminated later: still ready
		e.do(models.EventPlaced, later.ID)
		e.clock.Advance(7 * time.Minute)
		e.do(models.EventJoined, later.ID)
		e.clock.Advance(time.Hour)
		e.do(models.EventTerminateRequested, later.ID)
		e.do(models.EventTerminated, later.ID)
		want[later.ID], readyIn[later.ID] = models.OutcomeReady, 7*60

		var n int64
		db.Model(&models.LaunchRecord{}).Count(&n)
		if n != int64(len(want)) {
			t.Errorf("%d launch records for %d launches", n, len(want))
		}
		for id, outcome := range want {
			r := e.record(id)
			if r.Outcome != outcome {
				t.Errorf("%s: outcome %q, want %q", id, r.Outcome, outcome)
			}
			switch secs, ok := readyIn[id]; {
			case ok && (r.ReadySeconds == nil || *r.ReadySeconds != secs):
				t.Errorf("%s: ready in %v s, want %d", id, r.ReadySeconds, secs)
			case !ok && r.ReadySeconds != nil:
				t.Errorf("%s (%s): ready in %d s, want none", id, outcome, *r.ReadySeconds)
			}
		}
		if r := e.record(swapped.ID); r.Swaps != 1 || r.RingMBps == nil || *r.RingMBps != 352_000 {
			t.Errorf("the swapped launch: swaps %d ring %v", r.Swaps, r.RingMBps)
		}
		if r := e.record(plain.ID); r.RingMBps != nil {
			t.Errorf("an unverified launch has a ring reading %d", *r.RingMBps)
		}

		book, err := e.s.OfferTrack(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := book.For("sim:ib", 2)
		if r == nil {
			t.Fatal("no record")
		}
		wantOutcomes := models.OutcomeCounts{Ready: 3, ReadyAfterSwap: 1, FailedPlacing: 1, FailedInstalling: 1, FailedVerifying: 1, Cancelled: 2, UnderWay: 1}
		if r.Launches != 10 || r.Outcomes != wantOutcomes || r.Tried != 7 || r.Started != 6 || r.Ready != 4 {
			t.Errorf("record %+v", r)
		}
		// Ready in 5, 7, 12 and 20 minutes: the median (nearest rank) is 7.
		if r.ReadySamples != 4 || r.ReadyP50 != 7 || r.ReadyP90 != 20 {
			t.Errorf("time to ready: %d samples, median %d, p90 %d", r.ReadySamples, r.ReadyP50, r.ReadyP90)
		}
		if got, want := r.Summary(), "4 of 7 recent launches succeeded · ready in 7 min"; got != want {
			t.Errorf("summary %q, want %q", got, want)
		}
		// Rings of 368, 352 and 200 GB/s against 8 × 400G (400 GB/s).
		if g := r.Ring; g.Samples != 3 || g.Median.GBps != 352 || g.Worst.GBps != 200 || g.Median.LineRateGBps != 400 {
			t.Errorf("ring %+v", g)
		}
		if got, want := r.RingSummary(), "ring 352 GB/s (88 % of line rate) · worst 200 GB/s (50 %)"; got != want {
			t.Errorf("ring summary %q, want %q", got, want)
		}
		if rate, ok := r.SuccessRate(); !ok || rate != 4.0/7 {
			t.Errorf("success rate %v %v", rate, ok)
		}

		// An encrypted Ethernet overlay has no line rate: GB/s alone.
		eth := e.launchOn("eth", "none", true)
		e.do(models.EventPlaced, eth.ID)
		e.do(models.EventJoinedVerify, eth.ID)
		e.verify(eth.ID, 1.84, false)
		book, err = e.s.OfferTrack(ctx)
		if err != nil {
			t.Fatal(err)
		}
		re := book.For("sim:eth", 2)
		if re == nil || re.Ring.Samples != 1 || re.RingSummary() != "ring 1.8 GB/s" {
			t.Fatalf("overlay record %+v (%q)", re, re.RingSummary())
		}
		if _, ok := re.Ring.Median.Percent(); ok {
			t.Error("a share of an overlay's line rate")
		}
		if book.For("sim:ib", 2).Launches != 10 {
			t.Error("another offer's launch counted")
		}
	})
}

func (e *trackEnv) cluster(id string) models.Cluster {
	e.t.Helper()
	c, err := e.s.ClusterByID(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// X2: migration 0992 gives every cluster launched before records were kept
// at launch its record, and every record without an outcome the one its
// cluster shows (a legacy record's own placement and ready time first);
// one it cannot tell stays under way. Run twice, it adds nothing.
func TestLaunchOutcomesBackfill(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ib := offer("ib", "us-east", 8, 2_490_000, intp(40))
		ib.NICs, ib.NICGbps = 8, 400
		seedCatalog(t, models.NewStore(db, models.NewFakeClock(t0)), ib)
		ready := t0.Add(10 * time.Minute)
		want := map[string]string{}
		for _, c := range []struct {
			status  models.ClusterStatus
			lastErr string
			readyAt *time.Time
			want    string
		}{
			{models.StatusFailed, "timeout:agent", nil, models.OutcomeFailedPlacing},
			{models.StatusDegraded, "verification_failed:fabric", &ready, models.OutcomeFailedVerifying},
			{models.StatusDegraded, "install_failed:node-1", &ready, models.OutcomeFailedInstalling},
			{models.StatusReady, "", &ready, models.OutcomeReady},
			{models.StatusTerminated, "", nil, models.OutcomeCancelled},
			{models.StatusVerifying, "", &ready, ""},
			{models.StatusTerminated, "", &ready, ""}, // ready once, hand-over unknown
		} {
			cl := models.Cluster{ID: models.NewID("cl"), OrgID: "org_x", Status: c.status, Provider: "sim", OfferID: "sim:ib", Nodes: 2,
				LastError: c.lastErr, ReadyAt: c.readyAt, CreatedAt: t0, UpdatedAt: t0}
			if err := db.Create(&cl).Error; err != nil {
				t.Fatal(err)
			}
			want[cl.ID] = c.want
		}
		// Legacy records (before 0992): one refused at placement, one ready in 8 min.
		secs := 480
		for _, r := range []models.LaunchRecord{
			{ClusterID: models.NewID("cl"), Provider: "sim", OfferID: "sim:ib", Nodes: 2, LaunchedAt: t0, Tried: 1},
			{ClusterID: models.NewID("cl"), Provider: "sim", OfferID: "sim:ib", Nodes: 2, LaunchedAt: t0, Tried: 1, Started: 1, ReadySeconds: &secs},
		} {
			if err := db.Create(&r).Error; err != nil {
				t.Fatal(err)
			}
			want[r.ClusterID] = map[bool]string{false: models.OutcomeFailedPlacing, true: models.OutcomeReady}[r.Started == 1]
		}
		for range 2 {
			if err := models.BackfillLaunchOutcomes(db); err != nil {
				t.Fatal(err)
			}
		}
		var rows []models.LaunchRecord
		if err := db.Find(&rows).Error; err != nil || len(rows) != len(want) {
			t.Fatalf("%d records for %d launches (%v)", len(rows), len(want), err)
		}
		for _, r := range rows {
			if r.Outcome != want[r.ClusterID] || r.LineRateMBps != 400_000 {
				t.Errorf("%s: outcome %q line rate %d, want %q and 400000", r.ClusterID, r.Outcome, r.LineRateMBps, want[r.ClusterID])
			}
		}
	})
}

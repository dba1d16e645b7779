package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

func (e *launchEnv) volume(t *testing.T, name, loc string, gb int) models.Volume {
	t.Helper()
	v, err := e.actions().CreateVolume(context.Background(), models.VolumeInput{Name: name, Location: loc, SizeGB: gb})
	if err != nil {
		t.Fatalf("create volume %s: %v", name, err)
	}
	return v
}

func attachedErr(err error, action, clusterID string) bool {
	var ae *models.VolumeAttachedError
	return errors.As(err, &ae) && ae.Action == action && ae.ClusterID == clusterID
}

// V1–V3, A3: create validates every field and writes nothing on bad input;
// volumes are the organisation's (another one's id is not found) and listed
// per environment; grow only grows; delete hides it. Each change is audited.
func TestVolumeCRUD(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100*models.Micro) // volumes pass a launch's admission (B9)
		community := offer("home", "garage-1", 8, 900_000, intp(4))
		community.Community = true
		seedCatalog(t, e.s, offer("h100x8", "us-east", 8, 2_490_000, intp(20)),
			offer("h100x8-eu", "eu-west", 8, 2_300_000, intp(3)), community)

		for _, bad := range []struct {
			field string
			in    models.VolumeInput
		}{
			{"name", models.VolumeInput{Name: "Data Set", Location: "us-east", SizeGB: 10}},
			{"name", models.VolumeInput{Name: "", Location: "us-east", SizeGB: 10}},
			{"location", models.VolumeInput{Name: "data", Location: "", SizeGB: 10}},
			{"location", models.VolumeInput{Name: "data", Location: "mars-1", SizeGB: 10}},
			{"location", models.VolumeInput{Name: "data", Location: "garage-1", SizeGB: 10}}, // V5: no community location
			{"sizeGb", models.VolumeInput{Name: "data", Location: "us-east", SizeGB: 0}},
			{"sizeGb", models.VolumeInput{Name: "data", Location: "us-east", SizeGB: models.MaxVolumeGB + 1}},
		} {
			_, err := e.actions().CreateVolume(ctx, bad.in)
			if !fieldErr(err, bad.field) {
				t.Errorf("%+v: %v, want a problem on %s", bad.in, err, bad.field)
			}
		}
		if n := e.count(t, &models.Volume{}) + e.count(t, &models.AuditRecord{}); n != 0 {
			t.Fatalf("bad input wrote %d volumes and audit entries", n)
		}

		v := e.volume(t, "data", "us-east", 100)
		if v.Location != "us-east" || v.LocationName != "us-east DC" || v.Provider != "sim" || v.SizeGB != 100 ||
			v.GBHour != models.VolumeRate("us-east") || v.EnvID != e.env.ID {
			t.Errorf("volume %+v", v)
		}
		locs, err := e.s.VolumeLocations(ctx)
		if err != nil || len(locs) != 2 || locs[0].Location != "eu-west" || locs[1].Location != "us-east" {
			t.Errorf("volume locations %+v %v (the community one is not among them)", locs, err)
		}

		// Another organisation and another environment.
		other := newLaunchEnvIn(t, db, e.s, models.Micro)
		if _, err := e.s.VolumeForOrg(ctx, other.org.ID, v.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("another org loads the volume: %v", err)
		}
		if _, err := other.actions().DeleteVolume(ctx, v.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("another org deletes the volume: %v", err)
		}
		if _, err := other.actions().GrowVolume(ctx, v.ID, 200); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("another org grows the volume: %v", err)
		}
		if vs, err := e.s.VolumesForOrg(ctx, other.org.ID, ""); err != nil || len(vs) != 0 {
			t.Errorf("another org lists %d volumes (%v)", len(vs), err)
		}
		if vs, err := e.s.VolumesForOrg(ctx, e.org.ID, "env_elsewhere"); err != nil || len(vs) != 0 {
			t.Errorf("another environment lists %d volumes (%v)", len(vs), err)
		}
		if vs, err := e.s.VolumesForOrg(ctx, e.org.ID, e.env.ID); err != nil || len(vs) != 1 || vs[0].ID != v.ID {
			t.Errorf("own list %+v %v", vs, err)
		}

		if _, err := e.actions().GrowVolume(ctx, v.ID, 100); !fieldErr(err, "sizeGb") {
			t.Errorf("grow to the same size: %v", err)
		}
		e.clock.Advance(10 * time.Minute)
		g, err := e.actions().GrowVolume(ctx, v.ID, 250)
		if err != nil || g.SizeGB != 250 || !g.SizeSince.Equal(e.s.Now()) {
			t.Fatalf("grow: %+v %v", g, err)
		}
		if _, err := e.actions().DeleteVolume(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.VolumeForOrg(ctx, e.org.ID, v.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("a deleted volume still loads: %v", err)
		}
		if _, err := e.actions().DeleteVolume(ctx, v.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("deleting twice: %v", err)
		}
		recs, _, err := e.s.AuditRecords(ctx, e.org.ID, 0, 10)
		if err != nil || len(recs) != 3 || recs[0].Action != "volume.delete" || recs[1].Action != "volume.grow" ||
			recs[2].Action != "volume.create" || recs[2].Target != v.ID || !strings.Contains(recs[1].Detail, "100 GB → 250 GB") {
			t.Errorf("audit %+v %v", recs, err)
		}
	})
}

// V2: a volumeId pins the quote to the volume's location even where a
// cheaper offer runs elsewhere, prices the volume's size, and is refused in
// another location; the launch attaches it. V3: while attached, delete and
// grow are refused, and no second cluster may mount it; after terminate it
// is kept and both work.
func TestVolumePinsAndAttachRefusals(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 10_000*models.Micro)
		v := e.volume(t, "ckpt", "us-east", 500)

		free := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		if free.Location != "eu-west" {
			t.Fatalf("without a volume the cheapest is eu-west, got %s", free.Location)
		}
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeID: v.ID})
		if q.Location != "us-east" || q.OfferID != "sim:h100x8" || q.VolumeID != v.ID || q.VolumeGB != 500 ||
			q.VolumeGBHour != v.GBHour {
			t.Errorf("pinned quote %+v", q)
		}
		if want := 16*2_490_000 + 2*500*100 + 500*v.GBHour; q.USDPerHour != want {
			t.Errorf("usdPerHour %d, want %d (the volume's GB at its rate)", q.USDPerHour, want)
		}
		_, err := e.s.CreateQuote(ctx, e.org.ID, e.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8,
			VolumeID: v.ID, Location: "eu-west"})
		if !fieldErr(err, "location") {
			t.Errorf("volume in us-east, cluster asked in eu-west: %v", err)
		}
		_, err = e.s.CreateQuote(ctx, e.org.ID, e.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8,
			VolumeID: v.ID, VolumeGB: 20})
		if !fieldErr(err, "storage.persistentGb") {
			t.Errorf("volumeId and another persistentGb: %v", err)
		}
		_, err = e.s.CreateQuote(ctx, e.org.ID, "env_other", models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeID: v.ID})
		if !fieldErr(err, "volumeId") {
			t.Errorf("another environment's volume: %v", err)
		}

		c, _, err := e.launch(q, "", "h1")
		if err != nil {
			t.Fatal(err)
		}
		if c.VolumeID != v.ID || c.Location != "us-east" {
			t.Errorf("cluster %s volume %q in %s", c.ID, c.VolumeID, c.Location)
		}
		att, err := e.s.VolumeForOrg(ctx, e.org.ID, v.ID)
		if err != nil || att.ClusterID != c.ID {
			t.Fatalf("the volume is not attached: %+v %v", att, err)
		}
		if _, err := e.actions().DeleteVolume(ctx, v.ID); !attachedErr(err, "delete", c.ID) ||
			!strings.Contains(err.Error(), "cannot be deleted") {
			t.Errorf("delete while attached: %v", err)
		}
		if _, err := e.actions().GrowVolume(ctx, v.ID, 900); !attachedErr(err, "grow", c.ID) {
			t.Errorf("grow while attached: %v", err)
		}
		_, err = e.s.CreateQuote(ctx, e.org.ID, e.env.ID, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeID: v.ID})
		if !attachedErr(err, "attach", c.ID) {
			t.Errorf("a second cluster quoting the attached volume: %v", err)
		}
		// A quote made before the first launch cannot attach it either.
		q2 := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8})
		if err := db.Model(&models.Quote{}).Where("id = ?", q2.ID).Updates(map[string]any{"volume_id": v.ID, "location": "us-east"}).Error; err != nil {
			t.Fatal(err)
		}
		q2.VolumeID = v.ID
		if _, _, err := e.launch(q2, "", "h2"); !attachedErr(err, "attach", c.ID) {
			t.Errorf("launch with an attached volume: %v", err)
		}
		if got, _ := e.s.VolumeForOrg(ctx, e.org.ID, v.ID); got.SizeGB != 500 || got.ClusterID != c.ID {
			t.Errorf("refusals changed the volume: %+v", got)
		}

		if _, err := e.s.MarkTerminated(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.actions().GrowVolume(ctx, v.ID, 900); err != nil {
			t.Errorf("grow after terminate: %v", err)
		}
		q3 := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeID: v.ID})
		if q3.VolumeGB != 900 {
			t.Errorf("requote prices %d GB, want 900", q3.VolumeGB)
		}
		if _, err := e.actions().DeleteVolume(ctx, v.ID); err != nil {
			t.Errorf("delete after terminate: %v", err)
		}
		if _, _, err := e.launch(q3, "", "h3"); !fieldErr(err, "volumeId") {
			t.Errorf("launch with a deleted volume: %v", err)
		}
	})
}

// V2: persistentGb creates the volume with the cluster, in its location, at
// the quote's rate, attached; V1: one per cluster.
func TestLaunchCreatesVolume(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 10_000*models.Micro)
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeGB: 300})
		c, _, err := e.launch(q, "", "h")
		if err != nil {
			t.Fatal(err)
		}
		vs, err := e.s.VolumesForOrg(ctx, e.org.ID, e.env.ID)
		if err != nil || len(vs) != 1 {
			t.Fatalf("volumes %+v %v", vs, err)
		}
		v := vs[0]
		if v.ClusterID != c.ID || c.VolumeID != v.ID || v.Location != c.Location || v.SizeGB != 300 || v.GBHour != q.VolumeGBHour || v.Name != c.Name {
			t.Errorf("volume %+v of cluster %+v", v, c)
		}
		got, err := e.s.ClusterForOrg(ctx, e.org.ID, c.ID)
		if err != nil || got.VolumeID != v.ID {
			t.Errorf("stored cluster volume %q %v", got.VolumeID, err)
		}
		// V1 in the database: a second volume on the same cluster is refused.
		dup := v
		dup.ID = models.NewID("vol")
		if err := db.Create(&dup).Error; err == nil {
			t.Error("two volumes on one cluster were stored")
		}
	})
}

// V5: a volume on a community offer is refused before any quote, with the
// reason; without a named offer, community hosts are left out of the fit.
func TestCommunityVolumeRefused(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 10_000*models.Micro)
		community := offer("home", "us-east", 8, 900_000, intp(4))
		community.Community = true
		seedCatalog(t, e.s, offer("h100x8", "us-east", 8, 2_490_000, intp(20)), community)
		v := e.volume(t, "data", "us-east", 50)
		base := models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, OfferID: "sim:home", IncludeCommunity: true}
		if q := e.quote(t, base); !q.Community {
			t.Fatalf("the community offer quotes without a volume: %+v", q)
		}
		quotes := e.count(t, &models.Quote{})
		withGB, withID := base, base
		withGB.VolumeGB, withID.VolumeID = 100, v.ID
		for name, r := range map[string]models.ShapeQuery{"storage.persistentGb": withGB, "volumeId": withID} {
			_, err := e.s.CreateQuote(ctx, e.org.ID, e.env.ID, r)
			var fe models.FieldErrors
			if !errors.As(err, &fe) || fe[name] != models.CommunityVolumeReason {
				t.Errorf("%s on a community offer: %v", name, err)
			}
			if _, err := e.s.ReuseQuote(ctx, e.org.ID, e.env.ID, r); !fieldErr(err, name) {
				t.Errorf("%s on a community offer (launch from the offer): %v", name, err)
			}
		}
		if n := e.count(t, &models.Quote{}); n != quotes {
			t.Errorf("refusals wrote %d quotes", n-quotes)
		}
		r := base
		r.OfferID, r.VolumeGB = "", 100
		if q := e.quote(t, r); q.Community {
			t.Errorf("a volume fitted onto a community host: %+v", q)
		}
	})
}

// B2, V3, X11: a volume bills by the GB-hour from creation, attached or
// not, through its cluster's terminate, until it is deleted, prorated by
// the minute exactly; a grow bills each size for its own minutes; a rerun
// charges nothing twice; after delete nothing more is billed.
func TestVolumeBilling(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		ctx := e.ctx
		e.clock.Advance(7 * time.Minute) // created off the hour: 12:07
		v := e.volume(t, "ckpt", "us-east", 100)
		rate := v.GBHour * 100 // per hour
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeID: v.ID})
		c, _, err := e.launch(q, "", "h")
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(90 * time.Minute) // 13:37
		if r := e.meter(t); r.Volumes != 1 || r.Entries != 1 {
			t.Errorf("first pass %+v, want the 12:07–13:00 period", r)
		}
		e.terminate(t, c.ID)           // the volume outlives it and keeps billing
		e.clock.Advance(2 * time.Hour) // 15:37
		e.meter(t)
		usage, err := e.s.VolumeUsageForMonth(ctx, e.org.ID, models.UsageWindow{})
		if err != nil || len(usage) != 1 || usage[0].Attached != nil {
			t.Fatalf("usage %+v %v", usage, err)
		}
		// 12:07–15:37 = 210 minutes, 53 + 120 written, 37 accumulating.
		if u := usage[0]; u.Completed != rate*173/60 || u.Accumulating != rate*210/60-rate*173/60 || u.Minutes != 210 {
			t.Errorf("detached volume accrued %+v, want %d completed", u, rate*173/60)
		}
		e.clock.Advance(23 * time.Minute) // 16:00: delete
		if _, err := e.actions().DeleteVolume(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(5 * time.Hour)
		if r := e.meter(t); r.Volumes != 0 || r.Entries != 0 {
			t.Errorf("after delete a pass billed %+v", r)
		}
		var entries []models.UsageEntry
		if err := db.Where("org_id = ? AND node_id = ?", e.org.ID, v.UsageRef()).Order("period_start").Find(&entries).Error; err != nil {
			t.Fatal(err)
		}
		var sum models.Money
		var mins int64
		for _, en := range entries {
			sum -= en.Amount
			mins += en.Minutes
			if want := "usage:vol:" + v.ID + ":" + en.PeriodStart.UTC().Format(time.RFC3339); en.IdemKey != want || en.ClusterID != "" {
				t.Errorf("entry key %q, want %q", en.IdemKey, want)
			}
		}
		if len(entries) != 4 || mins != 233 || sum != rate*233/60 {
			t.Errorf("%d entries, %d minutes, %d charged; want 4, 233, %d", len(entries), mins, sum, rate*233/60)
		}
		if _, err := e.s.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		var n int64
		db.Model(&models.UsageEntry{}).Where("node_id = ?", v.UsageRef()).Count(&n)
		if n != 4 {
			t.Errorf("a rerun wrote %d entries", n-4)
		}
	})
}

func TestVolumeBillingGrow(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		v := e.volume(t, "grow", "us-east", 10) // 12:00
		e.clock.Advance(20 * time.Minute)
		if _, err := e.actions().GrowVolume(e.ctx, v.ID, 40); err != nil { // 12:20 at 10 GB, then 40 GB
			t.Fatal(err)
		}
		e.clock.Advance(100 * time.Minute) // 14:00
		e.meter(t)
		var entries []models.UsageEntry
		if err := db.Where("node_id = ?", v.UsageRef()).Order("period_start").Find(&entries).Error; err != nil {
			t.Fatal(err)
		}
		r := v.GBHour
		want := []models.Money{10 * r * 20 / 60, 40*r*40/60 - 0, 40*r*100/60 - 40*r*40/60}
		if len(entries) != 3 {
			t.Fatalf("%d entries, want 12:00–12:20, 12:20–13:00, 13:00–14:00", len(entries))
		}
		for i, en := range entries {
			if -en.Amount != want[i] {
				t.Errorf("entry %d (%s) %d, want %d", i, en.IdemKey, -en.Amount, want[i])
			}
		}
	})
}

// V2 with L4: the volume a launch created goes with a cluster that failed to
// start (billing stops then), while a volume it only mounted is kept.
func TestFailedLaunchDropsItsNewVolume(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 10_000*models.Micro)
		kept := e.volume(t, "kept", "us-east", 20)
		qNew := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeGB: 100})
		withNew, _, err := e.launch(qNew, "", "a")
		if err != nil {
			t.Fatal(err)
		}
		qKept := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeID: kept.ID})
		withKept, _, err := e.launch(qKept, "", "b")
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(20 * time.Minute)
		for _, c := range []models.Cluster{withNew, withKept} {
			if _, err := e.s.FailCluster(ctx, c.ID, models.ParseLastError("timeout:running"), "node-1", "running", "node-1 never booted", nil); err != nil {
				t.Fatal(err)
			}
		}
		vs, err := e.s.VolumesForOrg(ctx, e.org.ID, "")
		if err != nil || len(vs) != 1 || vs[0].ID != kept.ID {
			t.Fatalf("volumes after the failures %+v %v, want only %s", vs, err, kept.ID)
		}
		if _, err := e.actions().DeleteVolume(ctx, kept.ID); err != nil {
			t.Errorf("the mounted volume is detached once its cluster failed: %v", err)
		}
		if _, err := e.s.MeterUsage(ctx); err != nil {
			t.Fatal(err)
		}
		var gone models.Volume
		if err := db.Where("id = ?", withNew.VolumeID).Take(&gone).Error; err != nil || gone.DeletedAt == nil {
			t.Fatalf("the launch's volume %+v %v", gone, err)
		}
		var charged models.Money
		db.Model(&models.UsageEntry{}).Where("node_id = ?", gone.UsageRef()).Select("COALESCE(-SUM(amount), 0)").Scan(&charged)
		if want := 100 * gone.GBHour * 20 / 60; charged != want {
			t.Errorf("the launch's volume charged %d, want its 20 minutes, %d", charged, want)
		}
	})
}

// B5, X6, V3: a volume bills its environment's budget like its clusters do.
// While its cluster runs, the environment burns the machines and the volume
// once (the cluster's locked rate includes the volume; it is not counted
// twice); once the cluster ended the detached volume still burns, its
// written periods and its open one count as spend, and the budget's
// forecast follows the volume alone.
func TestVolumeCountsInBudget(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		ctx := e.ctx
		e.clock.Advance(7 * time.Minute) // 12:07
		v := e.volume(t, "ckpt", "us-east", 100)
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 8, VolumeID: v.ID})
		c, _, err := e.launch(q, "", "h")
		if err != nil {
			t.Fatal(err)
		}
		c = e.ready(t, c)
		if c.USDPerHour != 2*c.MachineHour+v.HourRate() {
			t.Fatalf("locked rate %d, want the machines %d and the volume %d", c.USDPerHour, 2*c.MachineHour, v.HourRate())
		}
		line := func() models.BudgetLine {
			t.Helper()
			o, err := e.s.BudgetOverviewFor(ctx, e.org.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range o.Lines {
				if l.Env.ID == e.env.ID {
					return l
				}
			}
			t.Fatalf("no line for %s in %+v", e.env.ID, o.Lines)
			return models.BudgetLine{}
		}
		burn, err := e.s.BurnRate(ctx, e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if l := line(); l.Burn != c.USDPerHour || l.Burn != burn {
			t.Errorf("running: the environment burns %d, BurnRate %d; want %d once", l.Burn, burn, c.USDPerHour)
		}

		e.clock.Advance(53 * time.Minute) // 13:00
		e.terminate(t, c.ID)
		e.clock.Advance(2*time.Hour + 30*time.Minute) // 15:30
		e.meter(t)
		var written models.Money
		if err := db.Model(&models.UsageEntry{}).Where("org_id = ? AND kind = ?", e.org.ID, models.LedgerUsage).
			Select("COALESCE(SUM(amount), 0)").Scan(&written).Error; err != nil {
			t.Fatal(err)
		}
		usage, err := e.s.VolumeUsageForMonth(ctx, e.org.ID, models.MonthOf(e.clock.Now()))
		if err != nil || len(usage) != 1 || usage[0].Accumulating == 0 {
			t.Fatalf("volume usage %+v %v", usage, err)
		}
		l := line()
		if l.Burn != v.HourRate() {
			t.Errorf("detached: the environment burns %d, want the volume's %d", l.Burn, v.HourRate())
		}
		if want := -written + usage[0].Accumulating; l.Spend != want {
			t.Errorf("spend %d, want %d: the cluster's and the volume's written periods and the volume's open one", l.Spend, want)
		}

		// A budget about one volume-hour above the spend (in whole cents)
		// is forecast at the volume's burn, and reached once it has run.
		cent := models.Micro / 100
		amount := (l.Spend + v.HourRate() + cent - 1) / cent * cent
		if _, err := e.actions().SetBudget(ctx, e.env.ID, amount); err != nil {
			t.Fatal(err)
		}
		l = line()
		want, _ := models.Forecast(e.clock.Now(), amount, l.Spend, v.HourRate())
		if l.ForecastAt == nil || !l.ForecastAt.Equal(want) || want.Before(e.clock.Now().Add(time.Hour)) {
			t.Errorf("forecast %v, want %v, an hour or a little more at the volume's burn", l.ForecastAt, want)
		}
		e.clock.Advance(want.Sub(e.clock.Now()))
		if l = line(); !l.Reached {
			t.Errorf("an hour of the detached volume later the budget is not reached: %+v", l)
		}
	})
}

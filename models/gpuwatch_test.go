package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

func watchMails(t *testing.T, e *launchEnv, prefix string) []models.OutboxMail {
	t.Helper()
	var out []models.OutboxMail
	if err := e.db.Where("idempotency_key LIKE ?", prefix+"%").Order("created_at, id").Find(&out).Error; err != nil {
		t.Fatal(err)
	}
	out, err := views.RenderedMails(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gpuEvents(t *testing.T, e *launchEnv, id string) []models.ClusterEvent {
	t.Helper()
	evs, err := e.s.EventsFor(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []models.ClusterEvent
	for _, ev := range evs {
		if ev.Step == "gpu" {
			out = append(out, ev)
		}
	}
	return out
}

func watched(t *testing.T, e *launchEnv, id string) models.WatchedCluster {
	t.Helper()
	all, err := e.s.ClustersToWatch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, wc := range all {
		if wc.Cluster.ID == id {
			return wc
		}
	}
	t.Fatalf("cluster %s is not watched", id)
	return models.WatchedCluster{}
}

// X15: a cluster starts with stall alerts on and the idle
// rule off (the seeds promise no idle stop, L7); a policy out of bounds is
// refused field by field and changes nothing (A4); another organisation's
// cluster is not found (A3); a policy set is an event and an audit entry.
func TestGPUWatchPolicy(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1_000_000_000)
		id := clusterIn(t, e, models.StatusReady, models.EventJoined)
		w, err := e.s.GPUWatchFor(ctx, e.org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if p := w.Policy(); p.StallOff || p.IdleOn || p.StallMinutes != 10 {
			t.Fatalf("defaults = %+v", p)
		}
		if _, err := e.s.GPUWatchFor(ctx, "org_other", id); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("other org: %v", err)
		}
		bad := models.DefaultWatchPolicy()
		bad.IdleOn, bad.IdleAction, bad.IdleHours, bad.StallMinutes = true, "sleep", 0, 61
		_, err = e.actions().SetGPUWatch(ctx, id, bad)
		var fe models.FieldErrors
		if !errors.As(err, &fe) || fe["idle.action"] == "" || fe["idle.hours"] == "" || fe["stall.minutes"] == "" || len(fe) != 3 {
			t.Fatalf("bad policy: %v", err)
		}
		if e.count(t, &models.GPUWatch{}) != 0 {
			t.Fatal("a refused policy wrote a row")
		}
		p := models.DefaultWatchPolicy()
		p.IdleOn, p.IdleAction, p.IdleHours, p.StallOff = true, models.IdleStop, 3, true
		if _, err := e.actions().SetGPUWatch(ctx, id, p); err != nil {
			t.Fatal(err)
		}
		w, _ = e.s.GPUWatchFor(ctx, e.org.ID, id)
		if w.Policy() != p {
			t.Fatalf("stored %+v, want %+v", w.Policy(), p)
		}
		evs := gpuEvents(t, e, id)
		if len(evs) != 1 || !strings.Contains(evs[0].Message, "stall alerts off; when every GPU has been below 5 % for 3 h: mail a warning, then stop the cluster 60 minutes later") {
			t.Fatalf("events = %+v", evs)
		}
		var audits int64
		db.Model(&models.AuditRecord{}).Where("action = ? AND target = ?", "cluster.gpu_watch", id).Count(&audits)
		if audits != 1 {
			t.Fatalf("audit entries = %d", audits)
		}
	})
}

// X15: a stall is announced once per episode (one event, one
// mail per recipient naming the machines), repeated ticks change nothing, a
// different set of machines is a new episode, and the end is noted once.
func TestNoteStallOncePerEpisode(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1_000_000_000)
		addMember(t, e, "owner@acme.example", models.RoleOwner)
		id := clusterIn(t, e, models.StatusReady, models.EventJoined)
		n := &models.ClusterNotify{BaseURL: "https://deck.example"}
		f := &models.StallFinding{Kind: models.StallSplit, Apart: []string{"node-5"}, Others: 7, Since: t0.Add(-12 * time.Minute),
			Message: "node-5 idle while 7 machines are busy for 12 minutes."}
		for range 3 {
			if err := e.s.NoteStall(ctx, n, watched(t, e, id), f); err != nil {
				t.Fatal(err)
			}
		}
		evs := gpuEvents(t, e, id)
		mails := watchMails(t, e, "gpu-stall:")
		if len(evs) != 1 || evs[0].Node != "node-5" || evs[0].Message != "GPU stall: node-5 idle while 7 machines are busy for 12 minutes." {
			t.Fatalf("events = %+v", evs)
		}
		if len(mails) != 1 || mails[0].To != "owner@acme.example" || !strings.Contains(mails[0].Subject, "node-5 idle while 7 machines are busy") ||
			!strings.Contains(mails[0].Text, "https://deck.example/clusters/"+id) {
			t.Fatalf("mails = %+v", mails)
		}
		g := *f
		g.Apart, g.Since, g.Message = []string{"node-2", "node-5"}, t0, "node-2 and node-5 idle while 6 machines are busy for 10 minutes."
		if err := e.s.NoteStall(ctx, n, watched(t, e, id), &g); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := e.s.NoteStall(ctx, n, watched(t, e, id), nil); err != nil {
				t.Fatal(err)
			}
		}
		evs = gpuEvents(t, e, id)
		if len(evs) != 3 || !strings.HasPrefix(evs[2].Message, "GPU stall over: node-2 and node-5") {
			t.Fatalf("events = %+v", evs)
		}
		if len(watchMails(t, e, "gpu-stall:")) != 2 {
			t.Fatal("the second stall is a second mail")
		}
	})
}

// X15: with the opt-in (stop after 2 h, 60 min grace), the
// owners are mailed once when every GPU has been idle for 2 h, with the
// time of the stop; after the grace the stop is requested through the
// domain's stop (reason idle, its event); work coming back after the mail
// cancels it. Without the opt-in nothing happens at all.
func TestNoteIdleMailsThenStops(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1_000_000_000)
		addMember(t, e, "owner@acme.example", models.RoleOwner)
		id := clusterIn(t, e, models.StatusReady, models.EventJoined)
		id2 := clusterIn(t, e, models.StatusReady, models.EventJoined)
		n := &models.ClusterNotify{BaseURL: "https://deck.example"}
		since := t0.Add(-90 * time.Minute)
		far := t0.Add(-24 * time.Hour)
		note := func() models.IdleStep {
			t.Helper()
			step, err := e.s.NoteIdle(ctx, n, watched(t, e, id), since, true, far)
			if err != nil {
				t.Fatal(err)
			}
			return step
		}
		e.clock.Set(t0.Add(10 * time.Hour))
		if note() != models.IdleNothing || len(gpuEvents(t, e, id)) != 0 {
			t.Fatal("without the opt-in the idle rule does nothing")
		}
		e.clock.Set(t0)
		p := models.DefaultWatchPolicy()
		p.IdleOn, p.IdleAction = true, models.IdleStop
		for _, c := range []string{id, id2} {
			if _, err := e.actions().SetGPUWatch(ctx, c, p); err != nil {
				t.Fatal(err)
			}
		}
		if s := note(); s != models.IdleNothing {
			t.Fatalf("idle 90 minutes: %s", s)
		}
		e.clock.Advance(30 * time.Minute)
		if s := note(); s != models.IdleMailed {
			t.Fatalf("idle 2 h: %s", s)
		}
		e.clock.Advance(59 * time.Minute)
		if s := note(); s != models.IdleNothing {
			t.Fatalf("within the grace: %s", s)
		}
		mails := watchMails(t, e, "gpu-idle:")
		if len(mails) != 1 || !strings.Contains(mails[0].Subject, "will be stopped at 13:30 UTC") || !strings.Contains(mails[0].Text, "below 5 %") {
			t.Fatalf("mails = %+v", mails)
		}
		e.clock.Advance(time.Minute)
		if s := note(); s != models.IdleActed {
			t.Fatalf("after the grace: %s", s)
		}
		c, _ := e.s.ClusterByID(ctx, id)
		if c.StopRequestedAt == nil || c.StopReason != string(models.StopByIdle) {
			t.Fatalf("stop = %v %q", c.StopRequestedAt, c.StopReason)
		}
		all, _ := e.s.ClustersToWatch(ctx)
		for _, wc := range all {
			if wc.Cluster.ID == id {
				t.Fatal("a cluster stopping is still watched")
			}
		}

		// Another cluster: work comes back after the warning.
		since = e.clock.Now().Add(-3 * time.Hour)
		if s, _ := e.s.NoteIdle(ctx, n, watched(t, e, id2), since, true, far); s != models.IdleMailed {
			t.Fatalf("second cluster: %s", s)
		}
		if s, _ := e.s.NoteIdle(ctx, n, watched(t, e, id2), time.Time{}, false, far); s != models.IdleCanceled {
			t.Fatalf("work again: %s", s)
		}
		e.clock.Advance(2 * time.Hour)
		if s, _ := e.s.NoteIdle(ctx, n, watched(t, e, id2), time.Time{}, false, far); s != models.IdleNothing {
			t.Fatalf("still at work: %s", s)
		}
		c2, _ := e.s.ClusterByID(ctx, id2)
		if c2.StopRequestedAt != nil {
			t.Fatal("a cancelled idle episode stopped the cluster")
		}
	})
}

package models_test

import (
	"context"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// N3, V4: the start command and the mounts step keep
// their node's report by one rule, the newest report wins: a later start
// replaces the kept one, the same start's end replaces its running state
// and nothing else does, an earlier boot's late report is ignored.
func TestNewestReportWinsForEveryStep(t *testing.T) {
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	end := func(at time.Time) *time.Time { at = at.Add(30 * time.Second); return &at }
	zero := 0
	type report struct {
		started time.Time
		ended   bool
		want    time.Time // the start kept after it
		wantEnd bool
	}
	steps := []report{
		{t1, false, t1, false},
		{t1, true, t1, true},   // the same start ends
		{t1, false, t1, true},  // a repeated running report does not undo the end
		{t0, true, t1, true},   // an earlier boot's late report
		{t2, false, t2, false}, // a new start
		{t1, true, t2, false},  // the previous boot's end, late
	}
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100_000*models.Micro)
		c, err := e.s.ClusterByID(ctx, clusterIn(t, e, models.StatusReady, ""))
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := e.s.NodesFor(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		n := nodes[0]
		for i, s := range steps {
			sr := models.StartReport{State: models.StartRunning, StartedAt: s.started}
			mr := models.MountsReport{State: models.MountsMounting, StartedAt: s.started}
			if s.ended {
				sr.State, sr.ExitCode, sr.EndedAt = models.StartExited, &zero, end(s.started)
				mr.State, mr.EndedAt = models.MountsMounted, end(s.started)
			}
			if err := e.s.RecordStart(ctx, c, n, sr); err != nil {
				t.Fatal(err)
			}
			if err := e.s.RecordMounts(ctx, c, n, mr); err != nil {
				t.Fatal(err)
			}
			starts, err := e.s.NodeStarts(ctx, c.OrgID, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			mounts, err := e.s.NodeMounts(ctx, c.OrgID, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(starts) != 1 || !starts[0].StartedAt.Equal(s.want) || starts[0].Ended() != s.wantEnd {
				t.Errorf("report %d: start kept %+v, want started %s ended %v", i, starts, s.want, s.wantEnd)
			}
			if len(mounts) != 1 || !mounts[0].StartedAt.Equal(s.want) || mounts[0].Ended() != s.wantEnd {
				t.Errorf("report %d: mounts kept %+v, want started %s ended %v", i, mounts, s.want, s.wantEnd)
			}
		}
	})
}

package models_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// X16: the feed never moves a cursor past an event that may
// still commit. Ids are handed out at insert, not at commit: with event
// N+1 not yet visible and N+2 committed, a reader at N gets nothing past
// N until N+1 commits (then both, in order) or the hole is older than
// EventSettle (a rolled-back transaction: passed).
func TestEventsFeedWaitsForHoles(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 500*models.Micro)
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 4})
		c, _, err := e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID,
			Actor: "t", Workload: models.Workload{Name: "feed", Software: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		ids := func(after int64) ([]int64, int64) {
			t.Helper()
			p, err := e.s.EventsAfter(ctx, models.EventsQuery{OrgID: e.org.ID, EnvID: e.env.ID, After: after})
			if err != nil {
				t.Fatal(err)
			}
			var out []int64
			for _, ev := range p.Events {
				out = append(out, ev.ID)
			}
			return out, p.Next
		}
		first, cursor := ids(0)
		if len(first) != 1 || cursor != first[0] {
			t.Fatalf("the launch's event: %v next %d", first, cursor)
		}
		// Far above the sequence, so the database's own ids never meet them.
		base := cursor + 1_000_000
		add := func(id int64) {
			t.Helper()
			if err := db.Create(&models.ClusterEvent{ID: id, ClusterID: c.ID, OrgID: e.org.ID, At: e.clock.Now(),
				Kind: "info", Status: string(c.Status), Message: "x"}).Error; err != nil {
				t.Fatal(err)
			}
		}
		add(base) // after a hole of a million ids
		if got, next := ids(cursor); len(got) != 0 || next != cursor {
			t.Fatalf("past a young hole: %v next %d, want nothing and the cursor kept", got, next)
		}
		e.clock.Advance(models.EventSettle + time.Second)
		if got, next := ids(cursor); !slices.Equal(got, []int64{base}) || next != base {
			t.Fatalf("a hole older than EventSettle is passed: %v next %d", got, next)
		}
		add(base + 2) // base+1 is still "in flight"
		if got, next := ids(base); len(got) != 0 || next != base {
			t.Fatalf("past a young hole: %v next %d, want nothing and the cursor kept", got, next)
		}
		add(base + 1) // it commits
		if got, _ := ids(base); !slices.Equal(got, []int64{base + 1, base + 2}) {
			t.Fatalf("once the hole filled: %v", got)
		}
		add(base + 4) // base+3 never commits
		if got, _ := ids(base + 2); len(got) != 0 {
			t.Fatalf("past a young hole: %v", got)
		}
		e.clock.Advance(models.EventSettle + time.Second)
		if got, next := ids(base + 2); !slices.Equal(got, []int64{base + 4}) || next != base+4 {
			t.Fatalf("a hole older than EventSettle is passed: %v next %d", got, next)
		}
	})
}

package models_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// B6, L2: resumes racing on parallel connections are decided one after
// another under the organisation's lock, and a resume under way counts as
// running: with a balance of 2.5 hours of one cluster, exactly two of four
// stopped clusters resume and the others are refused for the balance.
func TestConcurrentResumesCannotOverdraw(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 0)
		var ids []string
		var rate models.Money
		for range 4 {
			q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 4})
			if _, err := e.s.Deposit(ctx, e.org.ID, q.USDPerHour, "launch-"+q.ID, "test"); err != nil {
				t.Fatal(err)
			}
			c, _, err := e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID,
				Actor: "t", Workload: models.Workload{Name: "train", Software: "none"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Model(&models.Cluster{}).Where("id = ?", c.ID).Updates(map[string]any{"status": models.StatusStopped,
				"ready_at": t0, "stopped_at": t0, "stopped_from": "ready"}).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Model(&models.ClusterNode{}).Where("cluster_id = ?", c.ID).Update("status", models.NodeStopped).Error; err != nil {
				t.Fatal(err)
			}
			ids, rate = append(ids, c.ID), c.USDPerHour
		}
		bal, _ := e.s.Balance(ctx, e.org.ID)
		if _, err := e.s.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: e.org.ID, Kind: models.LedgerAdjustment,
			Amount: rate*5/2 - bal, IdemKey: "to-2.5h", Description: "test"}); err != nil {
			t.Fatal(err)
		}
		var (
			wg             sync.WaitGroup
			mu             sync.Mutex
			resumed, broke int
			others         []error
			start          = make(chan struct{})
		)
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.s.RequestResume(ctx, e.org.ID, id, "t")
				var ib *models.InsufficientBalanceError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					resumed++
				case errors.As(err, &ib):
					broke++
				default:
					others = append(others, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(others) > 0 || resumed != 2 || broke != 2 {
			t.Fatalf("resumed %d, refused for the balance %d, other errors %v; want 2 and 2", resumed, broke, others)
		}
		a, err := e.s.AdmissionFor(ctx, e.org.ID, rate)
		if err != nil || a.Committed != 2*rate {
			t.Errorf("committed %d (%v), want the two resuming clusters' hour %d", a.Committed, err, 2*rate)
		}
	})
}

// B5, B6: a stop requested while a resume is under way cancels it: the
// cluster stays stopped with lastError resume_cancelled:<reason>, its
// machines are to be stopped again, and a second request changes nothing.
func TestStopCancelsAResume(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 1000*models.Micro)
		q := e.quote(t, models.ShapeQuery{Accelerator: "H100_80GB", Nodes: 2, GPUsPerNode: 4})
		c, _, err := e.s.LaunchCluster(ctx, models.LaunchParams{OrgID: e.org.ID, EnvID: e.env.ID, QuoteID: q.ID,
			Actor: "t", Workload: models.Workload{Name: "train", Software: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Model(&models.Cluster{}).Where("id = ?", c.ID).Updates(map[string]any{"status": models.StatusStopped,
			"ready_at": t0, "stopped_at": t0, "stopped_from": "ready", "stop_reason": "balance"}).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := e.s.RequestResume(ctx, e.org.ID, c.ID, "t"); err != nil {
			t.Fatal(err)
		}
		got, err := e.s.RequestStop(ctx, e.org.ID, c.ID, models.StopByBudget, "The budget of default was reached.")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != models.StatusStopped || got.Resuming() || got.StopRequestedAt == nil ||
			got.LastError != "resume_cancelled:budget" || got.StopReason != "budget" {
			t.Fatalf("after the stop request: %s resuming=%v stopRequested=%v %q %q", got.Status, got.Resuming(), got.StopRequestedAt, got.LastError, got.StopReason)
		}
		again, err := e.s.RequestStop(ctx, e.org.ID, c.ID, models.StopByBalance, "again")
		if err != nil || !again.StopRequestedAt.Equal(*got.StopRequestedAt) || again.StopReason != "budget" {
			t.Errorf("a second stop request: %v %+v", err, again)
		}
		if _, err := e.s.RequestResume(ctx, e.org.ID, c.ID, "t"); !errors.Is(err, models.ErrConflict) {
			t.Errorf("resume while its machines are stopped again: %v, want ErrConflict", err)
		}
	})
}

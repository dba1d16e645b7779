package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// observer reads clusters the way GET /v1/gpu/clusters/{id} does (the
// cluster, then its nodes) in tight loops on several goroutines, and keeps
// every view in which the nodes contradict the cluster's status.
type observer struct {
	store   *models.Store
	ids     []string
	seen    atomic.Int64 // views of a cluster that had ended or become ready
	mu      sync.Mutex
	torn    []string
	stop    chan struct{}
	stopped sync.WaitGroup
}

func observe(store *models.Store, ids []string, readers int) *observer {
	o := &observer{store: store, ids: ids, stop: make(chan struct{})}
	for r := range readers {
		o.stopped.Add(1)
		go func() {
			defer o.stopped.Done()
			for i := r; ; i++ {
				select {
				case <-o.stop:
					return
				default:
				}
				o.look(o.ids[i%len(o.ids)])
			}
		}()
	}
	return o
}

// look checks one view: a terminated cluster has only terminated nodes, a
// failed one no node still provisioning or ready, a ready one no node still
// provisioning (a terminate may land between the two reads: terminated is
// fine there).
func (o *observer) look(id string) {
	ctx := context.Background()
	c, err := o.store.ClusterByID(ctx, id)
	if err != nil {
		return
	}
	nodes, err := o.store.NodesFor(ctx, id)
	if err != nil {
		return
	}
	bad := map[models.ClusterStatus][]models.NodeStatus{
		models.StatusTerminated: {models.NodeProvisioning, models.NodeReady, models.NodeFailed, models.NodeLost},
		models.StatusFailed:     {models.NodeProvisioning, models.NodeReady},
		models.StatusReady:      {models.NodeProvisioning},
	}[c.Status]
	if bad == nil {
		return
	}
	o.seen.Add(1)
	for _, n := range nodes {
		for _, b := range bad {
			if n.Status == b {
				o.mu.Lock()
				o.torn = append(o.torn, fmt.Sprintf("cluster %s is %s while %s is %s", id, c.Status, n.Name, n.Status))
				o.mu.Unlock()
			}
		}
	}
}

func (o *observer) end() []string {
	close(o.stop)
	o.stopped.Wait()
	return o.torn
}

// L7, L8: a terminate carried out while the provision job ticks,
// on two goroutines, is never seen half done. Each status change commits
// with its node rows, so no reader ever sees a terminated cluster with
// ready nodes, a failed one with provisioning nodes, or a ready one whose
// nodes are still provisioning. (When the node rows followed the cluster's
// transaction in a second statement, readers saw exactly that.)
func TestTerminateVsProvisionTickIsNeverTorn(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		ctx := context.Background()
		var torn []string
		var seen int64
		for round := range 4 {
			if err := w.cat.Run(ctx); err != nil { // a fresh catalog to quote from
				t.Fatal(err)
			}
			ids := make([]string, 4)
			for i := range ids {
				ids[i] = w.launch("H100_80GB", 2, 8).ID
			}
			o := observe(w.store, ids, 3)
			w.tick() // every cluster placed
			if round%2 == 0 {
				w.run(6*time.Minute, time.Minute) // ready (joined while observed)
			} else {
				w.clock.Advance(time.Hour) // every step late: the next tick fails them
			}
			var wg sync.WaitGroup
			for range 2 { // two provision and two terminate ticks at once, racing the terminate requests
				wg.Add(2)
				go func() {
					defer wg.Done()
					for range 4 {
						if err := w.job.Run(ctx); err != nil {
							t.Errorf("provision: %v", err)
						}
					}
				}()
				go func() {
					defer wg.Done()
					for range 4 {
						if err := w.term.Run(ctx); err != nil {
							t.Errorf("terminate: %v", err)
						}
					}
				}()
			}
			for _, id := range ids {
				if _, err := w.store.RequestTerminate(ctx, w.org.ID, id, "racer"); err != nil {
					t.Error(err)
				}
			}
			wg.Wait()
			if err := w.term.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if err := w.job.Run(ctx); err != nil {
				t.Fatal(err)
			}
			torn = append(torn, o.end()...)
			seen += o.seen.Load()
			for _, id := range ids {
				if c := w.cluster(id); !c.Status.Terminal() {
					t.Fatalf("round %d: %s is %s after the terminates\n%s", round, id, c.Status, w.events(id))
				}
			}
		}
		if seen == 0 {
			t.Fatal("the readers never saw a cluster ready or ended: the test proves nothing")
		}
		if len(torn) > 0 {
			t.Errorf("%d of %d views were torn, e.g.:\n%s", len(torn), seen, torn[0])
		}
	})
}

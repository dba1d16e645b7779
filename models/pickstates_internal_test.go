package models

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// O3: the picker's statement is shared by the requests that
// wait for it, but a request never gets an answer whose read started before
// it arrived. Run 1 is held open; a write happens; a request arriving now
// must get run 2's answer, which reads the write. Requests arriving together
// while run 1 is under way share run 2.
func TestPickStatesNeverAnswerFromAReadStartedEarlier(t *testing.T) {
	var (
		g        pickStates
		version  atomic.Int64
		runs     atomic.Int64
		started  = make(chan struct{}, 8)
		release  = make(chan struct{})
		released sync.Once
	)
	version.Store(1)
	query := func(context.Context) (int64, map[string]int, error) {
		v := version.Load() // the read's snapshot is taken when it starts
		runs.Add(1)
		started <- struct{}{}
		<-release
		return v, map[string]int{}, nil
	}
	ctx := context.Background()
	first := make(chan int64)
	go func() {
		v, _, _ := g.read(ctx, query)
		first <- v
	}()
	<-started // run 1 has read version 1 and is under way
	version.Store(2)
	const later = 5
	got := make(chan int64, later)
	var wg sync.WaitGroup
	for range later {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, _, _ := g.read(ctx, query)
			got <- v
		}()
	}
	// The later requests have all joined a batch; let run 1 finish.
	for {
		g.mu.Lock()
		asked := g.asks
		g.mu.Unlock()
		if asked == 1+later {
			break
		}
	}
	released.Do(func() { close(release) })
	if v := <-first; v != 1 {
		t.Errorf("the first request got version %d, want 1", v)
	}
	wg.Wait()
	close(got)
	for v := range got {
		if v != 2 {
			t.Errorf("a request that arrived after the write got version %d from a read started before it", v)
		}
	}
	if n := runs.Load(); n < 2 || n > 1+later {
		t.Errorf("%d runs for %d requests", n, 1+later)
	}
}

// A cancelled request does not fail the others of its batch.
func TestPickStatesACancelledRequestLeavesItsBatch(t *testing.T) {
	var g pickStates
	release := make(chan struct{})
	query := func(ctx context.Context) (int64, map[string]int, error) {
		<-release
		return 7, nil, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, _, err := g.read(ctx, query)
		errc <- err
	}()
	other := make(chan int64)
	for {
		g.mu.Lock()
		asked := g.asks
		g.mu.Unlock()
		if asked == 1 {
			break
		}
	}
	go func() {
		v, _, err := g.read(context.Background(), query)
		if err != nil {
			v = -1
		}
		other <- v
	}()
	cancel()
	if err := <-errc; err == nil {
		t.Error("the cancelled request got no error")
	}
	close(release)
	if v := <-other; v != 7 {
		t.Errorf("the other request got %d, want 7", v)
	}
}

package lambda

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Requests keep 1 s apart and launches 12 s apart, and a request booked
// while a launch waits its turn takes the free slot before it rather than
// queueing behind it (LSPEC rate limits).
func TestPacingSlots(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var slept []time.Duration
	c := &pacer{now: func() time.Time { return now }, requestEvery: RequestInterval, launchEvery: LaunchInterval,
		sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}
	ctx := context.Background()
	for _, launch := range []bool{true, true, false, false, true} {
		if err := c.wait(ctx, launch); err != nil {
			t.Fatal(err)
		}
	}
	// launch at 0 s; launch at 12 s; requests at 1 s and 2 s; launch at 24 s.
	want := []time.Duration{12 * time.Second, time.Second, 2 * time.Second, 24 * time.Second}
	if !slices.Equal(slept, want) {
		t.Errorf("waits %v, want %v", slept, want)
	}
	// Once the clock passed, old bookings are forgotten.
	now = now.Add(time.Minute)
	slept = nil
	if err := c.wait(ctx, false); err != nil || len(slept) != 0 {
		t.Errorf("a request a minute later waited %v (%v)", slept, err)
	}
}

// Requests booked exactly 1 s apart arrive closer when the earlier one
// travelled longer, and Lambda answers 429 (it did). The adapter's pacer
// keeps each interval's slack: with a transit time varying by up to
// 200 ms, no two requests arrive less than 1 s apart, nor two launches
// less than 12 s apart.
func TestPacingSlackAbsorbsTransit(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	c := newPacer(Config{RequestInterval: RequestInterval, LaunchInterval: LaunchInterval}, func() time.Time { return now },
		func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil })
	ctx := context.Background()
	var lastAny, lastLaunch time.Time
	for k, launch := range []bool{false, true, false, false, true, false, true, false, false, false} {
		if err := c.wait(ctx, launch); err != nil {
			t.Fatal(err)
		}
		transit := time.Duration(200*((k+1)%2)) * time.Millisecond // 200 ms, 0, 200 ms, …
		arrived := now.Add(transit)
		if !lastAny.IsZero() && arrived.Sub(lastAny) < RequestInterval {
			t.Fatalf("request %d arrived %v after the one before: 429", k, arrived.Sub(lastAny))
		}
		if launch && !lastLaunch.IsZero() && arrived.Sub(lastLaunch) < LaunchInterval {
			t.Fatalf("launch %d arrived %v after the one before: 429", k, arrived.Sub(lastLaunch))
		}
		lastAny = arrived
		if launch {
			lastLaunch = arrived
		}
	}
}

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// The development fake clock lives in the database (OP4): a restart
// does not move it back, and a move made through one instance's request
// is what the other instance reads on its next request or tick.
func TestSharedFakeClock(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		a, err := openSharedClock(ctx, db, t0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := openSharedClock(ctx, modelstest.SecondInstance(t, db), t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if !b.fake.Now().Equal(t0) {
			t.Fatalf("second instance starts at %s, want the stored %s", b.fake.Now(), t0)
		}
		advance := a.middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { a.fake.Advance(90 * time.Minute) }))
		advance.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/dev/clock", nil))
		if err := b.load(ctx); err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(90 * time.Minute); !b.fake.Now().Equal(want) {
			t.Fatalf("other instance reads %s after the move, want %s", b.fake.Now(), want)
		}
		restarted, err := openSharedClock(ctx, db, t0) // wall time earlier than the fake one
		if err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(90 * time.Minute); !restarted.fake.Now().Equal(want) {
			t.Fatalf("after a restart the clock reads %s, want %s (never back)", restarted.fake.Now(), want)
		}
		b.fake.Set(t0) // an instance behind never moves the stored time back
		if err := b.store(ctx); err != nil {
			t.Fatal(err)
		}
		if again, err := openSharedClock(ctx, db, t0); err != nil || !again.fake.Now().Equal(t0.Add(90*time.Minute)) {
			t.Fatalf("stored time moved back: %v %v", again, err)
		}
	})
}

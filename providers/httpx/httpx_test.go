package httpx

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"": 0, "12": 12 * time.Second, " 3 ": 3 * time.Second, "-1": 0, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		if got := RetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", h, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	d := 2 * time.Second
	var seen []time.Duration
	for range 7 {
		d = NextBackoff(d)
		seen = append(seen, d)
	}
	if seen[0] != 4*time.Second || seen[4] != MaxBackoff || seen[6] != MaxBackoff {
		t.Errorf("backoff %v", seen)
	}
	if Wait(2*time.Second, 30*time.Second) != 30*time.Second || Wait(8*time.Second, time.Second) != 8*time.Second {
		t.Error("Wait must take the longer of the backoff and Retry-After")
	}
}

func TestSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("cancelled sleep: %v", err)
	}
	if c := NewClient(); c.Timeout == 0 || c.Transport.(*http.Transport).ResponseHeaderTimeout == 0 {
		t.Error("the client must bound every request")
	}
}

package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// X18, API3: "reservations availability/book/list/get/cancel" over the real
// API; a bad start is the API's field error (exit 1).
func TestCLIReservations(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		out, errOut, code := d.gpu(t, "reservations", "availability", "sim:h100x8", "--nodes", "2", "--days", "3")
		if code != 0 || strings.Count(out, " ok ") != 3 {
			t.Fatalf("availability: %d %s %s", code, out, errOut)
		}
		if _, errOut, code := d.gpu(t, "reservations", "book", "--offer-id", "sim:h100x8", "--nodes", "2", "--start-at", "soon", "--hours", "4"); code != 1 || !strings.Contains(errOut, "startAt") {
			t.Errorf("bad start: %d %s", code, errOut)
		}
		start := d.store.Now().Add(5 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
		out, errOut, code = d.gpu(t, "reservations", "book", "--offer-id", "sim:h100x8", "--nodes", "2", "--start-at", start, "--hours", "4")
		if code != 0 {
			t.Fatalf("book: %d %s", code, errOut)
		}
		id := regexp.MustCompile(`rsv_[a-z0-9]+`).FindString(out)
		mustContain(t, "book", out, "(booked)", "Deposit $", "full refund until")
		out, _, _ = d.gpu(t, "reservations", "list")
		mustContain(t, "list", out, id, "booked")
		out, _, _ = d.gpu(t, "reservations", "get", id)
		mustContain(t, "get", out, "reservation.booked")
		out, errOut, code = d.gpu(t, "reservations", "cancel", id)
		if code != 0 || !strings.Contains(out, "cancelled") {
			t.Fatalf("cancel: %d %s %s", code, out, errOut)
		}
	})
}

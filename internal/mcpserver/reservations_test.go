package mcpserver_test

import (
	"strings"
	"testing"
	"time"
)

// X18 through the tools: the calendar, a preview with its terms, a
// booking, the list and the trail, a cancel with its refund; another
// organisation cannot read or cancel it.
func TestReservationsReachTheAgent(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		rival := d.signup("rival@example.com", "Rival Labs", 100)
		start := d.store.Now().Add(6 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
		cs := mustConnect(t, ways[0], d, d.key)
		cal := ok(t, cs, "offer_availability", map[string]any{"offer_id": "sim:h100.8x.vm", "nodes": 2, "days": 14})
		if days, _ := cal.data["days"].([]any); len(days) != 14 || !strings.Contains(cal.text, "14 of 14 days bookable for 2 machines") {
			t.Fatalf("offer_availability: %s", cal.text)
		}
		args := map[string]any{"offer_id": "sim:h100.8x.vm", "nodes": 2, "start_at": start, "duration_hours": 6}
		prev := ok(t, cs, "reserve_capacity", map[string]any{"offer_id": "sim:h100.8x.vm", "nodes": 2, "start_at": start, "duration_hours": 6, "preview": true})
		if prev.data["status"] != "preview" || !strings.Contains(prev.text, "full refund until") {
			t.Fatalf("preview: %s", prev.text)
		}
		r := ok(t, cs, "reserve_capacity", args)
		id := str(r.data["id"])
		if r.data["status"] != "booked" || !strings.HasPrefix(id, "rsv_") {
			t.Fatalf("reserve_capacity: %s", r.text)
		}
		if l := ok(t, cs, "list_reservations", map[string]any{}); !strings.Contains(l.text, "1 reservations") {
			t.Errorf("list_reservations: %s", l.text)
		}
		rcs := mustConnect(t, ways[0], d, rival.key)
		refused(t, rcs, "get_reservation", map[string]any{"reservation_id": id}, "not_found", "")
		refused(t, rcs, "cancel_reservation", map[string]any{"reservation_id": id}, "not_found", "")
		g := ok(t, cs, "get_reservation", map[string]any{"reservation_id": id})
		if ev, _ := g.data["events"].([]any); len(ev) != 1 {
			t.Errorf("get_reservation trail: %s", g.text)
		}
		c := ok(t, cs, "cancel_reservation", map[string]any{"reservation_id": id})
		if c.data["status"] != "cancelled" || c.data["refund"] != prev.data["terms"].(map[string]any)["deposit"] {
			t.Errorf("cancel_reservation: %s", c.text)
		}
	})
}

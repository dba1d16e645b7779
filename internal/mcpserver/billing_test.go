package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// B1, B3 through the tools: get_balance answers the organisation's balance,
// its burn, the hours it lasts and the month's spend; billing_usage a
// month's rows; a member's key is refused by both with the API's
// forbidden, as a tool error.
func TestBillingTools(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		for _, w := range ways {
			cs := mustConnect(t, w, d, d.key)
			r := ok(t, cs, "get_balance", map[string]any{})
			if r.data["balance"] != "500.00" || r.data["burnRate"] != "0.00" || r.data["hoursRemaining"] != nil ||
				!strings.Contains(r.text, "Balance $500.00; nothing is running") {
				t.Fatalf("%s: get_balance idle: %v %s", w.name, r.data, r.text)
			}
		}
		cs := mustConnect(t, ways[0], d, d.key)
		d.readyCluster(cs, "burns")
		r := ok(t, cs, "get_balance", map[string]any{})
		if r.data["burnRate"] == "0.00" || r.data["hoursRemaining"] == nil || r.data["month"] != "2026-11" ||
			!strings.Contains(r.text, "it lasts about") || !strings.Contains(r.text, "in 2026-11") {
			t.Fatalf("get_balance running: %v %s", r.data, r.text)
		}
		u := ok(t, cs, "billing_usage", map[string]any{"month": "2026-11"})
		if cls, _ := u.data["clusters"].([]any); len(cls) != 1 || !strings.Contains(u.text, "2026-11") {
			t.Fatalf("billing_usage: %v %s", u.data, u.text)
		}
		ok(t, cs, "billing_usage", map[string]any{})
		if r := callTool(t, cs, "billing_usage", map[string]any{"month": "November"}); !r.isError {
			t.Errorf("billing_usage bad month: %s", r.text)
		}

		member := d.member("m@example.com")
		for _, w := range ways {
			ms := mustConnect(t, w, d, member)
			refused(t, ms, "get_balance", map[string]any{}, "forbidden")
			refused(t, ms, "billing_usage", map[string]any{}, "forbidden")
		}
	})
}

// member joins d's organisation as a member and returns an API key of theirs.
func (d *deck) member(email string) string {
	d.t.Helper()
	ctx := context.Background()
	other := d.signup(email, "Own org of "+email, 0)
	_, token, err := d.store.CreateInvite(ctx, d.org.ID, models.RoleOwner, d.user.ID, email, models.RoleMember)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.store.AcceptInvite(ctx, token, other.user, ""); err != nil {
		d.t.Fatal(err)
	}
	_, key, err := d.store.CreateAPIKey(ctx, d.org.ID, d.env.ID, other.user.ID, "member")
	if err != nil {
		d.t.Fatal(err)
	}
	return key
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/static"
	"github.com/clusterdeck/clusterdeck/web"
	"github.com/labstack/echo/v4"
	"github.com/stripe/stripe-go/v76/webhook"
	"gorm.io/gorm"
)

// The webhook's whole path (B4, B9): events signed as
// Stripe signs them (stripe-go's webhook test helpers), posted to the real
// router, verified and decoded by the real Stripe adapter, applied to a real
// database.

const hookSecret = "whsec_hook"

type hookWorld struct {
	t     *testing.T
	store *models.Store
	clock *models.FakeClock
	e     *echo.Echo
	logs  *lockedBuffer
	org   models.Org
	owner models.Actor
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newHookWorld(t *testing.T, db *gorm.DB) *hookWorld {
	t.Helper()
	clock := models.NewFakeClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	store := models.NewStore(db, clock)
	logs := &lockedBuffer{}
	e := web.New(web.Deps{
		Config: web.Config{BaseURL: "http://127.0.0.1", SessionAuthKey: []byte(strings.Repeat("k", 64)), SessionEncKey: []byte(strings.Repeat("e", 32))},
		Store:  store, Log: slog.New(slog.NewTextHandler(logs, nil)), Static: static.FS,
		Payments: webPayments(config{StripeSecretKey: "sk_test_1", StripeWebhookSecret: hookSecret}),
	})
	w := &hookWorld{t: t, store: store, clock: clock, e: e, logs: logs}
	w.org, w.owner = w.newOrg("Acme")
	return w
}

// newOrg is an organisation with its owner.
func (w *hookWorld) newOrg(name string) (models.Org, models.Actor) {
	w.t.Helper()
	org := models.Org{ID: models.NewID("org"), Name: name, CreatedAt: w.store.Now()}
	u := models.User{ID: models.NewID("usr"), Email: strings.ToLower(org.ID) + "@example.com", CreatedAt: w.store.Now()}
	for _, row := range []any{&org, &u, &models.Membership{OrgID: org.ID, UserID: u.ID, Role: models.RoleOwner}} {
		if err := w.store.DB().Create(row).Error; err != nil {
			w.t.Fatal(err)
		}
	}
	return org, models.Actor{OrgID: org.ID, UserID: u.ID, Role: models.RoleOwner, Name: u.Email}
}

// topUp is a pending card top-up of amount with its Checkout Session.
func (w *hookWorld) topUp(amount models.Money) models.TopUp {
	w.t.Helper()
	ctx := context.Background()
	tu, err := w.store.As(w.owner).RequestTopUp(ctx, amount, false)
	if err != nil {
		w.t.Fatal(err)
	}
	tu.SessionID = "cs_test_" + tu.ID
	if err := w.store.AttachCheckout(ctx, w.org.ID, tu.ID, tu.SessionID); err != nil {
		w.t.Fatal(err)
	}
	return tu
}

// post signs an event of API version version as Stripe does and posts it
// to /webhooks/stripe.
func (w *hookWorld) post(id, typ, version string, object map[string]any) int {
	w.t.Helper()
	body, err := json.Marshal(map[string]any{"id": id, "object": "event", "type": typ, "api_version": version, "livemode": false,
		"created": time.Now().Unix(), "data": map[string]any{"object": object}})
	if err != nil {
		w.t.Fatal(err)
	}
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: hookSecret, Timestamp: time.Now()})
	req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(sp.Payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", sp.Header)
	rec := httptest.NewRecorder()
	w.e.ServeHTTP(rec, req)
	return rec.Code
}

func (w *hookWorld) balance() models.Money {
	w.t.Helper()
	b, err := w.store.Balance(context.Background(), w.org.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

func (w *hookWorld) status(tu models.TopUp) string {
	w.t.Helper()
	got, err := w.store.TopUpForOrg(context.Background(), w.org.ID, tu.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	return got.Status
}

func (w *hookWorld) mismatches() []models.PaymentMismatchRow {
	w.t.Helper()
	ms, err := w.store.PaymentMismatches(context.Background(), 100)
	if err != nil {
		w.t.Fatal(err)
	}
	return ms
}

// session is the Checkout Session of tu as a webhook carries it.
func session(org string, tu models.TopUp, paymentStatus string, cents int64, currency string) map[string]any {
	return map[string]any{"id": tu.SessionID, "object": "checkout.session", "mode": "payment", "payment_status": paymentStatus,
		"amount_total": cents, "currency": currency, "customer": "cus_1", "payment_intent": "pi_" + tu.ID, "client_reference_id": tu.ID,
		"metadata": map[string]string{"org_id": org, "top_up_id": tu.ID}}
}

// B9: a top-up is credited exactly its recorded amount,
// only when the event's session, currency and amount are the top-up's.
// Anything else answers 200 (Stripe must not retry it), credits nothing,
// leaves the top-up pending and is recorded with its reason.
func TestWebhookCreditsOnlyTheRecordedPayment(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newHookWorld(t, db)
		tu := w.topUp(20 * models.Micro)
		other, _ := w.newOrg("Other")
		bad := []struct {
			name   string
			object map[string]any
			reason string
		}{
			{"rupiah", session(w.org.ID, tu, "paid", 320000000, "idr"), "paid in IDR, not USD"},
			{"more dollars", session(w.org.ID, tu, "paid", 320000000, "usd"), "paid $3,200,000.00, but the top-up is $20.00"},
			{"fewer dollars", session(w.org.ID, tu, "paid", 500, "usd"), "paid $5.00, but the top-up is $20.00"},
			{"no currency", session(w.org.ID, tu, "paid", 2000, ""), "paid in no currency"},
			{"another session", func() map[string]any {
				s := session(w.org.ID, tu, "paid", 2000, "usd")
				s["id"] = "cs_test_other"
				return s
			}(), "session cs_test_other is not the top-up's"},
			{"another organisation", session(other.ID, tu, "paid", 2000, "usd"), "which organisation " + other.ID + " does not have"},
		}
		for i, b := range bad {
			w.clock.Advance(time.Minute)
			if code := w.post("evt_bad_"+string(rune('a'+i)), "checkout.session.completed", "2023-10-16", b.object); code != http.StatusOK {
				t.Errorf("%s: %d, want 200", b.name, code)
			}
			if w.balance() != 0 || w.status(tu) != models.TopUpPending {
				t.Fatalf("%s: balance %d, top-up %s; want nothing credited and still pending", b.name, w.balance(), w.status(tu))
			}
			ms := w.mismatches()
			if len(ms) != i+1 || !strings.Contains(ms[0].Reason, b.reason) || ms[0].EventID != "evt_bad_"+string(rune('a'+i)) {
				t.Fatalf("%s: mismatches %+v, want the newest saying %q", b.name, ms, b.reason)
			}
		}
		if code := w.post("evt_good", "checkout.session.completed", "2023-10-16", session(w.org.ID, tu, "paid", 2000, "usd")); code != http.StatusOK {
			t.Fatalf("the matching event: %d", code)
		}
		if w.balance() != 20*models.Micro || w.status(tu) != models.TopUpCompleted || len(w.mismatches()) != len(bad) {
			t.Fatalf("matching event: balance %d, top-up %s, %d mismatches; want $20 credited once", w.balance(), w.status(tu), len(w.mismatches()))
		}
	})
}

// B4: a delayed payment method completes the session
// unpaid, which credits nothing; async_payment_succeeded then credits once
// (exactly the recorded amount), and async_payment_failed marks the top-up
// failed, crediting nothing.
func TestWebhookDelayedPayments(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newHookWorld(t, db)
		paid, failed := w.topUp(20*models.Micro), w.topUp(30*models.Micro)
		steps := []struct {
			id, typ        string
			object         map[string]any
			balance        models.Money
			paid, failed   string
			wantMismatches int
		}{
			{"evt_1", "checkout.session.completed", session(w.org.ID, paid, "unpaid", 2000, "usd"), 0, models.TopUpPending, models.TopUpPending, 0},
			{"evt_2", "checkout.session.completed", session(w.org.ID, failed, "unpaid", 3000, "usd"), 0, models.TopUpPending, models.TopUpPending, 0},
			{"evt_3", "checkout.session.async_payment_succeeded", session(w.org.ID, paid, "paid", 2000, "usd"), 20 * models.Micro,
				models.TopUpCompleted, models.TopUpPending, 0},
			{"evt_3", "checkout.session.async_payment_succeeded", session(w.org.ID, paid, "paid", 2000, "usd"), 20 * models.Micro,
				models.TopUpCompleted, models.TopUpPending, 0},
			{"evt_4", "checkout.session.async_payment_succeeded", session(w.org.ID, paid, "paid", 2000, "usd"), 20 * models.Micro,
				models.TopUpCompleted, models.TopUpPending, 0},
			{"evt_5", "checkout.session.async_payment_failed", session(w.org.ID, failed, "unpaid", 3000, "usd"), 20 * models.Micro,
				models.TopUpCompleted, models.TopUpFailed, 0},
			{"evt_6", "checkout.session.async_payment_failed", session(w.org.ID, paid, "unpaid", 2000, "usd"), 20 * models.Micro,
				models.TopUpCompleted, models.TopUpFailed, 0},
			// A success for the failed top-up paying another amount: recorded, nothing credited.
			{"evt_7", "checkout.session.async_payment_succeeded", session(w.org.ID, failed, "paid", 9000, "usd"), 20 * models.Micro,
				models.TopUpCompleted, models.TopUpFailed, 1},
		}
		for _, st := range steps {
			if code := w.post(st.id, st.typ, "2023-10-16", st.object); code != http.StatusOK {
				t.Fatalf("%s %s: %d", st.id, st.typ, code)
			}
			if w.balance() != st.balance || w.status(paid) != st.paid || w.status(failed) != st.failed || len(w.mismatches()) != st.wantMismatches {
				t.Fatalf("after %s %s: balance %d, top-ups %s and %s, %d mismatches; want %d, %s and %s, %d", st.id, st.typ, w.balance(),
					w.status(paid), w.status(failed), len(w.mismatches()), st.balance, st.paid, st.failed, st.wantMismatches)
			}
		}
		tx, err := w.store.Transactions(context.Background(), w.org.ID, models.MonthOf(w.store.Now()), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var shown []string
		for _, x := range tx {
			shown = append(shown, x.Status+" "+x.Description)
		}
		if !strings.Contains(strings.Join(shown, "\n"), models.EntryFailed+" Top-up (the payment failed") {
			t.Errorf("transactions %q: want the failed top-up shown as failed", shown)
		}
	})
}

// B4, B9: an auto-recharge's PaymentIntent events, in
// every order Stripe may deliver them (processing or requires_action, then
// payment_failed and succeeded, any permutation): the charge follows what
// Stripe allows (a success wins whenever it comes and credits once; a
// failure or a processing event after it changes nothing), and redelivering
// every event at the end changes nothing more.
func TestWebhookChargeEventsInAnyOrder(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newHookWorld(t, db)
		ctx := context.Background()
		orders := [][3]string{{"P", "F", "S"}, {"P", "S", "F"}, {"F", "P", "S"}, {"F", "S", "P"}, {"S", "P", "F"}, {"S", "F", "P"}}
		for _, first := range []string{"processing", "requires_action"} {
			for _, order := range orders {
				name := first + " " + strings.Join(order[:], "")
				org, owner := w.newOrg(name)
				if err := w.store.SaveCard(ctx, org.ID, "cus_"+org.ID, "pm_1"); err != nil {
					t.Fatal(err)
				}
				if _, err := w.store.As(owner).SetAutoRecharge(ctx, true, 20*models.Micro, 50*models.Micro); err != nil {
					t.Fatal(err)
				}
				if n, err := w.store.PlanCharges(ctx); err != nil || n != 1 {
					t.Fatalf("%s: planned %d, %v", name, n, err)
				}
				cs, _ := w.store.Charges(ctx, org.ID)
				ch := cs[0]
				pi := func(status string) map[string]any {
					o := map[string]any{"id": "pi_" + ch.ID, "object": "payment_intent", "status": status, "amount": 5000, "amount_received": 0,
						"currency": "usd", "customer": "cus_" + org.ID, "payment_method": "pm_1", "off_session": true,
						"metadata": map[string]string{"org_id": org.ID, "charge_id": ch.ID}}
					switch status {
					case "succeeded":
						o["amount_received"] = 5000
					case "requires_payment_method":
						o["last_payment_error"] = map[string]any{"type": "card_error", "code": "card_declined", "message": "Your card was declined."}
					}
					return o
				}
				events := map[string]struct{ typ, status string }{
					"F": {"payment_intent.payment_failed", "requires_payment_method"}, "S": {"payment_intent.succeeded", "succeeded"},
					"P": {"payment_intent.processing", "processing"},
				}
				if first == "requires_action" {
					events["P"] = struct{ typ, status string }{"payment_intent.requires_action", "requires_action"}
				}
				balance := func() models.Money {
					b, _ := w.store.Balance(ctx, org.ID)
					return b
				}
				charge := func() models.Charge {
					cs, _ := w.store.Charges(ctx, org.ID)
					return cs[0]
				}
				seenS, seenFail := false, false
				for _, k := range order {
					ev := events[k]
					if code := w.post("evt_"+k+"_"+ch.ID, ev.typ, "2023-10-16", pi(ev.status)); code != http.StatusOK {
						t.Fatalf("%s: %s answered %d", name, ev.typ, code)
					}
					seenS = seenS || k == "S"
					seenFail = seenFail || k == "F" || k == "P" && first == "requires_action"
					want, wantBalance := models.ChargePending, models.Money(0)
					switch {
					case seenS:
						want, wantBalance = models.ChargeSucceeded, 50*models.Micro
					case seenFail:
						want = models.ChargeFailed
					}
					if got := charge(); got.Status != want || balance() != wantBalance || got.PaymentIntentID != "pi_"+ch.ID {
						t.Fatalf("%s: after %s the charge is %s (%s), balance %d; want %s, %d", name, k, got.Status, got.PaymentIntentID,
							balance(), want, wantBalance)
					}
				}
				for _, k := range order {
					w.post("evt_"+k+"_"+ch.ID, events[k].typ, "2023-10-16", pi(events[k].status))
				}
				a, _ := w.store.AutoRechargeFor(ctx, org.ID)
				if got := charge(); got.Status != models.ChargeSucceeded || got.FailureCode != "" || balance() != 50*models.Micro || a.PausedBy != "" {
					t.Fatalf("%s: at the end the charge is %+v, balance %d, paused by %q; want succeeded, $50 once, not paused",
						name, got, balance(), a.PausedBy)
				}
				if p, _ := w.store.ChargeProblem(ctx, org.ID); p != nil {
					t.Fatalf("%s: a charge that succeeded still shows as a problem: %+v", name, p)
				}
			}
		}
		if ms := w.mismatches(); len(ms) != 0 {
			t.Errorf("mismatches %+v, want none", ms)
		}
	})
}

// B4: an endpoint created on another API version is not
// answered 400 on every event: its events are read for the fields used and
// credit as any other; the version is logged once (and the operator's
// payments page shows it, see web's TestAdminPaymentsPage).
func TestWebhookOtherAPIVersion(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newHookWorld(t, db)
		a, b := w.topUp(20*models.Micro), w.topUp(25*models.Micro)
		const version = "2025-03-31.basil"
		for i, tu := range []models.TopUp{a, b} {
			s := session(w.org.ID, tu, "paid", int64(tu.Amount/10_000), "usd")
			s["customer"] = map[string]any{"id": "cus_1", "object": "customer"} // expanded, as newer versions may send it
			s["discounts"] = []any{}
			if code := w.post("evt_v"+string(rune('1'+i)), "checkout.session.completed", version, s); code != http.StatusOK {
				t.Fatalf("event of version %s: %d, want 200", version, code)
			}
		}
		if w.balance() != 45*models.Micro {
			t.Fatalf("balance %d, want both top-ups credited ($45)", w.balance())
		}
		if got := strings.Count(w.logs.String(), "api_version="+version); got != 1 {
			t.Errorf("the other version was logged %d times, want once:\n%s", got, w.logs.String())
		}
		v, err := w.store.LatestWebhookVersion(context.Background())
		if err != nil || v.APIVersion != version {
			t.Errorf("latest version %+v %v, want %s", v, err, version)
		}
	})
}

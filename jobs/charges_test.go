package jobs_test

import (
	"context"
	"sync"
	"testing"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// fakeCharger is Stripe's off-session PaymentIntent as the charges job sees
// it: the same idempotency key returns the first result and moves money
// once, like Stripe's idempotent requests.
type fakeCharger struct {
	mu     sync.Mutex
	result jobs.ChargeResult
	seen   map[string]jobs.ChargeResult
	calls  int
}

func (f *fakeCharger) ChargeOffSession(_ context.Context, c models.Charge) (jobs.ChargeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if r, ok := f.seen[c.IdempotencyKey()]; ok {
		return r, nil
	}
	if f.seen == nil {
		f.seen = map[string]jobs.ChargeResult{}
	}
	r := f.result
	r.PaymentIntentID = "pi_" + c.ID
	f.seen[c.IdempotencyKey()] = r
	return r, nil
}

// charged is how many distinct charges reached the card.
func (f *fakeCharger) charged() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

type rechargeWorld struct {
	t     *testing.T
	db    *gorm.DB
	store *models.Store
	org   string
	owner models.Actor
}

// newRechargeWorld is an org with an owner, an admin and a member, a saved
// card, $10 of balance and auto-recharge of $50 below $20.
func newRechargeWorld(t *testing.T, db *gorm.DB) *rechargeWorld {
	t.Helper()
	ctx := context.Background()
	store := models.NewStore(db, models.NewFakeClock(start))
	w := &rechargeWorld{t: t, db: db, store: store, org: models.NewID("org")}
	if err := db.Create(&models.Org{ID: w.org, Name: "Acme", CreatedAt: start}).Error; err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		email string
		role  models.Role
	}{{"owner@example.com", models.RoleOwner}, {"admin@example.com", models.RoleAdmin}, {"member@example.com", models.RoleMember}} {
		u := models.User{ID: models.NewID("usr"), Email: m.email, Name: m.email, CreatedAt: start}
		if err := db.Create(&u).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.Membership{OrgID: w.org, UserID: u.ID, Role: m.role, CreatedAt: start}).Error; err != nil {
			t.Fatal(err)
		}
		if m.role == models.RoleOwner {
			w.owner = models.Actor{OrgID: w.org, UserID: u.ID, Role: m.role, Name: m.email}
		}
	}
	if _, err := store.Deposit(ctx, w.org, 10*models.Micro, "test-deposit", "test"); err != nil {
		t.Fatal(err)
	}
	if err := store.SaveCard(ctx, w.org, "cus_1", "pm_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.As(w.owner).SetAutoRecharge(ctx, true, 20*models.Micro, 50*models.Micro); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *rechargeWorld) balance() models.Money {
	w.t.Helper()
	b, err := w.store.Balance(context.Background(), w.org)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

func (w *rechargeWorld) charges() []models.Charge {
	w.t.Helper()
	cs, err := w.store.Charges(context.Background(), w.org)
	if err != nil {
		w.t.Fatal(err)
	}
	return cs
}

func (w *rechargeWorld) mails() []models.OutboxMail {
	w.t.Helper()
	ms, err := views.RenderedMails(w.store.OutboxMails(context.Background(), 100))
	if err != nil {
		w.t.Fatal(err)
	}
	return ms
}

func (w *rechargeWorld) webhook(id string, ev models.PaymentEvent) bool {
	w.t.Helper()
	ev.ID, ev.OrgID, ev.PaymentIntent = id, w.org, true
	ev.Failed = ev.Type == "payment_intent.payment_failed"
	if ev.Currency == "" {
		ev.Currency = "usd"
	}
	credited, err := w.store.ApplyPaymentEvent(context.Background(), ev)
	if err != nil {
		w.t.Fatal(err)
	}
	return credited
}

// B4: below the threshold the job writes the charge row first, charges the
// saved card once and credits once, whether the PaymentIntent's result or
// the payment_intent.succeeded webhook arrives first.
func TestChargesSucceed(t *testing.T) {
	ctx := context.Background()
	t.Run("result first", func(t *testing.T) {
		modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
			w := newRechargeWorld(t, db)
			fake := &fakeCharger{result: jobs.ChargeResult{Status: models.ChargeSucceeded}}
			job := &jobs.Charges{Store: w.store, Charger: fake}
			if err := job.Run(ctx); err != nil {
				t.Fatal(err)
			}
			cs := w.charges()
			if len(cs) != 1 || cs[0].Status != models.ChargeSucceeded || cs[0].Amount != 50*models.Micro || fake.charged() != 1 {
				t.Fatalf("charges %+v, %d charged", cs, fake.charged())
			}
			if w.balance() != 60*models.Micro {
				t.Fatalf("balance %d, want $60", w.balance())
			}
			if w.webhook("evt_late", models.PaymentEvent{Type: "payment_intent.succeeded", ChargeID: cs[0].ID,
				PaymentIntentID: cs[0].PaymentIntentID, Paid: true, Amount: 50 * models.Micro}) || w.balance() != 60*models.Micro {
				t.Fatalf("the webhook after the result credited again: balance %d", w.balance())
			}
			if err := job.Run(ctx); err != nil || fake.calls != 1 {
				t.Fatalf("above the threshold the job charged again: %d calls, %v", fake.calls, err)
			}
			w.webhook("evt_odd", models.PaymentEvent{Type: "payment_intent.payment_failed", ChargeID: cs[0].ID, FailureCode: "card_declined"})
			if p, _ := w.store.ChargeProblem(ctx, w.org); p != nil || w.charges()[0].Status != models.ChargeSucceeded || len(w.mails()) != 0 {
				t.Fatalf("a failure after the success changed the charge: %+v, problem %+v", w.charges()[0], p)
			}
		})
	})
	t.Run("webhook first", func(t *testing.T) {
		modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
			w := newRechargeWorld(t, db)
			fake := &fakeCharger{result: jobs.ChargeResult{Status: models.ChargePending}}
			job := &jobs.Charges{Store: w.store, Charger: fake}
			if err := job.Run(ctx); err != nil {
				t.Fatal(err)
			}
			cs := w.charges()
			if len(cs) != 1 || cs[0].Status != models.ChargePending || cs[0].PaymentIntentID == "" || w.balance() != 10*models.Micro {
				t.Fatalf("processing charge %+v, balance %d", cs, w.balance())
			}
			if err := job.Run(ctx); err != nil || fake.calls != 1 || len(w.charges()) != 1 {
				t.Fatalf("a processing charge was sent again or doubled: %d calls, %d rows, %v", fake.calls, len(w.charges()), err)
			}
			ev := models.PaymentEvent{Type: "payment_intent.succeeded", ChargeID: cs[0].ID, PaymentIntentID: cs[0].PaymentIntentID,
				Paid: true, Amount: 50 * models.Micro}
			if !w.webhook("evt_1", ev) || w.balance() != 60*models.Micro {
				t.Fatalf("the webhook did not credit: balance %d", w.balance())
			}
			if w.webhook("evt_1", ev) || w.webhook("evt_2", ev) || w.balance() != 60*models.Micro {
				t.Fatalf("a repeated webhook credited again: balance %d", w.balance())
			}
			if _, err := w.store.SettleCharge(ctx, w.org, cs[0].ID, cs[0].PaymentIntentID); err != nil || w.balance() != 60*models.Micro {
				t.Fatalf("a late result credited again: balance %d, %v", w.balance(), err)
			}
		})
	})
}

// B4: a decline or authentication_required is recorded on the row, pauses
// auto-recharge (no blind retry on the next tick), mails each owner and
// admin once, and re-enabling lets the next tick charge again.
func TestChargesFail(t *testing.T) {
	ctx := context.Background()
	for _, code := range []string{"card_declined", "authentication_required"} {
		t.Run(code, func(t *testing.T) {
			modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
				w := newRechargeWorld(t, db)
				fake := &fakeCharger{result: jobs.ChargeResult{Status: models.ChargeFailed, FailureCode: code, Message: "no"}}
				job := &jobs.Charges{Store: w.store, Charger: fake}
				for range 3 {
					if err := job.Run(ctx); err != nil {
						t.Fatal(err)
					}
				}
				cs := w.charges()
				if len(cs) != 1 || cs[0].Status != models.ChargeFailed || cs[0].FailureCode != code || fake.calls != 1 {
					t.Fatalf("charges %+v after %d calls: want one failed, not retried", cs, fake.calls)
				}
				if w.balance() != 10*models.Micro {
					t.Fatalf("balance %d after a failed charge", w.balance())
				}
				p, err := w.store.ChargeProblem(ctx, w.org)
				if err != nil || p == nil || p.ID != cs[0].ID || p.AuthenticationRequired() != (code == "authentication_required") {
					t.Fatalf("problem %+v %v", p, err)
				}
				to := map[string]int{}
				for _, m := range w.mails() {
					to[m.To]++
				}
				if len(to) != 2 || to["owner@example.com"] != 1 || to["admin@example.com"] != 1 {
					t.Fatalf("mails %v, want one to the owner and one to the admin", to)
				}
				// A late payment_intent.payment_failed webhook changes nothing more.
				w.webhook("evt_f", models.PaymentEvent{Type: "payment_intent.payment_failed", ChargeID: cs[0].ID, FailureCode: code})
				if len(w.mails()) != 2 {
					t.Fatalf("the failure webhook mailed again: %d mails", len(w.mails()))
				}
				if _, err := w.store.As(w.owner).SetAutoRecharge(ctx, true, 20*models.Micro, 50*models.Micro); err != nil {
					t.Fatal(err)
				}
				if p, _ := w.store.ChargeProblem(ctx, w.org); p != nil {
					t.Fatalf("re-enabled, the problem still shows: %+v", p)
				}
				fake.result = jobs.ChargeResult{Status: models.ChargeSucceeded}
				if err := job.Run(ctx); err != nil || fake.calls != 2 || w.balance() != 60*models.Micro {
					t.Fatalf("after re-enabling: %d calls, balance %d, %v", fake.calls, w.balance(), err)
				}
			})
		})
	}
}

// B4: two charges jobs at once (two instances, real goroutines) write one
// charge row and charge the card once.
func TestChargesConcurrent(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newRechargeWorld(t, db)
		fake := &fakeCharger{result: jobs.ChargeResult{Status: models.ChargeSucceeded}}
		stores := []*models.Store{w.store, models.NewStore(modelstest.SecondInstance(t, db), w.store.Clock)}
		var wg sync.WaitGroup
		errs := make([]error, len(stores))
		for i, s := range stores {
			wg.Go(func() { errs[i] = (&jobs.Charges{Store: s, Charger: fake}).Run(context.Background()) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if cs := w.charges(); len(cs) != 1 || fake.charged() != 1 || w.balance() != 60*models.Micro {
			t.Fatalf("%d charge rows, %d charged, balance %d: want one charge of $50", len(cs), fake.charged(), w.balance())
		}
	})
}

// B4: the Stripe customer comes from checkout.session.completed and the
// card from the top-up's payment_intent.succeeded (the session names its
// PaymentIntent only by id); a new card lifts a pause.
func TestCardSavedFromWebhooks(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newRechargeWorld(t, db)
		tu, err := w.store.CreateTopUp(ctx, w.org, 25*models.Micro, false, "owner@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.store.FailCharge(ctx, w.org, "ch_none", "", "card_declined", ""); err == nil {
			t.Fatal("failing an unknown charge succeeded")
		}
		fake := &fakeCharger{result: jobs.ChargeResult{Status: models.ChargeFailed, FailureCode: "card_declined"}}
		if err := (&jobs.Charges{Store: w.store, Charger: fake}).Run(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.store.AttachCheckout(ctx, w.org, tu.ID, "cs_2"); err != nil {
			t.Fatal(err)
		}
		if _, err := w.store.ApplyPaymentEvent(ctx, models.PaymentEvent{ID: "evt_cs2", Type: "checkout.session.completed", CheckoutComplete: true,
			OrgID: w.org, TopUpID: tu.ID, SessionID: "cs_2", CustomerID: "cus_2", Amount: 25 * models.Micro, Currency: "usd", Paid: true}); err != nil {
			t.Fatal(err)
		}
		a, _ := w.store.AutoRechargeFor(ctx, w.org)
		if a.CustomerID != "cus_2" || a.PaymentMethodID != "pm_1" || a.PausedBy == "" {
			t.Fatalf("after checkout: %+v, want the new customer, the old card, still paused", a)
		}
		w.webhook("evt_pi", models.PaymentEvent{Type: "payment_intent.succeeded", TopUpID: tu.ID, CustomerID: "cus_2", PaymentMethodID: "pm_2", Paid: true})
		a, _ = w.store.AutoRechargeFor(ctx, w.org)
		if a.PaymentMethodID != "pm_2" || a.PausedBy != "" {
			t.Fatalf("after the payment: %+v, want the new card and no pause", a)
		}
	})
}

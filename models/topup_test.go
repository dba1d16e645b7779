package models_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

func completed(id, topUp, org string, amount models.Money) models.PaymentEvent {
	return models.PaymentEvent{ID: id, Type: "checkout.session.completed", CheckoutComplete: true, OrgID: org, TopUpID: topUp,
		SessionID: "cs_" + topUp, Amount: amount, Currency: "usd", Paid: true}
}

// B4: only a verified, paid checkout.session.completed credits a top-up,
// once, whatever repeats; unknown events and other organisations' top-ups
// change nothing; the balance is the sum of the ledger after each step.
func TestTopUpWebhookCreditsOnce(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		ctx := context.Background()
		before, _ := e.s.Balance(ctx, e.org.ID)
		for _, bad := range []models.Money{4_990_000, 5_000_001, -5} {
			if _, err := e.s.CreateTopUp(ctx, e.org.ID, bad, false, "a"); err == nil {
				t.Errorf("top-up of %d accepted", bad)
			}
		}
		tu, err := e.s.CreateTopUp(ctx, e.org.ID, 25*models.Micro, false, "a@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.AttachCheckout(ctx, e.org.ID, tu.ID, "cs_"+tu.ID); err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			name string
			ev   models.PaymentEvent
			want bool
		}{
			{"unknown event", models.PaymentEvent{ID: "evt_0", Type: "customer.created", OrgID: e.org.ID, TopUpID: tu.ID, Amount: 25 * models.Micro, Paid: true}, false},
			{"unpaid session", func() models.PaymentEvent {
				ev := completed("evt_unpaid", tu.ID, e.org.ID, 25*models.Micro)
				ev.Paid = false
				return ev
			}(), false},
			{"another org's metadata", completed("evt_x", tu.ID, "org_other", 25*models.Micro), false},
			{"paid", completed("evt_1", tu.ID, e.org.ID, 25*models.Micro), true},
			{"repeated delivery", completed("evt_1", tu.ID, e.org.ID, 25*models.Micro), false},
			{"another event for the same top-up", completed("evt_2", tu.ID, e.org.ID, 25*models.Micro), false},
		}
		for _, st := range steps {
			got, err := e.s.ApplyPaymentEvent(ctx, st.ev)
			if err != nil || got != st.want {
				t.Errorf("%s: credited %v, %v; want %v", st.name, got, err, st.want)
			}
			e.checkBalance(t)
		}
		if bal, _ := e.s.Balance(ctx, e.org.ID); bal != before+25*models.Micro {
			t.Errorf("balance %d, want %d", bal, before+25*models.Micro)
		}
		if got, _ := e.s.TopUpForOrg(ctx, e.org.ID, tu.ID); got.Status != models.TopUpCompleted || got.CompletedAt == nil {
			t.Errorf("top-up %+v", got)
		}
		if _, err := e.s.CompleteTestTopUp(ctx, e.org.ID, tu.ID); err == nil {
			t.Error("a card top-up was credited as test mode")
		}
	})
}

// B4: deliveries racing each other (real goroutines) credit once.
func TestTopUpConcurrentDeliveries(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		ctx := context.Background()
		before, _ := e.s.Balance(ctx, e.org.ID)
		tu, err := e.s.CreateTopUp(ctx, e.org.ID, 40*models.Micro, false, "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.AttachCheckout(ctx, e.org.ID, tu.ID, "cs_"+tu.ID); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		credits := 0
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := "evt_same"
				if i%2 == 1 {
					id = "evt_other"
				}
				ok, err := e.s.ApplyPaymentEvent(ctx, completed(id, tu.ID, e.org.ID, 40*models.Micro))
				if err != nil {
					t.Errorf("delivery: %v", err)
				}
				if ok {
					mu.Lock()
					credits++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		e.checkBalance(t)
		if bal, _ := e.s.Balance(ctx, e.org.ID); credits != 1 || bal != before+40*models.Micro {
			t.Errorf("credited %d times, balance %d, want once and %d", credits, bal, before+40*models.Micro)
		}
	})
}

// B7: a test-mode top-up is credited at once, once.
func TestTestModeTopUp(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		ctx := context.Background()
		before, _ := e.s.Balance(ctx, e.org.ID)
		tu, err := e.s.CreateTopUp(ctx, e.org.ID, 10*models.Micro, true, "a")
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []bool{true, false} {
			if got, err := e.s.CompleteTestTopUp(ctx, e.org.ID, tu.ID); err != nil || got != want {
				t.Errorf("call %d: credited %v, %v", i, got, err)
			}
		}
		if _, err := e.s.CompleteTestTopUp(ctx, "org_other", tu.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("another org completed it: %v", err)
		}
		if got, _ := e.s.ApplyPaymentEvent(ctx, completed("evt_t", tu.ID, e.org.ID, 10*models.Micro)); got {
			t.Error("a webhook credited a test-mode top-up")
		}
		e.checkBalance(t)
		if bal, _ := e.s.Balance(ctx, e.org.ID); bal != before+10*models.Micro {
			t.Errorf("balance %d", bal)
		}
	})
}

// B4, B7: a top-up requested by a user is an audited use case: the top-up,
// its test-mode credit and the audit entry commit together; a refused
// amount writes none of them.
func TestRequestTopUpAudited(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		e := newMeterEnv(t, db)
		ctx := context.Background()
		before, err := e.s.Balance(ctx, e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.actions().RequestTopUp(ctx, 4*models.Micro, true); err == nil {
			t.Fatal("a $4 top-up was accepted")
		}
		if n, m := e.count(t, &models.TopUp{}), e.count(t, &models.AuditRecord{}); n != 0 || m != 0 {
			t.Fatalf("a refused top-up wrote %d top-ups and %d audit entries", n, m)
		}
		tu, err := e.actions().RequestTopUp(ctx, 25*models.Micro, true)
		if err != nil || tu.Status != models.TopUpCompleted {
			t.Fatalf("test-mode top-up: %+v, %v", tu, err)
		}
		if after, _ := e.s.Balance(ctx, e.org.ID); after-before != 25*models.Micro {
			t.Errorf("balance moved by %d, want $25", after-before)
		}
		var a models.AuditRecord
		if err := db.Where("org_id = ? AND action = ?", e.org.ID, "billing.top_up").Take(&a).Error; err != nil {
			t.Fatalf("no audit entry: %v", err)
		}
		if a.Target != tu.ID || a.Actor != "t@example.com" || a.Detail != "25.00" {
			t.Errorf("audit entry %+v", a)
		}
	})
}

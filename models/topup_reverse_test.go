package models_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// creditedTopUp is a test-mode top-up of amount, credited.
func creditedTopUp(t *testing.T, s *models.Store, orgID string, amount models.Money) models.TopUp {
	t.Helper()
	ctx := context.Background()
	tu, err := s.CreateTopUp(ctx, orgID, amount, true, "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.CompleteTestTopUp(ctx, orgID, tu.ID); err != nil || !ok {
		t.Fatalf("credit: %v %v", ok, err)
	}
	return tu
}

// B1, B9: an operator reverses a credited top-up with a
// reversing ledger entry (the deposit stays), audited; reversing it twice,
// more than it credited, without a reason, a pending top-up or another
// organisation's is refused and writes nothing; the balance may go
// negative.
func TestReverseTopUp(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100*models.Micro)
		op := e.s.As(models.Actor{OrgID: "org_operators", UserID: "usr_op", Name: "op@example.com", IP: "192.0.2.9"})
		tu := creditedTopUp(t, e.s, e.org.ID, 500*models.Micro) // balance $600
		pending, err := e.s.CreateTopUp(ctx, e.org.ID, 50*models.Micro, false, "owner@example.com")
		if err != nil {
			t.Fatal(err)
		}
		entries := func() int64 {
			var n int64
			db.Model(&models.LedgerEntry{}).Where("org_id = ?", e.org.ID).Count(&n)
			return n
		}
		before := entries()
		for _, bad := range []struct{ id, amount, reason, field string }{
			{tu.ID, "", "", "reason"},
			{tu.ID, "500.01", "charge-back", "amount"},
			{tu.ID, "-5", "charge-back", "amount"},
			{tu.ID, "1.234", "charge-back", "amount"},
			{pending.ID, "", "charge-back", "topUp"},
		} {
			if _, err := op.ReverseTopUp(ctx, e.org.ID, bad.id, bad.amount, bad.reason); !hasField(err, bad.field) {
				t.Errorf("%+v: %v", bad, err)
			}
		}
		if _, err := op.ReverseTopUp(ctx, "org_nope", tu.ID, "", "charge-back"); err == nil {
			t.Error("another organisation's top-up was reversed")
		}
		if entries() != before {
			t.Fatal("a refused reversal wrote to the ledger")
		}

		// Two operators at once: one reversal.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = op.ReverseTopUp(ctx, e.org.ID, tu.ID, "", "Card charge-back")
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !hasField(err, "topUp") {
				t.Errorf("the second reversal: %v", err)
			}
		}
		if ok != 1 || entries() != before+1 {
			t.Fatalf("%d reversals succeeded, %d entries written", ok, entries()-before)
		}
		if b, _ := e.s.Balance(ctx, e.org.ID); b != 100*models.Micro {
			t.Errorf("balance after the reversal %s, want $100.00", models.USD(b))
		}
		var rev models.LedgerEntry
		db.Where("org_id = ? AND kind = ?", e.org.ID, models.LedgerRefund).Take(&rev)
		if rev.Amount != -500*models.Micro || !strings.Contains(rev.Description, "Card charge-back") {
			t.Errorf("reversing entry %+v", rev)
		}
		var dep int64
		db.Model(&models.LedgerEntry{}).Where("idem_key = ?", "top-up:"+tu.ID).Count(&dep)
		if dep != 1 {
			t.Error("the top-up's deposit was deleted")
		}
		if _, err := op.ReverseTopUp(ctx, e.org.ID, tu.ID, "1", "again"); !hasField(err, "topUp") {
			t.Errorf("reversed twice: %v", err)
		}
		recs, _, err := e.s.AuditRecords(ctx, e.org.ID, 0, 10)
		if err != nil || len(recs) != 1 || recs[0].Action != "balance.reverse_top_up" || recs[0].Target != tu.ID || recs[0].Actor != "op@example.com" {
			t.Errorf("audit %+v %v", recs, err)
		}
		list, err := e.s.CreditedTopUps(ctx, e.org.ID, 10)
		if err != nil || len(list) != 1 || list[0].Reversed != 500*models.Micro || list[0].ReversedAt == nil {
			t.Errorf("credited top-ups %+v %v", list, err)
		}

		// A partial reversal that takes the balance below zero is allowed.
		small := creditedTopUp(t, e.s, e.org.ID, 20*models.Micro) // $120
		if _, err := e.s.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: e.org.ID, Kind: models.LedgerUsage, Amount: -110 * models.Micro,
			IdemKey: "spent", Description: "usage"}); err != nil {
			t.Fatal(err)
		}
		if _, err := op.ReverseTopUp(ctx, e.org.ID, small.ID, "15.00", "Partial charge-back"); err != nil {
			t.Fatal(err)
		}
		if b, _ := e.s.Balance(ctx, e.org.ID); b != -5*models.Micro {
			t.Errorf("balance %s, want -$5.00", models.USD(b))
		}
	})
}

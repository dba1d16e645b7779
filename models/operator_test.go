package models_test

import (
	"context"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// OP2, B1: an operator's adjustment is a ledger entry with its reason, once
// per form token, audited in the organisation's log; bad input writes nothing.
func TestAdjustBalance(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100*models.Micro)
		op := e.s.As(models.Actor{OrgID: "org_operators", UserID: "usr_op", Name: "op@example.com", IP: "192.0.2.9"})
		for _, bad := range [][3]string{{"", "refund", "t1"}, {"abc", "refund", "t1"}, {"0", "refund", "t1"},
			{"25", "", "t1"}, {"25", "two\nlines", "t1"}, {"2000000", "big", "t1"}, {"25", "refund", ""}} {
			if _, _, err := op.AdjustBalance(ctx, e.org.ID, bad[0], bad[1], bad[2]); !hasField(err, "amount") &&
				!hasField(err, "reason") && !hasField(err, "token") {
				t.Errorf("%q: %v", bad, err)
			}
		}
		if _, _, err := op.AdjustBalance(ctx, "org_nope", "5", "x", "t0"); err == nil {
			t.Error("an unknown organisation was adjusted")
		}
		le, created, err := op.AdjustBalance(ctx, e.org.ID, "-12.50", "Outage credit reversed", "t1")
		if err != nil || !created || le.Amount != -12_500_000 || le.Kind != models.LedgerAdjustment {
			t.Fatalf("adjust: %+v %v %v", le, created, err)
		}
		if _, created, err := op.AdjustBalance(ctx, e.org.ID, "-12.50", "Outage credit reversed", "t1"); err != nil || created {
			t.Errorf("a resubmitted form adjusted again: %v %v", created, err)
		}
		if b, _ := e.s.Balance(ctx, e.org.ID); b != 87_500_000 {
			t.Errorf("balance %d", b)
		}
		recs, _, err := e.s.AuditRecords(ctx, e.org.ID, 0, 10)
		if err != nil || len(recs) != 1 || recs[0].Action != "balance.adjust" || recs[0].Actor != "op@example.com" ||
			recs[0].Detail != "$-12.50: Outage credit reversed" {
			t.Errorf("audit %+v %v", recs, err)
		}
		all, _, err := e.s.AllAuditRecords(ctx, "", 0)
		if err != nil || len(all) != 1 || all[0].OrgName != "Acme" {
			t.Errorf("audit across orgs %+v %v", all, err)
		}
	})
}

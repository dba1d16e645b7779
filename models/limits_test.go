package models_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// B9: top-ups, auto-recharge amounts and operator
// adjustments have a maximum, the default or the operator's; an amount over
// it is a field error and writes nothing.
func TestMoneyLimits(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 100*models.Micro)
		owner := e.s.As(models.Actor{OrgID: e.org.ID, UserID: "usr_o", Name: "o@example.com", Role: models.RoleOwner})
		if _, err := owner.RequestTopUp(ctx, 999_999_999_999_990_000, true); !hasField(err, "amount") {
			t.Errorf("a $999,999,999,999.99 top-up: %v", err)
		}
		if _, err := owner.RequestTopUp(ctx, models.DefaultMaxTopUp+10_000, true); !hasField(err, "amount") {
			t.Errorf("a top-up a cent over the default maximum: %v", err)
		}
		if _, err := owner.RequestTopUp(ctx, models.DefaultMaxTopUp, true); err != nil {
			t.Errorf("a top-up of the default maximum: %v", err)
		}

		e.restartWith(models.Settings{Limits: models.MoneyLimits{MaxTopUp: 100 * models.Micro, MaxAdjustment: 500 * models.Micro}})
		owner = e.s.As(models.Actor{OrgID: e.org.ID, UserID: "usr_o", Name: "o@example.com", Role: models.RoleOwner})
		before, _ := e.s.Balance(ctx, e.org.ID)
		if _, err := owner.RequestTopUp(ctx, 100*models.Micro+10_000, true); !hasField(err, "amount") ||
			!strings.Contains(err.Error(), "$100.00") {
			t.Errorf("a top-up over MAX_TOP_UP_USD: %v", err)
		}
		if err := e.s.SaveCard(ctx, e.org.ID, "cus_1", "pm_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := owner.SetAutoRecharge(ctx, true, 20*models.Micro, 101*models.Micro); !hasField(err, "amount") {
			t.Errorf("a recharge over the maximum: %v", err)
		}
		if _, err := owner.SetAutoRecharge(ctx, true, 1_000_000*models.Micro, 50*models.Micro); !hasField(err, "threshold") {
			t.Errorf("a threshold over the maximum: %v", err)
		}
		if a, _ := e.s.AutoRechargeFor(ctx, e.org.ID); a.Enabled {
			t.Errorf("a refused setting was saved: %+v", a)
		}
		if _, err := owner.SetAutoRecharge(ctx, true, 20*models.Micro, 100*models.Micro); err != nil {
			t.Errorf("a recharge of the maximum: %v", err)
		}
		op := e.s.As(models.Actor{OrgID: "org_operators", UserID: "usr_op", Name: "op@example.com"})
		for _, amount := range []string{"500.01", "-500.01", "999999999999.99"} {
			if _, _, err := op.AdjustBalance(ctx, e.org.ID, amount, "typo", "tok"+amount); !hasField(err, "amount") {
				t.Errorf("adjustment %s over MAX_ADJUSTMENT_USD: %v", amount, err)
			}
		}
		if after, _ := e.s.Balance(ctx, e.org.ID); after != before {
			t.Errorf("refused amounts moved the balance by %d", after-before)
		}
		if _, _, err := op.AdjustBalance(ctx, e.org.ID, "-500", "refund", "tok-ok"); err != nil {
			t.Errorf("an adjustment of the maximum: %v", err)
		}
	})
}

// B9: ledgers credited before the bounds existed (ten
// entries of $999,999,999,999.99) cannot break anyone else's sums: another
// organisation's balance, the operator's ledger gauges and the auto-recharge
// planning all answer; the huge organisation's own balance fails cleanly.
func TestSumsDoNotOverflow(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		e := newLaunchEnv(t, db, 25*models.Micro)
		huge := newLaunchEnvIn(t, db, e.s, 5*models.Micro)
		for i := range 10 {
			le := models.LedgerEntry{ID: models.NewID("le"), OrgID: huge.org.ID, Kind: models.LedgerDeposit,
				Status: models.EntryCompleted, Amount: 999_999_999_999_990_000, IdemKey: fmt.Sprintf("old-%d", i), CreatedAt: t0}
			if err := db.Create(&le).Error; err != nil {
				t.Fatal(err)
			}
		}
		if b, err := e.s.Balance(ctx, e.org.ID); err != nil || b != 25*models.Micro {
			t.Errorf("the other organisation's balance: %d %v", b, err)
		}
		if _, err := e.s.Balance(ctx, huge.org.ID); !errors.Is(err, models.ErrSumOutOfRange) {
			t.Errorf("an out-of-range balance: %v, want ErrSumOutOfRange", err)
		}
		g, err := e.s.MetricsGauges(ctx)
		if err != nil {
			t.Fatalf("gauges: %v", err)
		}
		var deposits float64
		for _, l := range g.Ledger {
			if l.Kind == models.LedgerDeposit && l.Status == models.EntryCompleted {
				deposits = l.USD()
			}
		}
		if want := 9_999_999_999_999.9 + 30; deposits < want*0.999999 || deposits > want*1.000001 {
			t.Errorf("deposits gauge %v, want about %v", deposits, want)
		}
		for _, org := range []string{e.org.ID, huge.org.ID} {
			if err := e.s.SaveCard(ctx, org, "cus_"+org, "pm_"+org); err != nil {
				t.Fatal(err)
			}
			if err := db.Exec("UPDATE auto_recharges SET enabled = ?, threshold = ?, amount = ? WHERE org_id = ?",
				true, 50*models.Micro, 20*models.Micro, org).Error; err != nil {
				t.Fatal(err)
			}
		}
		if n, err := e.s.PlanCharges(ctx); err != nil || n != 1 {
			t.Errorf("planned %d charges, %v; want the one of the organisation below its threshold", n, err)
		}
	})
}

package models_test

import (
	"context"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// ReserveLoginAttempt counts an attempt before the password is checked:
// SlowAfter attempts pass, the next is refused for BaseDelay without being
// counted, a good log-in (ReleaseLoginAttempt) forgets the account's count
// and gives the address its attempt back (A1).
func TestReserveLoginAttempt(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s, clock := acctStore(t, db)
		const email, ip = "ada@example.com", "198.51.100.4"
		reserve := func() *models.LoginBlock {
			t.Helper()
			b, err := s.ReserveLoginAttempt(ctx, email, ip)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		for i := range models.AccountThrottle.SlowAfter {
			if b := reserve(); b != nil {
				t.Fatalf("attempt %d refused: %+v", i+1, b)
			}
		}
		for range 3 { // refused attempts do not extend the wait
			if b := reserve(); b == nil || b.Locked || b.Wait(clock.Now()) != models.AccountThrottle.BaseDelay {
				t.Fatalf("attempt past SlowAfter: %+v, want a %v wait", b, models.AccountThrottle.BaseDelay)
			}
		}
		clock.Advance(models.AccountThrottle.BaseDelay)
		if b := reserve(); b != nil {
			t.Fatalf("after the wait: %+v", b)
		}
		if err := s.ReleaseLoginAttempt(ctx, email, ip); err != nil {
			t.Fatal(err)
		}
		if b := reserve(); b != nil {
			t.Errorf("after a good log-in: %+v", b)
		}
		var row models.LoginThrottle
		if err := db.Where("key = ?", "ip:"+ip).Take(&row).Error; err != nil || row.Failures != models.AccountThrottle.SlowAfter+1 {
			t.Errorf("address count = %d (%v), want %d: refused attempts and the good log-in are not counted",
				row.Failures, err, models.AccountThrottle.SlowAfter+1)
		}
	})
}

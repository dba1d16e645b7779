package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// Two uses of one reset link at the same time: exactly one sets the
// password (the compare-and-swap on used_at), the other finds the link
// spent; links expired more than a day are pruned, fresher ones kept (A1).
func TestPasswordResetSingleUseAndPruned(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clock := models.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
		s := models.NewStore(db, clock)
		if _, _, err := s.Signup(ctx, models.SignupInput{Email: "ada@example.com", Name: "Ada", Password: "correct horse battery", OrgName: "AE"}, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.RequestPasswordReset(ctx, "ada@example.com", "192.0.2.1", "http://x"); err != nil {
			t.Fatal(err)
		}
		mails, err := views.RenderedMails(s.OutboxMails(ctx, 10))
		if err != nil {
			t.Fatal(err)
		}
		token := ""
		for _, m := range mails {
			if _, rest, ok := strings.Cut(m.Text, "http://x/reset-password/"); ok {
				token, _, _ = strings.Cut(rest, "\n")
			}
		}
		if token == "" {
			t.Fatal("no reset link mailed")
		}
		errs := make(chan error, 2)
		for _, pw := range []string{"first new password", "second new password"} {
			go func() { _, err := s.ResetPassword(ctx, token, pw, "", false); errs <- err }()
		}
		ok := 0
		for range 2 {
			if err := <-errs; err == nil {
				ok++
			} else if !errors.Is(err, models.ErrNotFound) {
				t.Errorf("the losing use: %v, want not found", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d uses of one link succeeded, want 1", ok)
		}

		if err := s.RequestPasswordReset(ctx, "ada@example.com", "", "http://x"); err != nil { // a fresh link
			t.Fatal(err)
		}
		clock.Advance(models.PasswordResetTTL + 23*time.Hour)
		if n, err := s.PrunePasswordResets(ctx); err != nil || n != 0 {
			t.Fatalf("pruned %d (%v) before a day past expiry", n, err)
		}
		clock.Advance(2 * time.Hour)
		if n, err := s.PrunePasswordResets(ctx); err != nil || n != 2 {
			t.Fatalf("pruned %d (%v), want both links", n, err)
		}
	})
}

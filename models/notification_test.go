package models_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// E1: models queues typed notifications and writes no mail's words: no
// subject line, no HTML, no mail queued with its words outside the outbox
// itself (mail.go keeps EnqueueMail for rows queued that way before).
// A new mail is a notification kind (see Notification).
func TestModelsWritesNoMailWords(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	words := regexp.MustCompile(`EnqueueMail\(|\bSubject:|<(?:html|body|p|a|div|h1|pre)[ >]`)
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "mail.go" {
			continue
		}
		seen++
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if words.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d writes a mail's words in models (queue a notification kind; views words it): %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	if seen < 50 {
		t.Fatalf("read %d files of models: the scan is not reading the package", seen)
	}
}

type unregisteredMail struct{ X int }

func (unregisteredMail) NotificationKind() string { return "unregistered" }

// E2: Notify stores the kind and its data, which read back as queued; the
// same key twice stores one mail; a bad key, recipient or kind stores
// nothing.
func TestNotifyStoresTypedData(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		s := models.NewStore(db, models.NewFakeClock(now))
		forecast := now.Add(5 * time.Hour)
		n := models.BudgetAlertMail{EnvName: "prod", Month: "2026-11", Percent: 80, Spend: 800 * models.Micro,
			Budget: 1000 * models.Micro, Burn: 40 * models.Micro, ForecastAt: &forecast, Link: "https://deck.example/billing#budgets"}
		for range 2 {
			if err := s.Notify(ctx, "budget:env1:2026-11:80", " owner@acme.example ", n); err != nil {
				t.Fatal(err)
			}
		}
		for _, bad := range []struct {
			key, to string
			n       models.Notification
		}{
			{"", "owner@acme.example", n},
			{strings.Repeat("k", 192), "owner@acme.example", n},
			{"k1", "Owner <owner@acme.example>", n},
			{"k2", "not an address", n},
			{"k3", "owner@acme.example", unregisteredMail{X: 1}},
		} {
			if err := s.Notify(ctx, bad.key, bad.to, bad.n); err == nil {
				t.Errorf("Notify(%q, %q, %T) accepted", bad.key, bad.to, bad.n)
			}
		}
		all, err := s.OutboxMails(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 || all[0].Kind != models.KindBudgetAlertMail || all[0].To != "owner@acme.example" || all[0].Subject != "" {
			t.Fatalf("outbox %+v, want one typed budget alert with no words stored", all)
		}
		back, err := models.DecodeNotification(all[0].Kind, []byte(all[0].Data))
		if err != nil {
			t.Fatal(err)
		}
		got := back.(models.BudgetAlertMail)
		if !got.ForecastAt.Equal(forecast) {
			t.Errorf("forecast %v, want %v", got.ForecastAt, forecast)
		}
		got.ForecastAt = n.ForecastAt
		if !reflect.DeepEqual(got, n) {
			t.Errorf("read back %+v, want %+v", got, n)
		}
	})
}

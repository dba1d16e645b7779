package jobs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

// fakeMailer records what it is asked to send; fail makes the next sends fail.
type fakeMailer struct {
	mu   sync.Mutex
	sent []Message
	fail int
}

func (f *fakeMailer) Send(_ context.Context, m Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return errors.New("451 try again later")
	}
	f.sent = append(f.sent, m)
	return nil
}

func (f *fakeMailer) Transport() string { return "fake" }

func (f *fakeMailer) keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.sent {
		out = append(out, m.Key)
	}
	return out
}

func TestMailJobSendsTheOutboxOnce(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		clock := models.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
		store := models.NewStore(db, clock)
		mailer := &fakeMailer{}
		sched := NewScheduler(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := Register(sched, Deps{Store: store, Providers: providers.Registry{}, Mailer: mailer}); err == nil {
			t.Fatal("a mail job without a renderer for typed notifications was scheduled")
		}
		sched = NewScheduler(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := Register(sched, Deps{Store: store, Providers: providers.Registry{}, Mailer: mailer, RenderMail: views.RenderOutbox[models.OutboxMail]}); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(sched.Names(), "mail") {
			t.Fatalf("jobs = %v, want a mail job", sched.Names())
		}
		for _, k := range []string{"a", "b", "a"} {
			if err := store.EnqueueMail(ctx, models.Mail{Key: "k-" + k, To: k + "@example.com", Subject: "S " + k, Text: "T"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := sched.RunNow(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		if got := sorted(mailer.keys()); !slices.Equal(got, []string{"k-a", "k-b"}) {
			t.Errorf("sent %v, want k-a and k-b once each", got)
		}
		if err := sched.RunNow(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		if got := mailer.keys(); len(got) != 2 {
			t.Errorf("second tick re-sent: %v", got)
		}
		all, _ := store.OutboxMails(ctx, 10)
		for _, m := range all {
			if m.Status() != "sent" || m.Transport != "fake" {
				t.Errorf("mail %s: status %s transport %q", m.Key, m.Status(), m.Transport)
			}
		}

		// A failing server: recorded, retried after the backoff, then sent.
		store.EnqueueMail(ctx, models.Mail{Key: "k-c", To: "c@example.com", Subject: "S", Text: "T"})
		mailer.fail = 1
		if err := sched.RunNow(ctx, "mail"); err == nil {
			t.Error("a failed send should fail the tick (logged, recorded)")
		}
		all, _ = store.OutboxMails(ctx, 10)
		for _, m := range all {
			if m.Key == "k-c" && (m.Status() != "retrying" || m.LastError == "") {
				t.Errorf("after failure: %+v", m)
			}
		}
		clock.Advance(2 * time.Minute)
		if err := sched.RunNow(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		if got := sorted(mailer.keys()); !slices.Equal(got, []string{"k-a", "k-b", "k-c"}) {
			t.Errorf("after retry sent %v", got)
		}

		// A tick that died after sending but before marking sent: the claim
		// expires and the mail is sent again with the same key (Message-ID).
		store.EnqueueMail(ctx, models.Mail{Key: "k-d", To: "d@example.com", Subject: "S", Text: "T"})
		claimed, _ := store.ClaimMails(ctx, "crashed", 10, models.MailClaimTTL)
		if len(claimed) != 1 {
			t.Fatalf("claimed %d", len(claimed))
		}
		_ = mailer.Send(ctx, Message{Key: claimed[0].Key}) // sent, then the process died
		if err := sched.RunNow(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		if n := len(mailer.keys()); n != 4 {
			t.Errorf("claimed mail re-sent before its claim expired: %v", mailer.keys())
		}
		clock.Advance(models.MailClaimTTL + time.Second)
		if err := sched.RunNow(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		if got := mailer.keys(); !slices.Equal(got[3:], []string{"k-d", "k-d"}) {
			t.Errorf("after the crash: %v, want k-d twice with the same key", got)
		}
	})
}

func TestNoMailerNoMailJob(t *testing.T) {
	store := models.NewStore(modelstest.Open(t, "sqlite"), nil)
	sched := NewScheduler(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := Register(sched, Deps{Store: store, Providers: providers.Registry{}}); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(sched.Names(), "mail") {
		t.Error("mail job registered without a mailer")
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

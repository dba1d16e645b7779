package jobs_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/views"
	"gorm.io/gorm"
)

type recordingMailer struct {
	mu   sync.Mutex
	sent []jobs.Message
}

func (r *recordingMailer) Send(_ context.Context, m jobs.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, m)
	return nil
}

func (r *recordingMailer) byKey(key string) (jobs.Message, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.sent {
		if m.Key == key {
			return m, true
		}
	}
	return jobs.Message{}, false
}

// E2: a database upgraded with mails still queued in the outbox's old
// format (subject and bodies stored, no notification kind) sends them after
// the upgrade exactly as stored, beside typed notifications that the mail
// job renders when it sends.
func TestMailQueuedBeforeTypedNotificationsIsSentAfterUpgrade(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		// The schema as it was before typed notifications, with a pending
		// row written as the old enqueue wrote it.
		for _, q := range []string{"ALTER TABLE mail_outbox DROP COLUMN kind", "ALTER TABLE mail_outbox DROP COLUMN data",
			"DELETE FROM schema_migrations WHERE id = '1080_mail_outbox_kind'"} {
			if err := db.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Exec(`INSERT INTO mail_outbox (id, idempotency_key, to_addr, subject, text_body, html_body, created_at,
			attempts, next_attempt_at, claimed_by, transport, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, '', '', '')`,
			"mail_old1", "cluster-ready:cl_old:0:ab", "owner@acme.example", "Cluster old is ready",
			"Your cluster old is ready.\n", "<p>old <b>html</b></p>", now.Add(-time.Hour), now.Add(-time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
		applied, err := models.Migrate(ctx, db)
		if err != nil || len(applied) != 1 || applied[0] != "1080_mail_outbox_kind" {
			t.Fatalf("upgrade applied %v (%v), want the outbox's kind column", applied, err)
		}

		store := models.NewStore(db, models.NewFakeClock(now))
		invite := models.InviteMail{Inviter: "Ada", OrgName: "Acme", Role: string(models.RoleAdmin), ExpiresAt: now.Add(72 * time.Hour),
			Link: "https://deck.example/invites/tok"}
		if err := store.Notify(ctx, "invite:inv1", "bob@acme.example", invite); err != nil {
			t.Fatal(err)
		}
		mailer := &recordingMailer{}
		job := &jobs.Mail{Store: store, Mailer: mailer, Render: views.RenderOutbox[models.OutboxMail]}
		if err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		old, ok := mailer.byKey("cluster-ready:cl_old:0:ab")
		if !ok || old.Subject != "Cluster old is ready" || old.Text != "Your cluster old is ready.\n" || old.HTML != "<p>old <b>html</b></p>" ||
			old.To != "owner@acme.example" {
			t.Errorf("the mail queued before the upgrade was sent as %+v (sent %v)", old, ok)
		}
		inv, ok := mailer.byKey("invite:inv1")
		if !ok || inv.Subject != "Ada invited you to Acme on Clusterdeck" || !strings.Contains(inv.Text, "https://deck.example/invites/tok") ||
			!strings.Contains(inv.HTML, `href="https://deck.example/invites/tok"`) {
			t.Errorf("the typed invite was sent as %+v (sent %v)", inv, ok)
		}
		all, err := store.OutboxMails(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range all {
			if m.Status() != "sent" {
				t.Errorf("mail %s is %s after the tick", m.Key, m.Status())
			}
		}
	})
}

// E2: a typed row the job cannot render (no renderer wired, or a kind this
// build does not know) is a failed attempt kept for a retry, never an empty
// mail, and the other mails of the tick still go.
func TestMailJobNeverSendsAnUnrenderedNotification(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		store := models.NewStore(db, models.NewFakeClock(now))
		reset := models.PasswordResetMail{Name: "Ada", ExpiresAt: now.Add(time.Hour), Link: "https://deck.example/reset-password/t"}
		if err := store.Notify(ctx, "password-reset:r1", "ada@acme.example", reset); err != nil {
			t.Fatal(err)
		}
		mailer := &recordingMailer{}
		if err := (&jobs.Mail{Store: store, Mailer: mailer}).Run(ctx); err == nil || !strings.Contains(err.Error(), "no renderer") {
			t.Errorf("a typed mail without a renderer: %v", err)
		}
		if err := db.Exec(`INSERT INTO mail_outbox (id, idempotency_key, to_addr, subject, text_body, html_body, created_at,
			attempts, next_attempt_at, claimed_by, transport, last_error, kind, data) VALUES (?, ?, ?, '', '', '', ?, 0, ?, '', '', '', ?, ?)`,
			"mail_future", "future:1", "ada@acme.example", now, now, "from_a_newer_build", "{}").Error; err != nil {
			t.Fatal(err)
		}
		if err := store.Notify(ctx, "password-reset:r2", "ada@acme.example", reset); err != nil {
			t.Fatal(err)
		}
		err := (&jobs.Mail{Store: store, Mailer: mailer, Render: views.RenderOutbox[models.OutboxMail]}).Run(ctx)
		if err == nil || !strings.Contains(err.Error(), "from_a_newer_build") {
			t.Errorf("an unknown kind: %v", err)
		}
		mailer.mu.Lock()
		sent := append([]jobs.Message(nil), mailer.sent...)
		mailer.mu.Unlock()
		if len(sent) != 1 || sent[0].Key != "password-reset:r2" || sent[0].Subject != "Reset your Clusterdeck password" {
			t.Fatalf("sent %+v, want only the renderable reset", sent)
		}
		all, err := store.OutboxMails(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range all {
			want := "sent"
			if m.Key == "future:1" || m.Key == "password-reset:r1" {
				want = "retrying"
			}
			if m.Status() != want || (want == "retrying" && m.LastError == "") {
				t.Errorf("mail %s is %s (%q), want %s", m.Key, m.Status(), m.LastError, want)
			}
		}
	})
}

package jobs_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers/mail"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/emersion/go-smtp"
	"gorm.io/gorm"
)

// smtpInbox is a real SMTP server on loopback that keeps what it receives.
type smtpInbox struct {
	mu   sync.Mutex
	msgs []string
}

func (b *smtpInbox) NewSession(*smtp.Conn) (smtp.Session, error) { return &inboxSession{b: b}, nil }

type inboxSession struct{ b *smtpInbox }

func (s *inboxSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *inboxSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *inboxSession) Reset()                               {}
func (s *inboxSession) Logout() error                        { return nil }
func (s *inboxSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	s.b.mu.Lock()
	s.b.msgs = append(s.b.msgs, string(data))
	s.b.mu.Unlock()
	return err
}

func (b *smtpInbox) subjects() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.msgs {
		for _, line := range strings.Split(m, "\r\n") {
			if s, ok := strings.CutPrefix(line, "Subject: "); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func startSMTP(t *testing.T) (*smtpInbox, string) {
	t.Helper()
	inbox := &smtpInbox{}
	srv := smtp.NewServer(inbox)
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return inbox, "smtp://" + ln.Addr().String() + "?starttls=off"
}

type smtpMailer struct{ s *mail.SMTP }

func (m smtpMailer) Send(ctx context.Context, msg jobs.Message) error {
	return m.s.Send(ctx, mail.Message{Key: msg.Key, To: msg.To, Subject: msg.Subject, Text: msg.Text})
}

// E1, E2: a cluster that becomes ready and one that fails each queue one mail
// per recipient through the outbox, however often the jobs run, and the mail
// job delivers each once over real SMTP.
func TestClusterMailsThroughOutboxAndSMTP(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		owner := models.User{ID: models.NewID("usr"), Email: "owner@acme.example", CreatedAt: start}
		if err := db.Create(&owner).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Create(&models.Membership{OrgID: w.org.ID, UserID: owner.ID, Role: models.RoleOwner, CreatedAt: start}).Error; err != nil {
			t.Fatal(err)
		}
		w.job.Mail = &models.ClusterNotify{BaseURL: "https://deck.example"}

		ok := w.launch("H100_80GB", 2, 8)
		w.tick()
		w.run(8*time.Minute, time.Minute)
		if c := w.cluster(ok.ID); c.Status != models.StatusReady {
			t.Fatalf("status %s", c.Status)
		}
		w.tick() // more ticks after the outcome: still one mail
		if err := w.cloud.Inject(sim.Fault{Kind: sim.FaultRefuseCapacity}); err != nil {
			t.Fatal(err)
		}
		bad := w.launch("H100_80GB", 2, 8)
		w.tick()
		if c := w.cluster(bad.ID); c.Status != models.StatusFailed {
			t.Fatalf("status %s", c.Status)
		}

		queued, err := views.RenderedMails(w.store.OutboxMails(ctx, 100))
		if err != nil {
			t.Fatal(err)
		}
		var subjects []string
		for _, m := range queued {
			subjects = append(subjects, m.Subject)
			if m.To != owner.Email {
				t.Errorf("mail to %s, want the owner", m.To)
			}
		}
		if len(queued) != 2 || !strings.Contains(strings.Join(subjects, "|"), "Cluster train is ready") ||
			!strings.Contains(strings.Join(subjects, "|"), "Cluster train failed to start") {
			t.Fatalf("outbox: %v", subjects)
		}

		inbox, url := startSMTP(t)
		sender, err := mail.NewSMTP(url, "Clusterdeck <noreply@deck.example>")
		if err != nil {
			t.Fatal(err)
		}
		job := &jobs.Mail{Store: w.store, Mailer: smtpMailer{sender}, Render: views.RenderOutbox[models.OutboxMail]}
		for range 2 {
			if err := job.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		got := inbox.subjects()
		if len(got) != 2 {
			t.Fatalf("SMTP received %d mails, want 2 (each once): %v", len(got), got)
		}
		for _, m := range inbox.msgs {
			if !strings.Contains(m, "Message-Id:") && !strings.Contains(m, "Message-ID:") {
				t.Errorf("no Message-ID to deduplicate a resend:\n%s", m)
			}
		}
		if !strings.Contains(strings.Join(inbox.msgs, ""), "nothing was billed") {
			t.Error("the failure mail does not say nothing was billed")
		}
	})
}

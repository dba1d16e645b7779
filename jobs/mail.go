package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// Message is one email as the mail job hands it to a Mailer. Key is the
// outbox's idempotency key; senders derive the Message-ID from it, so a mail
// re-sent after a crash (sent, but not yet marked sent) carries the same
// Message-ID and receivers can drop the duplicate.
type Message struct {
	Key     string
	To      string
	Subject string
	Text    string
	HTML    string
}

// Mailer delivers one message (SMTP, or the development mailbox). main
// adapts providers/mail to it. A Mailer may also report its transport name
// ("smtp", "dev_mailbox") with a Transport() string method.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Mail sends the outbox (E2): it claims due rows, sends each, and marks it
// sent, or failed with a backoff. The outbox row commits with the change
// that caused it, so a crash never loses a mail; a tick that dies after
// sending but before marking sent retries once the claim expires.
type Mail struct {
	Store  *models.Store
	Mailer Mailer
	// Render words a typed notification (views.RenderOutbox, wired by
	// main): it fills the row's Subject, Text and HTML. A row queued with
	// its words (Kind "") is sent as stored and needs no Render; a typed
	// row without Render, or that fails to render, is a failed attempt.
	Render func(models.OutboxMail) (models.OutboxMail, error)
	Holder string        // claim owner, for debugging (defaults to "mail")
	Batch  int           // mails per tick (default 50)
	Each   time.Duration // timeout per mail (default 30s)
}

// Name implements Job.
func (j *Mail) Name() string { return "mail" }

// Run implements Job.
func (j *Mail) Run(ctx context.Context) error {
	batch, each, holder := j.Batch, j.Each, j.Holder
	if batch <= 0 {
		batch = 50
	}
	if each <= 0 {
		each = 30 * time.Second
	}
	if holder == "" {
		holder = "mail"
	}
	transport := "smtp"
	if t, ok := j.Mailer.(interface{ Transport() string }); ok {
		transport = t.Transport()
	}
	mails, err := j.Store.ClaimMails(ctx, holder, batch, models.MailClaimTTL)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mails {
		msg, sendErr := j.message(m)
		if sendErr == nil {
			sctx, cancel := context.WithTimeout(ctx, each)
			sendErr = j.Mailer.Send(sctx, msg)
			cancel()
		}
		if sendErr != nil {
			errs = append(errs, fmt.Errorf("mail %s to %s: %w", m.ID, m.To, sendErr))
			if err := j.Store.MarkMailFailed(context.WithoutCancel(ctx), m, sendErr); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := j.Store.MarkMailSent(context.WithoutCancel(ctx), m, transport); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// message is the row as sent: rendered from its notification when typed,
// as stored otherwise (rows queued before typed notifications too).
func (j *Mail) message(m models.OutboxMail) (Message, error) {
	if m.Kind != "" {
		if j.Render == nil {
			return Message{}, fmt.Errorf("no renderer for notification kind %q", m.Kind)
		}
		r, err := j.Render(m)
		if err != nil {
			return Message{}, fmt.Errorf("render: %w", err)
		}
		m = r
	}
	return Message{Key: m.Key, To: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML}, nil
}

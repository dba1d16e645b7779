package web

import (
	"net/http"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// The development mailbox reads the mail outbox (E2). It is registered only
// outside production; with SMTP_URL unset the mail job marks mails delivered
// here instead of sending them. It shows every organisation's mail, which is
// why it never exists in production.

func mailRow(m models.OutboxMail) views.MailRow {
	r := views.MailRow{ID: m.ID, To: m.To, Subject: m.Subject, Key: m.Key, Status: m.Status(),
		Transport: m.Transport, Created: views.FormatTime(m.CreatedAt), LastError: m.LastError}
	if m.SentAt != nil {
		r.Sent = views.FormatTime(*m.SentAt)
	}
	return r
}

// rendered is m as the mail job sends it; a notification that cannot be
// rendered shows why instead of its subject.
func rendered(m models.OutboxMail) models.OutboxMail {
	r, err := views.RenderOutbox(m)
	if err != nil {
		r.Subject = "(cannot render: " + err.Error() + ")"
	}
	return r
}

// devMailbox is GET /dev/mailbox.
func (h *handler) devMailbox(c echo.Context) error {
	mails, err := h.Store.OutboxMails(c.Request().Context(), 200)
	if err != nil {
		return err
	}
	p := views.MailboxPage{Meta: h.meta(c, "Mailbox"), SMTP: h.Config.SMTP}
	for _, m := range mails {
		p.Mails = append(p.Mails, mailRow(rendered(m)))
	}
	return page(c, http.StatusOK, views.MailboxPageView(p), views.MailboxPageView(p))
}

// devMail is GET /dev/mailbox/{id}.
func (h *handler) devMail(c echo.Context) error {
	m, err := h.Store.OutboxMailByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	m = rendered(m)
	p := views.MailPage{Meta: h.meta(c, m.Subject), Mail: mailRow(m), Text: m.Text, HTML: m.HTML}
	return page(c, http.StatusOK, views.MailPageView(p), views.MailPageView(p))
}

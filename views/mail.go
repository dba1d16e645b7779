package views

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"

	"github.com/clusterdeck/clusterdeck/models"
)

// MailParts is a rendered mail: a one-line subject, the plain-text part and
// the HTML part.
type MailParts struct {
	Subject, Text, HTML string
}

// MailSubjectMax is the longest subject, in characters; a longer one is
// cut at a word's end and marked with "…".
const MailSubjectMax = 300

// RenderMail words a typed notification (E1): its subject, its plain text
// and its HTML (the templ mail layout, inline styles only, every value
// escaped). An unknown kind is an error, never an empty mail.
func RenderMail(n models.Notification) (MailParts, error) {
	subject, text, ok := mailText(n)
	if !ok {
		return MailParts{}, fmt.Errorf("views: no mail view for notification kind %q", n.NotificationKind())
	}
	subject = clipWords(strings.Join(strings.Fields(subject), " "), MailSubjectMax)
	var page templ.Component
	if m, isCluster := n.(models.ClusterMail); isCluster && m.Topic == models.ClusterMailReady {
		page = ClusterReadyMail(m)
	} else {
		page = NotificationMail(subject, mailBlocks(text, mailLinks(n)))
	}
	var b bytes.Buffer
	if err := page.Render(context.Background(), &b); err != nil {
		return MailParts{}, fmt.Errorf("views: render %s mail: %w", n.NotificationKind(), err)
	}
	return MailParts{Subject: subject, Text: text, HTML: b.String()}, nil
}

// RenderOutbox fills a queued mail's Subject, Text and HTML from its
// notification. A row queued with its words (Kind "": queued before typed
// notifications, or through EnqueueMail) comes back as stored, so mails in
// a database upgraded with rows still pending are sent as they were queued.
func RenderOutbox(m models.OutboxMail) (models.OutboxMail, error) {
	if m.Kind == "" {
		return m, nil
	}
	n, err := models.DecodeNotification(m.Kind, []byte(m.Data))
	if err != nil {
		return m, err
	}
	p, err := RenderMail(n)
	if err != nil {
		return m, err
	}
	m.Subject, m.Text, m.HTML = p.Subject, p.Text, p.HTML
	return m, nil
}

// RenderedMails renders every row of a listing (the development mailbox,
// tests): RenderedMails(store.OutboxMails(ctx, n)).
func RenderedMails(ms []models.OutboxMail, err error) ([]models.OutboxMail, error) {
	if err != nil {
		return nil, err
	}
	out := make([]models.OutboxMail, len(ms))
	for i, m := range ms {
		if out[i], err = RenderOutbox(m); err != nil {
			return nil, fmt.Errorf("views: mail %s: %w", m.ID, err)
		}
	}
	return out, nil
}

// clipWords cuts s to at most n characters at the last end of a word (a
// space, or within an address a '/', '?', '&', '.' or '-'), marking the cut
// with "…"; s shorter than n comes back whole.
func clipWords(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	cut := len(r) // no word end at all: a hard cut
	for i := len(r) - 1; i > 0; i-- {
		if r[i] == ' ' {
			cut = i
			break
		}
		if strings.ContainsRune("/?&.-", r[i]) {
			cut = i + 1
			break
		}
	}
	return strings.TrimRight(string(r[:cut]), " ") + "…"
}

// mailBlock is a paragraph of a mail's HTML part: lines of text and links,
// or preformatted lines (a command, a summary table).
type mailBlock struct {
	Code  bool
	Text  string       // Code blocks
	Lines [][]mailSpan // paragraphs
}

// mailSpan is text, or a link when Href is set.
type mailSpan struct {
	Text, Href string
}

var mailURL = regexp.MustCompile(`https?://[^\s<>"]+`)

// mailBlocks lays the plain text out for the HTML part: paragraphs are
// separated by a blank line; a paragraph whose lines are all indented is
// preformatted; addresses (and the notification's own links, even
// relative ones) become links.
func mailBlocks(text string, links []string) []mailBlock {
	var out []mailBlock
	for _, para := range strings.Split(strings.TrimRight(text, "\n"), "\n\n") {
		lines := strings.Split(para, "\n")
		code := true
		for _, l := range lines {
			code = code && strings.HasPrefix(l, "  ")
		}
		if code {
			out = append(out, mailBlock{Code: true, Text: strings.Join(lines, "\n")})
			continue
		}
		b := mailBlock{}
		for _, l := range lines {
			b.Lines = append(b.Lines, mailSpans(l, links))
		}
		out = append(out, b)
	}
	return out
}

func mailSpans(line string, links []string) []mailSpan {
	var spans []mailSpan
	text := func(s string) {
		if s == "" {
			return
		}
		if n := len(spans); n > 0 && spans[n-1].Href == "" {
			spans[n-1].Text += s
			return
		}
		spans = append(spans, mailSpan{Text: s})
	}
	for line != "" {
		at, end := -1, 0
		if loc := mailURL.FindStringIndex(line); loc != nil {
			at, end = loc[0], loc[1]
		}
		for _, l := range links {
			if l == "" {
				continue
			}
			if i := strings.Index(line, l); i >= 0 && (at < 0 || i < at) {
				at, end = i, i+len(l)
			}
		}
		if at < 0 {
			text(line)
			break
		}
		href := strings.TrimRight(line[at:end], ".,;:)")
		text(line[:at])
		spans = append(spans, mailSpan{Text: href, Href: href})
		line = line[at+len(href):]
	}
	return spans
}

// mailLinks are a notification's deep links, linked in HTML even when the
// product runs without a public base address (relative links).
func mailLinks(n models.Notification) []string {
	switch m := n.(type) {
	case models.ClusterMail:
		return []string{m.Link}
	case models.GPUStallMail:
		return []string{m.Link}
	case models.GPUIdleMail:
		return []string{m.Link}
	case models.BudgetAlertMail:
		return []string{m.Link}
	case models.BudgetStoppedMail:
		return []string{m.Link}
	case models.BalanceMail:
		return []string{m.Link}
	case models.WebhookPausedMail:
		return []string{m.Link}
	case models.PasswordResetMail:
		return []string{m.Link}
	case models.InviteMail:
		return []string{m.Link}
	case models.QuoteReceivedMail:
		return []string{m.Link}
	case models.QuoteSalesMail:
		return []string{m.Link}
	case models.QuoteStatusMail:
		return []string{m.Link}
	case models.PrivateOfferMail:
		return []string{m.Link}
	}
	return nil
}

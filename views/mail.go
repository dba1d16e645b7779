package views

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"

	"github.com/clusterdeck/clusterdeck/models/domain"
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
func RenderMail(n domain.Notification) (MailParts, error) {
	subject, text, ok := mailText(n)
	if !ok {
		return MailParts{}, fmt.Errorf("views: no mail view for notification kind %q", n.NotificationKind())
	}
	subject = clipWords(strings.Join(strings.Fields(subject), " "), MailSubjectMax)
	var page templ.Component
	if m, isCluster := n.(domain.ClusterMail); isCluster && m.Topic == domain.ClusterMailReady {
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

// Queued is a queued mail as the mail job and the development mailbox hold
// it (the store's outbox row): its id, its notification's kind and data,
// and a copy of it with its words filled in.
type Queued[M any] interface {
	Queued() (id, kind, data string)
	Worded(subject, text, html string) M
}

// RenderOutbox fills a queued mail's subject, text and HTML from its
// notification. A row queued with its words (kind "": queued before typed
// notifications, or through EnqueueMail) comes back as stored, so mails in
// a database upgraded with rows still pending are sent as they were queued.
func RenderOutbox[M Queued[M]](m M) (M, error) {
	_, kind, data := m.Queued()
	if kind == "" {
		return m, nil
	}
	n, err := domain.DecodeNotification(kind, []byte(data))
	if err != nil {
		return m, err
	}
	p, err := RenderMail(n)
	if err != nil {
		return m, err
	}
	return m.Worded(p.Subject, p.Text, p.HTML), nil
}

// RenderedMails renders every row of a listing (the development mailbox,
// tests): RenderedMails(store.OutboxMails(ctx, n)).
func RenderedMails[M Queued[M]](ms []M, err error) ([]M, error) {
	if err != nil {
		return nil, err
	}
	out := make([]M, len(ms))
	for i, m := range ms {
		if out[i], err = RenderOutbox(m); err != nil {
			id, _, _ := m.Queued()
			return nil, fmt.Errorf("views: mail %s: %w", id, err)
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
func mailLinks(n domain.Notification) []string {
	switch m := n.(type) {
	case domain.ClusterMail:
		return []string{m.Link}
	case domain.GPUStallMail:
		return []string{m.Link}
	case domain.GPUIdleMail:
		return []string{m.Link}
	case domain.BudgetAlertMail:
		return []string{m.Link}
	case domain.BudgetStoppedMail:
		return []string{m.Link}
	case domain.BalanceMail:
		return []string{m.Link}
	case domain.WebhookPausedMail:
		return []string{m.Link}
	case domain.PasswordResetMail:
		return []string{m.Link}
	case domain.InviteMail:
		return []string{m.Link}
	case domain.QuoteReceivedMail:
		return []string{m.Link}
	case domain.QuoteSalesMail:
		return []string{m.Link}
	case domain.QuoteStatusMail:
		return []string{m.Link}
	case domain.PrivateOfferMail:
		return []string{m.Link}
	case domain.ReservationMail:
		return []string{m.Link}
	}
	return nil
}

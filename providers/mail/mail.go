// Package mail sends Clusterdeck's emails: an SMTP sender (SMTP_URL) and the
// development mailbox, whose "sending" only marks a mail delivered so the
// /dev/mailbox page shows it. It imports nothing of the module; the mail job
// adapts its Message in main.
package mail

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one email. Key is the sender's idempotency key: the Message-ID
// is derived from it, so a mail retried after a crash carries the same
// Message-ID and receivers can drop the duplicate.
type Message struct {
	Key     string
	To      string
	Subject string
	Text    string
	HTML    string // optional
}

// DevMailbox is the development "sender": mails stay in the outbox table,
// marked delivered, and the /dev/mailbox page shows them.
type DevMailbox struct{}

// Send implements the mail job's Mailer; it delivers nowhere.
func (DevMailbox) Send(context.Context, Message) error { return nil }

// Transport names where the mail went.
func (DevMailbox) Transport() string { return "dev_mailbox" }

// SMTP sends through an SMTP server given as a URL:
//
//	smtp://user:pass@host:587   STARTTLS required (plain only to a loopback host)
//	smtp://host:25?starttls=off plain SMTP (a local relay; never with credentials off loopback)
//	smtps://user:pass@host:465  implicit TLS
type SMTP struct {
	addr      string
	host      string
	from      *mail.Address
	user      string
	pass      string
	implicit  bool // smtps
	starttls  bool
	tlsConfig *tls.Config
	timeout   time.Duration
	now       func() time.Time
}

// Option configures an SMTP sender.
type Option func(*SMTP)

// WithTLSConfig sets the TLS configuration (tests trust their own CA).
func WithTLSConfig(c *tls.Config) Option { return func(s *SMTP) { s.tlsConfig = c } }

// WithClock sets the clock used for the Date header.
func WithClock(now func() time.Time) Option { return func(s *SMTP) { s.now = now } }

// NewSMTP parses the SMTP_URL and the MAIL_FROM address.
func NewSMTP(rawURL, from string, opts ...Option) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("mail: SMTP_URL is not a URL")
	}
	s := &SMTP{timeout: 30 * time.Second, now: time.Now}
	switch u.Scheme {
	case "smtp":
	case "smtps":
		s.implicit = true
	default:
		return nil, fmt.Errorf("mail: SMTP_URL scheme must be smtp or smtps, not %q", u.Scheme)
	}
	s.host = u.Hostname()
	if s.host == "" {
		return nil, errors.New("mail: SMTP_URL needs a host")
	}
	port := u.Port()
	if port == "" {
		port = map[bool]string{true: "465", false: "587"}[s.implicit]
	}
	s.addr = net.JoinHostPort(s.host, port)
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	loopback := isLoopback(s.host)
	switch v := u.Query().Get("starttls"); v {
	case "", "auto":
		s.starttls = !s.implicit && !loopback
	case "on", "required":
		s.starttls = !s.implicit
	case "off":
		s.starttls = false
	default:
		return nil, fmt.Errorf("mail: SMTP_URL starttls must be on, off or auto, not %q", v)
	}
	if s.user != "" && !s.implicit && !s.starttls && !loopback {
		return nil, errors.New("mail: refusing to send SMTP credentials without TLS; use smtps:// or STARTTLS")
	}
	if s.from, err = mail.ParseAddress(from); err != nil {
		return nil, fmt.Errorf("mail: MAIL_FROM %q is not an address: %w", from, err)
	}
	for _, o := range opts {
		o(s)
	}
	if s.tlsConfig == nil {
		s.tlsConfig = &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}
	}
	return s, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Transport names where the mail went.
func (s *SMTP) Transport() string { return "smtp" }

// Send delivers one message, honouring ctx's deadline.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	to, err := mail.ParseAddress(m.To)
	if err != nil {
		return fmt.Errorf("mail: recipient %q: %w", m.To, err)
	}
	body, err := s.compose(m, to)
	if err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(s.timeout)
	}
	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("mail: dial %s: %w", s.addr, err)
	}
	_ = conn.SetDeadline(deadline)
	var c *smtp.Client
	if s.starttls {
		// STARTTLS greets the server itself (as "localhost").
		if c, err = smtp.NewClientStartTLS(conn, s.tlsConfig); err != nil {
			conn.Close()
			return fmt.Errorf("mail: starttls: %w", err)
		}
	} else {
		if s.implicit {
			conn = tls.Client(conn, s.tlsConfig)
		}
		c = smtp.NewClient(conn)
		if err := c.Hello(heloName(s.from.Address)); err != nil {
			c.Close()
			return fmt.Errorf("mail: hello: %w", err)
		}
	}
	defer c.Close()
	if s.user != "" {
		if err := c.Auth(sasl.NewPlainClient("", s.user, s.pass)); err != nil {
			return fmt.Errorf("mail: auth: %w", err)
		}
	}
	if err := c.SendMail(s.from.Address, []string{to.Address}, bytes.NewReader(body)); err != nil {
		return fmt.Errorf("mail: send: %w", err)
	}
	return c.Quit()
}

func heloName(from string) string {
	if i := strings.LastIndexByte(from, '@'); i >= 0 && i+1 < len(from) {
		return from[i+1:]
	}
	return "localhost"
}

// MessageID is the Message-ID header derived from a mail's key and the
// sender's domain: the same key always gives the same id.
func MessageID(key, from string) string {
	sum := sha256.Sum256([]byte(key))
	return "<" + hex.EncodeToString(sum[:16]) + "@" + heloName(from) + ">"
}

// compose renders the RFC 5322 message: text/plain, or multipart/alternative
// with an HTML part, quoted-printable UTF-8.
func (s *SMTP) compose(m Message, to *mail.Address) ([]byte, error) {
	if strings.ContainsAny(m.Subject, "\r\n") {
		return nil, errors.New("mail: subject contains a line break")
	}
	var b bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", s.from.String())
	h("To", to.String())
	h("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	h("Date", s.now().UTC().Format(time.RFC1123Z))
	h("Message-ID", MessageID(m.Key, s.from.Address))
	h("MIME-Version", "1.0")
	h("Auto-Submitted", "auto-generated")
	if m.HTML == "" {
		h("Content-Type", "text/plain; charset=utf-8")
		h("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		if err := writeQP(&b, m.Text); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	mw := multipart.NewWriter(&b)
	h("Content-Type", `multipart/alternative; boundary="`+mw.Boundary()+`"`)
	b.WriteString("\r\n")
	for _, part := range []struct{ typ, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
		w, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.typ + "; charset=utf-8"},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		if err := writeQP(w, part.body); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type writer interface{ Write([]byte) (int, error) }

func writeQP(w writer, s string) error {
	qp := quotedprintable.NewWriter(w)
	// Text mode turns "\n" and "\r\n" alike into CRLF line breaks.
	if _, err := qp.Write([]byte(s)); err != nil {
		return err
	}
	return qp.Close()
}

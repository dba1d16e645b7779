package mail

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// received is one message the in-process SMTP server accepted.
type received struct {
	from, user string
	to         []string
	data       []byte
}

// backend is a real go-smtp server backend that records what it receives
// and checks PLAIN credentials.
type backend struct {
	mu   sync.Mutex
	got  []received
	user string
	pass string
}

func (b *backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{b: b}, nil }

type session struct {
	b   *backend
	cur received
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.b.user || pass != s.b.pass {
			return errors.New("invalid credentials")
		}
		s.cur.user = user
		return nil
	}), nil
}
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.b.user != "" && s.cur.user == "" {
		return smtp.ErrAuthRequired
	}
	s.cur.from = from
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = data
	s.b.mu.Lock()
	s.b.got = append(s.b.got, s.cur)
	s.b.mu.Unlock()
	return nil
}
func (s *session) Reset()        { s.cur = received{user: s.cur.user} }
func (s *session) Logout() error { return nil }

// startServer runs a go-smtp server on 127.0.0.1:0. mode is "plain",
// "starttls" or "tls".
func startServer(t *testing.T, be *backend, mode string, cert *tls.Certificate) string {
	t.Helper()
	srv := smtp.NewServer(be)
	srv.Domain = "mx.test"
	srv.AllowInsecureAuth = mode == "plain"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.ErrorLog = testLogger{t}
	var ln net.Listener
	var err error
	if cert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	if mode == "tls" {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, v ...any) { l.t.Logf("smtp server: "+format, v...) }
func (l testLogger) Println(v ...any)               { l.t.Log(append([]any{"smtp server:"}, v...)...) }

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (*tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mx.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestSMTPAgainstARealServer(t *testing.T) {
	cert, pool := selfSigned(t)
	fixed := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, mode, url string
	}{
		{"plain with auth on loopback", "plain", "smtp://deck:s3cret@%s"},
		{"starttls required", "starttls", "smtp://deck:s3cret@%s?starttls=on"},
		{"implicit tls", "tls", "smtps://deck:s3cret@%s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := &backend{user: "deck", pass: "s3cret"}
			addr := startServer(t, be, tt.mode, cert)
			s, err := NewSMTP(strings.Replace(tt.url, "%s", addr, 1), "Clusterdeck <noreply@deck.example>",
				WithTLSConfig(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}), WithClock(func() time.Time { return fixed }))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			msg := Message{Key: "invite:inv_1", To: "ada@example.com", Subject: "Join Ünïcode Org",
				Text: "Hello Ada,\nopen https://deck.example/invites/abc to join.\n", HTML: "<p>Hello <b>Ada</b></p>"}
			if err := s.Send(ctx, msg); err != nil {
				t.Fatal(err)
			}
			// A retry after a crash carries the same Message-ID.
			if err := s.Send(ctx, msg); err != nil {
				t.Fatal(err)
			}
			be.mu.Lock()
			defer be.mu.Unlock()
			if len(be.got) != 2 {
				t.Fatalf("server got %d messages", len(be.got))
			}
			r := be.got[0]
			if r.user != "deck" || r.from != "noreply@deck.example" || len(r.to) != 1 || r.to[0] != "ada@example.com" {
				t.Errorf("envelope = %+v", r)
			}
			m, err := mail.ReadMessage(strings.NewReader(string(r.data)))
			if err != nil {
				t.Fatal(err)
			}
			subj, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
			if subj != msg.Subject {
				t.Errorf("subject = %q", subj)
			}
			id := m.Header.Get("Message-ID")
			if id != MessageID("invite:inv_1", "noreply@deck.example") || !strings.HasSuffix(id, "@deck.example>") {
				t.Errorf("Message-ID = %q", id)
			}
			m2, _ := mail.ReadMessage(strings.NewReader(string(be.got[1].data)))
			if m2.Header.Get("Message-ID") != id {
				t.Error("the retried send has another Message-ID")
			}
			if d, _ := m.Header.Date(); !d.Equal(fixed) {
				t.Errorf("Date = %v", d)
			}
			_, params, _ := mime.ParseMediaType(m.Header.Get("Content-Type"))
			mr := multipart.NewReader(m.Body, params["boundary"])
			var parts []string
			for {
				p, err := mr.NextPart()
				if err != nil {
					break
				}
				b, _ := io.ReadAll(quotedprintable.NewReader(p))
				parts = append(parts, p.Header.Get("Content-Type")+"|"+string(b))
			}
			if len(parts) != 2 || !strings.Contains(parts[0], "open https://deck.example/invites/abc to join.") ||
				!strings.HasPrefix(parts[1], "text/html") || !strings.Contains(parts[1], "<b>Ada</b>") {
				t.Errorf("parts = %q", parts)
			}
		})
	}
}

func TestSMTPWrongPasswordFails(t *testing.T) {
	be := &backend{user: "deck", pass: "s3cret"}
	addr := startServer(t, be, "plain", nil)
	s, err := NewSMTP("smtp://deck:nope@"+addr, "noreply@deck.example")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), Message{Key: "k", To: "a@example.com", Subject: "s", Text: "t"})
	if err == nil || !strings.Contains(err.Error(), "auth") {
		t.Errorf("err = %v, want an auth failure", err)
	}
}

func TestSMTPTextOnly(t *testing.T) {
	be := &backend{}
	addr := startServer(t, be, "plain", nil)
	s, err := NewSMTP("smtp://"+addr, "noreply@deck.example")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), Message{Key: "k", To: "a@example.com", Subject: "Hi", Text: "line one\nline two"}); err != nil {
		t.Fatal(err)
	}
	m, _ := mail.ReadMessage(strings.NewReader(string(be.got[0].data)))
	body, _ := io.ReadAll(quotedprintable.NewReader(m.Body))
	if !strings.HasPrefix(m.Header.Get("Content-Type"), "text/plain") || strings.TrimRight(string(body), "\r\n") != "line one\r\nline two" {
		t.Errorf("content-type %q body %q", m.Header.Get("Content-Type"), body)
	}
}

func TestNewSMTPConfig(t *testing.T) {
	tests := []struct {
		url, from string
		ok        bool
	}{
		{"smtp://mail.example.com:587", "a@b.c", true},
		{"smtps://u:p@mail.example.com", "a@b.c", true},
		{"smtp://u:p@mail.example.com:25?starttls=off", "a@b.c", false}, // credentials in clear
		{"smtp://u:p@127.0.0.1:25", "a@b.c", true},                      // loopback relay
		{"http://mail.example.com", "a@b.c", false},
		{"smtp://", "a@b.c", false},
		{"smtp://mail.example.com?starttls=maybe", "a@b.c", false},
		{"smtp://mail.example.com", "not an address", false},
	}
	for _, tt := range tests {
		_, err := NewSMTP(tt.url, tt.from)
		if (err == nil) != tt.ok {
			t.Errorf("NewSMTP(%q, %q) err = %v", tt.url, tt.from, err)
		}
	}
	// Header injection through the subject is refused.
	s, _ := NewSMTP("smtp://127.0.0.1:1", "a@b.c")
	if err := s.Send(context.Background(), Message{Key: "k", To: "x@y.z", Subject: "a\r\nBcc: evil@x", Text: "t"}); err == nil {
		t.Error("subject with a line break accepted")
	}
}

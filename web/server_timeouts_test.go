package web

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// X19: the server main runs has read-header, read, write and
// idle timeouts, so one slow client cannot hold a connection (and its
// goroutine) for ever; long-lived answers still work past them. The
// timeouts are the socket's, in real time: the test shrinks them to a few
// hundred milliseconds and waits on the connection, never on a sleep
// longer than that.
func TestServerTimeouts(t *testing.T) {
	if d := DefaultTimeouts; d.ReadHeader <= 0 || d.Read <= 0 || d.Write <= 0 || d.Idle <= 0 {
		t.Fatalf("DefaultTimeouts %+v: every timeout must be set", d)
	}
	s := HTTPServer(http.NotFoundHandler(), DefaultTimeouts)
	if s.ReadHeaderTimeout != DefaultTimeouts.ReadHeader || s.ReadTimeout != DefaultTimeouts.Read ||
		s.WriteTimeout != DefaultTimeouts.Write || s.IdleTimeout != DefaultTimeouts.Idle {
		t.Errorf("HTTPServer does not apply the timeouts: %+v", s)
	}
	modelstest.Each(t, testServerTimeouts)
}

func testServerTimeouts(t *testing.T, db *gorm.DB) {
	short := Timeouts{ReadHeader: 300 * time.Millisecond, Read: 300 * time.Millisecond, Write: 300 * time.Millisecond, Idle: 300 * time.Millisecond}
	bin := make([]byte, 48<<20) // more than loopback's socket buffers hold
	for i := range 251 {
		bin[i] = byte(i)
	}
	for n := 251; n < len(bin); n *= 2 { // byte i is i % 251, filled by copies (a byte loop is slow under -race)
		copy(bin[n:], bin[:n])
	}
	sum := sha256.Sum256(bin)
	digest := hex.EncodeToString(sum[:])
	path := filepath.Join(t.TempDir(), agentapi.BinaryFile)
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	app := newTestAppWith(t, db, func(d *Deps) {
		d.AgentBinary = func() (AgentBinary, error) { return AgentBinary{Path: path, SHA256: digest, Version: digest[:12]}, nil }
	})
	srv := httptest.NewUnstartedServer(app.e)
	srv.Config = HTTPServer(app.e, short)
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()

	// A body that never finishes arriving: the connection is closed once
	// the read timeout passes.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /v1/gpu/clusters/quote HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := io.ReadAll(conn); err != nil {
		t.Errorf("a body that never arrives held the connection %v: %v", time.Since(start).Round(time.Millisecond), err)
	}

	// A log stream outlives the read and write timeouts.
	ctx := context.Background()
	acc := app.signupAccount("stream@example.com", "Streams")
	tok := apiKeyFor(t, app, acc)
	cl := launchFor(t, app, acc, "streamer")
	app.store.AppendNodeLogs(ctx, cl, 0, []models.LogInput{{At: testNow, Text: "first"}})
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, srv.URL+"/v1/gpu/clusters/"+cl.ID+"/logs?node=0", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := make(chan string, 10)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- data
			}
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("the log stream ended")
			}
			return e
		case <-sctx.Done():
			t.Fatal("the log stream stalled")
		}
		return ""
	}
	if e := next(); !strings.Contains(e, "first") {
		t.Fatalf("backlog: %s", e)
	}
	<-time.After(3 * short.Write) // past the server's read and write deadlines
	app.store.AppendNodeLogs(ctx, cl, 0, []models.LogInput{{At: testNow, Text: "after the timeouts"}})
	if e := next(); !strings.Contains(e, "after the timeouts") {
		t.Errorf("after the timeouts: %s", e)
	}

	// A download longer than the write timeout completes: a client that
	// pauses after the first bytes still gets every byte.
	dres, err := http.Get(srv.URL + "/agent/" + digest[:12] + "/" + agentapi.BinaryFile)
	if err != nil {
		t.Fatal(err)
	}
	defer dres.Body.Close()
	first := make([]byte, 1024)
	if _, err := io.ReadFull(dres.Body, first); err != nil {
		t.Fatal(err)
	}
	<-time.After(3 * short.Write)
	rest, err := io.ReadAll(dres.Body)
	got := sha256.Sum256(append(first, rest...))
	if err != nil || hex.EncodeToString(got[:]) != digest {
		t.Errorf("a download paused past the write timeout: %d of %d bytes, %v", len(first)+len(rest), len(bin), err)
	}
}

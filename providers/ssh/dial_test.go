package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// A machine whose sshd closes connections before the handshake (starting,
// or shedding load under MaxStartups) is dialled again a few times with a
// short backoff before the placement gives up; a refused host key is not.
func TestDialRetriesAConnectionClosedBeforeTheHandshake(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyPath := write(t, "id_ed25519", string(pem.EncodeToMemory(block)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close() // like sshd dropping a connection under MaxStartups
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	p := &Provider{cfg: Config{DialTimeout: 2 * time.Second}, dialBackoff: time.Millisecond}
	m := Machine{Name: "m1", Host: "127.0.0.1", Port: port, User: "root", KeyPath: keyPath}
	if _, err := p.dial(context.Background(), m); err == nil || !retryableDial(err) {
		t.Fatalf("dial of a closing sshd: %v", err)
	}
	if got := accepted.Load(); got != 4 {
		t.Errorf("connections made: %d, want 4 (one and three retries) on 127.0.0.1:%s", got, strconv.Itoa(port))
	}
	if retryableDial(errHostKey) {
		t.Error("a host key mismatch is retried")
	}
}

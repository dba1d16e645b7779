package ssh

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/clusterdeck/clusterdeck/providers"
)

// OP1: machines from Source (the admin page's) are sold beside the file's
// and read at every ListOffers: one named like a file machine or invalid is
// skipped, and a failing Source fails the listing (the catalog keeps the
// previous offers) instead of selling the file's machines alone as if the
// others were gone.
func TestSourceMachines(t *testing.T) {
	file := []Machine{{Name: "gpu-a", Host: "192.0.2.10", KeyPath: "/k", GPUs: 8, Accelerator: "H100_80GB", Location: "rack-1", PricePerHour: "20"}}
	var extra []Machine
	var srcErr error
	p, err := New(Config{Machines: file, AgentBinary: "/bin/true", Source: func(context.Context) ([]Machine, error) { return extra, srcErr }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if offers, err := p.ListOffers(ctx); err != nil || len(offers) != 1 {
		t.Fatalf("file only: %+v %v", offers, err)
	}
	extra = []Machine{
		{Name: "gpu-a", Host: "192.0.2.99", PrivateKey: []byte("k"), Location: "elsewhere", PricePerHour: "1"}, // the file's name: skipped
		{Name: "desk-1", Host: "192.0.2.20", PrivateKey: []byte("k"), GPUs: 2, Accelerator: "L40S", Location: "office", PricePerHour: "3"},
		{Name: "broken", Host: "", KeyPath: "/k", Location: "office", PricePerHour: "1"}, // invalid: skipped
	}
	offers, err := p.ListOffers(ctx)
	if err != nil || len(offers) != 2 || offers[0].Location != "office" || offers[0].PerGPUHourUSD != 1_500_000 {
		t.Fatalf("with the page's machines: %+v %v", offers, err)
	}
	if m, ok := p.machine("gpu-a"); !ok || m.Host != "192.0.2.10" {
		t.Errorf("the file's gpu-a was replaced: %+v", m)
	}
	srcErr = errors.New("database is down")
	if _, err := p.ListOffers(ctx); !errors.Is(err, providers.ErrTransient) {
		t.Errorf("a failing source: %v", err)
	}
}

// A machine added with a pasted key logs in with that key (no file).
func TestDialWithPastedKey(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, _ := gossh.NewSignerFromKey(hostPriv)
	srv := &gossh.ServerConfig{PublicKeyCallback: func(_ gossh.ConnMetadata, k gossh.PublicKey) (*gossh.Permissions, error) {
		if bytes.Equal(k.Marshal(), signer.PublicKey().Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	srv.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if sc, _, _, err := gossh.NewServerConn(c, srv); err == nil {
					sc.Close()
				}
			}()
		}
	}()
	m := Machine{Name: "desk-1", Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, User: "root",
		PrivateKey: pem.EncodeToMemory(block), Location: "office", PricePerHour: "1"}
	p, err := New(Config{AgentBinary: "/bin/true", DialTimeout: 2 * time.Second,
		Source: func(context.Context) ([]Machine, error) { return []Machine{m}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := p.current(context.Background())
	if err != nil || len(ms) != 1 {
		t.Fatalf("machines: %+v %v", ms, err)
	}
	c, err := p.dialOnce(context.Background(), ms[0])
	if err != nil {
		t.Fatalf("dial with the pasted key: %v", err)
	}
	c.Close()
}

// X2: a machine the product quarantined (PlaceRequest.Avoid)
// is never placed: with both alike machines of the offer free and one
// avoided, a two-machine placement has not enough machines, and nothing is
// dialled.
func TestPlaceGroupAvoidsQuarantined(t *testing.T) {
	file := []Machine{
		{Name: "gpu-a", Host: "192.0.2.10", KeyPath: "/k", GPUs: 8, Accelerator: "H100_80GB", Location: "rack-1", PricePerHour: "20"},
		{Name: "gpu-b", Host: "192.0.2.11", KeyPath: "/k", GPUs: 8, Accelerator: "H100_80GB", Location: "rack-1", PricePerHour: "20"},
	}
	p, err := New(Config{Machines: file, AgentBinary: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	offers, err := p.ListOffers(ctx)
	if err != nil || len(offers) != 1 {
		t.Fatalf("offers %+v %v", offers, err)
	}
	req := providers.PlaceRequest{GroupName: "cl_lemon", OfferID: offers[0].OfferID, Location: "rack-1", Count: 2,
		Agent: providers.AgentBootstrap{ServerURL: "https://deck.example", Tokens: []string{"t0", "t1"}}, Avoid: []string{"gpu-b"}}
	_, err = p.PlaceGroup(ctx, req)
	var pe *providers.Error
	if !errors.Is(err, providers.ErrNoCapacity) || !errors.As(err, &pe) || pe.Message != "1 free machines of offer "+offers[0].OfferID+", 2 asked" {
		t.Fatalf("placement with gpu-b quarantined: %v", err)
	}
}

// The SSH provider cannot stop the operator's machines: StopNode answers
// ErrUnsupported, the answer of the documented set (providers.Provider)
// on which the stop job releases the cluster instead, never ErrValidation
// ("not running"), on which a stop would wait for ever (B6).
func TestStopNodeUnsupported(t *testing.T) {
	p, err := New(Config{AgentBinary: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	err = p.StopNode(context.Background(), "cl_1", "gpu-a")
	if !errors.Is(err, providers.ErrUnsupported) || errors.Is(err, providers.ErrValidation) {
		t.Fatalf("StopNode: want ErrUnsupported, got %v", err)
	}
}

package agent_test

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/clusterdeck/clusterdeck/providers/agent"
)

func ifaces(cidrs ...string) func() ([]net.Addr, error) {
	return func() ([]net.Addr, error) {
		var out []net.Addr
		for _, c := range cidrs {
			ip, ipn, err := net.ParseCIDR(c)
			if err != nil {
				return nil, err
			}
			ipn.IP = ip
			out = append(out, ipn)
		}
		return out, nil
	}
}

// OP1: the address an agent reports when the provider gives none. A host
// without any RFC 1918 address (a public or documentation address and
// loopback, like the machine the cloud smoke tests run on) still reports
// one: the source of its route to the server. Before, it reported none, and
// with a provider that reports none too the mesh waited for addresses that
// never came.
func TestAddress(t *testing.T) {
	ctx := context.Background()
	server := "http://127.0.0.1:8080"
	for _, tc := range []struct {
		name   string
		server string
		addrs  func() ([]net.Addr, error)
		want   string
	}{
		{"no private address: the route's", server, ifaces("127.0.0.1/8", "192.0.2.2/24"), "127.0.0.1"},
		{"a private interface address before a loopback route", server, ifaces("127.0.0.1/8", "203.0.113.7/24", "10.1.2.3/16"), "10.1.2.3"},
		{"no server host, no private address", "http://", ifaces("127.0.0.1/8", "192.0.2.2/24"), ""},
		{"no server host: the private address", "not a url", ifaces("172.16.4.5/12"), "172.16.4.5"},
	} {
		if got := agent.Address(ctx, tc.server, tc.addrs); got != tc.want {
			t.Errorf("%s: Address = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// L4 (c): the agent's mesh listener is what its peers' reach check dials;
// once it is closed the check fails.
func TestMeshListener(t *testing.T) {
	m, err := agent.ListenMesh("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	ep := net.JoinHostPort("127.0.0.1", strconv.Itoa(m.Port()))
	sh := agent.Shell{}
	for range 3 { // it keeps accepting
		if err := sh.Reach(context.Background(), ep); err != nil {
			t.Fatalf("reach %s: %v", ep, err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sh.Reach(context.Background(), ep); err == nil {
		t.Errorf("reach %s after Close succeeded", ep)
	}
}

package agent

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
)

// MeshListener is what a real agent listens on for its peers' reach check
// (step c): it accepts a connection and closes it, nothing more. Its port is
// reported at check-in (Config.MeshPort), so the check proves that this
// agent is reachable from every peer, and agents sharing one address (one
// host, one NAT) are told apart.
type MeshListener struct {
	ln net.Listener
}

// ListenMesh listens on ip:port (port 0 = any free port; ip "" = every
// address) until Close.
func ListenMesh(ip string, port int) (*MeshListener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	m := &MeshListener{ln: ln}
	go m.serve()
	return m, nil
}

func (m *MeshListener) serve() {
	for {
		conn, err := m.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err == nil {
			_ = conn.Close()
		}
	}
}

// Port is the port listened on.
func (m *MeshListener) Port() int { return m.ln.Addr().(*net.TCPAddr).Port }

// Close stops listening.
func (m *MeshListener) Close() error { return m.ln.Close() }

// Address is the address this machine reports at check-in when none is
// given (OP1): the provider may report none (Shadeform, RunPod pods without
// global networking), and then the agent's is what the peers, the hostfile
// and the node's environment use. In order: the source address of the
// machine's route to the server when it is private (RFC 1918: the cloud's
// network behind its NAT), the first private address of an interface that is
// up, else the route's source address as it is (a public address, or
// loopback when the server runs on the same host). "" when there is none.
// Finding the route sends nothing: a UDP socket is only connected.
func Address(ctx context.Context, server string, interfaceAddrs func() ([]net.Addr, error)) string {
	route := routeSource(ctx, server)
	if route != nil && route.IsPrivate() {
		return route.String()
	}
	if addrs, err := interfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsPrivate() {
				return ipn.IP.String()
			}
		}
	}
	if route != nil && !route.IsUnspecified() {
		return route.String()
	}
	return ""
}

// routeSource is the local address the kernel picks to reach server's host.
func routeSource(ctx context.Context, server string) net.IP {
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp4", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return nil
	}
	defer conn.Close()
	if a, ok := conn.LocalAddr().(*net.UDPAddr); ok {
		return a.IP
	}
	return nil
}

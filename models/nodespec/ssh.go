package nodespec

import (
	"fmt"
	"strconv"
	"strings"
)

// SSHCommand is how to reach one node (N5).
type SSHCommand struct {
	Rank int
	Name string
	// PrivateIP is the node's address on the interconnect, shown beside the
	// command.
	PrivateIP string
	// Command is what the customer pastes:
	//
	//	ssh -p 22 ubuntu@203.0.113.10                         (public address)
	//	ssh -J jump@gw.example.net:2222 -p 22 ubuntu@10.77.0.2 (through the gateway)
	//
	// It is "" while the node has no public address and the cluster has no
	// gateway (e.g. still provisioning).
	Command string
	// ViaGateway is true when Command jumps through the cluster's gateway.
	ViaGateway bool
}

// SSH returns one SSH command per node, in rank order. When the cluster has
// a Gateway (sites without public addresses) every command jumps through it
// (ssh -J, i.e. ProxyJump) to the node's private address; otherwise it
// connects to the node's PublicHost directly.
func (c Cluster) SSH() []SSHCommand {
	gw, gwErr := parseGateway(c.Gateway)
	useGW := c.Gateway != "" && gwErr == nil
	nodes := c.byRank()
	out := make([]SSHCommand, len(nodes))
	for i, n := range nodes {
		s := SSHCommand{Rank: n.Rank, Name: n.Name, PrivateIP: n.PrivateIP, ViaGateway: useGW}
		port := strconv.Itoa(n.sshPort())
		switch {
		case useGW:
			s.Command = fmt.Sprintf("ssh -J %s -p %s %s@%s", gw, port, n.sshUser(), n.PrivateIP)
		case n.PublicHost != "":
			s.Command = fmt.Sprintf("ssh -p %s %s@%s", port, n.sshUser(), n.PublicHost)
		}
		out[i] = s
	}
	return out
}

// PrimarySSH returns the SSH command of the primary (rank 0) node, or the
// zero value for a cluster without nodes.
func (c Cluster) PrimarySSH() SSHCommand {
	if all := c.SSH(); len(all) > 0 {
		return all[0]
	}
	return SSHCommand{}
}

// SSHConfig returns an ~/.ssh/config snippet with one Host entry per node,
// so `ssh <alias>` works (and scp, rsync and editors' remote modes too).
// Aliases are "<cluster>-<node>" with the cluster name made host-safe, or
// just the node name when the cluster has no name. Nodes with neither a
// public address nor a gateway are left out.
func (c Cluster) SSHConfig() string {
	gw, gwErr := parseGateway(c.Gateway)
	useGW := c.Gateway != "" && gwErr == nil
	prefix := hostSafe(c.Name)
	var b strings.Builder
	for _, n := range c.byRank() {
		host := n.PublicHost
		if useGW {
			host = n.PrivateIP
		}
		if host == "" {
			continue
		}
		alias := n.Name
		if prefix != "" {
			alias = prefix + "-" + n.Name
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Host %s\n    HostName %s\n    Port %d\n    User %s\n", alias, host, n.sshPort(), n.sshUser())
		if useGW {
			fmt.Fprintf(&b, "    ProxyJump %s\n", gw)
		}
	}
	return b.String()
}

// hostSafe lowercases s and keeps [a-z0-9], turning every other run of
// characters into one '-'; it trims '-' at both ends. "Llama 70B/FT" →
// "llama-70b-ft".
func hostSafe(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	out := b.String()
	if len(out) > 40 {
		out = strings.TrimRight(out[:40], "-")
	}
	return out
}

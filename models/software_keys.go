package models

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"regexp"

	"github.com/clusterdeck/clusterdeck/models/software"
)

// Credentials the software shares across a cluster's nodes are derived from
// the cluster's AgentSecret, like the agent tokens: the same after a crash
// or on another instance, different for every cluster, never stored apart.

// derive returns n bytes of HMAC-SHA256(AgentSecret, label‖counter).
func derive(c Cluster, label string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	for i := uint32(0); len(out) < n; i++ {
		m := hmac.New(sha256.New, []byte(c.AgentSecret))
		m.Write([]byte(label))
		m.Write(binary.BigEndian.AppendUint32(nil, i))
		out = m.Sum(out)
	}
	return out[:n]
}

// SoftwareKeys are the cluster's derived secrets as its software's
// installs use them (models/software).
func SoftwareKeys(c Cluster) software.Keys {
	return func(label string, n int) []byte { return derive(c, label, n) }
}

// MungeKey is the cluster's Slurm munge key (software.MungeKey).
func MungeKey(c Cluster) []byte { return software.MungeKey(SoftwareKeys(c)) }

// KubeBootstrapToken is the cluster's kubeadm bootstrap token
// (software.KubeBootstrapToken).
func KubeBootstrapToken(c Cluster) string { return software.KubeBootstrapToken(SoftwareKeys(c)) }

var joinCommandRE = regexp.MustCompile(`^kubeadm join [0-9A-Za-z.:\[\]-]+ --token [a-z0-9]{6}\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64}$`)

// validJoinCommand accepts only `kubeadm token create --print-join-command`'s
// exact shape, since the workers run it as root.
func validJoinCommand(s string) bool { return joinCommandRE.MatchString(s) }

// DerivedJoinCommand is how workers join when node-0 did not print its join
// command: the cluster's bootstrap token, on the private network, without
// pinning the CA (node-0 did not report its hash).
func DerivedJoinCommand(c Cluster, head ClusterNode) string {
	return fmt.Sprintf("kubeadm join %s:6443 --token %s --discovery-token-unsafe-skip-ca-verification",
		head.PrivateIP, KubeBootstrapToken(c))
}

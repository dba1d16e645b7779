package models

import "github.com/clusterdeck/clusterdeck/models/nodespec"

// ClusterSpec is the cluster as nodespec sees it: the input of every
// generated file and command (N1–N5). CPUs and memory come from
// the offer; 0 (unknown, the offer left the catalog) leaves them out of
// slurm.conf.
// A worker being added is left out until it joined (see join.go).
func ClusterSpec(c Cluster, nodes []ClusterNode, o Offer) nodespec.Cluster {
	return JoinSpec(c, joinedOnly(nodes), o)
}

// JoinSpec is ClusterSpec with every node, a worker being added included:
// what every node installs during its join (L10).
func JoinSpec(c Cluster, nodes []ClusterNode, o Offer) nodespec.Cluster {
	spec := nodespec.Cluster{
		Name: c.Name, Software: c.Software, MachineKind: c.MachineKind, Interconnect: c.Interconnect,
		GPUsPerNode: c.GPUsPerNode, CPUsPerNode: o.VCPUs, MemoryGBPerNode: o.MemoryGB,
		Gateway: c.Gateway, UserEnv: c.Env(),
	}
	spec.NICs, spec.NICGbps = c.FabricCards(o)
	for _, n := range nodes {
		spec.Nodes = append(spec.Nodes, nodespec.Node{Rank: n.Rank, Name: n.Name, PrivateIP: n.PrivateIP,
			PublicHost: n.PublicHost, SSHPort: n.SSHPort, SSHUser: n.SSHUser})
	}
	return spec
}

// FabricCards are the cluster's NICs and their line rate in Gbit/s, which
// the fabric checks are judged by (X4, X13): the cards stored at launch, or
// for a cluster launched before they were stored, the offer's current ones.
// None means the encrypted Ethernet overlay.
func (c Cluster) FabricCards(o Offer) (nics, gbps int) {
	if c.NICs > 0 && c.NICGbps > 0 {
		return c.NICs, c.NICGbps
	}
	if c.Interconnect != nodespec.InterconnectEthernet && o.ID == c.OfferID {
		return o.NICs, o.NICGbps
	}
	return 0, 0
}

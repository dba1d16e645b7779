package models

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The mesh step's endpoints (L4 step c, OP1). A node's address comes from
// its provider or, when the provider reports none, from its agent's check-in;
// the agent also says on which port it listens for its peers' reach check,
// so two agents behind one address (one host) are told apart, and the check
// proves agent-to-agent reachability without an SSH daemon on port 22.

// ErrAddressTaken refuses an agent's check-in whose reported address (and
// mesh port) another node of the cluster already has: two machines of one
// cluster cannot share an address on its private network, and recording it
// would let the mesh check pass on a machine reaching itself.
var ErrAddressTaken = errors.New("models: another node of the cluster has this address")

func up0871NodeMeshPort(tx *gorm.DB) error {
	return tx.Exec("ALTER TABLE cluster_nodes ADD COLUMN mesh_port integer NOT NULL DEFAULT 0").Error
}

// MeshEndpoint is what a peer's reach check dials for n: its private
// address, with its agent's mesh port when the agent listens on one.
func (n ClusterNode) MeshEndpoint() string {
	if n.MeshPort == 0 || n.PrivateIP == "" {
		return n.PrivateIP
	}
	return net.JoinHostPort(n.PrivateIP, strconv.Itoa(n.MeshPort))
}

// recordAgentAddress keeps what an agent reported at check-in (OP1): its
// mesh port always (a restarted agent listens on a new one), its private
// address when neither the provider nor a claim gave the node one. It
// refuses with ErrAddressTaken, leaving the node as it was with the reason
// in its message, when another live node of the cluster already has the
// same address and mesh port.
func (s *Store) recordAgentAddress(ctx context.Context, n *ClusterNode, reported string, meshPort int) error {
	reported = truncate(strings.TrimSpace(reported), 64)
	if meshPort < 0 || meshPort > 65535 {
		meshPort = 0
	}
	ip := n.PrivateIP
	if ip == "" {
		ip = reported
	}
	if ip == n.PrivateIP && meshPort == n.MeshPort {
		return nil // nothing new
	}
	var taken *ClusterNode
	err := s.Tx(ctx, func(tx *Store) error {
		// Lock the cluster's nodes: two agents reporting one address at
		// once see each other.
		q := tx.db.WithContext(ctx)
		if tx.IsPostgres() {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"}) // SQLite's immediate transactions serialise writers
		}
		var nodes []ClusterNode
		if err := q.Where("cluster_id = ?", n.ClusterID).Order("rank").Find(&nodes).Error; err != nil {
			return err
		}
		var self *ClusterNode
		for i := range nodes {
			o := &nodes[i]
			switch {
			case o.ID == n.ID:
				self = o
			case ip != "" && o.PrivateIP == ip && o.MeshPort == meshPort && o.liveStatus():
				taken = o
			}
		}
		if self == nil {
			return fmt.Errorf("models: node %s: %w", n.ID, ErrNotFound)
		}
		if taken != nil {
			msg := fmt.Sprintf("%s's agent reports the address %s, which %s already has: the machines share no private network, or they are one machine.",
				n.Name, endpointOf(ip, meshPort), taken.Name)
			if self.Message == msg {
				return nil
			}
			if err := tx.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ?", n.ID).Update("message", msg).Error; err != nil {
				return err
			}
			var c Cluster
			if err := tx.db.WithContext(ctx).Where("id = ?", n.ClusterID).Take(&c).Error; err != nil {
				return err
			}
			return tx.addEvent(ctx, c, c.Status, "error", n.Name, StepAgent, msg)
		}
		up := map[string]any{"mesh_port": meshPort}
		if self.PrivateIP == "" && ip != "" {
			up["private_ip"] = ip // the provider reported none: the agent's own address wins
		}
		if err := tx.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ?", n.ID).Updates(up).Error; err != nil {
			return err
		}
		n.MeshPort = meshPort
		if self.PrivateIP == "" {
			n.PrivateIP = ip
		} else {
			n.PrivateIP = self.PrivateIP
		}
		return nil
	})
	if err == nil && taken != nil {
		return fmt.Errorf("%w: %s has %s", ErrAddressTaken, taken.Name, endpointOf(ip, meshPort))
	}
	return err
}

func endpointOf(ip string, port int) string {
	return ClusterNode{PrivateIP: ip, MeshPort: port}.MeshEndpoint()
}

// liveStatus reports whether the node holds its address: a node lost,
// terminated or released gives it up.
func (n ClusterNode) liveStatus() bool {
	for _, s := range LiveNodeStatuses {
		if n.Status == s {
			return true
		}
	}
	return n.Status == NodeDown || n.Status == NodeRestarting || n.Status == NodeStopped
}

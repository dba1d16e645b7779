package models

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Bootstrap tokens (OP1): one credential for every machine of a cluster, so
// a cloud can place the whole group with one call and one start-up script
// (EC2's RunInstances with MinCount = MaxCount = N, RunPod's instant
// clusters). It authorises one thing only: a machine of the placement
// claims its rank, once, bound to the machine id the provider returned, and
// gets that node's own agent token (AgentToken) for everything else.

// Claim refusals, each with its own answer on the agent protocol.
var (
	// ErrNotPlaced: the placement is not recorded yet; the machine may be
	// early (the provider booted it before the placement call returned).
	ErrNotPlaced = errors.New("models: the cluster's machines are not placed yet")
	// ErrUnknownMachine: no machine of the placement matches the claim.
	ErrUnknownMachine = errors.New("models: the machine is not one of the cluster's")
	// ErrRankClaimed: another machine already claimed the rank.
	ErrRankClaimed = errors.New("models: the rank was claimed by another machine")
)

func up0870NodeClaims(tx *gorm.DB) error {
	ts := "datetime"
	if tx.Dialector.Name() == "postgres" {
		ts = "timestamptz"
	}
	for _, q := range []string{
		"ALTER TABLE cluster_nodes ADD COLUMN claimed_by varchar(128) NOT NULL DEFAULT ''",
		"ALTER TABLE cluster_nodes ADD COLUMN claimed_at " + ts,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// BootstrapToken is the cluster's bootstrap credential: it names the
// cluster and carries an HMAC under the cluster's secret, so it is
// derivable again after a crash and can never name another cluster.
func BootstrapToken(c Cluster) string {
	return "cdb_" + c.ID + "_" + bootstrapMAC(c)
}

func bootstrapMAC(c Cluster) string {
	m := hmac.New(sha256.New, []byte(c.AgentSecret))
	m.Write([]byte("bootstrap/" + c.ID))
	return hex.EncodeToString(m.Sum(nil))
}

// IsBootstrapToken tells a bootstrap token from a node token by its form.
func IsBootstrapToken(token string) bool { return strings.HasPrefix(token, "cdb_") }

// Claim is what a machine reports when it claims its rank.
type Claim struct {
	MachineID string // the provider's id of this machine, when the machine knows it
	Hostname  string
	PrivateIP string // the machine's own private address
}

// identity is what a claim binds the rank to.
func (cl Claim) identity() string {
	if cl.MachineID != "" {
		return cl.MachineID
	}
	return cl.Hostname
}

// ClaimRank lets a machine of the cluster named by a bootstrap token claim
// its rank. The machine is matched against the placement's machines by the
// provider machine id it reports; a machine that does not know its id is
// matched by host name (clouds that name hosts by instance id) or by the
// private address the provider reported. The rank is bound to the machine:
// a repeated claim by the same machine (its agent restarted) answers the
// same node again, a claim by any other machine is ErrRankClaimed. The
// agent's private address is recorded when the provider reported none.
// Refusals: ErrNotFound for a bad token, ErrAgentRevoked once the cluster
// ended or its terminate was requested, ErrNotPlaced before the placement
// is recorded, ErrUnknownMachine for a machine not in the group.
func (s *Store) ClaimRank(ctx context.Context, token string, claim Claim) (Cluster, ClusterNode, error) {
	rest, ok := strings.CutPrefix(token, "cdb_")
	i := strings.LastIndex(rest, "_")
	if !ok || i <= 0 {
		return Cluster{}, ClusterNode{}, fmt.Errorf("models: bootstrap token: %w", ErrNotFound)
	}
	clusterID, mac := rest[:i], rest[i+1:]
	claim.MachineID, claim.Hostname, claim.PrivateIP = truncate(strings.TrimSpace(claim.MachineID), 128),
		truncate(strings.TrimSpace(claim.Hostname), 128), truncate(strings.TrimSpace(claim.PrivateIP), 64)
	if claim.identity() == "" {
		return Cluster{}, ClusterNode{}, fmt.Errorf("%w: the claim names no machine id and no host name", ErrUnknownMachine)
	}
	var c Cluster
	var n ClusterNode
	err := s.Tx(ctx, func(tx *Store) error {
		var err error
		if c, err = tx.ClusterByID(ctx, clusterID); err != nil {
			return err // ErrNotFound for a token naming no cluster
		}
		if !hmac.Equal([]byte(mac), []byte(bootstrapMAC(c))) {
			return fmt.Errorf("models: bootstrap token: %w", ErrNotFound)
		}
		if c.Status.Terminal() || c.TerminateRequestedAt != nil {
			return ErrAgentRevoked
		}
		if c.PlacedAt == nil {
			return ErrNotPlaced
		}
		// Lock the nodes: two machines racing for one rank see each other.
		var nodes []ClusterNode
		q := tx.db.WithContext(ctx)
		if tx.IsPostgres() {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"}) // SQLite's immediate transactions serialise writers
		}
		if err := q.Where("cluster_id = ?", c.ID).Order("rank").Find(&nodes).Error; err != nil {
			return err
		}
		found := 0
		for _, cand := range nodes {
			if matchesClaim(cand, claim) {
				if found == 0 {
					n = cand
				}
				found++
			}
		}
		if found == 0 {
			return fmt.Errorf("%w: %s is not a machine of this placement", ErrUnknownMachine, claim.identity())
		}
		if found > 1 { // only an address can match twice: agents sharing one (one host)
			return fmt.Errorf("%w: %s matches %d machines by the address %s; send the provider's machine id",
				ErrUnknownMachine, claim.identity(), found, claim.PrivateIP)
		}
		if n.JoinKind != "" && n.JoinPlacedAt == nil {
			// A replacement is asked for but not placed yet (X5): the
			// machine matching the node is the old one, whose rank is
			// being handed on; it gets no token of the new generation.
			return fmt.Errorf("%w: %s is waiting for its replacement to be placed", ErrNotPlaced, n.Name)
		}
		if n.ClaimedBy != "" {
			if n.ClaimedBy != claim.identity() {
				return fmt.Errorf("%w: %s was claimed by %s", ErrRankClaimed, n.Name, n.ClaimedBy)
			}
			return nil // the same machine again (its agent restarted)
		}
		up := map[string]any{"claimed_by": claim.identity(), "claimed_at": tx.Now()}
		if n.PrivateIP == "" && claim.PrivateIP != "" && !addressHeld(nodes, n, claim.PrivateIP) {
			// The provider reported none: the agent's own address wins.
			// One another node has already is left to the check-in, which
			// tells agents sharing a host apart by their mesh ports.
			up["private_ip"] = claim.PrivateIP
		}
		res := tx.db.WithContext(ctx).Model(&ClusterNode{}).Where("id = ? AND claimed_by = ''", n.ID).Updates(up)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("%w: %s was claimed meanwhile", ErrRankClaimed, n.Name)
		}
		if err := tx.db.WithContext(ctx).Where("id = ?", n.ID).Take(&n).Error; err != nil {
			return err
		}
		return tx.addEvent(ctx, c, c.Status, "info", n.Name, "",
			fmt.Sprintf("Machine %s claimed %s with the cluster's bootstrap token.", claim.identity(), n.Name))
	})
	if err != nil {
		return c, ClusterNode{}, err
	}
	return c, n, nil
}

// matchesClaim reports whether node n is the claiming machine: by the
// provider machine id when the machine reports one, else by host name as
// machine id or by the private address the provider recorded.
func matchesClaim(n ClusterNode, cl Claim) bool {
	if n.ProviderNodeID == "" {
		return false
	}
	if cl.MachineID != "" {
		return n.ProviderNodeID == cl.MachineID
	}
	return n.ProviderNodeID == cl.Hostname || cl.PrivateIP != "" && n.PrivateIP == cl.PrivateIP
}

// addressHeld reports whether a node of nodes other than n has ip.
func addressHeld(nodes []ClusterNode, n ClusterNode, ip string) bool {
	for _, o := range nodes {
		if o.ID != n.ID && o.PrivateIP == ip && o.liveStatus() {
			return true
		}
	}
	return false
}

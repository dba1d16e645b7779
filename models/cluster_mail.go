package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// ClusterNotify is where a cluster's outcome mails (E1) link to. The
// transitions to ready, failed and degraded queue them in their own
// transaction, to the organisation's owners and admins and to the user who
// launched the cluster; a nil *ClusterNotify queues none.
type ClusterNotify struct {
	BaseURL string // links in mails, e.g. https://deck.example.com
}

// queueClusterMail queues c's outcome mail to every recipient through the
// outbox (E2). The key names the status, the cluster, the install attempt
// (a second degradation after a retry mails again; for health mails the
// unhealthy episode) and a hash of the
// recipient, so it stays short and a retried tick queues each mail once. A
// recipient the outbox refuses is skipped: it never stops the others.
func (s *Store) queueClusterMail(ctx context.Context, n *ClusterNotify, c Cluster, attempt int, topic string) error {
	if n == nil {
		return nil
	}
	mail, ok := clusterMailOf(c, n.BaseURL, topic)
	if !ok {
		return nil
	}
	if mail.Topic == ClusterMailReady { // the ready mail says how to connect
		nodes, err := s.NodesFor(ctx, c.ID)
		if err != nil {
			return err
		}
		mail.SSH = ClusterSpec(c, nodes, Offer{}).PrimarySSH().Command
	}
	verified, err := s.verificationLine(ctx, c, topic)
	if err != nil {
		return err
	}
	mail.Verification = verified
	to, err := s.clusterMailRecipients(ctx, c)
	if err != nil {
		return err
	}
	if topic == "" {
		topic = string(c.Status)
	}
	switch k := c.Problem().Kind; k {
	case KindRecoveryExhausted, KindNodeDown:
		topic = string(k)
	}
	return s.notifyEach(ctx, fmt.Sprintf("cluster-%s:%s:%d", topic, c.ID, attempt), to, mail)
}

// clusterMailOf decides which outcome c's mail announces (E1, R2, R5, B6)
// and gathers its data; false when the change mails nothing.
func clusterMailOf(c Cluster, baseURL, topic string) (ClusterMail, bool) {
	m := ClusterMail{ClusterID: c.ID, Name: c.Name, Shape: c.ShapeLabel(), Place: c.PlaceLabel(), USDPerHour: c.USDPerHour,
		ReadyAt: c.ReadyAt, LastError: c.LastError, Link: strings.TrimRight(baseURL, "/") + "/clusters/" + c.ID}
	if topic == "resumed" {
		switch c.Status {
		case StatusReady:
			m.Topic = ClusterMailResumed
		case StatusDegraded:
			m.Topic = ClusterMailResumedDegraded
		default:
			return m, false
		}
		return m, true
	}
	switch c.Status {
	case StatusReady:
		m.Topic = ClusterMailReady
		if topic == "healthy" {
			m.Topic = ClusterMailHealthy
		}
	case StatusFailed:
		m.Topic = ClusterMailFailed
	case StatusDegraded:
		p := c.Problem()
		switch {
		case p.Kind == KindRecoveryExhausted:
			m.Topic = ClusterMailRecoveryExhausted
		case p.Kind == KindNodeDown:
			pol := c.Policy()
			m.Topic, m.Detail = ClusterMailNodeDown, p.Detail
			m.AutoRecover, m.RecoverAttempts, m.RecoverCooldown = pol.Mode == RecoveryRestart, pol.MaxAttempts, pol.CooldownMinutes
		case ParseLastError(c.LastError).Kind == KindVerifyFailed:
			m.Topic = ClusterMailVerifyFailed
		default:
			m.Topic = ClusterMailDegraded
		}
	default:
		return m, false
	}
	return m, true
}

// clusterMailRecipients are the owners and admins and the launching user, once each.
func (s *Store) clusterMailRecipients(ctx context.Context, c Cluster) ([]string, error) {
	members, err := s.Members(ctx, c.OrgID)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var to []string
	for _, mem := range members {
		addr := strings.ToLower(mem.Email)
		if (mem.Role.CanManage() || strings.EqualFold(mem.Email, c.CreatedBy)) && !seen[addr] {
			seen[addr] = true
			to = append(to, mem.Email)
		}
	}
	return to, nil
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(s)))
	return hex.EncodeToString(sum[:12])
}

// verificationLine is the hand-over report's summary for the ready mail, or
// for the degraded mail of a failed verification; "" for a cluster launched
// without verification and for other mails.
func (s *Store) verificationLine(ctx context.Context, c Cluster, topic string) (string, error) {
	if !c.Verify || topic != "" {
		return "", nil
	}
	if c.Status != StatusReady && ParseLastError(c.LastError).Kind != KindVerifyFailed {
		return "", nil
	}
	run, err := s.VerificationFor(ctx, c.OrgID, c.ID)
	if err != nil || run == nil {
		return "", err
	}
	return run.ReportOf().Summary, nil
}

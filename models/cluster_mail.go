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
	subject, body, ok := clusterMailText(c, n.BaseURL, topic)
	if !ok {
		return nil
	}
	to, err := s.clusterMailRecipients(ctx, c)
	if err != nil {
		return err
	}
	if topic == "" {
		topic = string(c.Status)
	}
	switch {
	case c.LastError == LastErrorRecoveryExhausted:
		topic = LastErrorRecoveryExhausted
	case strings.HasPrefix(c.LastError, LastErrorNodeDown):
		topic = "node_down"
	}
	for _, addr := range to {
		m := Mail{Key: fmt.Sprintf("cluster-%s:%s:%d:%s", topic, c.ID, attempt, shortHash(addr)),
			To: strings.TrimSpace(addr), Subject: subject, Text: body}
		if m.check() != nil {
			continue
		}
		if err := s.EnqueueMail(ctx, m); err != nil {
			return err
		}
	}
	return nil
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

func clusterMailText(c Cluster, baseURL, topic string) (subject, body string, ok bool) {
	link := strings.TrimRight(baseURL, "/") + "/clusters/" + c.ID
	shape := fmt.Sprintf("%d × %d × %s in %s", c.Nodes, c.GPUsPerNode, c.Accelerator, c.LocationName)
	since := "now"
	if c.ReadyAt != nil {
		since = "at " + c.ReadyAt.Format("2006-01-02 15:04 MST")
	}
	if topic == "resumed" {
		return resumedMailText(c, shape, link)
	}
	switch c.Status {
	case StatusReady:
		if topic == "healthy" {
			return fmt.Sprintf("Cluster %s is healthy again", c.Name),
				fmt.Sprintf("Every machine of your cluster %s (%s) is running again; the cluster is ready.\n\n"+
					"Billing continued throughout at %s per hour.\n\nDetails: %s\n", c.Name, shape, USD(c.USDPerHour), link), true
		}
		return fmt.Sprintf("Cluster %s is ready", c.Name),
			fmt.Sprintf("Your cluster %s (%s) is ready: every machine is up and joined.\n\n"+
				"Billing started %s for all machines at %s per hour.\n"+
				"Ready means infrastructure readiness only; run your own application check before sending traffic.\n\n"+
				"Connect: %s\n", c.Name, shape, since, USD(c.USDPerHour), link), true
	case StatusFailed:
		return fmt.Sprintf("Cluster %s failed to start", c.Name),
			fmt.Sprintf("Your cluster %s (%s) did not come up whole: %s.\n\n"+
				"Every machine was released and nothing was billed. Nothing is retried without you.\n"+
				"See what happened and what can start now: %s\n", c.Name, shape, c.LastError, link), true
	case StatusDegraded:
		if text, ok := healthMailText(c, shape, link); ok {
			return fmt.Sprintf(text[0], c.Name), text[1], true
		}
		return fmt.Sprintf("Cluster %s is degraded", c.Name),
			fmt.Sprintf("Your cluster %s (%s) is degraded: %s.\n\n"+
				"The machines stay up and billing continues. Retry the install or terminate: %s\n", c.Name, shape, c.LastError, link), true
	}
	return "", "", false
}

// healthMailText is the degraded and recovery-exhausted mails of R2 and R5:
// the subject (with %s for the name) and the body.
func healthMailText(c Cluster, shape, link string) ([2]string, bool) {
	switch {
	case c.LastError == LastErrorRecoveryExhausted:
		return [2]string{"Recovery of cluster %s gave up",
			fmt.Sprintf("Every recovery attempt for your cluster %s (%s) is spent and a machine is still down.\n\n"+
				"The cluster stays degraded and billing continues at %s per hour. Terminate it, or try recover now: %s\n",
				c.Name, shape, USD(c.USDPerHour), link)}, true
	case strings.HasPrefix(c.LastError, LastErrorNodeDown):
		return [2]string{"Cluster %s is degraded: a machine is down",
			fmt.Sprintf("A machine of your cluster %s (%s) left running: %s.\n\n"+
				"The other machines stay up and billing continues at %s per hour. %s\n"+
				"See the machine's status, recover now or terminate: %s\n",
				c.Name, shape, strings.TrimPrefix(c.LastError, LastErrorNodeDown), USD(c.USDPerHour), c.recoveryLine(), link)}, true
	}
	return [2]string{}, false
}

// resumedMailText is the mail of a resume that brought every machine back (B6).
func resumedMailText(c Cluster, shape, link string) (subject, body string, ok bool) {
	switch c.Status {
	case StatusReady:
		return fmt.Sprintf("Cluster %s is running again", c.Name),
			fmt.Sprintf("Every machine of your cluster %s (%s) started again and joined; the cluster is ready.\n\n"+
				"Billing restarted now for all machines at %s per hour.\n\nConnect: %s\n", c.Name, shape, USD(c.USDPerHour), link), true
	case StatusDegraded:
		return fmt.Sprintf("Cluster %s is running again, degraded", c.Name),
			fmt.Sprintf("Every machine of your cluster %s (%s) started again and joined, but its software had not passed "+
				"its check before the stop (%s).\n\nBilling restarted now at %s per hour. Retry the install or terminate: %s\n",
				c.Name, shape, c.LastError, USD(c.USDPerHour), link), true
	}
	return "", "", false
}

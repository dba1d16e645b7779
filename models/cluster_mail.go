package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
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
	var ssh string
	if c.Status == StatusReady && topic == "" { // the ready mail says how to connect
		nodes, err := s.NodesFor(ctx, c.ID)
		if err != nil {
			return err
		}
		ssh = ClusterSpec(c, nodes, Offer{}).PrimarySSH().Command
	}
	subject, body, ok := clusterMailText(c, n.BaseURL, topic, ssh)
	if !ok {
		return nil
	}
	verified, err := s.verificationLine(ctx, c, topic)
	if err != nil {
		return err
	}
	if verified != "" {
		body = strings.Replace(body, "\n\n", "\n\n"+verified+"\n\n", 1)
	}
	var htmlBody string
	if c.Status == StatusReady && topic == "" {
		htmlBody = readyMailHTML(c, n.BaseURL, ssh)
		if verified != "" {
			htmlBody = strings.Replace(htmlBody, `<p style="margin:16px 0 0;`, `<p style="margin:16px 0 0;font-size:13px;color:#0f172a">`+
				html.EscapeString(verified)+`</p><p style="margin:16px 0 0;`, 1)
		}
	}
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
	for _, addr := range to {
		m := Mail{Key: fmt.Sprintf("cluster-%s:%s:%d:%s", topic, c.ID, attempt, shortHash(addr)),
			To: strings.TrimSpace(addr), Subject: subject, Text: body, HTML: htmlBody}
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

// clusterMailText is the outcome mail's subject and plain-text body; ssh is
// node-0's SSH command for the ready mail ("" when it has none).
func clusterMailText(c Cluster, baseURL, topic, ssh string) (subject, body string, ok bool) {
	link := strings.TrimRight(baseURL, "/") + "/clusters/" + c.ID
	shape := c.ShapeLabel() + " in " + c.PlaceLabel()
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
		connect := ""
		if ssh != "" {
			connect = "Log in to node-0:\n\n    " + ssh + "\n\n"
		}
		return fmt.Sprintf("Cluster %s is ready", c.Name),
			fmt.Sprintf("Your cluster %s (%s) is ready: every machine is up and joined.\n\n"+
				"%s"+
				"Billing started %s for all machines at %s per hour.\n"+
				"Ready means infrastructure readiness only; run your own application check before sending traffic.\n\n"+
				"Every node's SSH command, the hostfile and ready-made launch commands: %s\n", c.Name, shape, connect, since, USD(c.USDPerHour), link), true
	case StatusFailed:
		return fmt.Sprintf("Cluster %s failed to start", c.Name),
			fmt.Sprintf("Your cluster %s (%s) did not come up whole: %s.\n\n"+
				"Every machine was released and nothing was billed. Nothing is retried without you.\n"+
				"See what happened and what can start now: %s\n", c.Name, shape, c.LastError, link), true
	case StatusDegraded:
		if text, ok := healthMailText(c, shape, link); ok {
			return fmt.Sprintf(text[0], c.Name), text[1], true
		}
		if ParseLastError(c.LastError).Kind == KindVerifyFailed {
			return fmt.Sprintf("Cluster %s failed verification", c.Name),
				fmt.Sprintf("Your cluster %s (%s) did not pass verification before hand-over: %s.\n\n"+
					"The machines stay up and billing continues at %s per hour. Read the report, then keep the cluster as it is or terminate it: %s\n",
					c.Name, shape, c.LastError, USD(c.USDPerHour), link), true
		}
		return fmt.Sprintf("Cluster %s is degraded", c.Name),
			fmt.Sprintf("Your cluster %s (%s) is degraded: %s.\n\n"+
				"The machines stay up and billing continues. Retry the install or terminate: %s\n", c.Name, shape, c.LastError, link), true
	}
	return "", "", false
}

// readyMailHTML is the ready mail's HTML part: what is ready, node-0's SSH
// command to copy, and a button to the cluster page. Inline styles only
// (mail clients drop style sheets); every value is escaped.
func readyMailHTML(c Cluster, baseURL, ssh string) string {
	link := strings.TrimRight(baseURL, "/") + "/clusters/" + c.ID
	esc := html.EscapeString
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><body style="margin:0;padding:24px;background:#f8fafc;font-family:-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;color:#0f172a">`)
	b.WriteString(`<div style="max-width:560px;margin:0 auto;background:#ffffff;border:1px solid #e2e8f0;border-radius:8px;padding:24px">`)
	fmt.Fprintf(&b, `<h1 style="margin:0 0 8px;font-size:20px">Cluster %s is ready</h1>`, esc(c.Name))
	fmt.Fprintf(&b, `<p style="margin:0 0 16px;font-size:14px;color:#475569">%s in %s · every machine is up and joined · billing started at %s per hour.</p>`,
		esc(c.ShapeLabel()), esc(c.PlaceLabel()), esc(USD(c.USDPerHour)))
	if ssh != "" {
		b.WriteString(`<p style="margin:0 0 4px;font-size:12px;font-weight:600;color:#475569">Log in to node-0</p>`)
		fmt.Fprintf(&b, `<pre style="margin:0 0 16px;padding:12px;background:#0f172a;color:#f1f5f9;border-radius:6px;font-size:13px;white-space:pre-wrap;word-break:break-all">%s</pre>`, esc(ssh))
	}
	fmt.Fprintf(&b, `<a href="%s" style="display:inline-block;padding:10px 16px;background:#4f46e5;color:#ffffff;text-decoration:none;border-radius:6px;font-weight:600;font-size:14px">Open %s</a>`,
		esc(link), esc(c.Name))
	b.WriteString(`<p style="margin:16px 0 0;font-size:12px;color:#64748b">Ready means infrastructure readiness only; run your own application check before sending traffic.</p>`)
	b.WriteString(`</div></body></html>`)
	return b.String()
}

// healthMailText is the degraded and recovery-exhausted mails of R2 and R5:
// the subject (with %s for the name) and the body.
func healthMailText(c Cluster, shape, link string) ([2]string, bool) {
	p := c.Problem()
	switch p.Kind {
	case KindRecoveryExhausted:
		return [2]string{"Recovery of cluster %s gave up",
			fmt.Sprintf("Every recovery attempt for your cluster %s (%s) is spent and a machine is still down.\n\n"+
				"The cluster stays degraded and billing continues at %s per hour. Terminate it, or try recover now: %s\n",
				c.Name, shape, USD(c.USDPerHour), link)}, true
	case KindNodeDown:
		return [2]string{"Cluster %s is degraded: a machine is down",
			fmt.Sprintf("A machine of your cluster %s (%s) left running: %s.\n\n"+
				"The other machines stay up and billing continues at %s per hour. %s\n"+
				"See the machine's status, recover now or terminate: %s\n",
				c.Name, shape, p.Detail, USD(c.USDPerHour), c.recoveryLine(), link)}, true
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

// verificationLine summarises the hand-over report for the ready mail, or
// for the degraded mail of a failed verification (issue 24 item 4); "" for
// a cluster launched without verification and for other mails.
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
	if sum := run.ReportOf().Summary; sum != "" {
		return "Verification: " + sum, nil
	}
	return "", nil
}

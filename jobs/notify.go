package jobs

import (
	"context"
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
)

// ClusterMail queues the emails of E1 for a cluster's outcome (ready, failed,
// degraded) through the outbox, to the organisation's owners and admins and
// to the user who launched it. Each mail's key names the cluster, the event
// and the recipient, so a job that runs twice queues each mail once (E2).
type ClusterMail struct {
	Store   *models.Store
	BaseURL string
}

// Notify implements the provision and install jobs' hook.
func (m *ClusterMail) Notify(ctx context.Context, c models.Cluster) error {
	subject, body, ok := clusterMailText(c, m.BaseURL)
	if !ok {
		return nil
	}
	to, err := m.recipients(ctx, c)
	if err != nil {
		return err
	}
	for _, addr := range to {
		err := m.Store.EnqueueMail(ctx, models.Mail{
			Key: fmt.Sprintf("cluster-%s:%s:%s", c.Status, c.ID, addr), To: addr, Subject: subject, Text: body,
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *ClusterMail) recipients(ctx context.Context, c models.Cluster) ([]string, error) {
	members, err := m.Store.Members(ctx, c.OrgID)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var to []string
	for _, mem := range members {
		if mem.Role.CanManage() || strings.EqualFold(mem.Email, c.CreatedBy) {
			if !seen[mem.Email] {
				seen[mem.Email] = true
				to = append(to, mem.Email)
			}
		}
	}
	return to, nil
}

func clusterMailText(c models.Cluster, baseURL string) (subject, body string, ok bool) {
	link := strings.TrimRight(baseURL, "/") + "/clusters/" + c.ID
	shape := fmt.Sprintf("%d × %d × %s in %s", c.Nodes, c.GPUsPerNode, c.Accelerator, c.LocationName)
	switch c.Status {
	case models.StatusReady:
		return fmt.Sprintf("Cluster %s is ready", c.Name),
			fmt.Sprintf("Your cluster %s (%s) is ready: every machine is up and joined.\n\n"+
				"Billing started at %s for all machines at %s per hour.\n"+
				"Ready means infrastructure readiness only; run your own application check before sending traffic.\n\n"+
				"Connect: %s\n", c.Name, shape, c.ReadyAt.Format("2006-01-02 15:04 MST"), models.USD(c.USDPerHour), link), true
	case models.StatusFailed:
		return fmt.Sprintf("Cluster %s failed to start", c.Name),
			fmt.Sprintf("Your cluster %s (%s) did not come up whole: %s.\n\n"+
				"Every machine was released and nothing was billed. Nothing is retried without you.\n"+
				"See what happened and what can start now: %s\n", c.Name, shape, c.LastError, link), true
	case models.StatusDegraded:
		return fmt.Sprintf("Cluster %s is degraded", c.Name),
			fmt.Sprintf("Your cluster %s (%s) is degraded: %s.\n\n"+
				"The machines stay up and billing continues. Retry the install or terminate: %s\n", c.Name, shape, c.LastError, link), true
	}
	return "", "", false
}

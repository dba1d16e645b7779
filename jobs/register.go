package jobs

import (
	"errors"
	"fmt"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// Deps is what the jobs need.
type Deps struct {
	Store     *models.Store
	Providers providers.Registry
	Mailer    Mailer // nil: mails stay queued in the outbox (no "mail" job)
	// RenderMail words typed notifications for the mail job (views.RenderOutbox).
	RenderMail func(models.OutboxMail) (models.OutboxMail, error)
	BaseURL    string        // the server's public URL: agents call it, mails link to it
	Metrics    *Metrics      // nil: no job or provider metrics
	Charger    Charger       // nil: no auto-recharge ("charges" job)
	Webhooks   WebhookPoster // nil: webhook deliveries stay queued (no "webhooks" job)
	// The jobs' settings (grace periods, health timings, verification
	// thresholds) are the Store's: models.Settings, fixed before start.
}

// Register adds every job. Like web/routes.go for URLs, this is the one place
// every schedule can be read. With d.Metrics set, every tick and every failed
// provider call is counted.
func Register(s *Scheduler, d Deps) error {
	s.metrics = d.Metrics
	d.Providers = d.Metrics.instrument(d.Providers)
	set := d.Store.Settings()
	mail := &models.ClusterNotify{BaseURL: d.BaseURL}
	verify := &Verify{Store: d.Store, Mail: mail}
	for _, e := range []entry{
		{"@every 1m", &Catalog{Store: d.Store, Providers: d.Providers}, 50 * time.Second},
		{"17 * * * *", &PruneLoginThrottles{Store: d.Store}, time.Minute},
		{"5 * * * *", &GPURollup{Store: d.Store}, 5 * time.Minute},
		{"@every 5s", &Provision{Store: d.Store, Providers: d.Providers, ServerURL: d.BaseURL, Mail: mail}, 2 * time.Minute},
		{"@every 5s", &Terminate{Store: d.Store, Providers: d.Providers}, 2 * time.Minute},
		{"@every 5s", &Install{Store: d.Store, Mail: mail}, 30 * time.Second},
		{"@every 5s", verify, 30 * time.Second},
		{"@every 5s", &Join{Store: d.Store, Providers: d.Providers, ServerURL: d.BaseURL}, 2 * time.Minute},
		{"@every 30s", &Health{Store: d.Store, Providers: d.Providers, Mail: mail, Verify: verify,
			HeartbeatLate: set.HeartbeatLate, UnhealthyAfter: set.UnhealthyAfter}, 2 * time.Minute},
		{"@every 30s", &Recovery{Store: d.Store, Providers: d.Providers, Mail: mail}, 2 * time.Minute},
		{"@every 10m", &Reconcile{Store: d.Store, Providers: d.Providers}, 5 * time.Minute},
		{"@every 30s", &NCCLCheck{Store: d.Store}, 30 * time.Second},
		{"@every 1m", &Billing{Store: d.Store}, 50 * time.Second},
		{"@every 5s", &Stop{Store: d.Store, Providers: d.Providers, Mail: mail}, 2 * time.Minute},
		{"@every 1m", &BalanceEnforcement{Store: d.Store, Grace: set.BalanceGrace, TerminateGrace: set.TerminateGrace,
			BaseURL: d.BaseURL}, 50 * time.Second},
		{"@every 1m", &Budgets{Store: d.Store, BaseURL: d.BaseURL}, 50 * time.Second},
		{"@every 1m", &GPUWatch{Store: d.Store, Mail: mail}, 50 * time.Second}, // X15: stalls and idle GPUs
	} {
		if err := s.Add(e.spec, e.job, e.timeout); err != nil {
			return fmt.Errorf("jobs: schedule %s: %w", e.job.Name(), err)
		}
	}
	if d.Charger != nil {
		if err := s.Add("@every 1m", &Charges{Store: d.Store, Charger: d.Charger}, 50*time.Second); err != nil {
			return fmt.Errorf("jobs: schedule charges: %w", err)
		}
	}
	if d.Webhooks != nil {
		if err := s.Add("@every 5s", &Webhooks{Store: d.Store, Poster: d.Webhooks, BaseURL: d.BaseURL, Linger: 2 * time.Second, Metrics: d.Metrics}, 4*time.Minute); err != nil {
			return fmt.Errorf("jobs: schedule webhooks: %w", err)
		}
	}
	if err := s.Add("23 * * * *", &PruneWebhookLog{Store: d.Store}, time.Minute); err != nil {
		return fmt.Errorf("jobs: schedule webhook-log-prune: %w", err)
	}
	if d.Mailer != nil {
		if d.RenderMail == nil { // typed notifications would never go out
			return errors.New("jobs: the mail job needs RenderMail to word typed notifications")
		}
		if err := s.Add("@every 5s", &Mail{Store: d.Store, Mailer: d.Mailer, Render: d.RenderMail}, 2*time.Minute); err != nil {
			return fmt.Errorf("jobs: schedule mail: %w", err)
		}
	}
	return nil
}

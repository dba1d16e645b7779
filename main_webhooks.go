package main

import (
	"context"
	"net/http"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/models/publicip"
	"github.com/clusterdeck/clusterdeck/providers/webhookout"
)

// webhookPoster is the outbound webhook client (X8): its own dialer, which
// in production refuses every address that is not public (publicip) after
// DNS, and in every mode the server's own listening address; loopback and
// private receivers are allowed in development only.
func webhookPoster(cfg config) jobs.WebhookPoster {
	rule := publicip.NewOutbound(!cfg.Production, cfg.Addr)
	return posterForJobs{webhookout.New(webhookout.Options{Allow: rule.Check})}
}

// posterForJobs adapts webhookout.Client to jobs.WebhookPoster.
type posterForJobs struct{ c *webhookout.Client }

func (p posterForJobs) Post(ctx context.Context, url string, h http.Header, body []byte) (jobs.WebhookAnswer, error) {
	a, err := p.c.Post(ctx, url, h, body)
	return jobs.WebhookAnswer{Status: a.Status, Excerpt: a.Excerpt}, err
}

package main

import (
	"context"
	"net/http"

	"github.com/clusterdeck/clusterdeck/jobs"
	"github.com/clusterdeck/clusterdeck/providers/webhookout"
)

// webhookPoster is the outbound webhook client (X8): its own dialer, which
// in production refuses private, loopback and link-local addresses after
// DNS; plain loopback receivers are allowed in development only.
func webhookPoster(cfg config) jobs.WebhookPoster {
	return posterForJobs{webhookout.New(webhookout.Options{AllowPrivate: !cfg.Production})}
}

// posterForJobs adapts webhookout.Client to jobs.WebhookPoster.
type posterForJobs struct{ c *webhookout.Client }

func (p posterForJobs) Post(ctx context.Context, url string, h http.Header, body []byte) (jobs.WebhookAnswer, error) {
	a, err := p.c.Post(ctx, url, h, body)
	return jobs.WebhookAnswer{Status: a.Status, Excerpt: a.Excerpt}, err
}

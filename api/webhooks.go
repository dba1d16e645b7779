package api

import "time"

// WebhookBody creates an endpoint (POST /v1/webhooks) or changes one
// (PATCH /v1/webhooks/{id}: absent fields stay as they are).
type WebhookBody struct {
	URL         *string  `json:"url,omitempty"`
	Description *string  `json:"description,omitempty"`
	Types       []string `json:"types,omitempty"`
	Enabled     *bool    `json:"enabled,omitempty"` // false = paused; default true on create
}

// Webhook is an endpoint. Secret is only in the answers to create and
// rotate-secret: it is shown once.
type Webhook struct {
	ID                  string     `json:"id"`
	URL                 string     `json:"url"`
	Description         string     `json:"description"`
	Types               []string   `json:"types"`
	Enabled             bool       `json:"enabled"`
	PausedReason        string     `json:"pausedReason,omitempty"` // set when Clusterdeck paused it after failing for three days
	EnvironmentID       string     `json:"environmentId"`
	Secret              string     `json:"secret,omitempty"`
	PreviousSecretUntil *time.Time `json:"previousSecretUntil,omitempty"` // the rotated-out secret signs too until then
	FailingSince        *time.Time `json:"failingSince,omitempty"`
	Pending             int64      `json:"pending"` // deliveries still to send
	CreatedAt           time.Time  `json:"createdAt"`
}

// WebhookList is GET /v1/webhooks.
type WebhookList struct {
	Webhooks   []Webhook `json:"webhooks"`
	EventTypes []string  `json:"eventTypes"` // every type an endpoint may subscribe to
}

// WebhookRotateBody is POST /v1/webhooks/{id}/rotate-secret.
type WebhookRotateBody struct {
	OverlapHours *int `json:"overlapHours,omitempty"` // how long the old secret keeps signing (default 24, 0 = not at all, at most 168)
}

// WebhookAttempt is one row of an endpoint's delivery log.
type WebhookAttempt struct {
	DeliveryID int64     `json:"deliveryId"`
	EventID    string    `json:"eventId"`
	Type       string    `json:"type"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	Status     int       `json:"status"` // the HTTP status, 0 = no answer
	DurationMS int64     `json:"durationMs"`
	Answer     string    `json:"answer"` // the answer's first bytes
	Error      string    `json:"error,omitempty"`
}

// WebhookAttempts is GET /v1/webhooks/{id}/deliveries: the last 30 days, newest first.
type WebhookAttempts struct {
	Attempts []WebhookAttempt `json:"attempts"`
}

// WebhookDelivery is a delivery queued by test or redeliver.
type WebhookDelivery struct {
	ID      int64  `json:"id"`
	EventID string `json:"eventId"`
	Type    string `json:"type"`
}
